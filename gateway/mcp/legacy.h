#pragma once
// The MCP view of a legacy (2025-era) request, read from its body: a request without a
// trusted MCP-Protocol-Version carries no Mcp-* headers the gateway may believe, so its
// method, name/uri/taskId and the x-mcp-header-annotated arguments are taken from the JSON
// body itself (issue #13). The body is the source of truth, so this view is trusted. Pure;
// simdjson through its error-code API.
//
// A body is one JSON-RPC message (an object) or a batch (a non-empty array of them, the
// 2025-03-26 revision). Every message must be an object with "jsonrpc":"2.0" and either a
// string "method" (a request when it has an "id", else a notification) or, without one, a
// "result" or "error" (a response to a server-initiated request: 2025-era clients POST
// those). Refused, as verify mode refuses them: a byte order mark, invalid JSON or UTF-8,
// trailing data (-32700, "body_invalid"); a root that is neither object nor array, an empty
// batch, a batch element that is not an object, nesting deeper than `max_depth`, duplicate
// keys at any level (compared after unescaping: a server keeping the last one would read
// another method or tool than the gateway checked), a missing or wrong "jsonrpc", a method
// that is not a string, a params.name / uri / taskId that is present but not a string
// (-32600, "body_invalid"); an "id" that is not a string or number (null only on a response;
// -32600, "id_invalid"); a request-only method without "id" (-32600, "request_without_id").
//
// Lifetime: a parsed LegacyBody refers to this thread's parser. Use it (fillView,
// fillParams) before the next parse() on the same thread; the views it fills are copies in
// the request's ValueArena and live as long as the arena's request.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/mcp/arena.h"
#include "gateway/mcp/contract.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/schema.h"
#include "gateway/mcp/verifier.h"

namespace gw::mcp {

struct LegacyError {
  int code = 0;             // -32700 or -32600
  std::string message;      // short, safe to send (values quoted and escaped)
  const char* reason = "";  // outcome name: body_invalid, id_invalid, request_without_id
  RequestId id;             // the message's id when readable (a batch: null)
};

struct LegacyMessage {
  BodyKind kind = BodyKind::kUnknown;  // kRequest, kNotification or kResponse
  std::string_view method;             // "" for a response; views the parser's buffer
  bool has_name = false;
  std::string_view name;  // params.name (tools/call, prompts/get), params.uri
                          // (resources/read) or params.taskId (tasks/get|update|cancel)
  RequestId id;           // the message's id (kAbsent for a notification)
};

class LegacyBody {
 public:
  // `body` must be followed by bodyPadding() readable bytes. False with `error` filled.
  bool parse(std::string_view body, LegacyError& error, size_t max_depth = 64);

  bool batch() const noexcept { return batch_; }
  const std::vector<LegacyMessage>& messages() const noexcept { return msgs_; }

  // Sets out's method and name from message `i` (copied into `arena`) and clears its
  // params; version and session fields are left as the headers set them. A response gets
  // has_method = false. False when the arena is full.
  bool fillView(size_t i, ValueArena& arena, McpHeaders& out) const;

  // Replaces out.params with the values of message `i`'s arguments that `tool` annotates
  // (x-mcp-header, learned from tools/list), in the header representation: strings as they
  // are, numbers as their JSON text (an integer printed; a fraction or exponent as written,
  // or in a batch its shortest round-trip form), booleans `true` / `false`. Arguments that
  // are absent, null, objects or arrays give no param. Nothing unless the message is a
  // tools/call of `tool`. `tool` null: params cleared. False when the arena is full.
  bool fillParams(size_t i, const ToolSchema* tool, ValueArena& arena, McpHeaders& out) const;

 private:
  std::string_view body_;
  bool batch_ = false;
  std::vector<LegacyMessage> msgs_;  // reused across parses
};

}  // namespace gw::mcp
