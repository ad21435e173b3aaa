// settings/: the upstreams and routes of gateway.yaml, and the checks that need them all
// (a route names a known upstream; one default route, and last). See loader.h.

#include <algorithm>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/core/ascii.h"
#include "gateway/http/host.h"
#include "gateway/mcp/session.h"
#include "gateway/settings/loader.h"
#include "gateway/tls/tls.h"

namespace gw::settings {

namespace {

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
                                              "era",
                                              "session_secret",
                                              "tls",
                                              "headers",
                                              "auth",
                                              "health_check",
                                              "outlier_detection",
                                              "circuit_breaker",
                                              "retry"};
constexpr std::string_view kTlsKeys[] = {"ca", "server_name", "cert", "key"};
constexpr std::string_view kRouteKeys[] = {"name",  "match",  "upstream",    "upstreams",
                                           "names", "legacy", "verify_body", "forward_credentials"};
constexpr std::string_view kNames[] = {"keep", "prefix"};
constexpr std::string_view kMatchKeys[] = {"method", "name", "params", "headers"};
constexpr std::string_view kBalances[] = {"round_robin", "first_healthy"};
constexpr std::string_view kEras[] = {"auto", "modern", "legacy"};

// Request fields upstreams[].headers cannot set: hop-by-hop and framing fields (the gateway
// writes the framing and Host itself, per connection), and Expect (the gateway answers 100).
// Mcp-* (MCP-Protocol-Version among them) are checked apart: they are the client's request.
constexpr std::string_view kUnsettable[] = {
    "connection", "keep-alive", "transfer-encoding", "content-length",   "host",
    "te",         "trailer",    "upgrade",           "proxy-connection", "expect"};

std::string checkHeaderName(const std::string& path, const std::string& name) {
  if (!core::isToken(name)) {
    return "'" + path + "': '" + name +
           "' is not a header name (an HTTP token: letters, digits, '-', ...)";
  }
  if (core::istartsWith(name, "mcp-")) {
    return "'" + path + "': '" + name +
           "' cannot be set: Mcp-* and MCP-Protocol-Version fields describe the client's request";
  }
  for (std::string_view n : kUnsettable) {
    if (core::iequals(name, n)) {
      std::string msg = "'" + path + "': '" + name +
                        "' cannot be set: it is a hop-by-hop or framing field the gateway writes "
                        "itself";
      if (n == "host") {
        msg += " (use 'host_header')";
      }
      return msg;
    }
  }
  return {};
}

bool isVarStart(char c) {
  return std::isalpha(static_cast<unsigned char>(c)) || c == '_';
}

bool isVarChar(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// `text` with each ${NAME} replaced by the environment's value and each $$ by one $. False
// with `why` (which names a variable, never a value) on a lone '$', a malformed ${...}, or a
// variable that is unset or empty. `vars` gets the names expanded, for later messages.
bool expandEnv(std::string_view text, std::string& out, std::string& why,
               std::vector<std::string>& vars) {
  out.clear();
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (c != '$') {
      out += c;
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '$') {
      out += '$';
      ++i;
      continue;
    }
    if (i + 1 >= text.size() || text[i + 1] != '{') {
      why = "a '$' must start ${VAR} (write $$ for a literal '$')";
      return false;
    }
    const size_t close = text.find('}', i + 2);
    if (close == std::string_view::npos) {
      why = "'${' without a closing '}'";
      return false;
    }
    const std::string name(text.substr(i + 2, close - i - 2));
    if (name.empty() || !isVarStart(name[0]) || !std::all_of(name.begin(), name.end(), isVarChar)) {
      why = "'${" + name +
            "}' is not a variable name (letters, digits and '_', not starting with a digit)";
      return false;
    }
    const char* value = std::getenv(name.c_str());
    if (value == nullptr) {
      why = "environment variable '" + name + "' is not set";
      return false;
    }
    if (*value == '\0') {
      why = "environment variable '" + name + "' is empty";
      return false;
    }
    out += value;
    vars.push_back(name);
    i = close;
  }
  return true;
}

}  // namespace

