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

}  // namespace gw::mcp
