#pragma once
// simdjson-facing helpers shared by jsonrpc.cc, verifier.cc and schema.cc. Internal to
// gateway/mcp: not for other modules (it pulls in simdjson).

#include <simdjson.h>

#include <string>
#include <string_view>

#include "gateway/mcp/jsonrpc.h"

namespace gw::mcp {

// The JSON text of an id element: a string re-escaped with appendJsonEscaped, a number
// printed (integers as integers, doubles shortest round-trip). kNull for null and for
// any other type.
RequestId requestIdOf(simdjson::dom::element id);

// Appends 'value' for a human-readable message: at most `max_bytes` bytes of it (cut at a
// UTF-8 boundary, "..." marks a cut), JSON-escaped, between single quotes.
void appendQuotedValue(std::string& out, std::string_view value, size_t max_bytes = 64);

}  // namespace gw::mcp
