#pragma once
// The request id from the first bytes of a JSON-RPC body, without parsing the whole body:
// the gateway reads it when it forwards a buffered body, so a 502/504 it answers later can
// still echo the id (the body itself has gone to the upstream by then). Pure; no allocation
// beyond the id text itself.
//
// Best effort by design: only a top-level "id" member that lies wholly within `prefix` and
// is a number, a string or null is found. Anything else (no object, "id" past the prefix, a
// key spelled with escapes, malformed JSON) gives kAbsent, and the answer then carries
// "id": null, as for any body the gateway could not read.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/mcp/jsonrpc.h"

namespace gw::mcp {

// How many leading body bytes the proxy hands to scanIdPrefix.
inline constexpr size_t kIdScanBytes = 1024;

RequestId scanIdPrefix(std::string_view prefix) noexcept;

// Whether a JSON-RPC message prefix is a response: a top-level object (or, for a 2025-03-26
// batch, an array whose first element is one) with a "result" or "error" member before any
// "method" member, all within `prefix`. Best effort as scanIdPrefix: a message whose first
// members are too long to see past gives false. The proxy asks it of an SSE event's first
// bytes (sse::Framer::lastEventHead) to tell the answer from notifications.
bool looksLikeResponse(std::string_view prefix) noexcept;

// Whether two JSON-RPC answers are the same text apart from their "id" values: equal bytes,
// or one differing run that is, in both, the whole scalar value (a number, or a string
// without escapes) of an "id" member. What the proxy asks before it learns a tools/list
// answer again (its ids change with every request; its list mostly does not). Conservative:
// anything else — two differences, an id spelled with escapes, a difference that is not an
// "id" value — is "not the same" (the caller then parses). Reads each text at most twice,
// with memcmp. (SameAnswerMatcher with `b` fed whole.)
bool sameApartFromId(std::string_view a, std::string_view b) noexcept;

// sameApartFromId(seen, answer) with the answer fed piece by piece as it arrives, without
// keeping it: the proxy relays a tools/list answer and learns nothing when it is the one it
// learned last. `seen` must outlive the matcher's use.
class SameAnswerMatcher {
 public:
  void reset(std::string_view seen) noexcept;
  // The answer's next bytes. False when the answer can no longer be `seen` apart from its id;
  // that piece is then not taken (appendFed() gives the bytes before it).
  bool feed(std::string_view piece);
  // After the last piece: whether the answer was `seen` apart from its id.
  bool same() const noexcept;
  // Appends the answer's bytes fed so far (rebuilt from `seen` and its own id).
  void appendFed(std::string& out) const;
  // After same(): where the two ids differ — `seen`'s id is seen[start, seen_end), the
  // answer's is `id` at `start`. False when the answer is `seen` byte for byte.
  bool idRun(size_t& start, size_t& seen_end, std::string_view& id) const noexcept;

 private:
  enum class Phase : uint8_t { kEqual, kId, kAfter };
  std::string_view seen_;
  size_t fed_ = 0;  // answer bytes fed
  Phase phase_ = Phase::kEqual;
  size_t start_ = 0;     // kId, kAfter: where both ids start
  size_t seen_end_ = 0;  // where the seen id ends
  size_t diff_ = 0;      // the first difference
  std::string id_;       // the answer's bytes from start_: its id (and, in kId, what came so far)
};

}  // namespace gw::mcp
