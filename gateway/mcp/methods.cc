// MCP method tables (see methods.h).

#include "gateway/mcp/methods.h"

#include <array>

namespace gw::mcp {

namespace {

constexpr std::array<std::string_view, 7> kNoNameRequests = {
    "tools/list",      "prompts/list",         "resources/list",      "resources/templates/list",
    "server/discover", "subscriptions/listen", "completion/complete",
};

constexpr std::array<std::string_view, 8> kOtherRequests = {
    "tools/call", "prompts/get",      "resources/read",      "initialize",
    "ping",       "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
};

// Every method name of the schema.ts files of modelcontextprotocol/modelcontextprotocol
// (schema/<revision>/schema.ts: the ClientRequest, ServerRequest, ClientNotification and
// ServerNotification unions) from 2024-11-05 to 2026-07-28, and the tasks extension's
// tasks/update (SEP-2663).
constexpr std::string_view kAllMethods[] = {
    // Requests, client → server.
    "initialize",  // 2025-11-25 and earlier (replaced by server/discover)
    "ping",        // 2025-11-25 and earlier (either direction)
    "server/discover",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "resources/subscribe",    // 2025-11-25 and earlier
    "resources/unsubscribe",  // 2025-11-25 and earlier
    "prompts/list",
    "prompts/get",
    "completion/complete",
    "logging/setLevel",  // 2025-11-25 and earlier
    // Tasks: 2025-11-25 (either direction) and the 2026-07-28 tasks extension.
    "tasks/get",
    "tasks/list",
    "tasks/result",
    "tasks/update",
    "tasks/cancel",
    // Requests, server → client (2026-07-28: input requests inside a result).
    "sampling/createMessage",
    "roots/list",
    "elicitation/create",
    // Notifications.
    "notifications/initialized",  // 2025-11-25 and earlier
    "notifications/cancelled",
    "notifications/progress",
    "notifications/message",
    "notifications/resources/updated",
    "notifications/resources/list_changed",
    "notifications/tools/list_changed",
    "notifications/prompts/list_changed",
    "notifications/roots/list_changed",  // 2025-11-25 and earlier
    "notifications/subscriptions/acknowledged",
    "notifications/tasks/status",
    "notifications/elicitation/complete",
};

}  // namespace

std::string_view knownMethod(std::string_view method) noexcept {
  for (std::string_view m : kAllMethods) {
    if (m == method) {
      return m;
    }
  }
  return {};
}

bool definesNoName(std::string_view method) noexcept {
  for (std::string_view m : kNoNameRequests) {
    if (m == method) {
      return true;
    }
  }
  return false;
}

bool isRequestOnlyMethod(std::string_view method) noexcept {
  if (method.starts_with("tasks/") || definesNoName(method)) {
    return true;
  }
  for (std::string_view m : kOtherRequests) {
    if (m == method) {
      return true;
    }
  }
  return false;
}

std::string_view nameMember(std::string_view method, bool earlier_revisions) noexcept {
  if (method == "tools/call" || method == "prompts/get") {
    return "name";
  }
  if (method == "resources/read") {
    return "uri";
  }
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") {
    return "taskId";
  }
  if (earlier_revisions) {
    if (method == "resources/subscribe" || method == "resources/unsubscribe") {
      return "uri";
    }
    if (method == "tasks/result") {
      return "taskId";
    }
  }
  return {};
}

}  // namespace gw::mcp
