#pragma once
// mcp/: the MCP and JSON-RPC rules — the Mcp-* header contract and its base64 sentinels,
// method names, body verification, the legacy body view, exact number comparison, the
// request-id scan, learned x-mcp-header annotations, session-id wrapping, and the JSON-RPC
// error bodies the gateway answers with.
// JSON-RPC 2.0 error bodies for everything the gateway answers itself on the MCP endpoint,
// and the codes it uses. Spec-defined codes keep their meaning; gateway-specific codes sit
// outside -32768..-32000 (spec item 73).

#include <cstdint>
#include <string>
#include <string_view>

namespace gw::mcp {

namespace code {
inline constexpr int kParseError = -32700;
inline constexpr int kInvalidRequest = -32600;
inline constexpr int kHeaderMismatch = -32020;
inline constexpr int kUnsupportedProtocolVersion = -32022;
// Gateway-specific (outside the reserved range):
inline constexpr int kBodyTooLarge = -31001;          // 413
inline constexpr int kMethodNotAllowed = -31002;      // 405
inline constexpr int kOriginForbidden = -31003;       // 403
inline constexpr int kPolicyDenied = -31004;          // 403
inline constexpr int kRateLimited = -31005;           // 429
inline constexpr int kUnauthorized = -31006;          // 401
inline constexpr int kUnsupportedMediaType = -31007;  // 415
inline constexpr int kBodyTimeout = -31008;           // 408
inline constexpr int kUpstreamUnavailable = -31010;   // 502
inline constexpr int kUpstreamTimeout = -31011;       // 504
inline constexpr int kOverloaded = -31012;            // 503
inline constexpr int kNoRoute = -31013;               // 502: no route matched
inline constexpr int kHostForbidden = -31014;         // 403: Host not in mcp.allowed_hosts
inline constexpr int kTooManyParamHeaders = -31015;   // 431: over mcp.max_param_headers
inline constexpr int kSessionNotFound = -31016;       // 404: Mcp-Session-Id names no endpoint
inline constexpr int kUpstreamAuthRefused = -31017;   // 403: no token for the upstream
inline constexpr int kAuthUnavailable = -31018;       // 503: a token/introspection endpoint down
}  // namespace code

// A request id as it appeared in the body: its JSON text, echoed verbatim.
struct RequestId {
  enum class Kind : uint8_t { kAbsent, kNull, kJson };
  Kind kind = Kind::kAbsent;
  std::string json;  // kJson: the id's JSON text (a number literal or a quoted string)

  static RequestId absent() { return {}; }
  static RequestId null() { return {Kind::kNull, {}}; }
};

// {"jsonrpc":"2.0","id":<id>,"error":{"code":<code>,"message":"<escaped>"[,"data":<data>]}}
// kAbsent omits "id" (e.g. the 403 for a bad Origin); kNull writes "id":null. `data_json`
// must already be valid JSON (empty: no data member).
std::string errorBody(const RequestId& id, int code, std::string_view message,
                      std::string_view data_json = {});

// Appends s as the inside of a JSON string (quotes not included): ", \, control
// characters and DEL escaped; bytes that are not valid UTF-8 become \ufffd. Also the escaping
// used for decoded values in log lines. (core::appendJsonEscaped with escape_del.)
void appendJsonEscaped(std::string& out, std::string_view s);

// Best-effort id of a JSON-RPC request body (used on reject paths only): kJson with the
// id's text when the body is an object with a string or number "id", kNull when "id" is
// null or the body is unreadable, kAbsent when the object has no "id".
RequestId extractId(std::string_view body);

}  // namespace gw::mcp
