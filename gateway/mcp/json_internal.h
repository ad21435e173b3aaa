#pragma once
// simdjson-facing helpers shared by jsonrpc.cc, verifier.cc and schema.cc. Internal to
// gateway/mcp: not for other modules (it pulls in simdjson).

#include <simdjson.h>

#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/mcp/jsonrpc.h"

namespace gw::mcp {

// The JSON text of an id element: a string re-escaped with appendJsonEscaped, an integer
// printed. A number with a fraction or an exponent is echoed exactly as written (`1.50`,
// `1e3`): its text is read from `padded_doc`, the document `id` is the top-level "id" of
// (it needs simdjson::SIMDJSON_PADDING readable bytes after it); with an empty padded_doc
// it is printed shortest round-trip. kNull for null and for any other type.
RequestId requestIdOf(simdjson::dom::element id, std::string_view padded_doc = {});

// The raw text (trailing whitespace trimmed) of the value at `prefix` + `rest` (object keys
// compared after unescaping; the first match wins, so call it on documents already checked
// for duplicate keys) in the JSON document `padded_doc`, which must be valid JSON and have
// simdjson::SIMDJSON_PADDING readable bytes after it. False when a step is missing or not
// an object. A second, on-demand pass: only for the rare values the DOM does not keep
// exactly (numbers with a fraction or exponent).
bool rawMemberText(std::string_view padded_doc, std::span<const std::string_view> prefix,
                   std::span<const std::string> rest, std::string_view& out);

// The structural checks of every body the gateway reads: nesting at most `max_depth` (the
// root container is depth 1) and no two keys of one object equal after unescaping, at any
// level. `dup_key` views the parser's string buffer (valid until its next parse).
struct StructureCheck {
  bool ok = true;
  bool too_deep = false;
  std::string_view dup_key;
  size_t dup_depth = 0;  // depth of the object holding the duplicate
};
StructureCheck checkStructure(simdjson::dom::element root, size_t max_depth);

// The element at `path` (object keys, one per step) inside `args` — an x-mcp-header
// annotation's argument. False when a step is missing or an intermediate is not an object.
bool argumentAt(simdjson::dom::object args, const std::vector<std::string>& path,
                simdjson::dom::element& out);

// Appends 'value' for a human-readable message: at most `max_bytes` bytes of it (cut at a
// UTF-8 boundary, "..." marks a cut), JSON-escaped, between single quotes.
void appendQuotedValue(std::string& out, std::string_view value, size_t max_bytes = 64);

}  // namespace gw::mcp
