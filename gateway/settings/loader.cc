// settings/: gateway.yaml → a validated, immutable Settings snapshot. The document is walked
// with config::Walker (config/yaml_walker.h), which catches yaml-cpp's exceptions and turns
// them into Diagnostics; nothing here throws to callers. The walk never stops at the first
// problem; every error is collected with file:line:column (1-based) and the snapshot is only
// produced when there are none. This file walks the top level, limits, mcp and policies;
// admin_auth.cc admin_auth (reading its token file); routes.cc the upstreams (their `headers`
// expanded from the environment) and routes; listen_tls.cc the `tls` block; servers.cc
// `servers`.

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/settings/loader.h"

namespace gw::settings {

namespace {

namespace fs = std::filesystem;

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
                                         "trusted_proxies",
                                         "federation",
                                         "admin_auth",
                                         "tls",
                                         "servers",
                                         "listeners",
                                         "readiness",
                                         "tracing"};
constexpr std::string_view kFederationKeys[] = {"separator", "list_timeout", "max_items"};
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
                                            "max_buffered_answer_bytes",
                                            "max_connections_per_client"};
constexpr std::string_view kMcpKeys[] = {"protocol_versions", "legacy",        "verify_body",
                                         "allowed_origins",   "allowed_hosts", "max_param_headers",
                                         "sse_keepalive"};
constexpr std::string_view kAccessLogKeys[] = {"path"};
constexpr std::string_view kLogLevels[] = {"trace", "debug", "info", "warn", "error", "off"};
constexpr std::string_view kLegacyModes[] = {"reject", "passthrough"};

constexpr uint32_t kMaxWorkers = 256;
constexpr uint32_t kMaxHeadersCeiling = 1000;
constexpr uint64_t kMinHeaderBytes = 1024;
constexpr uint64_t kMinHeaderLine = 256;
constexpr uint64_t kMaxHeaderBytes = 1024 * 1024;

}  // namespace

bool isLoopback(std::string_view ip) noexcept {
  static const core::Cidr kV4{core::IpAddress{false, {127}}, 8};  // contains() unmaps ::ffff:
  static const core::Cidr kV6{
      core::IpAddress{true, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}}, 128};
  core::IpAddress a;
  return core::parseIp(ip, a) && (kV4.contains(a) || kV6.contains(a));
}

Loader::Loader(std::string file, std::vector<Diagnostic>& errors)
    : config::Walker(errors, "the file") {
  std::error_code ec;
  fs::path abs = fs::absolute(fs::path(file), ec);
  if (ec) {
    abs = fs::path(file);
  }
  abs = abs.lexically_normal();
  source_ = abs.string();
  base_dir_ = abs.parent_path();
  setFile(std::move(file));
}

std::shared_ptr<Settings> Loader::run(std::string_view yaml) {
  auto s = std::make_shared<Settings>();
  s->source_file = source_;
  walk(yaml, [&](const YAML::Node& root) { walkTop(root, *s); });
  return s;
}

// A request path: starts with '/', no whitespace, controls, query or fragment.
bool Loader::readPath(const Entry& e, std::string& out) {
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

std::string Loader::resolve(const std::string& p) const {
  fs::path path(p);
  if (path.is_relative()) {
    path = base_dir_ / path;
  }
  return path.lexically_normal().string();
}

void Loader::walkTop(const YAML::Node& root, Settings& s) {
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
    } else if (e.key == "admin_auth") {
      walkAdminAuth(e, s);
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
    } else if (e.key == "readiness") {
      static constexpr std::string_view kReadiness[] = {"always", "any_upstream", "all_upstreams"};
      size_t i = 0;
      if (readChoice(e, kReadiness, i)) {
        s.readiness = static_cast<Settings::Readiness>(i);
      }
    } else if (e.key == "metrics") {
      for (const Entry& m : entries(e.value, e.key_node.Mark(), kMetricsKeys, e.path)) {
        readUint32(m, s.metrics_max_tool_names);
      }
    } else if (e.key == "rate_limit_headers") {
      readBool(e, s.rate_limit_headers);
    } else if (e.key == "trusted_proxies") {
      walkTrustedProxies(e, s);
    } else if (e.key == "federation") {
      walkFederation(e, s.federation);
    } else if (e.key == "tls") {
      walkTls(e, s);
    } else if (e.key == "tracing") {
      walkTracing(e, s);
    }
  }
  if (const Entry* listeners = find(top, "listeners")) {
    walkListeners(*listeners, top, s);
  }
  if (const Entry* servers = find(top, "servers")) {
    walkServers(*servers, top, s);  // after upstreams: its routes name them
  } else {
    checkRoutes(s);
  }
  if (s.listeners.empty()) {
    s.listeners.push_back(Listener{s.listen, s.tls, {}});  // `listen` (and `tls`) alone
  } else {
    checkListenerServers(s);
  }
  if (listen_e != nullptr && s.admin && s.admin->port != 0 && s.admin->port == s.listen.port &&
      s.admin->ip == s.listen.ip) {
    error(valueMark(*find(top, "admin")), "'admin' must not use the same address as 'listen'");
  }
  // Anything that can reach a non-loopback admin listener could read /config and probe API
  // keys through /explain: it needs admin_auth (an admin_auth with errors was reported).
  if (s.admin && find(top, "admin_auth") == nullptr && !isLoopback(s.admin->ip)) {
    std::string where = s.admin->text;
    if (s.admin->host != s.admin->ip) {
      where += " = " + s.admin->ip;  // a host name: what it resolved to decides
    }
    error(valueMark(*find(top, "admin")),
          "admin listens on " + where +
              " (not loopback) without admin_auth; set admin_auth.token_file or bind admin to "
              "127.0.0.1");
  }
}

