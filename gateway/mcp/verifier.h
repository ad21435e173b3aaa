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
// value (integers compared numerically, 42 == 42.0; booleans as true/false; strings
// exactly) and an annotated argument absent or null has no header. Headers the schema does
// not declare are ignored.

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
  bool check_headers = true;  // false: only classify (kind, id, method) and check syntax
};

struct VerifyResult {
  bool ok = false;
  BodyKind kind = BodyKind::kUnknown;
  int code = 0;         // when !ok: -32700, -32600 or -32020
  std::string message;  // when !ok: short, safe to send (values escaped/quoted)
  RequestId id;         // the request id when readable
  // The body's "method" (unescaped), "" if none. A view into this thread's parser buffers,
  // not into the body: valid until the next verifyBody() call on the same thread.
  std::string_view method;
};

// `body` must be followed by at least simdjson::SIMDJSON_PADDING readable bytes (the
// caller's buffer capacity); they are not part of the JSON.
// Codes: -32700 BOM / not JSON / invalid UTF-8 / trailing data; -32600 batch, non-object,
// too deep, duplicate key, bad "jsonrpc", bad "method" or "id", a POSTed response (only
// with check_headers); -32020 any header check. `id` is kNull until the body is readable
// (and when "id" itself is duplicated or of a wrong type). Header checks apply to kRequest;
// for a kNotification, Mcp-Method and MCP-Protocol-Version are compared only when sent
// (and the version only when the body carries one). Mcp-Param checks run only when
// `tool` names the body's params.name on a tools/call.
VerifyResult verifyBody(std::string_view body, const McpHeaders& headers, const ToolSchema* tool,
                        const VerifyOptions& options);

// simdjson's padding, so callers need not include simdjson.
size_t bodyPadding() noexcept;

}  // namespace gw::mcp
