#pragma once
// What the gateway knows about MCP method names (schema.ts 2026-07-28 `ClientRequest`, the
// tasks extension SEP-2663, and the request methods of earlier revisions). Pure.

#include <string_view>

namespace gw::mcp {

// A method that is only ever a JSON-RPC *request* (it expects a result), in this revision
// or an earlier one: tools/call, tools/list, prompts/get, prompts/list, resources/read,
// resources/list, resources/templates/list, server/discover, subscriptions/listen,
// completion/complete, every tasks/…, and the removed initialize, ping, logging/setLevel,
// resources/subscribe, resources/unsubscribe. Sent without an "id" (as a notification) it
// is an invalid message: a server that runs notifications would act on it and answer
// nothing, and the gateway would have classified it as harmless.
bool isRequestOnlyMethod(std::string_view method) noexcept;

// A 2026-07-28 request method whose params carry nothing Mcp-Name mirrors: tools/list,
// prompts/list, resources/list, resources/templates/list, server/discover,
// subscriptions/listen, completion/complete. Mcp-Name on one of these is a header the
// client made up. Methods this list does not know (custom, removed, notifications) are the
// server's business.
bool definesNoName(std::string_view method) noexcept;

// The params member whose value Mcp-Name mirrors for `method` (2026-07-28: `name` of
// tools/call and prompts/get, `uri` of resources/read, `taskId` of tasks/get|update|cancel),
// or "" when the method defines none. With `earlier_revisions`, also the members that name
// what a request of a 2025 revision acts on: `uri` of resources/subscribe|unsubscribe and
// `taskId` of tasks/result (2025-11-25), so rules matching `name` see them in legacy bodies.
std::string_view nameMember(std::string_view method, bool earlier_revisions = false) noexcept;

// The method's own spelling, from a static table, when it is a method of MCP in any revision
// the gateway meets (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28) or of the
// tasks extension (SEP-2663): every request and notification either side may send. Empty for
// anything else (custom methods, typos). The returned view never dangles (metric labels keep it).
std::string_view knownMethod(std::string_view method) noexcept;

}  // namespace gw::mcp
