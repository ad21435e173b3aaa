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
// with memcmp.
bool sameApartFromId(std::string_view a, std::string_view b) noexcept;

}  // namespace gw::mcp
