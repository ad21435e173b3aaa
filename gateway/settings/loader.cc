// settings/: gateway.yaml → a validated, immutable Settings snapshot. This is the one place
// yaml-cpp is used and the one place its exceptions are caught: everything it throws becomes
// a Diagnostic. The walk never stops at the first problem; every error is collected with
// file:line:column (1-based) and the snapshot is only produced when there are none.

#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <exception>
#include <filesystem>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/core/ascii.h"
#include "gateway/http/host.h"
#include "gateway/mcp/session.h"
#include "gateway/settings/settings.h"

namespace gw::settings {

namespace {

namespace fs = std::filesystem;

using Keys = std::span<const std::string_view>;

constexpr std::string_view kTopKeys[] = {"listen",
                                         "endpoint",
                                         "workers",
                                         "admin",
                                         "limits",
                                         "mcp",
                                         "upstreams",
                                         "routes",
                                         "policies",
                                         "access_log",
                                         "log_level",
                                         "drain_timeout",
                                         "rate_limit_headers",
                                         "metrics",
                                         "watch_files",
                                         "trusted_proxies"};
constexpr std::string_view kMetricsKeys[] = {"max_tool_names"};
constexpr std::string_view kLimitsKeys[] = {"max_connections",
                                            "max_request_line",
                                            "max_header_bytes",
                                            "max_header_line",
                                            "max_headers",
                                            "max_body_bytes",
                                            "header_timeout",
                                            "body_timeout",
                                            "keepalive_timeout",
                                            "send_timeout",
                                            "request_buffering",
                                            "max_buffered_body_bytes",
                                            "max_connections_per_client"};
constexpr std::string_view kMcpKeys[] = {"protocol_versions", "legacy",        "verify_body",
                                         "allowed_origins",   "allowed_hosts", "max_param_headers",
                                         "sse_keepalive"};
constexpr std::string_view kUpstreamKeys[] = {"name",
                                              "endpoints",
                                              "path",
                                              "connect_timeout",
                                              "response_timeout",
                                              "stream_idle_timeout",
                                              "max_duration",
                                              "balance",
                                              "max_idle_connections",
                                              "host_header",
                                              "session_secret"};
constexpr std::string_view kRouteKeys[] = {"name",   "match",       "upstream",
                                           "legacy", "verify_body", "forward_credentials"};
constexpr std::string_view kMatchKeys[] = {"method", "name", "params", "headers"};
constexpr std::string_view kAccessLogKeys[] = {"path"};
constexpr std::string_view kLogLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
constexpr std::string_view kLegacyModes[] = {"reject", "passthrough"};
constexpr std::string_view kBalances[] = {"round_robin", "first_healthy"};

constexpr uint32_t kMaxWorkers = 256;
constexpr uint32_t kMaxHeadersCeiling = 1000;
constexpr uint64_t kMinHeaderBytes = 1024;
constexpr uint64_t kMinHeaderLine = 256;
constexpr uint64_t kMaxHeaderBytes = 1024 * 1024;

size_t editDistance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) {
    row[j] = j;
  }
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// Appends "; did you mean 'X'?" for the candidate closest to `word` (edit distance under 3
// and under the word's length, the first of equals), or nothing when none is that close.
void appendDidYouMean(std::string& msg, std::string_view word,
                      std::span<const std::string_view> candidates) {
  std::string_view best;
  size_t best_d = 3;
  for (std::string_view cand : candidates) {
    size_t d = editDistance(word, cand);
    if (d < best_d && d < word.size()) {
      best = cand;
      best_d = d;
    }
  }
  if (!best.empty()) {
    msg += "; did you mean '" + std::string(best) + "'?";
  }
}

bool contains(Keys keys, std::string_view k) {
  return std::find(keys.begin(), keys.end(), k) != keys.end();
}

std::string joinKeys(Keys keys) {
  std::string out;
  for (std::string_view k : keys) {
    if (!out.empty()) {
      out += " | ";
    }
    out += k;
  }
  return out;
}

// One key/value pair of a mapping, with the dotted path used in messages
// ("limits.max_headers", "upstreams[1].name").
struct Entry {
  std::string key;
  std::string path;
  YAML::Node key_node;
  YAML::Node value;
};

const Entry* find(const std::vector<Entry>& entries, std::string_view key) {
  for (const Entry& e : entries) {
    if (e.key == key) {
      return &e;
    }
  }
  return nullptr;
}

// Where a route's cross-references live, for checks that need the whole file.
struct RouteRef {
  YAML::Mark name_mark;
  YAML::Mark upstream_mark;
  bool has_upstream = false;
};

class Loader {
 public:
  explicit Loader(std::string file) : file_(std::move(file)) {
    std::error_code ec;
    fs::path abs = fs::absolute(fs::path(file_), ec);
    if (ec) {
      abs = fs::path(file_);
    }
    abs = abs.lexically_normal();
    source_ = abs.string();
    base_dir_ = abs.parent_path();
  }

