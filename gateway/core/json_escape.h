#pragma once
// JSON string escaping (RFC 8259 §7), the one copy in gateway/: the JSON-RPC replies the
// gateway writes itself (mcp/), federation's merged lists and discovery answers
// (federation/), and the canonical form pins hash (pins/). `"` and `\` become \" and \\,
// U+0008/0009/000A/000C/000D become \b \t \n \f \r, every other control \u00XX (lowercase).
// The callers differ only in what the options say; each keeps its output byte for byte.

#include <string>
#include <string_view>

namespace gw::core {

struct JsonEscapeOptions {
  // DEL (0x7F) as \u007f rather than as itself.
  bool escape_del = false;
  // A byte that is not part of a valid UTF-8 sequence becomes \ufffd, so the output is valid
  // JSON whatever the input; false copies bytes >= 0x80 unchanged (for input the caller has
  // already validated).
  bool replace_invalid_utf8 = true;
};

// Appends `s` escaped, without quotes.
void appendJsonEscaped(std::string& out, std::string_view s, JsonEscapeOptions options = {});

// Appends `s` as a JSON string: escaped, between double quotes.
void appendJsonString(std::string& out, std::string_view s, JsonEscapeOptions options = {});

}  // namespace gw::core
