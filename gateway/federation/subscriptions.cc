// subscriptions/listen: the acknowledgement each upstream sends read, the merged one the
// gateway sends built, which list a list_changed notification makes stale, and how long an
// upstream stream that ended waits to be reopened (see federation.h).

#include <algorithm>

#include "gateway/federation/federation.h"
#include "gateway/federation/json_scan.h"

namespace gw::federation {

bool ackNotifications(std::string_view json, std::string& notifications_object) {
  size_t root = 0;
  size_t end = 0;
  if (json::validate(json) != json::Validity::kValid || !json::rootSpan(json, root, end) ||
      json[root] != '{') {
    return false;
  }
  std::string method;
  if (!json::stringMember(json, root, "method", method) ||
      method != "notifications/subscriptions/acknowledged") {
    return false;
  }
  size_t params = 0;
  if (!json::findMember(json, root, "params", params, end) || json[params] != '{') {
    return false;
  }
  size_t begin = 0;
  if (!json::findMember(json, params, "notifications", begin, end) || json[begin] != '{') {
    return false;
  }
  notifications_object.assign(json.substr(begin, end - begin));
  return true;
}

ListenFilter listenFilterOf(std::string_view request_json) {
  ListenFilter f;
  size_t root = 0;
  size_t end = 0;
  if (json::validate(request_json) != json::Validity::kValid ||
      !json::rootSpan(request_json, root, end) || request_json[root] != '{') {
    return f;
  }
  size_t params = 0;
  size_t notes = 0;
  if (!json::findMember(request_json, root, "params", params, end) || request_json[params] != '{' ||
      !json::findMember(request_json, params, "notifications", notes, end) ||
      request_json[notes] != '{') {
    return f;
  }
  auto isTrue = [&](std::string_view key) {
    size_t b = 0;
    size_t e = 0;
    return json::findMember(request_json, notes, key, b, e) &&
           request_json.substr(b, e - b) == "true";
  };
  f.tools = isTrue("toolsListChanged");
  f.prompts = isTrue("promptsListChanged");
  f.resources = isTrue("resourcesListChanged");
  return f;
}

bool ListenFilter::wants(ListKind kind) const noexcept {
  switch (kind) {
    case ListKind::kTools:
      return tools;
    case ListKind::kPrompts:
      return prompts;
    case ListKind::kResources:
    case ListKind::kTemplates:
      return resources;
    case ListKind::kDiscover:
      return false;
  }
  return false;
}

std::string ListenFilter::ackObject() const {
  std::string out = "{";
  for (const auto& [on, key] :
       {std::pair{tools, "toolsListChanged"}, std::pair{prompts, "promptsListChanged"},
        std::pair{resources, "resourcesListChanged"}}) {
    if (on) {
      out += out.size() > 1 ? ",\"" : "\"";
      out += key;
      out += "\":true";
    }
  }
  out += '}';
  return out;
}

std::string ackMessage(std::string_view merged_notifications,
                       std::string_view subscription_id_json) {
  std::string out;
  out.reserve(160 + merged_notifications.size() + subscription_id_json.size());
  out.append(R"({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",)");
  out.append(R"("params":{"notifications":)");
  out.append(merged_notifications);
  out.append(R"(,"_meta":{"io.modelcontextprotocol/subscriptionId":)");
  out.append(subscription_id_json);
  out.append("}}}");
  return out;
}

uint64_t reopenBackoffMs(uint64_t previous_ms, core::Nanos stayed_open) noexcept {
  if (previous_ms == 0 || stayed_open >= kHealthyStreamOpen) {
    return kFirstReopenMs;
  }
  return std::min(previous_ms * 2, kMaxReopenMs);
}

std::optional<ListKind> changedListOf(std::string_view method) noexcept {
  if (method == "notifications/tools/list_changed") {
    return ListKind::kTools;
  }
  if (method == "notifications/prompts/list_changed") {
    return ListKind::kPrompts;
  }
  if (method == "notifications/resources/list_changed") {
    return ListKind::kResources;
  }
  return std::nullopt;
}

}  // namespace gw::federation
