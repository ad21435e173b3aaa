// libFuzzer target: federation/'s readers of upstream and client text. The first byte picks
// the list kind, the names mode and the separator; the rest is the text. Must never crash;
// checks that every text it produces from an accepted input is valid JSON (nothing copied
// from the input escapes its quoting), that pages keep one key per item, that a merged
// response parses back with the same items, and that the rewrites read back as set.

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/federation/federation.h"

namespace {

namespace fed = gw::federation;

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

bool validJson(std::string_view s) {
  static simdjson::dom::parser parser;
  simdjson::dom::element e;
  return parser.parse(s.data(), s.size(), true).get(e) == simdjson::SUCCESS;
}

std::string paramsString(std::string_view json, const char* member) {
  static simdjson::dom::parser parser;
  std::string_view v;
  if (parser.parse(json.data(), json.size(), true)["params"][member].get_string().get(v) !=
      simdjson::SUCCESS) {
    return "<none>";
  }
  return std::string(v);
}

void lists(fed::ListKind kind, fed::NamesMode mode, std::string_view sep, std::string_view text) {
  fed::Page page;
  std::string detail;
  const fed::PageError e = fed::parsePage(kind, text, page, detail);
  if (e == fed::PageError::kRpcError) {
    check(detail.size() <= 200);
  }
  if (e != fed::PageError::kNone) {
    check(page.items.empty() && page.keys.empty() && !detail.empty());
    return;
  }
  check(page.items.size() == page.keys.size());
  if (kind == fed::ListKind::kDiscover) {
    check(validJson(page.result));
    const fed::DiscoverPart parts[] = {{"a", page.result}, {"b\"", page.result}};
    const std::vector<std::string> versions = {"2026-07-28", "2025-11-25"};
    std::string members;
    std::string error;
    if (fed::mergeDiscover(parts, versions, "gw", "1", members, error)) {
      check(validJson("{" + members + "}"));
    } else {
      check(!error.empty());
    }
    return;
  }
  const fed::Contribution parts[] = {
      {"up", &page.items, &page.keys}, {"off", nullptr, nullptr}, {"u\\p", &page.items, nullptr}};
  fed::MergedItems merged;
  fed::mergeItems(kind, parts, mode, sep, merged);
  check(validJson(merged.array));
  std::string response;
  fed::appendResponse(response, "\"id\"", fed::listResultMembers(kind, merged), page.ttl_ms,
                      page.public_scope);
  fed::Page again;
  check(fed::parsePage(kind, response, again, detail) == fed::PageError::kNone);
  // Re-read, the merged list may lose items a client could not take: a repeat of a key the
  // merge could not see (a contribution without keys) or a prefixed name grown too long.
  check(again.items.size() + again.dropped.total() == merged.count);
  check(again.ttl_ms == page.ttl_ms && again.public_scope == page.public_scope);

  fed::Ownership own;
  const std::vector<std::string>* keys[] = {&page.keys, nullptr, &again.keys};
  own.assign(kind, keys);
  for (const std::string& k : page.keys) {
    if (!k.empty() && (kind == fed::ListKind::kTools)) {
      check(own.tool(k) == 0);
    }
    (void)own.resource(k);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) {
    return 0;
  }
  const uint8_t ctl = data[0];
  const std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  const auto kind = static_cast<fed::ListKind>(ctl % fed::kListKinds);
  const auto mode = (ctl & 0x08) != 0 ? fed::NamesMode::kPrefix : fed::NamesMode::kKeep;
  const std::string_view sep = (ctl & 0x10) != 0 ? "__" : "\"";

  lists(kind, mode, sep, text);

  const std::string_view name = (ctl & 0x20) != 0 ? "n\"\\\x01\xff" : "up__tool";
  std::string token;
  fed::appendJsonString(token, name);
  std::string out;
  if (fed::rewriteParamsName(text, name, out)) {
    check(validJson(out));
    check(paramsString(out, "name") ==
          paramsString("{\"params\":{\"name\":" + token + "}}", "name"));
  }
  out.clear();
  if (fed::setParamsCursor(text, name, out)) {
    check(validJson(out));
    check(paramsString(out, "cursor") ==
          paramsString("{\"params\":{\"cursor\":" + token + "}}", "cursor"));
  }

  // Template and URI: the text split at its first newline.
  const size_t nl = text.find('\n');
  if (nl != std::string_view::npos) {
    (void)fed::templateMatches(text.substr(0, nl), text.substr(nl + 1));
    (void)fed::templateMatches(text.substr(nl + 1), text.substr(0, nl));
    const std::string_view ups[] = {text.substr(0, nl), "a", "a__b"};
    size_t upstream = 0;
    std::string_view inner;
    if (fed::splitPrefixed(text.substr(nl + 1), ups, sep, upstream, inner)) {
      check(upstream < 3 && !inner.empty());
    }
  }

  const std::string_view objects[] = {text, text, "{\"tools\":{\"listChanged\":true}}"};
  check(validJson(fed::mergeObjects(objects)));
  (void)fed::taskIdOf(text);
  std::string notifications;
  if (fed::ackNotifications(text, notifications)) {
    check(validJson(fed::ackMessage(notifications, "1")));
  }
  std::string escaped;
  fed::appendJsonString(escaped, text);
  check(validJson(escaped));
  return 0;
}
