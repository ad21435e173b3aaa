// The `names: prefix` rewrite of a call body, the cursor of a next-page request and JSON
// string escaping: exact-span edits of a validated text, every other byte kept (see
// federation.h).

#include <utility>

#include "gateway/federation/federation.h"
#include "gateway/federation/json_scan.h"

namespace gw::federation {

namespace {

// The top-level object of `body` and its only "params" member (params = kNpos when there is
// none). False when the body is not a valid JSON object or "params" appears twice.
bool topParams(std::string_view body, size_t& root, size_t& params) {
  size_t end = 0;
  if (json::validate(body) != json::Validity::kValid || !json::rootSpan(body, root, end) ||
      body[root] != '{') {
    return false;
  }
  params = json::kNpos;
  json::ObjectReader top(body, root);
  while (top.next()) {
    if (top.keyIs("params")) {
      if (params != json::kNpos) {
        return false;
      }
      params = top.valueBegin();
    }
  }
  return top.ok();
}

// The value span of the only member `key` of the object at text[open] (begin = kNpos when
// there is none). False when it appears twice or the object is malformed.
bool onlyMember(std::string_view text, size_t open, std::string_view key, size_t& begin,
                size_t& end) {
  begin = json::kNpos;
  json::ObjectReader r(text, open);
  while (r.next()) {
    if (r.keyIs(key)) {
      if (begin != json::kNpos) {
        return false;
      }
      begin = r.valueBegin();
      end = r.valueEnd();
    }
  }
  return r.ok();
}

// body[0..at) + insert + body[at..).
std::string insertedAt(std::string_view body, size_t at, std::string_view insert) {
  std::string r;
  r.reserve(body.size() + insert.size());
  r.append(body.substr(0, at));
  r.append(insert);
  r.append(body.substr(at));
  return r;
}

}  // namespace

bool splitPrefixed(std::string_view name, std::span<const std::string_view> upstreams,
                   std::string_view separator, size_t& upstream, std::string_view& inner) {
  bool found = false;
  size_t best = 0;
  for (size_t u = 0; u < upstreams.size(); ++u) {
    const std::string_view up = upstreams[u];
    const size_t prefix = up.size() + separator.size();
    if (name.size() <= prefix || !name.starts_with(up) ||
        name.substr(up.size(), separator.size()) != separator) {
      continue;
    }
    if (!found || up.size() > upstreams[best].size()) {
      best = u;
      found = true;
    }
  }
  if (!found) {
    return false;
  }
  upstream = best;
  inner = name.substr(upstreams[best].size() + separator.size());
  return true;
}

bool rewriteParamsName(std::string_view body, std::string_view name, std::string& out) {
  size_t root = 0;
  size_t params = 0;
  if (!topParams(body, root, params) || params == json::kNpos || body[params] != '{') {
    return false;
  }
  size_t begin = 0;
  size_t end = 0;
  if (!onlyMember(body, params, "name", begin, end) || begin == json::kNpos || body[begin] != '"') {
    return false;
  }
  std::string r;
  r.reserve(body.size() + name.size() + 8);
  r.append(body.substr(0, begin));
  json::appendString(r, name);
  r.append(body.substr(end));
  out = std::move(r);
  return true;
}

bool setParamsCursor(std::string_view body, std::string_view cursor, std::string& out) {
  size_t root = 0;
  size_t params = 0;
  if (!topParams(body, root, params)) {
    return false;
  }
  std::string member = R"("cursor":)";
  json::appendString(member, cursor);
  if (params == json::kNpos) {
    // `"params":{"cursor":…}` first in the top-level object.
    std::string insert = R"("params":{)";
    insert.append(member);
    insert.push_back('}');
    if (body[json::skipWs(body, root + 1)] != '}') {
      insert.push_back(',');
    }
    out = insertedAt(body, root + 1, insert);
    return true;
  }
  if (body[params] != '{') {
    return false;
  }
  size_t begin = 0;
  size_t end = 0;
  if (!onlyMember(body, params, "cursor", begin, end)) {
    return false;
  }
  if (begin != json::kNpos) {
    std::string r;
    r.reserve(body.size() + cursor.size() + 8);
    r.append(body.substr(0, begin));
    json::appendString(r, cursor);
    r.append(body.substr(end));
    out = std::move(r);
    return true;
  }
  if (body[json::skipWs(body, params + 1)] != '}') {
    member.push_back(',');
  }
  out = insertedAt(body, params + 1, member);
  return true;
}

void appendJsonString(std::string& out, std::string_view s) {
  json::appendString(out, s);
}

}  // namespace gw::federation
