// The MCP header contract (spec items 38-56): the filters/ MCP stage calls readMcpHeaders
// on every parsed request head before routing, policy and rate limits look at the values.
// No heap allocation besides growing the reused params vector; decoded sentinel values are
// written into the per-connection ValueArena.

#include "gateway/mcp/contract.h"

#include "gateway/core/ascii.h"
#include "gateway/mcp/sentinel.h"

namespace gw::mcp {

namespace {

constexpr std::string_view kVersionHeader = "MCP-Protocol-Version";
constexpr std::string_view kMethodHeader = "Mcp-Method";
constexpr std::string_view kNameHeader = "Mcp-Name";
constexpr std::string_view kParamPrefix = "Mcp-Param-";
constexpr std::string_view kSessionHeader = "Mcp-Session-Id";
constexpr std::string_view kLastEventHeader = "Last-Event-ID";

ContractResult fail(ContractError e, std::string_view header, const char* reason) {
  return ContractResult{e, header, reason};
}

// MCP-Protocol-Version and Mcp-Method: no sentinel (item 52), so the value must already be
// a non-empty run of visible ASCII (0x21-0x7E). A comma is visible but means a list, which
// no legitimate value is; it gets its own reason.
const char* checkToken(std::string_view v) {
  if (v.empty()) {
    return "empty value";
  }
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if (c == ',') {
      return "comma list";
    }
    if (c < 0x21 || c > 0x7e) {
      return "invalid character";
    }
  }
  return nullptr;
}

// Plain (non-sentinel) Mcp-Name / Mcp-Param value: SP and visible ASCII only. HTAB, other
// controls, DEL and obs-text would have had to be sent as a sentinel (item 49).
bool isPlainValue(std::string_view v) {
  for (char ch : v) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c > 0x7e) {
      return false;
    }
  }
  return true;
}

// Reads a Mcp-Name / Mcp-Param value: a sentinel is decoded into the arena, a literal is
// checked for plain characters. Returns a non-kNone error for a bad value.
ContractResult readValue(const http::HeaderField& f, ValueArena& arena, McpValue& out) {
  const SentinelResult r = decodeSentinel(f.value, arena);
  switch (r.status) {
    case SentinelStatus::kInvalid:
      return fail(ContractError::kInvalidSentinel, f.name, r.reason);
    case SentinelStatus::kDecoded:
      out = McpValue{f.value, r.value, true};
      return {};
    case SentinelStatus::kLiteral:
      break;
  }
  if (!isPlainValue(f.value)) {
    return fail(ContractError::kInvalidValue, f.name, "invalid character in plain value");
  }
  out = McpValue{f.value, f.value, false};
  return {};
}

}  // namespace

const McpParam* McpHeaders::findParam(std::string_view param_name) const noexcept {
  for (const McpParam& p : params) {
    if (core::iequals(p.name, param_name)) {
      return &p;
    }
  }
  return nullptr;
}

ContractResult readMcpHeaders(const std::vector<http::HeaderField>& fields, ValueArena& arena,
                              McpHeaders& out, uint32_t max_params) noexcept {
  out.clear();
  // Spec item 62: an excessive set is refused before any value is decoded.
  uint32_t params = 0;
  for (const http::HeaderField& f : fields) {
    if (f.name.size() >= kParamPrefix.size() && core::istartsWith(f.name, kParamPrefix) &&
        ++params > max_params) {
      return fail(ContractError::kTooManyParams, f.name, "too many Mcp-Param headers");
    }
  }
  for (const http::HeaderField& f : fields) {
    const std::string_view name = f.name;
    if (name.size() < 8 || core::toLowerAscii(name[0]) != 'm') {
      // Cheap skip for the common non-MCP header; Last-Event-ID is the one exception.
      if (core::iequals(name, kLastEventHeader)) {
        out.has_last_event_id = true;
      }
      continue;
    }
    if (core::istartsWith(name, kParamPrefix)) {
      const std::string_view pname = name.substr(kParamPrefix.size());
      if (!core::isToken(pname)) {
        return fail(ContractError::kInvalidValue, name, "empty or invalid Mcp-Param name");
      }
      if (out.findParam(pname) != nullptr) {
        return fail(ContractError::kDuplicate, name, "duplicate header");
      }
      McpValue v;
      if (ContractResult r = readValue(f, arena, v); r.error != ContractError::kNone) {
        return r;
      }
      out.params.push_back(McpParam{pname, v});
    } else if (core::iequals(name, kMethodHeader)) {
      if (out.has_method) {
        return fail(ContractError::kDuplicate, name, "duplicate header");
      }
      if (const char* why = checkToken(f.value); why != nullptr) {
        return fail(ContractError::kInvalidValue, name, why);
      }
      out.has_method = true;
      out.method = f.value;
    } else if (core::iequals(name, kNameHeader)) {
      if (out.has_name) {
        return fail(ContractError::kDuplicate, name, "duplicate header");
      }
      if (ContractResult r = readValue(f, arena, out.name); r.error != ContractError::kNone) {
        return r;
      }
      out.has_name = true;
    } else if (core::iequals(name, kVersionHeader)) {
      if (out.has_version) {
        return fail(ContractError::kDuplicate, name, "duplicate header");
      }
      if (const char* why = checkToken(f.value); why != nullptr) {
        return fail(ContractError::kInvalidValue, name, why);
      }
      out.has_version = true;
      out.version = f.value;
    } else if (core::iequals(name, kSessionHeader)) {
      out.has_session_id = true;
    }
  }
  return {};
}

}  // namespace gw::mcp
