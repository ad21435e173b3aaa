// metrics/methodLabel over mcp::knownMethod: the `mcp_method_name` label names every method of
// every MCP revision a client or server of today sends (schema/<revision>/schema.ts of
// modelcontextprotocol/modelcontextprotocol, 2024-11-05 to 2026-07-28, and the tasks
// extension SEP-2663); only names outside that list fold into "other".

#include <catch.hpp>
#include <string>
#include <string_view>

#include "gateway/mcp/methods.h"
#include "gateway/metrics/metrics.h"

namespace {

struct Era {
  const char* revision;
  std::string_view methods[40];
};

// Each revision's request and notification methods, both directions, as its schema.ts spells
// them (a name may appear in several revisions).
const Era kEras[] = {
    {"2026-07-28 (schema.ts ClientRequest, ServerNotification, InputRequest; SEP-2663 tasks)",
     {"server/discover",
      "subscriptions/listen",
      "tools/list",
      "tools/call",
      "resources/list",
      "resources/templates/list",
      "resources/read",
      "prompts/list",
      "prompts/get",
      "completion/complete",
      "sampling/createMessage",
      "roots/list",
      "elicitation/create",
      "tasks/get",
      "tasks/update",
      "tasks/cancel",
      "notifications/cancelled",
      "notifications/progress",
      "notifications/message",
      "notifications/resources/updated",
      "notifications/resources/list_changed",
      "notifications/tools/list_changed",
      "notifications/prompts/list_changed",
      "notifications/subscriptions/acknowledged"}},
    {"2025-11-25 (schema.ts ClientRequest, ServerRequest, both notification unions)",
     {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
      "tasks/get", "tasks/result", "tasks/list", "tasks/cancel", "notifications/initialized",
      "notifications/roots/list_changed", "notifications/tasks/status",
      "notifications/elicitation/complete", "elicitation/create", "sampling/createMessage",
      "roots/list", "completion/complete"}},
    {"2025-06-18 and 2025-03-26",
     {"initialize", "ping", "notifications/initialized", "logging/setLevel", "resources/subscribe",
      "resources/unsubscribe", "roots/list", "notifications/roots/list_changed",
      "elicitation/create", "completion/complete", "notifications/cancelled",
      "notifications/progress", "notifications/message"}},
};

}  // namespace

TEST_CASE("metrics: mcp_method_name names every method of both eras (MCP schema.ts)",
          "[metrics][methods]") {
  for (const Era& era : kEras) {
    for (std::string_view m : era.methods) {
      if (m.empty()) {
        break;
      }
      INFO(era.revision << ": " << m);
      CHECK(gw::mcp::knownMethod(m) == m);
      CHECK(gw::metrics::methodLabel(m) == m);
    }
  }
}

TEST_CASE("metrics: names outside the method list fold into other, in every spelling",
          "[metrics][methods]") {
  // Case, whitespace, a prefix or suffix, an extension's own method: none is a label value.
  const std::string_view folded[] = {
      "Tools/Call",          "TOOLS/LIST",    " tools/call",
      "tools/call ",         "tools/call/",   "/tools/call",
      "server/discover2",    "subscriptions", "notifications/",
      "notifications/other", "tasks/",        "tasks/create",
      "x-vendor/do_thing",   "initialize\n",  std::string_view("ping\0", 5),
  };
  for (std::string_view m : folded) {
    INFO(m);
    CHECK(gw::mcp::knownMethod(m).empty());
    CHECK(gw::metrics::methodLabel(m) == "other");
  }
  CHECK(gw::metrics::methodLabel("") == "");
}

TEST_CASE("metrics: the label view outlives the request's method text", "[metrics][methods]") {
  std::string method = "subscriptions/listen";
  std::string_view label = gw::metrics::methodLabel(method);
  method.assign(method.size(), 'x');
  CHECK(label == "subscriptions/listen");
}
