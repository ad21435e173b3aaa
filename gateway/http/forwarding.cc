// Hop-by-hop filtering for the canonical heads the proxy writes (see forwarding.h).

#include "gateway/http/forwarding.h"

#include "gateway/core/ascii.h"

namespace gw::http {

void ConnectionTokens::collect(const std::vector<HeaderField>& fields) noexcept {
  tokens_.clear();
  for (const HeaderField& f : fields) {
    if (!core::iequals(f.name, "connection")) {
      continue;
    }
    std::string_view v = f.value;
    while (!v.empty()) {
      const size_t comma = v.find(',');
      const std::string_view token = core::trimOws(v.substr(0, comma));
      if (!token.empty()) {
        // Bounded by the head limits (at most max_head_bytes / 2 tokens); the vector's
        // capacity is kept across requests.
        tokens_.push_back(token);
      }
      if (comma == std::string_view::npos) {
        break;
      }
      v.remove_prefix(comma + 1);
    }
  }
}

bool ConnectionTokens::contains(std::string_view name) const noexcept {
  for (std::string_view t : tokens_) {
    if (core::iequals(t, name)) {
      return true;
    }
  }
  return false;
}

bool isHopByHop(std::string_view name) noexcept {
  switch (name.size()) {
    case 2:
      return core::iequals(name, "te");
    case 7:
      return core::iequals(name, "trailer") || core::iequals(name, "upgrade");
    case 10:
      return core::iequals(name, "connection") || core::iequals(name, "keep-alive");
    case 16:
      return core::iequals(name, "proxy-connection");
    case 17:
      return core::iequals(name, "transfer-encoding");
    case 18:
      return core::iequals(name, "proxy-authenticate");
    case 19:
      return core::iequals(name, "proxy-authorization");
    default:
      return false;
  }
}

namespace {

// Lower-case names compared with `_` read as `-` in `name` (targets contain no `_`).
bool dashedEquals(std::string_view name, std::string_view lower) noexcept {
  if (name.size() != lower.size()) {
    return false;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i] == '_' ? '-' : core::toLowerAscii(name[i]);
    if (c != lower[i]) {
      return false;
    }
  }
  return true;
}

bool dashedStartsWith(std::string_view name, std::string_view lower) noexcept {
  return name.size() >= lower.size() && dashedEquals(name.substr(0, lower.size()), lower);
}

constexpr std::string_view kProtected[] = {
    "content-length", "transfer-encoding",
    "host",           "authorization",
    "cookie",         "expect",
    "content-type",   "content-encoding",
    "origin",         "mcp-protocol-version",
    "forwarded",      "x-real-ip",
};
constexpr std::string_view kProtectedPrefixes[] = {"mcp-", "x-forwarded-"};
constexpr std::string_view kHopByHop[] = {
    "connection", "keep-alive", "proxy-connection",   "te",
    "trailer",    "upgrade",    "proxy-authenticate", "proxy-authorization",
};

// `name` (either spelling) is a protected field.
bool protectedDashed(std::string_view name) noexcept {
  for (std::string_view p : kProtected) {
    if (dashedEquals(name, p)) {
      return true;
    }
  }
  for (std::string_view p : kProtectedPrefixes) {
    if (dashedStartsWith(name, p)) {
      return true;
    }
  }
  return false;
}

// `Mcp-Param-{Name}` spelled with dashes: `{Name}` comes from an `x-mcp-header` annotation,
// whose names may contain `_` (spec: token characters), so a `_` after this prefix is the
// parameter's own name, not an alias.
bool isParamField(std::string_view name) noexcept {
  constexpr std::string_view kParam = "mcp-param-";
  return name.size() > kParam.size() && core::iequals(name.substr(0, kParam.size()), kParam);
}

}  // namespace

bool isProtectedField(std::string_view name) noexcept {
  if (isParamField(name)) {
    return true;
  }
  if (name.find('_') != std::string_view::npos) {
    return false;  // the real fields have no `_` (an alias is caught by isUnderscoreAlias)
  }
  return protectedDashed(name);
}

bool isUnderscoreAlias(std::string_view name) noexcept {
  if (name.find('_') == std::string_view::npos || isParamField(name)) {
    return false;
  }
  if (protectedDashed(name)) {
    return true;
  }
  for (std::string_view p : kHopByHop) {
    if (dashedEquals(name, p)) {
      return true;
    }
  }
  return false;
}

bool forwardRequestField(const HeaderField& f, const ConnectionTokens& conn) noexcept {
  if (isHopByHop(f.name) || core::iequals(f.name, "content-length") ||
      core::iequals(f.name, "expect")) {
    return false;
  }
  return !conn.contains(f.name);
}

bool forwardResponseField(const HeaderField& f, const ConnectionTokens& conn) noexcept {
  if (isHopByHop(f.name) || core::iequals(f.name, "content-length")) {
    return false;
  }
  return !conn.contains(f.name);
}

// ---- client address fields ------------------------------------------------------------

namespace {

// Header-name folding for client address fields: ASCII case and `_` versus `-`.
constexpr char foldName(char c) {
  c = core::toLowerAscii(c);
  return c == '_' ? '-' : c;
}

bool foldedEquals(std::string_view name, std::string_view lower) noexcept {
  if (name.size() != lower.size()) {
    return false;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    if (foldName(name[i]) != lower[i]) {
      return false;
    }
  }
  return true;
}

bool foldedStartsWith(std::string_view name, std::string_view lower) noexcept {
  return name.size() >= lower.size() && foldedEquals(name.substr(0, lower.size()), lower);
}

bool anyContains(std::span<const core::Cidr> trusted, const core::IpAddress& ip) noexcept {
  for (const core::Cidr& c : trusted) {
    if (c.contains(ip)) {
      return true;
    }
  }
  return false;
}

// ":1".. ":65535" (an empty `rest` is also fine: no port).
bool validPortSuffix(std::string_view rest) noexcept {
  if (rest.empty()) {
    return true;
  }
  if (rest.size() < 2 || rest.size() > 6 || rest[0] != ':') {
    return false;
  }
  unsigned port = 0;
  for (char c : rest.substr(1)) {
    if (c < '0' || c > '9') {
      return false;
    }
    port = port * 10 + static_cast<unsigned>(c - '0');
  }
  return port <= 65535;
}

}  // namespace