int Settings::upstreamIndex(std::string_view name) const noexcept {
  for (size_t i = 0; i < upstreams.size(); ++i) {
    if (upstreams[i].name == name) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

void Loader::walkUpstreams(const Entry& ue, Settings& s) {
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
      } else if (e.key == "era") {
        std::string v;
        if (readEnum(e, kEras, v)) {
          u.era = v == "modern"   ? UpstreamEra::kModern
                  : v == "legacy" ? UpstreamEra::kLegacy
                                  : UpstreamEra::kAuto;
        }
      } else if (e.key == "session_secret") {
        readNonEmptyString(e, u.session_secret);
      } else if (e.key == "tls") {
        walkUpstreamTls(e, u);
      } else if (e.key == "headers") {
        readUpstreamHeaders(e, u.headers);
      } else if (e.key == "auth") {
        walkUpstreamAuth(e, u);
      } else if (e.key == "health_check") {
        walkHealthCheck(e, u);
      } else if (e.key == "outlier_detection") {
        walkOutlierDetection(e, u);
      } else if (e.key == "circuit_breaker") {
        walkCircuitBreaker(e, u);
      } else if (e.key == "retry") {
        walkRetry(e, u);
      }
    }
    if (u.auth) {
      for (const auto& [name, value] : u.headers) {
        if (core::iequals(name, "authorization")) {
          error(find(es, "headers")->key_node.Mark(),
                "'" + prefix +
                    "' has both 'auth' and a 'headers' entry for Authorization; "
                    "keep one (auth makes the Authorization this upstream gets)");
        }
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
      s.any_upstream_auth = s.any_upstream_auth || u.madeCredential();
      s.upstreams.push_back(std::move(u));
      upstream_marks_.push_back(valueMark(*find(es, "name")));
    }
  }
}

// upstreams[].tls: { ca, server_name, cert, key } — files relative to this config; the client
// context is built here, so a missing file, a bad CA or a key that does not fit its
// certificate is a load error (and a reload that brings one keeps the running snapshot).
void Loader::walkUpstreamTls(const Entry& te, Upstream& u) {
  UpstreamTls t;
  bool ok = true;
  const Entry* cert = nullptr;
  std::vector<Entry> es;  // `cert` points into it
  if (!te.value.IsNull()) {
    es = entries(te.value, te.key_node.Mark(), kTlsKeys, te.path);
    for (const Entry& e : es) {
      if (e.key == "server_name") {
        http::HostPort hp;
        ok = readNonEmptyString(e, t.server_name) && ok;
        if (ok && (!http::parseHostPort(t.server_name, hp) || !hp.port.empty() ||
                   hp.host.front() == '[')) {
          error(valueMark(e), "'" + e.path + "': '" + t.server_name +
                                  "' is not a host name or IPv4 address (no port)");
          ok = false;
        }
        continue;
      }
      std::string& dst = e.key == "ca" ? t.ca : e.key == "cert" ? t.cert : t.key;
      cert = e.key == "cert" ? &e : cert;
      if (readNonEmptyString(e, dst)) {
        dst = resolve(dst);
      } else {
        ok = false;
      }
    }
  }
  if (!ok) {
    return;
  }
  if (hermeticLoad()) {
    u.tls = std::move(t);  // files not read (hermetic test load)
    return;
  }
  std::string why;
  t.ctx = tls::makeClientContext(t.ca, t.cert, t.key, why);
  if (!t.ctx) {
    error(cert != nullptr ? cert->key_node.Mark() : te.key_node.Mark(),
          "'" + te.path + "': " + why);
    return;
  }
  u.tls = std::move(t);
}

