// policy/: JWKS sources and their registry (see jwks_source.h).

#include "gateway/policy/jwks_source.h"

#include <charconv>
#include <map>

#include <arpa/inet.h>

#include "gateway/core/ascii.h"
#include "gateway/core/clock.h"
#include "gateway/policy/jwt.h"

namespace gw::policy {

namespace {

bool loopbackHost(const std::string& host) {
  if (core::iequals(host, "localhost")) {
    return true;
  }
  in_addr a4{};
  if (inet_pton(AF_INET, host.c_str(), &a4) == 1) {
    return (ntohl(a4.s_addr) >> 24) == 127;
  }
  in6_addr a6{};
  return inet_pton(AF_INET6, host.c_str(), &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

struct Registry {
  std::mutex mu;
  std::map<std::string, std::weak_ptr<JwksSource>> sources;  // url + '\n' + ca_file
};

Registry& registry() {
  static Registry* r = new Registry();  // never destroyed: sources may outlive main's statics
  return *r;
}

}  // namespace

bool parseJwksUrl(std::string_view url, JwksUrl& out, std::string& error) {
  out = JwksUrl{};
  std::string_view rest;
  if (core::istartsWith(url, "https://")) {
    rest = url.substr(8);
    out.https = true;
    out.port = 443;
  } else if (core::istartsWith(url, "http://")) {
    rest = url.substr(7);
    out.https = false;
    out.port = 80;
  } else {
    error = "must be an https:// URL";
    return false;
  }
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f) {
      error = "must not contain spaces or control characters";
      return false;
    }
  }
  if (url.find('#') != std::string_view::npos) {
    error = "must not have a fragment";
    return false;
  }
  size_t end = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, end);
  out.target = end == std::string_view::npos ? "/" : std::string(rest.substr(end));
  if (out.target.front() == '?') {
    out.target.insert(0, "/");
  }
  if (authority.find('@') != std::string_view::npos) {
    error = "must not carry user information";
    return false;
  }
  std::string_view port_text;
  if (!authority.empty() && authority.front() == '[') {
    size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      error = "has an unterminated IPv6 literal";
      return false;
    }
    out.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        error = "has a malformed host";
        return false;
      }
      port_text = after.substr(1);
      if (port_text.empty()) {
        error = "has an empty port";
        return false;
      }
    }
    in6_addr a6{};
    if (inet_pton(AF_INET6, out.host.c_str(), &a6) != 1) {
      error = "has a malformed IPv6 literal";
      return false;
    }
  } else {
    size_t colon = authority.find(':');
    out.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) {
        error = "has an empty port";
        return false;
      }
    }
  }
  if (out.host.empty()) {
    error = "has no host";
    return false;
  }
  if (!port_text.empty()) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), v);
    if (ec != std::errc() || p != port_text.data() + port_text.size() || v == 0 || v > 65535) {
      error = "has an invalid port";
      return false;
    }
    out.port = static_cast<uint16_t>(v);
  }
  if (!out.https && !loopbackHost(out.host)) {
    error = "must be https (http:// is accepted only for a loopback host)";
    return false;
  }
  return true;
}

JwksSource::JwksSource(std::string url, JwksUrl parsed, std::string ca_file)
    : url_(std::move(url)), parsed_(std::move(parsed)), ca_file_(std::move(ca_file)) {}

JwksSource::~JwksSource() = default;

std::shared_ptr<JwksSource> JwksSource::acquire(const std::string& url, const JwksUrl& parsed,
                                                const std::string& ca_file,
                                                std::chrono::seconds refresh) {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::weak_ptr<JwksSource>& slot = r.sources[url + '\n' + ca_file];
  std::shared_ptr<JwksSource> s = slot.lock();
  if (s == nullptr) {
    s = std::make_shared<JwksSource>(url, parsed, ca_file);
    slot = s;
  }
  s->refresh_s_.store(refresh.count(), std::memory_order_relaxed);
  return s;
}

std::vector<std::shared_ptr<JwksSource>> JwksSource::live() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  std::vector<std::shared_ptr<JwksSource>> out;
  for (auto it = r.sources.begin(); it != r.sources.end();) {
    if (auto s = it->second.lock()) {
      out.push_back(std::move(s));
      ++it;
    } else {
      it = r.sources.erase(it);
    }
  }
  return out;
}

JwksSource::Ask JwksSource::askRefetch() noexcept {
  Ask a;
  a.ended = ended_.load(std::memory_order_acquire);
  asked_.store(true, std::memory_order_release);
  a.coming = fetching_.load(std::memory_order_acquire) || askAllowed(core::steadyNow());
  return a;
}

bool JwksSource::beginWait() noexcept {
  if (waiters_.fetch_add(1, std::memory_order_relaxed) >= kMaxWaiters) {
    waiters_.fetch_sub(1, std::memory_order_relaxed);
    return false;
  }
  return true;
}

bool JwksSource::askAllowed(std::chrono::steady_clock::time_point now) const noexcept {
  return now.time_since_epoch().count() >= ask_open_ns_.load(std::memory_order_acquire);
}

void JwksSource::fetchBegins(std::chrono::steady_clock::time_point now, bool asked) noexcept {
  if (asked) {
    const auto open =
        now + std::chrono::duration_cast<std::chrono::steady_clock::duration>(kMinAskedInterval);
    ask_open_ns_.store(open.time_since_epoch().count(), std::memory_order_release);
  }
  fetching_.store(true, std::memory_order_release);
}

void JwksSource::fetchEnded() noexcept {
  fetching_.store(false, std::memory_order_release);
  ended_.fetch_add(1, std::memory_order_acq_rel);
}

size_t JwksSource::publish(std::string document, std::vector<Jwk> keys) {
  std::lock_guard lock(publish_mu_);
  if (generation_ != 0 && document == document_) {
    return keys_.load(std::memory_order_acquire)->keys.size();
  }
  auto set = std::make_shared<KeySet>();
  set->keys = std::move(keys);
  set->generation = ++generation_;
  document_ = std::move(document);
  const size_t n = set->keys.size();
  keys_.store(std::move(set), std::memory_order_release);
  return n;
}

}  // namespace gw::policy