  LoadResult run(std::string_view yaml) {
    auto s = std::make_shared<Settings>();
    s->source_file = source_;
    try {
      YAML::Node root = YAML::Load(std::string(yaml));
      walkTop(root, *s);
    } catch (const YAML::Exception& e) {
      error(e.mark, e.msg);
    } catch (const std::exception& e) {
      diags_.push_back(Diagnostic{file_, 0, 0, std::string("internal error: ") + e.what()});
    } catch (...) {
      diags_.push_back(Diagnostic{file_, 0, 0, "internal error"});
    }
    LoadResult r;
    if (diags_.empty()) {
      r.settings = std::move(s);
      return r;
    }
    std::stable_sort(diags_.begin(), diags_.end(), [](const Diagnostic& a, const Diagnostic& b) {
      return std::pair(a.line, a.column) < std::pair(b.line, b.column);
    });
    r.errors = std::move(diags_);
    return r;
  }

 private:
  void error(const YAML::Mark& m, std::string message) {
    Diagnostic d;
    d.file = file_;
    if (!m.is_null()) {
      d.line = m.line + 1;
      d.column = m.column + 1;
    }
    d.message = std::move(message);
    diags_.push_back(std::move(d));
  }

  // The value's position, or the key's when the value is empty (yaml-cpp marks an empty
  // value at the start of the next line).
  static YAML::Mark valueMark(const Entry& e) {
    if (e.value.IsNull() || e.value.Mark().is_null()) {
      return e.key_node.Mark();
    }
    return e.value.Mark();
  }

  // The pairs of a mapping; unknown keys (with a suggestion) and duplicates are reported.
  // Empty, with an error, when `node` is not a mapping.
  std::vector<Entry> entries(const YAML::Node& node, const YAML::Mark& where, Keys allowed,
                             const std::string& prefix) {
    std::vector<Entry> out;
    if (!node.IsMap()) {
      error(node.Mark().is_null() || node.IsNull() ? where : node.Mark(),
            (prefix.empty() ? std::string("the file") : "'" + prefix + "'") +
                " must be a mapping of keys to values");
      return out;
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
      // `*it` by value: yaml-cpp 0.7's operator-> points into a temporary (ASan:
      // stack-use-after-scope).
      const YAML::detail::iterator_value kv = *it;
      const YAML::Node k = kv.first;
      if (!k.IsScalar()) {
        error(k.Mark(), "keys must be plain strings");
        continue;
      }
      const std::string& key = k.Scalar();
      std::string path = prefix.empty() ? key : prefix + "." + key;
      if (!contains(allowed, key)) {
        std::string msg = "unknown key '" + path + "'";
        appendDidYouMean(msg, key, allowed);
        error(k.Mark(), std::move(msg));
        continue;
      }
      if (const Entry* first = find(out, key)) {
        error(k.Mark(), "duplicate key '" + path + "' (first at line " +
                            std::to_string(first->key_node.Mark().line + 1) + ")");
        continue;
      }
      out.push_back(Entry{key, std::move(path), k, kv.second});
    }
    return out;
  }

  bool scalar(const Entry& e, std::string& out, std::string_view what) {
    if (!e.value.IsScalar()) {
      error(valueMark(e), "'" + e.path + "' must be " + std::string(what));
      return false;
    }
    out = e.value.Scalar();
    return true;
  }

  bool readString(const Entry& e, std::string& out) { return scalar(e, out, "a string"); }

  bool readNonEmptyString(const Entry& e, std::string& out) {
    std::string v;
    if (!readString(e, v)) {
      return false;
    }
    if (v.empty()) {
      error(valueMark(e), "'" + e.path + "' must not be empty");
      return false;
    }
    out = std::move(v);
    return true;
  }

  bool readBool(const Entry& e, bool& out) {
    bool b = false;
    if (!e.value.IsScalar() || !YAML::convert<bool>::decode(e.value, b)) {
      error(valueMark(e), "'" + e.path + "' must be true or false");
      return false;
    }
    out = b;
    return true;
  }