void Loader::walkFederation(const Entry& fe, Federation& f) {
  for (const Entry& e : entries(fe.value, fe.key_node.Mark(), kFederationKeys, fe.path)) {
    if (e.key == "separator") {
      std::string sep;
      if (readNonEmptyString(e, sep)) {
        const bool token = std::all_of(sep.begin(), sep.end(), [](char c) {
          return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
        });
        if (!token || sep.size() > 8) {
          error(valueMark(e), "'" + e.path +
                                  "' must be 1 to 8 visible ASCII characters (no quote or "
                                  "backslash), not '" +
                                  sep + "'");
        } else {
          f.separator = std::move(sep);
        }
      }
    } else if (e.key == "list_timeout") {
      Duration d{};
      if (readDuration(e, d)) {
        if (d.count() <= 0) {
          error(valueMark(e), "'" + e.path + "' must be more than 0");
        } else {
          f.list_timeout = d;
        }
      }
    } else if (e.key == "max_items") {
      uint64_t v = 0;
      if (readUint(e, 1000000, v)) {
        if (v == 0) {
          error(valueMark(e), "'" + e.path + "' must be at least 1");
        } else {
          f.max_items = v;
        }
      }
    }
  }
}

void Loader::walkLimits(const Entry& le, Limits& l) {
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
    } else if (e.key == "max_buffered_body_bytes" || e.key == "max_buffered_answer_bytes") {
      uint64_t v = 0;
      if (readSize(e, v)) {
        if (v == 0) {
          error(valueMark(e), "'" + e.path + "' must be at least 1 byte");
        } else {
          (e.key == "max_buffered_body_bytes" ? l.max_buffered_body_bytes
                                              : l.max_buffered_answer_bytes) = v;
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

void Loader::walkMcp(const Entry& me, Mcp& m) {
  walkMcp(me, m, kMcpKeys);
}

void Loader::walkMcp(const Entry& me, Mcp& m, Keys allowed) {
  for (const Entry& e : entries(me.value, me.key_node.Mark(), allowed, me.path)) {
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
void Loader::walkAllowedHosts(const Entry& e, Mcp& m) {
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

void Loader::walkTrustedProxies(const Entry& e, Settings& s) {
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

void Loader::walkPolicies(const Entry& pe, Settings& s) {
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
      error(nodes[i].Mark(), "policy file '" + texts[i] + "' is not a regular file (" + abs + ")");
    } else if (::access(abs.c_str(), R_OK) != 0) {
      error(nodes[i].Mark(), "policy file '" + texts[i] + "' is not readable (" + abs + ")");
    } else {
      s.policy_files.push_back(std::move(abs));
    }
  }
}

LoadResult loadString(std::string_view yaml, const std::string& file) {
  try {
    LoadResult r;
    Loader loader(file, r.errors);
    std::shared_ptr<Settings> s = loader.run(yaml);
    if (r.errors.empty()) {
      r.settings = std::move(s);
    }
    std::stable_sort(r.errors.begin(), r.errors.end(),
                     [](const Diagnostic& a, const Diagnostic& b) {
                       return std::pair(a.line, a.column) < std::pair(b.line, b.column);
                     });
    return r;
  } catch (...) {
    // Only allocation failure can get here; the walker catches everything else itself.
    LoadResult r;
    r.errors.push_back(Diagnostic{file, 0, 0, "out of memory while loading settings"});
    return r;
  }
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
