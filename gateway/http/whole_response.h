#pragma once
// http/: a small HTTP/1.1 response read whole into one buffer — for documents the gateway
// fetches for itself (the JWKS of identity.jwt.jwks_url), never for relayed traffic. Pure: the
// caller appends the bytes it read and asks again. The body is framed by chunked
// (Transfer-Encoding), Content-Length, or the close; a response with both, two different
// Content-Lengths, another transfer coding, obs-fold, or a head or body over the limits is an
// error.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gw::http {

struct WholeResponse {
  int status = 0;
  std::vector<std::pair<std::string, std::string>> fields;  // names lower-cased, in order
  std::string body;                                         // de-chunked
  // On kDone: how many bytes at the start of `bytes` this response took (head, body and
  // chunked framing); what follows belongs to the next response on the connection.
  size_t consumed = 0;

  // The first field named `name` (lower case), or null.
  const std::string* field(std::string_view name) const noexcept;
};

// kTooLarge: the head or the body is over its limit (an error like kError, told apart so that
// a caller can count it apart).
enum class WholeResult : uint8_t { kNeedMore, kDone, kError, kTooLarge };

// Reads the response at the start of `bytes` (everything received so far; `eof`: the peer
// closed). kNeedMore: call again with more bytes. kDone: `out` is complete (a 1xx is returned
// as it is, head only: the caller skips `out.consumed` bytes and asks again). kError,
// kTooLarge: `error` says why in a few words. `no_body`: the request was HEAD, so the response
// ends with its head whatever its fields say (as a 1xx, 204 or 304 always does).
WholeResult readWholeResponse(std::string_view bytes, bool eof, size_t max_head, size_t max_body,
                              WholeResponse& out, std::string& error, bool no_body = false);

// The max-age of a Cache-Control value (RFC 9111 §5.2.2.1) in seconds, or nullopt when it
// has none (or a malformed one).
std::optional<int64_t> cacheMaxAge(std::string_view cache_control) noexcept;

}  // namespace gw::http
