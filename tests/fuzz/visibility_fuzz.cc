// libFuzzer target: the visibility list filter (federation::filterListAnswer) over list
// answers an upstream controls, with a predicate taken from the input. The first byte picks
// the list kind and the predicate; the second is the predicate's byte; the rest is the answer.
// Must never crash; when the filter accepts the text, checks that the answer it makes is
// valid JSON, says cacheScope "private", hides no more items than the answer had, lists only
// items the predicate keeps, and is left as it is by a second pass with the same predicate.

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <functional>
#include <string>
#include <string_view>

#include "gateway/federation/federation.h"

namespace {

namespace fed = gw::federation;

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

simdjson::dom::parser& parser() {
  static simdjson::dom::parser p;
  return p;
}

// The items array of a list answer (result.<arrayKey>), or an error.
simdjson::simdjson_result<simdjson::dom::array> itemsOf(fed::ListKind kind, std::string_view s) {
  return parser().parse(s.data(), s.size(), true)["result"][fed::arrayKey(kind)].get_array();
}

// FNV-1a: a key's bit for the "hash" predicate.
uint32_t hash(std::string_view s, uint8_t seed) {
  uint32_t h = 2166136261u ^ seed;
  for (const char c : s) {
    h = (h ^ static_cast<uint8_t>(c)) * 16777619u;
  }
  return h;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) {
    return 0;
  }
  const uint8_t ctl = data[0];
  const uint8_t arg = data[1];
  const std::string_view text(reinterpret_cast<const char*>(data) + 2, size - 2);
  const auto kind = static_cast<fed::ListKind>(ctl % 4);  // the four lists (not discover)
  const int predicate = (ctl >> 2) % 4;
  const std::function<bool(std::string_view)> keep = [&](std::string_view key) {
    switch (predicate) {
      case 0:
        return (hash(key, arg) & 1) != 0;
      case 1:
        return key.empty() || static_cast<uint8_t>(key.front()) != arg;
      case 2:
        return true;
      default:
        return key.size() % 2 == arg % 2;
    }
  };

  size_t items_in = 0;
  {
    simdjson::dom::array arr;
    if (itemsOf(kind, text).get(arr) == simdjson::SUCCESS) {
      items_in = arr.size();
    }
  }
  std::string out;
  size_t hidden = 0;
  if (!fed::filterListAnswer(kind, text, keep, out, hidden)) {
    return 0;
  }
  check(hidden <= items_in);
  simdjson::dom::element root;
  check(parser().parse(out.data(), out.size(), true).get(root) == simdjson::SUCCESS);
  std::string_view scope;
  check(root["result"]["cacheScope"].get_string().get(scope) == simdjson::SUCCESS);
  check(scope == "private");
  simdjson::dom::array arr;
  check(root["result"][fed::arrayKey(kind)].get_array().get(arr) == simdjson::SUCCESS);
  check(arr.size() + hidden <= items_in);
  for (const simdjson::dom::element item : arr) {
    std::string_view key;
    if (item[fed::keyMember(kind)].get_string().get(key) != simdjson::SUCCESS) {
      key = {};
    }
    check(keep(key));
  }
  // Filtering what it made again takes nothing more out and changes nothing.
  std::string again;
  size_t hidden_again = 0;
  check(fed::filterListAnswer(kind, out, keep, again, hidden_again));
  check(hidden_again == 0);
  check(again == out);
  return 0;
}
