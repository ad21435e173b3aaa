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

}  // namespace

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

}  // namespace gw::mcp
