#pragma once
// Host and authority rules (RFC 9112 §3.2, §3.2.2; RFC 9110 §7.2; RFC 3986 §3.2). Pure, no
// allocation, noexcept: the parser uses them to validate Host and an absolute-form target,
// the transport stage to match Host against mcp.allowed_hosts.
//
// What a valid Host / authority is here (stricter than RFC 3986's reg-name, as an edge for
// one MCP endpoint can afford): `host [ ":" port ]` where host is
//  - a name or IPv4 address: 1*( ALPHA / DIGIT / "-" / "." / "_" ), or
//  - an IPv6 literal in brackets: "[" 1*( HEXDIG / ":" / "." ) "]" with at least one ":";
// and port is 1 to 5 digits with a value in 1..65535. No userinfo, no comma list, no
// whitespace, no percent-encoding, no sub-delims, no empty host, no empty port.

#include <string>
#include <string_view>
#include <vector>

namespace gw::http {

struct HostPort {
  std::string_view host;  // with the brackets of an IPv6 literal
  std::string_view port;  // digits, "" when absent
};

// Splits and validates a Host value or an authority; false when it is not host[:port] as
// described above.
bool parseHostPort(std::string_view v, HostPort& out) noexcept;

// The authority of an absolute-form target ("http://a:8080/x?y" → "a:8080"), with its
// scheme's default port ("80" / "443"). False when the target is not absolute-form with an
// http or https scheme (case-insensitive).
struct AbsoluteTarget {
  std::string_view authority;     // between "//" and the first "/", "?" or the end
  std::string_view default_port;  // "80" for http, "443" for https
};
bool splitAbsoluteTarget(std::string_view target, AbsoluteTarget& out) noexcept;

// True when `host` (a valid Host value) names the same authority as the absolute-form
// target's: hosts equal ignoring ASCII case, ports equal where an absent port stands for
// the scheme's default (RFC 9110 §4.2.3: "http://a/" and "http://a:80/" are equivalent).
bool sameAuthority(const HostPort& target, std::string_view default_port,
                   const HostPort& host) noexcept;

// mcp.allowed_hosts: true when `host` (a Host value, validated by the parser; may be empty
// for HTTP/1.0) matches one of the host[:port] globs. An empty list allows every Host. `*`
// matches any run of characters; hosts compare ignoring ASCII case. A pattern without a port
// matches the host on any port (or none); a pattern with a port matches only a Host whose
// port matches it (`127.0.0.1:*` also matches `127.0.0.1`). IPv6 patterns are written in
// brackets (`[::1]`, `[::1]:8080`); a bare `::1` (more than one colon, no bracket) is read
// as `[::1]` without a port. A request without Host never matches a non-empty list.
bool hostAllowed(const std::vector<std::string>& patterns, std::string_view host) noexcept;

// Case-insensitive glob match (`*` = any run of characters, including none).
bool globMatchNoCase(std::string_view pattern, std::string_view s) noexcept;

}  // namespace gw::http