  bool readUint(const Entry& e, uint64_t max, uint64_t& out) {
    std::string text;
    if (!scalar(e, text, "a non-negative integer")) {
      return false;
    }
    uint64_t v = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec == std::errc::invalid_argument || ptr != text.data() + text.size()) {
      error(valueMark(e), "'" + e.path + "' must be a non-negative integer, not '" + text + "'");
      return false;
    }
    if (ec == std::errc::result_out_of_range || v > max) {
      error(valueMark(e), "'" + e.path + "' is out of range (at most " + std::to_string(max) + ")");
      return false;
    }
    out = v;
    return true;
  }

  bool readUint32(const Entry& e, uint32_t& out) {
    uint64_t v = 0;
    if (!readUint(e, std::numeric_limits<uint32_t>::max(), v)) {
      return false;
    }
    out = static_cast<uint32_t>(v);
    return true;
  }

  bool readDuration(const Entry& e, Duration& out) {
    std::string text;
    if (!scalar(e, text, "a duration (250ms, 10s, 5m, 1h)")) {
      return false;
    }
    if (!parseDuration(text, out)) {
      std::string msg = "'" + e.path + "': invalid duration '" + text + "'";
      bool digits = !text.empty() && std::all_of(text.begin(), text.end(),
                                                 [](char c) { return c >= '0' && c <= '9'; });
      msg += digits ? " (needs a unit: 250ms, 10s, 5m, 1h)" : " (expected e.g. 250ms, 10s, 5m, 1h)";
      error(valueMark(e), std::move(msg));
      return false;
    }
    return true;
  }

  bool readSize(const Entry& e, uint64_t& out) {
    std::string text;
    if (!scalar(e, text, "a size (bytes, or with KiB, MiB, GiB, KB, MB, GB)")) {
      return false;
    }
    if (!parseSize(text, out)) {
      error(valueMark(e), "'" + e.path + "': invalid size '" + text +
                              "' (expected e.g. 512, 8KiB, 4MiB, 1GiB, 10KB)");
      return false;
    }
    return true;
  }

  bool readAddress(const Entry& e, Address& out, bool allow_port0) {
    std::string text;
    if (!scalar(e, text, "an address (host:port)")) {
      return false;
    }
    return checkAddress(e.value, text, e.path, out, allow_port0);
  }

  bool checkAddress(const YAML::Node& n, const std::string& text, const std::string& path,
                    Address& out, bool allow_port0) {
    Address a;
    if (!parseAddress(text, a)) {
      error(n.Mark(), "'" + path + "': invalid address '" + text +
                          "' (expected IPv4:port, [IPv6]:port or hostname:port, port 0-65535)");
      return false;
    }
    if (!allow_port0 && a.port == 0) {
      error(n.Mark(), "'" + path + "': port 0 is not a valid destination in '" + text + "'");
      return false;
    }
    if (a.ip.empty()) {
      std::string why = "name resolution is off (hermetic test load)";
      if (hermeticLoad() || !resolveHost(a.host, a.ip, why)) {
        error(n.Mark(), "'" + path + "': cannot resolve '" + a.host + "': " + why);
        return false;
      }
    }
    out = std::move(a);
    return true;
  }

  // The first address getaddrinfo gives for `host` (AF_UNSPEC, SOCK_STREAM), in numeric
  // form. Blocks on the system resolver (/etc/hosts, then DNS): called only while loading,
  // never on the request path. False with gai_strerror's text in `why` when it fails.
  static bool resolveHost(const std::string& host, std::string& ip, std::string& why) {
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    addrinfo* res = nullptr;
    int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
    if (rc != 0 || res == nullptr) {
      why = rc != 0 ? ::gai_strerror(rc) : "no address";
      return false;
    }
    char buf[NI_MAXHOST] = {};
    rc = ::getnameinfo(res->ai_addr, res->ai_addrlen, buf, sizeof(buf), nullptr, 0, NI_NUMERICHOST);
    ::freeaddrinfo(res);
    if (rc != 0) {
      why = ::gai_strerror(rc);
      return false;
    }
    ip = buf;
    return true;
  }

  // A request path: starts with '/', no whitespace, controls, query or fragment.
  bool readPath(const Entry& e, std::string& out) {
    std::string text;
    if (!readString(e, text)) {
      return false;
    }
    bool ok = !text.empty() && text.front() == '/';
    for (char c : text) {
      auto u = static_cast<unsigned char>(c);
      if (u <= 0x20 || u == 0x7f || c == '?' || c == '#') {
        ok = false;
      }
    }
    if (!ok) {
      error(valueMark(e), "'" + e.path +
                              "' must be a path starting with '/' (no spaces, '?' "
                              "or '#'), not '" +
                              text + "'");
      return false;
    }
    out = std::move(text);
    return true;
  }

