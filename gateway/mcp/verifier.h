#pragma once
// Body verification (verify mode; spec items 22, 38, 54-57): the body must be exactly one
// JSON object that says what the headers say. Pure; simdjson through its error-code API.
//
// Checks, in order: size ≤ limit (caller), no UTF-8 BOM, valid UTF-8, exactly one JSON
// value and it is an object (a batch array → -32600), nothing but whitespace after it,
// nesting ≤ max_depth, no duplicate keys at any level (compared after unescaping),
// "jsonrpc":"2.0", `method` a string equal to Mcp-Method, for tools/call and prompts/get
// `params.name`, for resources/read `params.uri`, for tasks/get|update|cancel
// `params.taskId` equal to the decoded Mcp-Name (header required when the method needs it),
// `params._meta["io.modelcontextprotocol/protocolVersion"]` equal to MCP-Protocol-Version,
// and — when `tool` is given (a tools/call of a tool whose annotations are known) — every
// annotated argument present and non-null has its Mcp-Param header with the same decoded
// value (integers compared as exact decimals over the number texts, never through a
// double: 42 == 42.0 == 4.2e1, 9007199254740993 != 9007199254740992 — see number.h;
// booleans as true/false; strings exactly) and an annotated argument absent or null has no
// header. Headers the schema does not declare are ignored.
//
// JSON-RPC 2.0 / MCP message rules, checked with or without header checks (they are about
// the message, and a body the gateway reads must not pass as something it is not):
// "id" must be a string or a number (MCP RequestId; null, objects, arrays and booleans
// → -32600); a request-only method (methods.h) must carry an "id"; a response or error
// object (result/error, no method) may not be POSTed. A numeric id with a fraction or an
// exponent is accepted (JSON-RPC only says SHOULD NOT) and echoed exactly as written.

#include <cstddef>
#include <string>
#include <string_view>

#include "gateway/mcp/contract.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/schema.h"

namespace gw::mcp {

enum class BodyKind : uint8_t { kUnknown, kRequest, kNotification, kResponse };

struct VerifyOptions {
  size_t max_depth = 64;
  // false: no header comparisons; only syntax and the JSON-RPC/MCP message rules (the body
  // of a trusted request without Mcp-Method, read to tell a notification).
  bool check_headers = true;
  // true: a request must carry the 2026-07-28 `_meta` envelope — params._meta with a string
  // protocolVersion and an object clientCapabilities — else -32602 ("body_invalid"), as a
  // server checks it. Set where the gateway stands for the server: a federated route, a
  // request bridged to a 2025-era upstream.
  bool check_envelope = false;
};

struct VerifyResult {
  bool ok = false;
  BodyKind kind = BodyKind::kUnknown;
  int code = 0;             // when !ok: -32700, -32600 or -32020
  std::string message;      // when !ok: short, safe to send (values escaped/quoted)
  const char* reason = "";  // when !ok: outcome name (static, snake_case) for logs/metrics
  RequestId id;             // the request id when readable
  // The body's "method" (unescaped), "" if none. A view into this thread's parser buffers,
  // not into the body: valid until the next verifyBody() call on the same thread.
  std::string_view method;
};

// `body` must be followed by at least simdjson::SIMDJSON_PADDING readable bytes (the
// caller's buffer capacity); they are not part of the JSON.
// Codes and reasons: -32700 BOM / not JSON / invalid UTF-8 / trailing data ("body_invalid");
// -32600 batch, non-object, too deep, duplicate key, bad "jsonrpc", bad "method"
// ("body_invalid"), an "id" that is null or not a string or number ("id_invalid"), a
// request-only method without an "id" ("request_without_id"), a POSTed response
// ("response_posted"); -32020 any header check ("header_mismatch"). `id` is kNull until the
// body is readable (and when "id" itself is duplicated or of a wrong type). Header checks apply to
// kRequest; for a kNotification, Mcp-Method and MCP-Protocol-Version are compared only when sent
// (and the version only when the body carries one). Mcp-Param checks run only when
// `tool` names the body's params.name on a tools/call.
VerifyResult verifyBody(std::string_view body, const McpHeaders& headers, const ToolSchema* tool,
                        const VerifyOptions& options);

// simdjson's padding, so callers need not include simdjson.
size_t bodyPadding() noexcept;

}  // namespace gw::mcp
