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

}  // namespace gw::mcp