  bool readEnum(const Entry& e, Keys choices, std::string& out) {
    std::string text;
    if (!readString(e, text)) {
      return false;
    }
    if (!contains(choices, text)) {
      error(valueMark(e),
            "'" + e.path + "' must be one of " + joinKeys(choices) + ", not '" + text + "'");
      return false;
    }
    out = std::move(text);
    return true;
  }

  // A sequence of scalars, each checked; the nodes are returned beside the strings.
  bool readStringList(const Entry& e, std::vector<std::string>& out,
                      std::vector<YAML::Node>* nodes = nullptr) {
    if (!e.value.IsSequence()) {
      error(valueMark(e), "'" + e.path + "' must be a list");
      return false;
    }
    bool ok = true;
    std::vector<std::string> items;
    size_t i = 0;
    for (const YAML::Node& item : e.value) {
      if (!item.IsScalar()) {
        error(item.Mark(), "'" + e.path + "[" + std::to_string(i) + "]' must be a string");
        ok = false;
      } else {
        items.push_back(item.Scalar());
        if (nodes != nullptr) {
          nodes->push_back(item);
        }
      }
      ++i;
    }
    if (ok) {
      out = std::move(items);
    }
    return ok;
  }

  std::string resolve(const std::string& p) const {
    fs::path path(p);
    if (path.is_relative()) {
      path = base_dir_ / path;
    }
    return path.lexically_normal().string();
  }

  void walkTop(const YAML::Node& root, Settings& s) {
    if (root.IsNull()) {
      return;  // an empty file: every default
    }
    std::vector<Entry> top = entries(root, root.Mark(), kTopKeys, "");
    const Entry* listen_e = nullptr;
    for (const Entry& e : top) {
      if (e.key == "listen") {
        listen_e = &e;
        readAddress(e, s.listen, true);
      } else if (e.key == "endpoint") {
        readPath(e, s.endpoint);
      } else if (e.key == "workers") {
        uint64_t w = 0;
        if (readUint(e, kMaxWorkers, w)) {
          s.workers = static_cast<uint32_t>(w);
        }
      } else if (e.key == "admin") {
        Address a;
        if (readAddress(e, a, true)) {
          s.admin = std::move(a);
        }
      } else if (e.key == "limits") {
        walkLimits(e, s.limits);
      } else if (e.key == "mcp") {
        walkMcp(e, s.mcp);
      } else if (e.key == "upstreams") {
        walkUpstreams(e, s);
      } else if (e.key == "routes") {
        walkRoutes(e, s);
      } else if (e.key == "policies") {
        walkPolicies(e, s);
      } else if (e.key == "access_log") {
        for (const Entry& a : entries(e.value, e.key_node.Mark(), kAccessLogKeys, e.path)) {
          std::string p;
          if (readNonEmptyString(a, p)) {
            s.access_log.path = (p == "-" || p == "off") ? p : resolve(p);
          }
        }
      } else if (e.key == "log_level") {
        readEnum(e, kLogLevels, s.log_level);
      } else if (e.key == "drain_timeout") {
        readDuration(e, s.drain_timeout);
      } else if (e.key == "watch_files") {
        readBool(e, s.watch_files);
      } else if (e.key == "metrics") {
        for (const Entry& m : entries(e.value, e.key_node.Mark(), kMetricsKeys, e.path)) {
          readUint32(m, s.metrics_max_tool_names);
        }
      } else if (e.key == "rate_limit_headers") {
        readBool(e, s.rate_limit_headers);
      } else if (e.key == "trusted_proxies") {
        walkTrustedProxies(e, s);
      }
    }
    if (listen_e != nullptr && s.admin && s.admin->port != 0 && s.admin->port == s.listen.port &&
        s.admin->ip == s.listen.ip) {
      error(valueMark(*find(top, "admin")), "'admin' must not use the same address as 'listen'");
    }
    checkRoutes(s);
  }

