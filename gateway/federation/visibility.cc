// A list answer with the items a caller may not use taken out (issue #16 visibility): only
// the list array and cacheScope change; every other byte of the answer is kept.

#include <functional>

#include "gateway/federation/federation.h"
#include "gateway/federation/json_scan.h"

namespace gw::federation {

bool filterListAnswer(ListKind kind, std::string_view json,
                      const std::function<bool(std::string_view key)>& keep, std::string& out,
                      size_t& hidden) {
  hidden = 0;
  if (kind == ListKind::kDiscover || json::validate(json) != json::Validity::kValid) {
    return false;
  }
  size_t root = 0;
  size_t root_end = 0;
  if (!json::rootSpan(json, root, root_end) || json[root] != '{') {
    return false;
  }
  size_t rb = 0;
  size_t re = 0;
  if (!json::findMember(json, root, "result", rb, re) || json[rb] != '{') {
    return false;
  }
  // The array, and the cacheScope member if there is one (first of each, as parsePage).
  size_t ab = json::kNpos;
  size_t ae = 0;
  size_t sb = json::kNpos;
  size_t se = 0;
  size_t result_close = 0;
  json::ObjectReader r(json, rb);
  while (r.next()) {
    if (ab == json::kNpos && r.keyIs(arrayKey(kind))) {
      ab = r.valueBegin();
      ae = r.valueEnd();
    } else if (sb == json::kNpos && r.keyIs("cacheScope")) {
      sb = r.valueBegin();
      se = r.valueEnd();
    }
  }
  if (!r.ok() || ab == json::kNpos || json[ab] != '[') {
    return false;
  }
  result_close = r.end() - 1;  // the result object's '}'
  std::string array = "[";
  std::string key;
  json::ArrayReader items(json, ab);
  while (items.next()) {
    const std::string_view item = items.value();
    key.clear();
    if (items.valueType() == '{') {
      json::stringMember(json, items.valueBegin(), keyMember(kind), key);
    }
    if (!keep(key)) {
      ++hidden;
      continue;
    }
    if (array.size() > 1) {
      array += ',';
    }
    array.append(item);
  }
  if (!items.ok()) {
    return false;
  }
  array += ']';
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
    out.append(json.substr(ae, result_close - ae));
    out.append(",\"cacheScope\":");
    out.append(kPrivate);
    out.append(json.substr(result_close));
  }
  return true;
}

}  // namespace gw::federation
