// List answers: one upstream page parsed (items kept as written), the pages of every upstream
// merged into one array, and the merged JSON-RPC response built (see federation.h).

#include <charconv>
#include <unordered_map>
#include <unordered_set>

#include "gateway/federation/federation.h"
#include "gateway/federation/json_scan.h"
#include "gateway/federation/list_scan.h"

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

std::string_view itemFaultName(ItemFault f) noexcept {
  switch (f) {
    case ItemFault::kNone:
      break;
    case ItemFault::kNotObject:
      return "not_object";
    case ItemFault::kMissingKey:
      return "missing_key";
    case ItemFault::kEmptyKey:
      return "empty_key";
    case ItemFault::kKeyTooLong:
      return "key_too_long";
    case ItemFault::kControlChar:
      return "control_character";
    case ItemFault::kRepeatedMember:
      return "repeated_member";
    case ItemFault::kSchemaNotObject:
      return "schema_not_object";
    case ItemFault::kDuplicate:
      return "duplicate";
  }
  return {};
}

size_t ItemDrops::total() const noexcept {
  size_t n = 0;
  for (uint32_t c : count) {
    n += c;
  }
  return n;
}

void ItemDrops::add(const ItemDrops& other) noexcept {
  for (size_t i = 0; i < kItemFaults; ++i) {
    count[i] += other.count[i];
  }
}

std::string ItemDrops::summary() const {
  std::string out;
  for (size_t i = 0; i < kItemFaults; ++i) {
    if (count[i] == 0) {
      continue;
    }
    out += out.empty() ? "" : ", ";
    out += itemFaultName(static_cast<ItemFault>(i));
    out += ' ';
    out += std::to_string(count[i]);
  }
  return out;
}

ItemFault checkItem(ListKind kind, std::string_view json, size_t at, std::string& key) {
  key.clear();
  if (at >= json.size() || json[at] != '{') {
    return ItemFault::kNotObject;
  }
  const std::string_view key_member = keyMember(kind);
  const bool tool = kind == ListKind::kTools;
  size_t key_at = json::kNpos;
  size_t key_end = 0;
  char input_type = 0;
  bool output_bad = false;
  json::ObjectReader r(json, at);
  while (r.next()) {
    if (r.keyIs(key_member)) {
      if (key_at != json::kNpos) {
        return ItemFault::kRepeatedMember;
      }
      key_at = r.valueBegin();
      key_end = r.valueEnd();
    } else if (tool && r.keyIs("inputSchema")) {
      if (input_type != 0) {
        return ItemFault::kRepeatedMember;
      }
      input_type = r.valueType();
    } else if (tool && r.keyIs("outputSchema")) {
      output_bad = output_bad || (r.valueType() != '{' && r.valueType() != 'n');
    }
  }
  if (!r.ok()) {
    return ItemFault::kNotObject;
  }
  if (key_at == json::kNpos || json[key_at] != '"' ||
      !json::unescape(json.substr(key_at, key_end - key_at), key)) {
    key.clear();
    return ItemFault::kMissingKey;
  }
  if (key.empty()) {
    return ItemFault::kEmptyKey;
  }
  if (key.size() >
      (kind == ListKind::kTools || kind == ListKind::kPrompts ? kMaxItemName : kMaxItemUri)) {
    return ItemFault::kKeyTooLong;
  }
  for (const char c : key) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
      return ItemFault::kControlChar;
    }
  }
  if (tool && ((input_type != 0 && input_type != '{') || output_bad)) {
    return ItemFault::kSchemaNotObject;
  }
  return ItemFault::kNone;
}

MessageKind messageKind(std::string_view text) {
  size_t root = 0;
  size_t root_end = 0;
  if (json::validate(text) != json::Validity::kValid || !json::rootSpan(text, root, root_end) ||
      text[root] != '{') {
    return MessageKind::kUnreadable;
  }
  json::ObjectReader r(text, root);
  while (r.next()) {
    if (r.keyIs("result") || r.keyIs("error")) {
      return MessageKind::kAnswer;
    }
  }
  return r.ok() ? MessageKind::kOther : MessageKind::kUnreadable;
}

