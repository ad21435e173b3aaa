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

  // The first field named `name` (lower case), or null.
  const std::string* field(std::string_view name) const noexcept;
};

enum class WholeResult : uint8_t { kNeedMore, kDone, kError };

// Reads the response at the start of `bytes` (everything received so far; `eof`: the peer
// closed). kNeedMore: call again with more bytes. kDone: `out` is complete. kError: `error`
// says why in a few words.
WholeResult readWholeResponse(std::string_view bytes, bool eof, size_t max_head, size_t max_body,
                              WholeResponse& out, std::string& error);

// The max-age of a Cache-Control value (RFC 9111 §5.2.2.1) in seconds, or nullopt when it
// has none (or a malformed one).
std::optional<int64_t> cacheMaxAge(std::string_view cache_control) noexcept;

}  // namespace gw::http