ClientAddressField clientAddressField(std::string_view name) noexcept {
  if (name.empty()) {
    return ClientAddressField::kNone;
  }
  const char first = foldName(name[0]);
  if (first != 'x' && first != 'f') {
    return ClientAddressField::kNone;  // the common case: one comparison
  }
  ClientAddressField kind = ClientAddressField::kNone;
  if (foldedEquals(name, "x-forwarded-for")) {
    kind = ClientAddressField::kXForwardedFor;
  } else if (foldedEquals(name, "x-forwarded-proto")) {
    kind = ClientAddressField::kXForwardedProto;
  } else if (foldedEquals(name, "forwarded") || foldedEquals(name, "x-real-ip") ||
             (name.size() > 12 && foldedStartsWith(name, "x-forwarded-"))) {
    kind = ClientAddressField::kOther;
  } else {
    return ClientAddressField::kNone;
  }
  if (name.find('_') != std::string_view::npos) {
    return ClientAddressField::kUnderscored;
  }
  return kind;
}

bool isTrustedPeer(std::string_view addr, std::span<const core::Cidr> trusted) noexcept {
  if (trusted.empty()) {
    return false;
  }
  core::IpAddress ip;
  return core::parseIp(addr, ip) && anyContains(trusted, ip);
}

bool replacedByForwarding(const HeaderField& f, bool peer_trusted) noexcept {
  const ClientAddressField kind = clientAddressField(f.name);
  if (kind == ClientAddressField::kNone) {
    return false;
  }
  if (!peer_trusted) {
    return true;
  }
  return kind == ClientAddressField::kXForwardedFor || kind == ClientAddressField::kUnderscored;
}

void addClientAddressFields(std::vector<Field>& out, std::string& xff,
                            const std::vector<HeaderField>& fields, std::string_view peer,
                            bool peer_trusted, std::string_view scheme) {
  bool has_proto = false;
  xff.clear();
  if (peer_trusted) {
    for (const HeaderField& f : fields) {
      const ClientAddressField kind = clientAddressField(f.name);
      if (kind == ClientAddressField::kXForwardedFor && !f.value.empty()) {
        xff.append(f.value).append(", ");
      } else if (kind == ClientAddressField::kXForwardedProto) {
        has_proto = true;
      }
    }
  }
  xff.append(peer);
  out.push_back(Field{"X-Forwarded-For", xff});
  if (!has_proto) {
    out.push_back(Field{"X-Forwarded-Proto", scheme});
  }
}

void appendClientAddressFields(std::string& out, const std::vector<HeaderField>& fields,
                               std::string_view peer, bool peer_trusted, std::string_view scheme) {
  std::vector<Field> pairs;
  std::string xff;
  addClientAddressFields(pairs, xff, fields, peer, peer_trusted, scheme);
  appendFields(out, pairs);
}

bool parseForwardedElement(std::string_view element, std::string_view& addr,
                           core::IpAddress& ip) noexcept {
  if (element.empty()) {
    return false;
  }
  if (element[0] == '[') {
    // "[v6]" or "[v6]:port" (RFC 3986 IP-literal; an IPv4 address is never bracketed).
    const size_t close = element.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    addr = element.substr(1, close - 1);
    return validPortSuffix(element.substr(close + 1)) && core::parseIp(addr, ip) && ip.v6;
  }
  const size_t colon = element.find(':');
  if (colon != std::string_view::npos && element.find(':', colon + 1) == std::string_view::npos) {
    // One colon: "a.b.c.d:port" (an IPv6 literal has at least two).
    addr = element.substr(0, colon);
    return validPortSuffix(element.substr(colon)) && core::parseIp(addr, ip) && !ip.v6;
  }
  addr = element;
  return core::parseIp(addr, ip);
}

std::string_view clientAddress(const std::vector<HeaderField>& fields, std::string_view peer,
                               std::span<const core::Cidr> trusted) noexcept {
  if (trusted.empty()) {
    return peer;
  }
  core::IpAddress ip;
  if (!core::parseIp(peer, ip) || !anyContains(trusted, ip)) {
    return peer;
  }
  std::string_view result = peer;  // the leftmost trusted address walked so far
  size_t walked = 0;
  for (size_t i = fields.size(); i-- > 0;) {
    if (clientAddressField(fields[i].name) != ClientAddressField::kXForwardedFor) {
      continue;
    }
    std::string_view rest = fields[i].value;
    while (true) {
      const size_t comma = rest.rfind(',');
      const std::string_view element =
          core::trimOws(comma == std::string_view::npos ? rest : rest.substr(comma + 1));
      if (++walked > kMaxForwardedElements) {
        return result;
      }
      if (!element.empty()) {
        std::string_view addr;
        if (!parseForwardedElement(element, addr, ip)) {
          return result;
        }
        if (!anyContains(trusted, ip)) {
          return addr;
        }
        result = addr;
      }
      if (comma == std::string_view::npos) {
        break;
      }
      rest = rest.substr(0, comma);
    }
  }
  return result;
}

}  // namespace gw::http