namespace detail {

PageError locateList(ListKind kind, std::string_view json, ListSpans& out, std::string& detail) {
  out = ListSpans{};
  const json::Validity v = json::validate(json);
  if (v == json::Validity::kTooDeep) {
    detail = "nested deeper than 64";
    return PageError::kInvalidJson;
  }
  if (v != json::Validity::kValid) {
    detail = "not valid JSON (or not UTF-8)";
    return PageError::kInvalidJson;
  }
  size_t root = 0;
  size_t root_end = 0;
  if (!json::rootSpan(json, root, root_end) || json[root] != '{') {
    detail = "not a JSON object";
    return PageError::kShape;
  }
  size_t error = json::kNpos;
  json::ObjectReader top(json, root);
  while (top.next()) {
    size_t* slot = top.keyIs("result") ? &out.result : top.keyIs("error") ? &error : nullptr;
    if (slot == nullptr) {
      continue;
    }
    if (*slot != json::kNpos) {
      detail = top.keyIs("result") ? "the result member is written twice"
                                   : "the error member is written twice";
      return PageError::kShape;
    }
    *slot = top.valueBegin();
  }
  if (!top.ok()) {
    detail = "not valid JSON";
    return PageError::kInvalidJson;
  }
  if (error != json::kNpos && json[error] != 'n') {  // "error": null is no error
    if (out.result != json::kNpos) {
      detail = "both result and error";
      return PageError::kShape;
    }
    detail = errorDetail(json, error);
    return PageError::kRpcError;
  }
  if (out.result == json::kNpos || json[out.result] != '{') {
    detail = "no result object";
    return PageError::kShape;
  }
  const std::string_view array_key = arrayKey(kind);
  json::ObjectReader members(json, out.result);
  while (members.next()) {
    size_t* begin = nullptr;
    size_t* end = nullptr;
    if (!array_key.empty() && members.keyIs(array_key)) {
      begin = &out.array;
      end = &out.array_end;
    } else if (members.keyIs("nextCursor")) {
      begin = &out.cursor;
      end = &out.cursor_end;
    } else if (members.keyIs("ttlMs")) {
      begin = &out.ttl;
      end = &out.ttl_end;
    } else if (members.keyIs("cacheScope")) {
      begin = &out.scope;
      end = &out.scope_end;
    } else {
      continue;
    }
    if (*begin != json::kNpos) {
      std::string key;
      json::unescape(members.keyToken(), key);
      detail = "result." + key + " is written twice";
      return PageError::kShape;
    }
    *begin = members.valueBegin();
    *end = members.valueEnd();
  }
  if (!members.ok()) {
    detail = "not valid JSON";
    return PageError::kInvalidJson;
  }
  out.result_close = members.end() - 1;
  if (kind == ListKind::kDiscover) {
    return PageError::kNone;
  }
  if (out.array == json::kNpos) {
    detail = "result has no " + std::string(array_key) + " member";
    return PageError::kShape;
  }
  if (json[out.array] != '[') {
    detail = "result." + std::string(array_key) + " is not an array";
    return PageError::kShape;
  }
  return PageError::kNone;
}

}  // namespace detail

PageError parsePage(ListKind kind, std::string_view json, Page& out, std::string& detail) {
  out = Page{};
  detail.clear();
  detail::ListSpans at;
  const PageError e = detail::locateList(kind, json, at, detail);
  if (e != PageError::kNone) {
    return e;
  }
  if (at.cursor != json::kNpos && json[at.cursor] == '"' &&
      json::unescape(json.substr(at.cursor, at.cursor_end - at.cursor), out.next_cursor)) {
    out.has_next = true;
  }
  if (at.ttl != json::kNpos) {
    out.ttl_ms = ttlOf(json.substr(at.ttl, at.ttl_end - at.ttl));
  }
  if (at.scope != json::kNpos) {
    out.public_scope = json::tokenEquals(json.substr(at.scope, at.scope_end - at.scope), "public");
  }
  if (kind == ListKind::kDiscover) {
    out.result.assign(json.substr(at.result, at.result_close + 1 - at.result));
    return PageError::kNone;
  }
  std::unordered_set<std::string> seen;
  std::string key;
  json::ArrayReader elements(json, at.array);
  while (elements.next()) {
    const ItemFault f = checkItem(kind, json, elements.valueBegin(), key);
    if (f != ItemFault::kNone) {
      out.dropped.add(f);
      continue;
    }
    if (!seen.insert(key).second) {
      out.dropped.add(ItemFault::kDuplicate);
      continue;
    }
    out.items.emplace_back(elements.value());
    out.keys.push_back(std::move(key));
    key = std::string();
  }
  if (!elements.ok()) {
    out = Page{};
    detail = "not valid JSON";
    return PageError::kInvalidJson;
  }
  return PageError::kNone;
}

void mergeItems(ListKind kind, std::span<const Contribution> parts, NamesMode mode,
                std::string_view separator, MergedItems& out) {
  out = MergedItems{};
  const bool rename =
      mode == NamesMode::kPrefix && (kind == ListKind::kTools || kind == ListKind::kPrompts);
  std::unordered_map<std::string_view, size_t> owner;  // key → contribution that listed it
  size_t bytes = 2;
  for (const Contribution& c : parts) {
    if (c.items != nullptr) {
      for (const std::string& item : *c.items) {
        bytes += item.size() + 1;
      }
    }
  }
  out.array.reserve(bytes + (rename ? bytes / 16 : 0));  // one allocation, not one per doubling
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
  appendResponseHead(out, id_json);
  out.append(members);
  appendResponseTail(out, members.empty(), ttl_ms, public_scope);
}

void appendResponseHead(std::string& out, std::string_view id_json) {
  out.append(R"({"jsonrpc":"2.0","id":)");
  out.append(id_json);
  out.append(R"(,"result":{)");
}

void appendResponseTail(std::string& out, bool members_empty, uint64_t ttl_ms, bool public_scope) {
  if (!members_empty) {
    out.push_back(',');
  }
  out.append(R"("ttlMs":)");
  char num[24];
  const auto res = std::to_chars(num, num + sizeof num, ttl_ms);
  out.append(num, res.ptr);
  out.append(public_scope ? R"(,"cacheScope":"public"}})" : R"(,"cacheScope":"private"}})");
}

}  // namespace gw::federation