// upstreams[].host_header: `endpoint`, `client`, or a literal host[:port] (RFC 9110 §7.2).
void Loader::readHostHeader(const Entry& e, Upstream& u) {
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

// upstreams[].headers: `{ Name: "value with ${VAR}", ... }`. Messages name variables, never
// a value (they may hold secrets).
void Loader::readUpstreamHeaders(const Entry& e,
                                 std::vector<std::pair<std::string, std::string>>& out) {
  static constexpr config::NameRule kRule{"header names to values", &checkHeaderName, true};
  std::vector<std::pair<std::string, std::string>> pairs;
  std::vector<YAML::Node> values;
  readNameMap(e, kRule, pairs, &values);
  for (size_t i = 0; i < pairs.size(); ++i) {
    auto& [name, text] = pairs[i];
    const std::string path = e.path + "." + name;
    std::string value;
    std::string why;
    std::vector<std::string> vars;
    if (!expandEnv(text, value, why, vars)) {
      error(values[i].Mark(), "'" + path + "': " + why);
      continue;
    }
    const auto bad = std::find_if(value.begin(), value.end(), [](char c) {
      const auto b = static_cast<unsigned char>(c);
      return (b < 0x20 && b != '\t') || b == 0x7f;
    });
    if (bad != value.end()) {
      const auto b = static_cast<unsigned char>(*bad);
      const char* what = b == '\r'   ? "CR"
                         : b == '\n' ? "LF"
                         : b == 0    ? "NUL"
                                     : "a control character";
      std::string from;
      for (const std::string& v : vars) {
        from += (from.empty() ? " (after expanding ${" : ", ${") + v + "}";
      }
      if (!from.empty()) {
        from += ")";
      }
      error(values[i].Mark(),
            "'" + path + "': the value" + from + " contains " + what +
                "; a header value cannot hold CR, LF, NUL or other control characters" +
                (vars.empty() ? "" : " (a value read from a file with its trailing newline?)"));
      continue;
    }
    out.emplace_back(std::move(name), std::move(value));
  }
}

void Loader::walkMatch(const Entry& me, RouteMatch& m) {
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
void Loader::readGlobMap(const Entry& e, std::vector<std::pair<std::string, std::string>>& out) {
  static constexpr config::NameRule kRule{
      "names to patterns",
      [](const std::string& path, const std::string& name) {
        return core::isToken(name)
                   ? std::string()
                   : "'" + path + "': names must be HTTP tokens (letters, digits, '-', ...)";
      },
      true};
  readNameMap(e, kRule, out);
}

void Loader::walkRoutes(const Entry& re, Settings& s) {
  if (!re.value.IsSequence()) {
    error(valueMark(re), "'routes' must be a list");
    return;
  }
  size_t i = 0;
  for (const YAML::Node& node : re.value) {
    std::string prefix = re.path + "[" + std::to_string(i++) + "]";
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
      } else if (e.key == "upstreams") {
        std::vector<std::string> names;
        if (readStringList(e, names, &ref.upstream_nodes, true)) {
          if (names.empty()) {
            error(valueMark(e), "'" + e.path + "' must name at least one upstream");
          }
          for (size_t k = 0; k < names.size(); ++k) {
            for (size_t j = 0; j < k; ++j) {
              if (names[j] == names[k]) {
                error(ref.upstream_nodes[k].Mark(),
                      "'" + e.path + "' names upstream '" + names[k] + "' twice");
              }
            }
          }
          r.upstreams = std::move(names);
        }
      } else if (e.key == "names") {
        size_t index = 0;
        if (readChoice(e, kNames, index)) {
          r.names = index == 0 ? FederationNames::kKeep : FederationNames::kPrefix;
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
    const Entry* one = find(es, "upstream");
    const Entry* many = find(es, "upstreams");
    if (one == nullptr && many == nullptr) {
      error(node.Mark(), "'" + prefix + "' (route '" + r.name +
                             "') has no 'upstream' (or 'upstreams' to federate)");
    } else if (one != nullptr && many != nullptr) {
      error(valueMark(*many),
            "route '" + r.name + "' has both 'upstream' and 'upstreams'; give exactly one of them");
    }
    if (const Entry* names = find(es, "names"); names != nullptr && many == nullptr) {
      error(valueMark(*names),
            "'" + names->path + "' applies only to a federated route ('upstreams')");
    }
    if (const Entry* leg = find(es, "legacy"); leg != nullptr && many != nullptr && r.legacy) {
      error(valueMark(*leg), "route '" + r.name +
                                 "' is a legacy passthrough route and cannot be federated: legacy "
                                 "sessions live on one server (use 'upstream')");
    }
    s.routes.push_back(std::move(r));
    route_refs_.push_back(ref);
  }
}

// Checks that need every upstream and route: references, the default route's position.
void Loader::checkRoutes(Settings& s, bool warn_unused) {
  const Route* default_route = nullptr;
  size_t default_line = 0;
  for (size_t i = 0; i < s.routes.size() && i < route_refs_.size(); ++i) {
    Route& r = s.routes[i];
    const RouteRef& ref = route_refs_[i];
    for (size_t k = 0; k < r.upstreams.size() && k < ref.upstream_nodes.size(); ++k) {
      int idx = s.upstreamIndex(r.upstreams[k]);
      if (idx < 0) {
        std::string msg =
            "route '" + r.name + "' names unknown upstream '" + r.upstreams[k] + "' in 'upstreams'";
        std::vector<std::string_view> names;
        for (const Upstream& u : s.upstreams) {
          names.push_back(u.name);
        }
        config::appendDidYouMean(msg, r.upstreams[k], names);
        error(ref.upstream_nodes[k].Mark(), std::move(msg));
        r.upstream_indexes.clear();
        break;
      }
      r.upstream_indexes.push_back(static_cast<size_t>(idx));
    }
    if (!r.upstream_indexes.empty() && r.upstream_indexes.size() == r.upstreams.size()) {
      r.upstream = r.upstreams.front();
      r.upstream_index = r.upstream_indexes.front();
    } else {
      r.upstream_indexes.clear();
    }
    if (ref.has_upstream) {
      int idx = s.upstreamIndex(r.upstream);
      if (idx < 0) {
        std::string msg = "route '" + r.name + "' names unknown upstream '" + r.upstream + "'";
        std::vector<std::string_view> names;
        for (const Upstream& u : s.upstreams) {
          names.push_back(u.name);
        }
        config::appendDidYouMean(msg, r.upstream, names);
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
  if (warn_unused) {
    warnUnusedUpstreams(s);
  }
}

// An upstream no route names, in `upstream:` or in a federated route's `upstreams:`, gets no
// request: most often a route was forgotten or names another upstream by mistake. Only a
// warning, so a file can keep a spare upstream ready for a later route.
void Loader::warnUnusedUpstreams(Settings& s) {
  warnUnusedUpstreams(s, {&s});
}

// The same over every server's routes (`users`): an upstream is used when any server's
// route names it.
void Loader::warnUnusedUpstreams(Settings& s, const std::vector<const Settings*>& users) {
  std::vector<bool> used(s.upstreams.size(), false);
  for (const Settings* u : users) {
    for (const Route& r : u->routes) {
      for (const std::string& name : r.upstreams) {
        if (int idx = s.upstreamIndex(name); idx >= 0) {
          used[static_cast<size_t>(idx)] = true;
        }
      }
      if (int idx = s.upstreamIndex(r.upstream); idx >= 0) {
        used[static_cast<size_t>(idx)] = true;
      }
    }
  }
  for (size_t i = 0; i < s.upstreams.size() && i < upstream_marks_.size(); ++i) {
    if (!used[i]) {
      const YAML::Mark& m = upstream_marks_[i];
      s.warnings.push_back(Diagnostic{file(), m.is_null() ? 0 : m.line + 1,
                                      m.is_null() ? 0 : m.column + 1,
                                      "upstream '" + s.upstreams[i].name +
                                          "' is not used by any route (none names it in "
                                          "'upstream' or 'upstreams'): it gets no requests"});
    }
  }
}

}  // namespace gw::settings
