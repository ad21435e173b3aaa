#pragma once
// Which request/response fields a proxy forwards (RFC 9110 §7.6.1). Hop-by-hop fields and
// every field named in Connection are dropped; so are Content-Length and Transfer-Encoding,
// which the proxy writes itself (exactly one Content-Length upstream), Expect (the gateway
// answers 100-continue itself), and the proxy's own additions (X-Forwarded-For is appended,
// not replaced: the incoming value is kept and the client address added).

#include <string_view>
#include <vector>

#include "gateway/http/message.h"

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

}  // namespace gw::http
