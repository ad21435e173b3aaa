#pragma once
// The MCP header contract (spec items 38-56): reads MCP-Protocol-Version, Mcp-Method,
// Mcp-Name and every Mcp-Param-{Name} out of a parsed request head. Pure.
//
// Names are matched case-insensitively, values are case-sensitive and already OWS-trimmed
// by the HTTP parser. Rejected (→ 400/-32020):
//  - the same field twice, in any letter case (MCP-Protocol-Version, Mcp-Method, Mcp-Name,
//    or the same Mcp-Param-{Name});
//  - a comma list in MCP-Protocol-Version or Mcp-Method (no legitimate value has a comma;
//    Mcp-Name / Mcp-Param values may contain commas and are taken whole);
//  - an invalid sentinel in Mcp-Name or Mcp-Param-*;
//  - a plain (non-sentinel) value with obs-text (0x80-0xFF) or control characters in any of
//    them; Mcp-Method must be a non-empty run of visible ASCII;
//  - an `Mcp-Param-` field with an empty or non-token {Name}.
// More than `max_params` Mcp-Param-* fields → kTooManyParams (→ 431), counted before any
// value is looked at, so no sentinel is decoded for an oversized set (spec item 62).
// The original header bytes are untouched: the upstream always gets them as received.

#include <cstdint>
#include <string_view>
#include <vector>

#include "gateway/http/message.h"
#include "gateway/mcp/arena.h"

namespace gw::mcp {

struct McpValue {
  std::string_view raw;    // the header value as received (trimmed)
  std::string_view value;  // decoded (sentinel) or == raw (literal); never log unescaped
  bool sentinel = false;
};

struct McpParam {
  std::string_view name;  // {Name} as sent (after "Mcp-Param-")
  McpValue v;
};

struct McpHeaders {
  bool has_version = false;
  bool has_method = false;
  bool has_name = false;
  std::string_view version;
  std::string_view method;
  McpValue name;
  std::vector<McpParam> params;    // reused across requests
  bool has_session_id = false;     // Mcp-Session-Id present (never acted on in modern mode)
  bool has_last_event_id = false;  // Last-Event-ID present

  void clear() noexcept {
    has_version = has_method = has_name = has_session_id = has_last_event_id = false;
    version = method = {};
    name = {};
    params.clear();
  }
  // The param with this {Name} (case-insensitive), or nullptr.
  const McpParam* findParam(std::string_view param_name) const noexcept;
};

enum class ContractError : uint8_t {
  kNone,
  kDuplicate,
  kInvalidSentinel,
  kInvalidValue,
  kTooManyParams,  // more Mcp-Param-* fields than allowed (431)
};

inline constexpr uint32_t kDefaultMaxParams = 32;  // mcp.max_param_headers default

struct ContractResult {
  ContractError error = ContractError::kNone;
  std::string_view header;  // the offending header's name as sent (safe: a token)
  const char* reason = "";  // static text
};

ContractResult readMcpHeaders(const std::vector<http::HeaderField>& fields, ValueArena& arena,
                              McpHeaders& out, uint32_t max_params = kDefaultMaxParams) noexcept;

}  // namespace gw::mcp