  void walkLimits(const Entry& le, Limits& l) {
    std::optional<YAML::Mark> line_mark;
    bool invalid = false;  // a size the comparison below needs did not parse
    for (const Entry& e : entries(le.value, le.key_node.Mark(), kLimitsKeys, le.path)) {
      if (e.key == "max_connections") {
        uint32_t v = 0;
        if (readUint32(e, v)) {
          if (v == 0) {
            error(valueMark(e), "'" + e.path + "' must be at least 1");
          } else {
            l.max_connections = v;
          }
        }
      } else if (e.key == "max_request_line") {
        uint64_t v = 0;
        if (!readSize(e, v)) {
          invalid = true;
        } else if (v == 0) {
          error(valueMark(e), "'" + e.path + "' must be at least 1 byte");
          invalid = true;
        } else {
          l.max_request_line = v;
          line_mark = valueMark(e);
        }
      } else if (e.key == "max_header_bytes") {
        uint64_t v = 0;
        if (!readSize(e, v)) {
          invalid = true;
        } else if (v < kMinHeaderBytes || v > kMaxHeaderBytes) {
          error(valueMark(e), "'" + e.path + "' must be between 1KiB and 1MiB");
          invalid = true;
        } else {
          l.max_header_bytes = v;
        }
      } else if (e.key == "max_headers") {
        uint64_t v = 0;
        if (readUint(e, std::numeric_limits<uint32_t>::max(), v)) {
          if (v < 1 || v > kMaxHeadersCeiling) {
            error(valueMark(e), "'" + e.path + "' must be between 1 and 1000");
          } else {
            l.max_headers = static_cast<uint32_t>(v);
          }
        }
      } else if (e.key == "max_body_bytes") {
        readSize(e, l.max_body_bytes);
      } else if (e.key == "header_timeout") {
        Duration d{};
        if (readDuration(e, d)) {
          if (d.count() == 0) {
            error(valueMark(e), "'" + e.path + "' must be greater than 0");
          } else {
            l.header_timeout = d;
          }
        }
      } else if (e.key == "body_timeout") {
        readDuration(e, l.body_timeout);
      } else if (e.key == "keepalive_timeout") {
        readDuration(e, l.keepalive_timeout);
      } else if (e.key == "max_header_line") {
        uint64_t v = 0;
        if (readSize(e, v)) {
          if (v < kMinHeaderLine || v > kMaxHeaderBytes) {
            error(valueMark(e), "'" + e.path + "' must be between 256 bytes and 1MiB");
          } else {
            l.max_header_line = v;
          }
        }
      } else if (e.key == "send_timeout") {
        readDuration(e, l.send_timeout);
      } else if (e.key == "request_buffering") {
        readBool(e, l.request_buffering);
      } else if (e.key == "max_buffered_body_bytes") {
        uint64_t v = 0;
        if (readSize(e, v)) {
          if (v == 0) {
            error(valueMark(e), "'" + e.path + "' must be at least 1 byte");
          } else {
            l.max_buffered_body_bytes = v;
          }
        }
      } else if (e.key == "max_connections_per_client") {
        readUint32(e, l.max_connections_per_client);
      }
    }
    // Only meaningful when both are valid (or defaulted).
    if (!invalid && l.max_request_line > l.max_header_bytes) {
      YAML::Mark m = line_mark ? *line_mark : le.key_node.Mark();
      error(m, "'limits.max_request_line' (" + std::to_string(l.max_request_line) +
                   " bytes) must not exceed 'limits.max_header_bytes' (" +
                   std::to_string(l.max_header_bytes) + " bytes)");
    }
  }

  void walkMcp(const Entry& me, Mcp& m) {
    for (const Entry& e : entries(me.value, me.key_node.Mark(), kMcpKeys, me.path)) {
      if (e.key == "protocol_versions") {
        std::vector<std::string> v;
        if (readStringList(e, v)) {
          if (v.empty()) {
            error(valueMark(e), "'" + e.path + "' must list at least one version");
          } else if (std::any_of(v.begin(), v.end(),
                                 [](const std::string& x) { return x.empty(); })) {
            error(valueMark(e), "'" + e.path + "' must not contain empty versions");
          } else {
            m.protocol_versions = std::move(v);
          }
        }
      } else if (e.key == "legacy") {
        std::string v;
        if (readEnum(e, kLegacyModes, v)) {
          m.legacy = v == "reject" ? LegacyMode::kReject : LegacyMode::kPassthrough;
        }
      } else if (e.key == "verify_body") {
        readBool(e, m.verify_body);
      } else if (e.key == "allowed_origins") {
        readStringList(e, m.allowed_origins);
      } else if (e.key == "allowed_hosts") {
        walkAllowedHosts(e, m);
      } else if (e.key == "max_param_headers") {
        uint32_t v = 0;
        if (readUint32(e, v)) {
          if (v < 1 || v > kMaxHeadersCeiling) {
            error(valueMark(e), "'" + e.path + "' must be between 1 and 1000");
          } else {
            m.max_param_headers = v;
          }
        }
      } else if (e.key == "sse_keepalive") {
        readDuration(e, m.sse_keepalive);
      }
    }
  }

