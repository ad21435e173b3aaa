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

// True when the request field goes upstream unchanged (byte-exact `line`).
bool forwardRequestField(const HeaderField& f, const ConnectionTokens& conn) noexcept;

// True when the response field goes to the client unchanged (Content-Length and
// Transfer-Encoding are dropped too: the proxy writes the framing it relays with).
bool forwardResponseField(const HeaderField& f, const ConnectionTokens& conn) noexcept;

}  // namespace gw::http
