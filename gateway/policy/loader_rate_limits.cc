// policy/: the `rate_limits` and `redis` sections of a policy file (see loader_internal.h):
// each limit's match, key, rate and burst, and the shared Redis backend (its address is
// resolved here, once). A limit with `backend: redis` needs the redis section, which
// Loader::finish checks once every file is read.

#include <charconv>

#include "gateway/core/ascii.h"
#include "gateway/policy/loader_internal.h"

namespace gw::policy {

namespace {

using config::Entry;
using config::find;

constexpr std::string_view kLimitKeys[] = {"name",  "match",   "key", "rate",
                                           "burst", "backend", "mode"};
constexpr std::string_view kRedisKeys[] = {"address", "on_error", "timeout"};
constexpr std::string_view kOnError[] = {"local", "allow", "deny"};  // RedisSettings::OnError

}  // namespace

void Loader::walkLimit(const YAML::Node& n, const std::string& path) {
  RateLimitSpec s;
  s.file = file();
  s.line = n.Mark().is_null() ? 0 : n.Mark().line + 1;
  bool ok = true;
  const Entry* burst = nullptr;
  std::vector<Entry> es = entries(n, n.Mark(), kLimitKeys, path);
  if (!n.IsMap()) {
    return;
  }
  for (const Entry& e : es) {
    if (e.key == "name") {
      ok = readNonEmptyString(e, s.name) && ok;
    } else if (e.key == "match") {
      ok = walkMatch(e, s.match) && ok;
    } else if (e.key == "key") {
      std::vector<std::string> parts;
      if (!readList(e, parts)) {
        ok = false;
        continue;
      }
      for (size_t i = 0; i < parts.size(); ++i) {
        if (!validKeyPart(parts[i])) {
          error(e.value[i].Mark(), "'" + e.path + "[" + std::to_string(i) +
                                       "]': unknown key part '" + parts[i] +
                                       "' (subject, group, method, name, param:<Name>, "
                                       "header:<Name>, client_ip)");
          ok = false;
        }
      }
      s.key = std::move(parts);
    } else if (e.key == "rate") {
      if (!readNonEmptyString(e, s.rate_text)) {
        ok = false;
      } else if (!parseRate(s.rate_text, s.count, s.window_ms)) {
        error(valueMark(e), "'" + e.path + "': invalid rate '" + s.rate_text +
                                "' (N/s, N/min or N/h with N a positive integer)");
        ok = false;
      } else {
        s.rate_per_sec = static_cast<double>(s.count) * 1000.0 / static_cast<double>(s.window_ms);
      }
    } else if (e.key == "burst") {
      burst = &e;
    } else if (e.key == "mode") {
      bool enforce = true;
      ok = readChoice(e, "enforce", "audit", enforce) && ok;
      s.audit = !enforce;
    } else if (e.key == "backend") {
      bool local = true;
      ok = readChoice(e, "local", "redis", local) && ok;
      s.backend = local ? RateLimitSpec::Backend::kLocal : RateLimitSpec::Backend::kRedis;
      if (!local) {
        redis_limits_.emplace_back(file(), valueMark(e));
      }
    }
  }
  if (burst != nullptr) {
    std::string text;
    uint64_t b = 0;
    if (readNonEmptyString(*burst, text)) {
      auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), b);
      if (ec != std::errc() || ptr != text.data() + text.size() || b == 0 || b > 1000000000) {
        error(valueMark(*burst),
              "'" + burst->path + "' must be a positive integer, not '" + text + "'");
        ok = false;
      }
    } else {
      ok = false;
    }
    s.burst = static_cast<uint32_t>(b);
  } else {
    s.burst = static_cast<uint32_t>(s.count);
  }
  for (std::string_view required : {"name", "key", "rate"}) {
    if (find(es, required) == nullptr) {
      error(n.Mark(), "'" + path + "' needs '" + std::string(required) + "'");
      ok = false;
    }
  }
  if (!s.name.empty()) {
    for (const RateLimitSpec& other : set_->rate_limits_) {
      if (other.name == s.name) {
        error(find(es, "name")->value.Mark(), "rate limit name '" + s.name + "' is used twice");
        ok = false;
      }
    }
  }
  if (ok) {
    set_->rate_limits_.push_back(std::move(s));
  }
}

bool Loader::parseRate(std::string_view text, uint64_t& n, uint64_t& window_ms) {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0) {
    return false;
  }
  std::string_view num = text.substr(0, slash);
  std::string_view unit = text.substr(slash + 1);
  auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
  if (ec != std::errc() || ptr != num.data() + num.size() || n == 0 || n > 1000000000) {
    return false;
  }
  if (unit == "s") {
    window_ms = 1000;
  } else if (unit == "min") {
    window_ms = 60000;
  } else if (unit == "h") {
    window_ms = 3600000;
  } else {
    return false;
  }
  return true;
}

bool Loader::validKeyPart(std::string_view k) {
  if (k == "subject" || k == "group" || k == "method" || k == "name" || k == "client_ip") {
    return true;
  }
  if (k.starts_with("param:")) {
    return core::isToken(k.substr(6));
  }
  if (k.starts_with("header:")) {
    return core::isToken(k.substr(7));
  }
  return false;
}

void Loader::walkRedis(const Entry& re) {
  RedisSettings r;
  r.present = true;
  bool ok = true;
  std::vector<Entry> es = entries(re.value, re.key_node.Mark(), kRedisKeys, re.path);
  if (!re.value.IsMap()) {
    return;
  }
  for (const Entry& e : es) {
    if (e.key == "address") {
      // Resolved here, at load: hiredis gets the numeric address and never resolves a name
      // on a worker thread.
      settings::Address a;
      if (readAddress(e, a, false)) {
        r.host = a.ip;
        r.port = a.port;
        r.address = a.text;
      } else {
        ok = false;
      }
    } else if (e.key == "on_error") {
      size_t i = 0;
      if (readChoice(e, kOnError, i)) {
        r.on_error = static_cast<RedisSettings::OnError>(i);
      } else {
        ok = false;
      }
    } else if (e.key == "timeout") {
      settings::Duration d{};
      if (!readDuration(e, d)) {
        ok = false;
      } else if (d.count() == 0) {
        error(valueMark(e), "'" + e.path + "' must be greater than 0");
        ok = false;
      } else {
        r.timeout = d;
      }
    }
  }
  if (find(es, "address") == nullptr) {
    error(re.key_node.Mark(), "'redis' needs 'address'");
    ok = false;
  }
  if (ok) {
    set_->redis_ = std::move(r);
  }
}

}  // namespace gw::policy
