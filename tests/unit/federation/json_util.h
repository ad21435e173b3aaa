#pragma once
// Shared by the federation unit tests: whether a text is one valid JSON value (simdjson).

#include <simdjson.h>

#include <string_view>

namespace gw::federation::test {

inline bool validJson(std::string_view s) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element e;
  return parser.parse(s.data(), s.size(), true).get(e) == simdjson::SUCCESS;
}

}  // namespace gw::federation::test
