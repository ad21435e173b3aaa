// List answers: one upstream page parsed (items kept as written), the pages of every upstream
// merged into one array, and the merged JSON-RPC response built (see federation.h).

#include <charconv>
#include <unordered_map>

#include "gateway/federation/federation.h"
#include "gateway/federation/json_scan.h"

namespace gw::federation {

namespace {

constexpr size_t kDetailBytes = 200;

// result.ttlMs: a non-negative integer that fits, else 0.
uint64_t ttlOf(std::string_view text) noexcept {
  if (text.empty() || text.front() < '0' || text.front() > '9') {
    return 0;
  }
  uint64_t v = 0;
  const auto res = std::from_chars(text.data(), text.data() + text.size(), v);
  if (res.ec != std::errc() || res.ptr != text.data() + text.size()) {
    return 0;
  }
  return v;
}

// "code: message" of a JSON-RPC error value at json[at].
std::string errorDetail(std::string_view json, size_t at) {
  std::string d;
  if (json[at] != '{') {
    d = "error: ";
    d.append(json.substr(at, json::skipValue(json, at) - at));
  } else {
    size_t b = 0;
    size_t e = 0;
    if (json::findMember(json, at, "code", b, e) && json[b] != '"' && json[b] != '{' &&
        json[b] != '[') {
      d.append(json.substr(b, e - b));
    } else {
      d.push_back('?');
    }
    d.append(": ");
    std::string message;
    if (json::stringMember(json, at, "message", message)) {
      d.append(message);
    }
  }
  std::string bounded;
  json::appendBounded(bounded, d, kDetailBytes);
  return bounded;
}

// `item` with its top-level "name" string (the first "name" member, when it is a string)
// replaced by "<upstream><separator><name>"; as written otherwise.
void appendRenamed(std::string& out, std::string_view item, std::string_view upstream,
                   std::string_view separator) {
  size_t b = 0;
  size_t e = 0;
  std::string name;
  const size_t open = json::skipWs(item, 0);
  if (!json::findMember(item, open, "name", b, e) || item[b] != '"' ||
      !json::unescape(item.substr(b, e - b), name)) {
    out.append(item);
    return;
  }
  std::string renamed;
  renamed.reserve(upstream.size() + separator.size() + name.size());
  renamed.append(upstream);
  renamed.append(separator);
  renamed.append(name);
  out.append(item.substr(0, b));
  json::appendString(out, renamed);
  out.append(item.substr(e));
}

}  // namespace

std::string_view methodOf(ListKind kind) noexcept {
  switch (kind) {
    case ListKind::kTools:
      return "tools/list";
    case ListKind::kPrompts:
      return "prompts/list";
    case ListKind::kResources:
      return "resources/list";
    case ListKind::kTemplates:
      return "resources/templates/list";
    case ListKind::kDiscover:
      return "server/discover";
  }
  return {};
}

std::optional<ListKind> listKindOf(std::string_view method) noexcept {
  for (size_t k = 0; k < kListKinds; ++k) {
    const auto kind = static_cast<ListKind>(k);
    if (methodOf(kind) == method) {
      return kind;
    }
  }
  return std::nullopt;
}

std::string_view arrayKey(ListKind kind) noexcept {
  switch (kind) {
    case ListKind::kTools:
      return "tools";
    case ListKind::kPrompts:
      return "prompts";
    case ListKind::kResources:
      return "resources";
    case ListKind::kTemplates:
      return "resourceTemplates";
    case ListKind::kDiscover:
      break;
  }
  return {};
}

std::string_view keyMember(ListKind kind) noexcept {
  switch (kind) {
    case ListKind::kTools:
    case ListKind::kPrompts:
      return "name";
    case ListKind::kResources:
      return "uri";
    case ListKind::kTemplates:
      return "uriTemplate";
    case ListKind::kDiscover:
      break;
  }
  return {};
}

PageError parsePage(ListKind kind, std::string_view json, Page& out, std::string& detail) {
  out = Page{};
  detail.clear();
  const auto fail = [&](PageError e, std::string_view why) {
    out = Page{};
    detail.assign(why);
    return e;
  };

  const json::Validity v = json::validate(json);
  if (v == json::Validity::kTooDeep) {
    return fail(PageError::kInvalidJson, "nested deeper than 64");
  }
  if (v != json::Validity::kValid) {
    return fail(PageError::kInvalidJson, "not valid JSON");
  }
  size_t root = 0;
  size_t root_end = 0;
  if (!json::rootSpan(json, root, root_end) || json[root] != '{') {
    return fail(PageError::kShape, "not a JSON object");
  }
  size_t result = json::kNpos;
  size_t error = json::kNpos;
  json::ObjectReader top(json, root);
  while (top.next()) {
    if (result == json::kNpos && top.keyIs("result")) {
      result = top.valueBegin();
    } else if (error == json::kNpos && top.keyIs("error")) {
      error = top.valueBegin();
    }
  }
  if (!top.ok()) {
    return fail(PageError::kInvalidJson, "not valid JSON");
  }
  if (error != json::kNpos && json[error] != 'n') {  // "error": null is no error
    const std::string d = errorDetail(json, error);
    out = Page{};
    detail = d;
    return PageError::kRpcError;
  }
  if (result == json::kNpos || json[result] != '{') {
    return fail(PageError::kShape, "no result object");
  }

  const std::string_view array_key = arrayKey(kind);
  size_t array = json::kNpos;
  bool seen_cursor = false;
  bool seen_ttl = false;
  bool seen_scope = false;
  json::ObjectReader members(json, result);
  while (members.next()) {
    if (!array_key.empty() && array == json::kNpos && members.keyIs(array_key)) {
      array = members.valueBegin();
    } else if (!seen_cursor && members.keyIs("nextCursor")) {
      seen_cursor = true;
      if (members.valueType() == '"' && json::unescape(members.value(), out.next_cursor)) {
        out.has_next = true;
      }
    } else if (!seen_ttl && members.keyIs("ttlMs")) {
      seen_ttl = true;
      out.ttl_ms = ttlOf(members.value());
    } else if (!seen_scope && members.keyIs("cacheScope")) {
      seen_scope = true;
      out.public_scope = json::tokenEquals(members.value(), "public");
    }
  }
  if (!members.ok()) {
    return fail(PageError::kInvalidJson, "not valid JSON");
  }

  if (kind == ListKind::kDiscover) {
    out.result.assign(json.substr(result, members.end() - result));
    return PageError::kNone;
  }
  if (array == json::kNpos) {
    return fail(PageError::kShape, "result has no " + std::string(array_key) + " member");
  }
  if (json[array] != '[') {
    return fail(PageError::kShape, "result." + std::string(array_key) + " is not an array");
  }
  const std::string_view key_member = keyMember(kind);
  json::ArrayReader elements(json, array);
  while (elements.next()) {
    if (elements.valueType() != '{') {
      return fail(PageError::kShape,
                  "result." + std::string(array_key) + " holds an item that is not an object");
    }
    out.items.emplace_back(elements.value());
    std::string key;
    if (!json::stringMember(json, elements.valueBegin(), key_member, key)) {
      key.clear();
    }
    out.keys.push_back(std::move(key));
  }
  if (!elements.ok()) {
    return fail(PageError::kInvalidJson, "not valid JSON");
  }
  return PageError::kNone;
}

void mergeItems(ListKind kind, std::span<const Contribution> parts, NamesMode mode,
                std::string_view separator, MergedItems& out) {
  out = MergedItems{};
  const bool rename =
      mode == NamesMode::kPrefix && (kind == ListKind::kTools || kind == ListKind::kPrompts);
  std::unordered_map<std::string_view, size_t> owner;  // key → contribution that listed it
  out.array.push_back('[');
  for (size_t p = 0; p < parts.size(); ++p) {
    const Contribution& c = parts[p];
    if (c.items == nullptr) {
      continue;
    }
    for (size_t i = 0; i < c.items->size(); ++i) {
      const std::string_view item = (*c.items)[i];
      const std::string_view key =
          c.keys != nullptr && i < c.keys->size() ? std::string_view((*c.keys)[i]) : "";
      if (!rename && !key.empty()) {
        const auto [it, inserted] = owner.try_emplace(key, p);
        if (!inserted) {
          out.conflicts.push_back(Conflict{std::string(key), it->second, p});
          continue;
        }
      }
      if (out.count > 0) {
        out.array.push_back(',');
      }
      if (rename) {
        appendRenamed(out.array, item, c.upstream, separator);
      } else {
        out.array.append(item);
      }
      ++out.count;
    }
  }
  out.array.push_back(']');
}

std::string listResultMembers(ListKind kind, const MergedItems& merged) {
  std::string out;
  const std::string_view key = arrayKey(kind);
  if (!key.empty()) {
    out.reserve(merged.array.size() + key.size() + 32);
    out.push_back('"');
    out.append(key);
    out.append("\":");
    out.append(merged.array);
    out.push_back(',');
  }
  out.append(R"("resultType":"complete")");
  return out;
}

void appendResponse(std::string& out, std::string_view id_json, std::string_view members,
                    uint64_t ttl_ms, bool public_scope) {
  out.append(R"({"jsonrpc":"2.0","id":)");
  out.append(id_json);
  out.append(R"(,"result":{)");
  out.append(members);
  if (!members.empty()) {
    out.push_back(',');
  }
  out.append(R"("ttlMs":)");
  char num[24];
  const auto res = std::to_chars(num, num + sizeof num, ttl_ms);
  out.append(num, res.ptr);
  out.append(public_scope ? R"(,"cacheScope":"public"}})" : R"(,"cacheScope":"private"}})");
}

}  // namespace gw::federation