  // host[:port] globs: `*` matches any run of characters; no scheme, path or userinfo.
  void walkAllowedHosts(const Entry& e, Mcp& m) {
    std::vector<std::string> v;
    std::vector<YAML::Node> nodes;
    if (!readStringList(e, v, &nodes)) {
      return;
    }
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string& h = v[i];
      bool ok = !h.empty() && std::all_of(h.begin(), h.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.' || c == ':' ||
               c == '*' || c == '[' || c == ']' || c == '_';
      });
      if (!ok) {
        error(nodes[i].Mark(), "'" + e.path + "[" + std::to_string(i) +
                                   "]' must be a host[:port] glob (letters, digits, '-', '.', "
                                   "':', '[', ']' and '*'), got '" +
                                   h + "'");
        return;
      }
    }
    m.allowed_hosts = std::move(v);
  }

  void walkTrustedProxies(const Entry& e, Settings& s) {
    std::vector<std::string> v;
    std::vector<YAML::Node> nodes;
    if (!readStringList(e, v, &nodes)) {
      return;
    }
    std::vector<core::Cidr> out;
    for (size_t i = 0; i < v.size(); ++i) {
      core::Cidr c;
      if (!core::parseCidr(v[i], c)) {
        error(nodes[i].Mark(), "'" + e.path + "[" + std::to_string(i) +
                                   "]' must be an IP address or a CIDR range with no host bits "
                                   "set (10.0.0.0/8, ::1, fd00::/8), got '" +
                                   v[i] + "'");
        return;
      }
      out.push_back(c);
    }
    s.trusted_proxies = std::move(out);
    s.trusted_proxies_text = std::move(v);
  }

  void walkUpstreams(const Entry& ue, Settings& s) {
    if (!ue.value.IsSequence()) {
      error(valueMark(ue), "'upstreams' must be a list");
      return;
    }
    size_t i = 0;
    for (const YAML::Node& node : ue.value) {
      std::string prefix = "upstreams[" + std::to_string(i++) + "]";
      Upstream u;
      bool named = false;
      bool has_endpoints = false;
      std::vector<Entry> es = entries(node, ue.key_node.Mark(), kUpstreamKeys, prefix);
      if (!node.IsMap()) {
        continue;
      }
      for (const Entry& e : es) {
        if (e.key == "name") {
          if (readNonEmptyString(e, u.name)) {
            named = true;
            prefix = "upstream '" + u.name + "'";
            int dup = s.upstreamIndex(u.name);
            if (dup >= 0) {
              error(valueMark(e), "duplicate upstream name '" + u.name + "'");
              named = false;
            }
          }
        } else if (e.key == "endpoints") {
          has_endpoints = true;
          std::vector<std::string> texts;
          std::vector<YAML::Node> nodes;
          if (readStringList(e, texts, &nodes)) {
            if (texts.empty()) {
              error(valueMark(e), "'" + e.path + "' must list at least one address");
            }
            for (size_t j = 0; j < texts.size(); ++j) {
              Address a;
              std::string item = e.path + "[" + std::to_string(j) + "]";
              if (checkAddress(nodes[j], texts[j], item, a, false)) {
                u.endpoints.push_back(std::move(a));
              }
            }
          }
        } else if (e.key == "path") {
          readPath(e, u.path);
        } else if (e.key == "connect_timeout") {
          readDuration(e, u.connect_timeout);
        } else if (e.key == "response_timeout") {
          readDuration(e, u.response_timeout);
        } else if (e.key == "stream_idle_timeout") {
          readDuration(e, u.stream_idle_timeout);
        } else if (e.key == "max_duration") {
          readDuration(e, u.max_duration);
        } else if (e.key == "balance") {
          std::string v;
          if (readEnum(e, kBalances, v)) {
            u.balance = v == "round_robin" ? Balance::kRoundRobin : Balance::kFirstHealthy;
          }
        } else if (e.key == "max_idle_connections") {
          readUint32(e, u.max_idle_connections);
        } else if (e.key == "host_header") {
          readHostHeader(e, u);
        } else if (e.key == "session_secret") {
          readNonEmptyString(e, u.session_secret);
        }
      }
      for (const Address& a : u.endpoints) {
        u.session_tokens.push_back(mcp::sessionToken(u.session_secret, u.name, a.text));
      }
      if (find(es, "name") == nullptr) {
        error(node.Mark(), "'" + prefix + "' has no 'name'");
      }
      if (!has_endpoints) {
        error(node.Mark(), "'" + prefix + "' has no 'endpoints'");
      }
      if (named) {
        s.upstreams.push_back(std::move(u));
      }
    }
  }

  // upstreams[].host_header: `endpoint`, `client`, or a literal host[:port] (RFC 9110 §7.2).
  void readHostHeader(const Entry& e, Upstream& u) {
    std::string v;
    if (!readNonEmptyString(e, v)) {
      return;
    }
    http::HostPort hp;
    if (v == "endpoint") {
      u.host_header = HostHeader::kEndpoint;
    } else if (v == "client") {
      u.host_header = HostHeader::kClient;
    } else if (http::parseHostPort(v, hp)) {
      u.host_header = HostHeader::kLiteral;
      u.host_literal = std::move(v);
    } else {
      error(valueMark(e),
            "'" + e.path + "' must be endpoint, client or a host[:port], not '" + v + "'");
    }
  }

  void walkMatch(const Entry& me, RouteMatch& m) {
    std::vector<Entry> es = entries(me.value, me.key_node.Mark(), kMatchKeys, me.path);
    if (me.value.IsMap() && me.value.size() == 0) {
      error(valueMark(me), "'" + me.path + "' is empty; omit 'match' for a default route");
    }
    for (const Entry& e : es) {
      if (e.key == "method") {
        std::string v;
        if (readNonEmptyString(e, v)) {
          m.method = std::move(v);
        }
      } else if (e.key == "name") {
        std::string v;
        if (readString(e, v)) {
          m.name = std::move(v);
        }
      } else if (e.key == "params" || e.key == "headers") {
        readGlobMap(e, e.key == "params" ? m.params : m.headers);
      }
    }
  }

  // `{ Name: "glob", ... }` where each name is an HTTP token (a header name or the {Name}
  // of Mcp-Param-{Name}); names are unique case-insensitively.
  void readGlobMap(const Entry& e, std::vector<std::pair<std::string, std::string>>& out) {
    if (!e.value.IsMap()) {
      error(valueMark(e), "'" + e.path + "' must be a mapping of names to patterns");
      return;
    }
    for (auto it = e.value.begin(); it != e.value.end(); ++it) {
      const YAML::detail::iterator_value kv = *it;
      const YAML::Node k = kv.first;
      const YAML::Node v = kv.second;
      if (!k.IsScalar() || !core::isToken(k.Scalar())) {
        error(k.Mark(), "'" + e.path + "': names must be HTTP tokens (letters, digits, '-', ...)");
        continue;
      }
      std::string key = k.Scalar();
      bool dup = std::any_of(out.begin(), out.end(),
                             [&](const auto& p) { return core::iequals(p.first, key); });
      if (dup) {
        error(k.Mark(), "'" + e.path + "': '" + key + "' is listed twice (names ignore case)");
        continue;
      }
      if (!v.IsScalar()) {
        error(v.IsNull() ? k.Mark() : v.Mark(), "'" + e.path + "." + key + "' must be a string");
        continue;
      }
      out.emplace_back(std::move(key), v.Scalar());
    }
  }

  void walkRoutes(const Entry& re, Settings& s) {
    if (!re.value.IsSequence()) {
      error(valueMark(re), "'routes' must be a list");
      return;
    }
    size_t i = 0;
    for (const YAML::Node& node : re.value) {
      std::string prefix = "routes[" + std::to_string(i++) + "]";
      std::vector<Entry> es = entries(node, re.key_node.Mark(), kRouteKeys, prefix);
      if (!node.IsMap()) {
        continue;
      }
      Route r;
      RouteRef ref;
      ref.name_mark = node.Mark();
      const Entry* name_e = find(es, "name");
      if (name_e == nullptr) {
        error(node.Mark(), "'" + prefix + "' has no 'name'");
      } else if (readNonEmptyString(*name_e, r.name)) {
        ref.name_mark = valueMark(*name_e);
        bool dup = std::any_of(s.routes.begin(), s.routes.end(),
                               [&](const Route& o) { return o.name == r.name; });
        if (dup) {
          error(valueMark(*name_e), "duplicate route name '" + r.name + "'");
        }
      }
      for (const Entry& e : es) {
        if (e.key == "match") {
          r.has_match = true;
          walkMatch(e, r.match);
        } else if (e.key == "upstream") {
          if (readNonEmptyString(e, r.upstream)) {
            ref.upstream_mark = valueMark(e);
            ref.has_upstream = true;
          }
        } else if (e.key == "legacy") {
          readBool(e, r.legacy);
        } else if (e.key == "forward_credentials") {
          readBool(e, r.forward_credentials);
        } else if (e.key == "verify_body") {
          bool b = false;
          if (readBool(e, b)) {
            r.verify_body = b;
          }
        }
      }
      if (find(es, "upstream") == nullptr) {
        error(node.Mark(), "'" + prefix + "' has no 'upstream'");
      }
      s.routes.push_back(std::move(r));
      route_refs_.push_back(ref);
    }
  }

  // Checks that need every upstream and route: references, the default route's position.
  void checkRoutes(Settings& s) {
    const Route* default_route = nullptr;
    size_t default_line = 0;
    for (size_t i = 0; i < s.routes.size() && i < route_refs_.size(); ++i) {
      Route& r = s.routes[i];
      const RouteRef& ref = route_refs_[i];
      if (ref.has_upstream) {
        int idx = s.upstreamIndex(r.upstream);
        if (idx < 0) {
          std::string msg = "route '" + r.name + "' names unknown upstream '" + r.upstream + "'";
          std::vector<std::string_view> names;
          for (const Upstream& u : s.upstreams) {
            names.push_back(u.name);
          }
          appendDidYouMean(msg, r.upstream, names);
          error(ref.upstream_mark, std::move(msg));
        } else {
          r.upstream_index = static_cast<size_t>(idx);
        }
      }
      if (default_route != nullptr) {
        if (!r.has_match) {
          error(ref.name_mark, "route '" + r.name + "' has no 'match', but route '" +
                                   default_route->name + "' (line " + std::to_string(default_line) +
                                   ") is already the default; only one default route is allowed");
        } else {
          error(ref.name_mark, "route '" + r.name + "' can never match: the default route '" +
                                   default_route->name + "' (line " + std::to_string(default_line) +
                                   ") matches everything before it; move the default last");
        }
      } else if (!r.has_match) {
        default_route = &r;
        default_line = static_cast<size_t>(ref.name_mark.line + 1);
      }
    }
  }

  void walkPolicies(const Entry& pe, Settings& s) {
    std::vector<std::string> texts;
    std::vector<YAML::Node> nodes;
    if (!readStringList(pe, texts, &nodes)) {
      return;
    }
    for (size_t i = 0; i < texts.size(); ++i) {
      if (texts[i].empty()) {
        error(nodes[i].Mark(), "'policies[" + std::to_string(i) + "]' is empty");
        continue;
      }
      std::string abs = resolve(texts[i]);
      if (hermeticLoad()) {
        error(nodes[i].Mark(), "policy file '" + texts[i] + "' not looked at (hermetic test load)");
        continue;
      }
      std::error_code ec;
      fs::file_status st = fs::status(abs, ec);
      if (ec || !fs::exists(st)) {
        error(nodes[i].Mark(),
              "policy file '" + texts[i] + "' does not exist (looked for " + abs + ")");
      } else if (!fs::is_regular_file(st)) {
        error(nodes[i].Mark(),
              "policy file '" + texts[i] + "' is not a regular file (" + abs + ")");
      } else if (::access(abs.c_str(), R_OK) != 0) {
        error(nodes[i].Mark(), "policy file '" + texts[i] + "' is not readable (" + abs + ")");
      } else {
        s.policy_files.push_back(std::move(abs));
      }
    }
  }

  std::string file_;
  std::string source_;
  fs::path base_dir_;
  std::vector<Diagnostic> diags_;
  std::vector<RouteRef> route_refs_;
};

}  // namespace

LoadResult loadString(std::string_view yaml, const std::string& file) {
  try {
    Loader loader(file);
    return loader.run(yaml);
  } catch (...) {
    // Only allocation failure can get here; the loader catches everything else itself.
    LoadResult r;
    r.errors.push_back(Diagnostic{file, 0, 0, "out of memory while loading settings"});
    return r;
  }
}

bool readWholeFile(const std::string& path, std::string& out, std::string& reason) {
  out.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    reason = std::strerror(errno);
    return false;
  }
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      reason = std::strerror(errno);  // EISDIR for a directory
      ::close(fd);
      return false;
    }
  }
  ::close(fd);
  return true;
}

LoadResult loadFile(const std::string& path) {
  try {
    std::string text;
    std::string reason;
    if (!readWholeFile(path, text, reason)) {
      LoadResult r;
      r.errors.push_back(Diagnostic{path, 0, 0, "cannot read config file: " + reason});
      return r;
    }
    return loadString(text, path);
  } catch (...) {
    LoadResult r;
    r.errors.push_back(Diagnostic{path, 0, 0, "cannot read config file"});
    return r;
  }
}

}  // namespace gw::settings
