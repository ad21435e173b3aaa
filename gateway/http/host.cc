// Host / authority validation and allowed_hosts matching (see host.h for the grammar).

#include "gateway/http/host.h"

#include "gateway/core/ascii.h"
#include "gateway/core/glob.h"
#include "gateway/core/hex.h"

namespace gw::http {

namespace {

constexpr bool isNameChar(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '.' || c == '_';
}

bool validPort(std::string_view p) noexcept {
  if (p.empty() || p.size() > 5) {
    return false;
  }
  unsigned value = 0;
  for (char c : p) {
    if (c < '0' || c > '9') {
      return false;
    }
    value = value * 10 + static_cast<unsigned>(c - '0');
  }
  return value >= 1 && value <= 65535;
}

bool validIpLiteral(std::string_view h) noexcept {
  // "[" 1*( HEXDIG / ":" / "." ) "]" with at least one ":".
  if (h.size() < 4 || h.front() != '[' || h.back() != ']') {
    return false;
  }
  bool colon = false;
  for (char c : h.substr(1, h.size() - 2)) {
    if (c == ':') {
      colon = true;
    } else if (c != '.' && core::hexValue(c) < 0) {
      return false;
    }
  }
  return colon;
}

// Splits a pattern into host glob and port glob (see hostAllowed).
HostPort splitPattern(std::string_view p) noexcept {
  if (!p.empty() && p.front() == '[') {
    const size_t close = p.find(']');
    if (close != std::string_view::npos && close + 1 < p.size() && p[close + 1] == ':') {
      return HostPort{p.substr(0, close + 1), p.substr(close + 2)};
    }
    return HostPort{p, {}};
  }
  const size_t colon = p.find(':');
  if (colon == std::string_view::npos) {
    return HostPort{p, {}};
  }
  if (p.find(':', colon + 1) != std::string_view::npos) {
    return HostPort{p, {}};  // bare IPv6: compared without the Host's brackets
  }
  return HostPort{p.substr(0, colon), p.substr(colon + 1)};
}

}  // namespace

bool parseHostPort(std::string_view v, HostPort& out) noexcept {
  out = HostPort{};
  if (v.empty()) {
    return false;
  }
  std::string_view host;
  std::string_view rest;
  if (v.front() == '[') {
    const size_t close = v.find(']');
    if (close == std::string_view::npos) {
      return false;
    }
    host = v.substr(0, close + 1);
    if (!validIpLiteral(host)) {
      return false;
    }
    rest = v.substr(close + 1);
  } else {
    size_t i = 0;
    while (i < v.size() && isNameChar(v[i])) {
      ++i;
    }
    if (i == 0) {
      return false;
    }
    host = v.substr(0, i);
    rest = v.substr(i);
  }
  if (!rest.empty()) {
    if (rest.front() != ':' || !validPort(rest.substr(1))) {
      return false;
    }
    out.port = rest.substr(1);
  }
  out.host = host;
  return true;
}

bool splitAbsoluteTarget(std::string_view target, AbsoluteTarget& out) noexcept {
  out = AbsoluteTarget{};
  std::string_view rest;
  if (core::istartsWith(target, "http://")) {
    rest = target.substr(7);
    out.default_port = "80";
  } else if (core::istartsWith(target, "https://")) {
    rest = target.substr(8);
    out.default_port = "443";
  } else {
    return false;
  }
  out.authority = rest.substr(0, rest.find_first_of("/?"));
  return true;
}

bool sameAuthority(const HostPort& target, std::string_view default_port,
                   const HostPort& host) noexcept {
  if (!core::iequals(target.host, host.host)) {
    return false;
  }
  const std::string_view tp = target.port.empty() ? default_port : target.port;
  const std::string_view hp = host.port.empty() ? default_port : host.port;
  return tp == hp;
}

bool globMatchNoCase(std::string_view pattern, std::string_view s) noexcept {
  return core::globMatch(
      pattern, s, [](char a, char b) { return core::toLowerAscii(a) == core::toLowerAscii(b); });
}

bool hostAllowed(const std::vector<std::string>& patterns, std::string_view host) noexcept {
  if (patterns.empty()) {
    return true;
  }
  HostPort hp;
  if (!parseHostPort(host, hp)) {
    return false;  // absent (HTTP/1.0) or not a host: nothing to vouch for it
  }
  for (const std::string& pattern : patterns) {
    const HostPort pp = splitPattern(pattern);
    std::string_view h = hp.host;
    if (pp.host.find(':') != std::string_view::npos && pp.host.front() != '[' && h.front() == '[') {
      h = h.substr(1, h.size() - 2);  // bare IPv6 pattern against a bracketed literal
    }
    if (!globMatchNoCase(pp.host, h)) {
      continue;
    }
    if (pp.port.empty()) {
      if (pattern.back() == ':') {
        continue;  // "host:" names no port: matches nothing
      }
      return true;  // no port in the pattern: any port
    }
    if (globMatchNoCase(pp.port, hp.port)) {
      return true;
    }
  }
  return false;
}

}  // namespace gw::http
