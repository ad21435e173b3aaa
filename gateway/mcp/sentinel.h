#pragma once
// The base64 sentinel of MCP 2026-07-28 header values (spec items 48-53):
// `=?base64?` + standard base64 (RFC 4648 alphabet, `=` padding required) + `?=`.
// Prefix and suffix are exact and lowercase. A value without both markers is a literal.
// A value with both markers whose payload is not canonical padded base64, or whose decoded
// bytes are not valid UTF-8, is invalid (→ 400/-32020).

#include <cstdint>
#include <string>
#include <string_view>

#include "gateway/mcp/arena.h"

namespace gw::mcp {

enum class SentinelStatus : uint8_t { kLiteral, kDecoded, kInvalid };

struct SentinelResult {
  SentinelStatus status = SentinelStatus::kLiteral;
  std::string_view value;   // kLiteral: the input; kDecoded: bytes in the arena
  const char* reason = "";  // kInvalid: static text ("invalid base64", "not UTF-8", ...)
};

// Decodes `raw` (already OWS-trimmed). Decoded bytes are written to `arena`; an arena too
// small for them is reported as kInvalid with reason "header values too large".
SentinelResult decodeSentinel(std::string_view raw, ValueArena& arena) noexcept;

// True when `value` cannot be sent as a plain header value and must be encoded: non-ASCII,
// control characters (0x00-0x1F, 0x7F), leading/trailing SP/HTAB, or itself
// sentinel-shaped.
bool needsSentinel(std::string_view value) noexcept;

// `=?base64?...?=` form of value (for tests, tools and legacy header synthesis).
std::string encodeSentinel(std::string_view value);

}  // namespace gw::mcp
