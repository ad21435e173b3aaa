#pragma once
// Which request/response fields a proxy forwards (RFC 9110 §7.6.1). Hop-by-hop fields and
// every field named in Connection are dropped; so are Content-Length and Transfer-Encoding,
// which the proxy writes itself (exactly one Content-Length upstream), Expect (the gateway
// answers 100-continue itself). The client address fields (X-Forwarded-*, Forwarded,
// X-Real-IP) depend on whether the peer is a trusted proxy: see below.

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/cidr.h"
#include "gateway/http/message.h"
#include "gateway/http/serialize.h"

namespace gw::http {

// Connection tokens of one message (views into its head); bounded, no allocation beyond
// the reused vector.
class ConnectionTokens {
 public:
  void collect(const std::vector<HeaderField>& fields) noexcept;
  bool contains(std::string_view name) const noexcept;  // case-insensitive
  void clear() noexcept { tokens_.clear(); }

 private:
  std::vector<std::string_view> tokens_;
};

// Always hop-by-hop: Connection, Keep-Alive, Proxy-Connection, TE, Trailer,
// Transfer-Encoding, Upgrade, Proxy-Authenticate, Proxy-Authorization.
bool isHopByHop(std::string_view name) noexcept;

// Fields the gateway or the upstream relies on for framing, routing, credentials or client
// identity: Content-Length, Transfer-Encoding, Host, Authorization, Cookie, Expect,
// Content-Type, Content-Encoding, Origin, MCP-Protocol-Version, every Mcp-*, Forwarded,
// X-Real-IP and every X-Forwarded-*. A request whose Connection names one of them is
// rejected (400) rather than silently losing it (RFC 9110 §7.6.1 lets a sender strip any
// field this way; an attacker uses it to hide a field from the next hop).
bool isProtectedField(std::string_view name) noexcept;

// True when `name` contains `_` and, reading every `_` as `-` (case-insensitive), names a
// protected field (above) or a hop-by-hop field: `Content_Length`, `Transfer_Encoding`,
// `Mcp_Method`, `X_Forwarded_For`, `Proxy_Authorization`... Servers behind the gateway (CGI,
// WSGI, PHP, nginx with underscores_in_headers) fold `_` and `-` together, so such a field
// would be a second, unchecked copy of the real one. `X_Custom` is not affected.
bool isUnderscoreAlias(std::string_view name) noexcept;

// True when the request field goes upstream unchanged (byte-exact `line`).
bool forwardRequestField(const HeaderField& f, const ConnectionTokens& conn) noexcept;

// True when the response field goes to the client unchanged (Content-Length and
// Transfer-Encoding are dropped too: the proxy writes the framing it relays with).
bool forwardResponseField(const HeaderField& f, const ConnectionTokens& conn) noexcept;

// ---- client address fields (`trusted_proxies`) ---------------------------------------------
//
// The fields through which a client can claim an address or scheme: X-Forwarded-For,
// Forwarded (RFC 7239), X-Real-IP and the X-Forwarded-* family (Proto, Host, Port, Prefix,
// Server, Ssl, ...). Names compare case-insensitively and with `_` equal to `-`: CGI-style
// upstreams (PHP, WSGI, Rack) read `X_Forwarded_For` as HTTP_X_FORWARDED_FOR, the same
// variable as the real field, so an underscore spelling is the same claim.
//
// From a peer outside trusted_proxies every such field is dropped and the gateway writes
// `X-Forwarded-For: <peer>` and `X-Forwarded-Proto: <scheme>`. From a trusted peer the
// hyphenated fields are kept as sent, every X-Forwarded-For value (all fields, in order) is
// merged into one field with the peer appended, and X-Forwarded-Proto is added only when
// absent. Underscore spellings are dropped in both cases (no proxy writes them; one that
// arrives through a trusted proxy came from its client).

enum class ClientAddressField : uint8_t {
  kNone,             // not a client address field
  kXForwardedFor,    // exactly X-Forwarded-For (any case)
  kXForwardedProto,  // exactly X-Forwarded-Proto (any case)
  kOther,            // Forwarded, X-Real-IP, any other X-Forwarded-*
  kUnderscored,      // one of the above spelled with at least one `_`
};

// Which client address field `name` is (see above).
ClientAddressField clientAddressField(std::string_view name) noexcept;

// True when `addr` (an IP literal as the listener reports it, IPv4-mapped IPv6 included)
// is inside one of `trusted`. False for an empty list (without parsing) or unparsable text.
bool isTrustedPeer(std::string_view addr, std::span<const core::Cidr> trusted) noexcept;

// True when the request field is a client address field the caller must NOT copy as sent:
// appendClientAddressFields writes what replaces it.
bool replacedByForwarding(const HeaderField& f, bool peer_trusted) noexcept;

// Appends the gateway's client address fields (full lines, each ending in CRLF) to `out`:
// `X-Forwarded-For: [<incoming values>, ]<peer>` and, unless a trusted peer sent one,
// `X-Forwarded-Proto: <scheme>`. Only appends to the caller's string.
// The same as name/value pairs appended to `out`; the X-Forwarded-For value is built in
// `xff`, which must outlive the pairs.
void addClientAddressFields(std::vector<Field>& out, std::string& xff,
                            const std::vector<HeaderField>& fields, std::string_view peer,
                            bool peer_trusted, std::string_view scheme);
void appendClientAddressFields(std::string& out, const std::vector<HeaderField>& fields,
                               std::string_view peer, bool peer_trusted, std::string_view scheme);

// The most X-Forwarded-For elements clientAddress() looks at.
inline constexpr size_t kMaxForwardedElements = 64;

// The client address for rate-limit keys and the access log. With an untrusted peer (or an
// empty trusted list): `peer`. With a trusted peer: walk the X-Forwarded-For elements (every
// field, in order; comma lists) from the right, skipping empty elements and addresses in
// `trusted`; the first untrusted address is the client. An element that is not an address
// ends the walk, and so does reaching kMaxForwardedElements or the left end: the result is
// then the last (leftmost) trusted address walked, never anything left of it (as nginx's
// real_ip_recursive does). Elements may be `a.b.c.d`, `a.b.c.d:port`, an IPv6 literal,
// `[v6]` or `[v6]:port`; the returned view is the address alone, pointing into `fields`
// (the head bytes) or `peer`.
std::string_view clientAddress(const std::vector<HeaderField>& fields, std::string_view peer,
                               std::span<const core::Cidr> trusted) noexcept;

// Parses one X-Forwarded-For element (see clientAddress); `addr` is the address part.
bool parseForwardedElement(std::string_view element, std::string_view& addr,
                           core::IpAddress& ip) noexcept;

}  // namespace gw::http
