// core/json_escape.h: the JSON string escaper every writer in gateway/ uses, and what each
// option changes.

#include <catch.hpp>

#include <string>
#include <string_view>

#include "gateway/core/json_escape.h"

namespace gw::core {
namespace {

using namespace std::string_view_literals;

std::string escaped(std::string_view s, JsonEscapeOptions o = {}) {
  std::string out;
  appendJsonEscaped(out, s, o);
  return out;
}

TEST_CASE("json_escape: the short escapes, and u00XX for other controls", "[core][json]") {
  CHECK(escaped("plain text") == "plain text");
  CHECK(escaped("a\"b\\c") == "a\\\"b\\\\c");
  CHECK(escaped("\b\f\n\r\t") == "\\b\\f\\n\\r\\t");
  CHECK(escaped("\x00\x01\x1f"sv) == "\\u0000\\u0001\\u001f");
  CHECK(escaped("caf\xc3\xa9 \xf0\x9f\x98\x80") == "caf\xc3\xa9 \xf0\x9f\x98\x80");
}

TEST_CASE("json_escape: DEL only with escape_del", "[core][json]") {
  CHECK(escaped("a\x7f") == "a\x7f");
  CHECK(escaped("a\x7f", {.escape_del = true}) == "a\\u007f");
}

TEST_CASE("json_escape: invalid UTF-8 replaced, or copied when told", "[core][json]") {
  CHECK(escaped("a\xff"
                "b") == "a\\ufffdb");
  CHECK(escaped("\xc3") == "\\ufffd");                        // cut sequence
  CHECK(escaped("\xed\xa0\x80") == "\\ufffd\\ufffd\\ufffd");  // surrogate: byte by byte
  CHECK(escaped("a\xff"
                "b",
                {.replace_invalid_utf8 = false}) ==
        "a\xff"
        "b");
}

TEST_CASE("json_escape: appendJsonString adds the quotes", "[core][json]") {
  std::string out = "[";
  appendJsonString(out, "x\"y");
  CHECK(out == "[\"x\\\"y\"");
}

}  // namespace
}  // namespace gw::core
