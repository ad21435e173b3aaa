// A list answer with the items a caller may not use taken out (issue #16 visibility), the
// items no client can take dropped (issue #24), and on a `names: prefix` route's legacy view
// the names prefixed: only the list array and cacheScope change; every other byte of the
// answer is kept.

#include <functional>
#include <unordered_set>

#include "gateway/federation/federation.h"
#include "gateway/federation/json_scan.h"
#include "gateway/federation/list_scan.h"

namespace gw::federation {

bool filterListAnswer(ListKind kind, std::string_view json,
                      const std::function<bool(std::string_view key)>& keep, std::string& out,
                      size_t& hidden, ItemDrops* drops, std::string_view prefix) {
  hidden = 0;
  if (kind == ListKind::kDiscover) {
    return false;
  }
  detail::ListSpans at;
  std::string why;
  if (detail::locateList(kind, json, at, why) != PageError::kNone) {
    return false;
  }
  const bool rename = !prefix.empty() && (kind == ListKind::kTools || kind == ListKind::kPrompts);
  std::string array = "[";
  std::string key;
  std::string shown;
  std::unordered_set<std::string> seen;
  ItemDrops dropped;
  json::ArrayReader items(json, at.array);
  while (items.next()) {
    const ItemFault f = checkItem(kind, json, items.valueBegin(), key);
    if (f != ItemFault::kNone) {
      dropped.add(f);
      continue;
    }
    if (!seen.insert(key).second) {
      dropped.add(ItemFault::kDuplicate);
      continue;
    }
    if (rename) {
      shown.assign(prefix);
      shown.append(key);
    }
    if (!keep(rename ? std::string_view(shown) : std::string_view(key))) {
      ++hidden;
      continue;
    }
    if (array.size() > 1) {
      array += ',';
    }
    if (rename) {
      // The key member is the item's only "name" (checkItem): replace that string token.
      const size_t open = items.valueBegin();
      size_t b = 0;
      size_t e = 0;
      json::findMember(json, open, "name", b, e);
      array.append(json.substr(open, b - open));
      json::appendString(array, shown);
      array.append(json.substr(e, items.valueEnd() - e));
    } else {
      array.append(items.value());
    }
  }
  if (!items.ok()) {
    return false;
  }
  array += ']';
  if (drops != nullptr) {
    drops->add(dropped);
  }
  const size_t ab = at.array;
  const size_t ae = at.array_end;
  const size_t sb = at.scope;
  const size_t se = at.scope_end;
  out.clear();
  out.reserve(json.size());
  // Pieces in text order: … array … cacheScope … '}' of result (the scope member may come
  // before or after the array, or be missing: then it is added before the closing brace).
  constexpr std::string_view kPrivate = "\"private\"";
  if (sb != json::kNpos && sb < ab) {
    out.append(json.substr(0, sb));
    out.append(kPrivate);
    out.append(json.substr(se, ab - se));
    out.append(array);
    out.append(json.substr(ae));
  } else if (sb != json::kNpos) {
    out.append(json.substr(0, ab));
    out.append(array);
    out.append(json.substr(ae, sb - ae));
    out.append(kPrivate);
    out.append(json.substr(se));
  } else {
    out.append(json.substr(0, ab));
    out.append(array);
    out.append(json.substr(ae, at.result_close - ae));
    out.append(",\"cacheScope\":");
    out.append(kPrivate);
    out.append(json.substr(at.result_close));
  }
  return true;
}

}  // namespace gw::federation
