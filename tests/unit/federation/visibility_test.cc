// federation::filterListAnswer (issue #16 visibility): only the list array and cacheScope
// change, wherever cacheScope is (before, after, absent) and however the keys are spelled;
// answers that are not list answers are refused, never half-rewritten.

#include <simdjson.h>

#include <catch.hpp>
#include <string>

#include "gateway/federation/federation.h"

namespace gw::federation {
namespace {

bool validJson(const std::string& s) {
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  return parser.parse(s).get(e) == simdjson::SUCCESS;
}

bool keepAllButSecret(std::string_view key) {
  return key.find("secret") == std::string_view::npos;
}

}  // namespace

TEST_CASE("visibility filter: the array shrinks, cacheScope becomes private", "[federation]") {
  struct Case {
    const char* in;
    const char* out;
  };
  const Case cases[] = {
      // scope after the array
      {R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"},{"name":"secret_b"}],"ttlMs":5,"cacheScope":"public"}})",
       R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"ttlMs":5,"cacheScope":"private"}})"},
      // scope before the array, whitespace kept elsewhere
      {R"({ "result" : { "cacheScope" : "public", "tools" : [ {"name":"secret"} , { "name" : "x" } ] }, "id":"s" })",
       R"({ "result" : { "cacheScope" : "private", "tools" : [{ "name" : "x" }] }, "id":"s" })"},
      // no scope: added at the end of the result
      {R"({"result":{"tools":[{"name":"a"}],"resultType":"complete"},"id":2,"jsonrpc":"2.0"})",
       R"({"result":{"tools":[{"name":"a"}],"resultType":"complete","cacheScope":"private"},"id":2,"jsonrpc":"2.0"})"},
      // escaped key spellings of the member and of the item key
      {R"({"result":{"t\u006fols":[{"n\u0061me":"secret_x"},{"name":"y"}]}})",
       R"({"result":{"t\u006fols":[{"name":"y"}],"cacheScope":"private"}})"},
      // everything hidden
      {R"({"result":{"tools":[{"name":"secret"}],"cacheScope":"private"}})",
       R"({"result":{"tools":[],"cacheScope":"private"}})"},
  };
  for (const Case& c : cases) {
    std::string out;
    size_t hidden = 0;
    INFO(c.in);
    REQUIRE(filterListAnswer(ListKind::kTools, c.in, keepAllButSecret, out, hidden));
    CHECK(out == c.out);
    CHECK(validJson(out));
  }
}

TEST_CASE("visibility filter: resources by uri, prompts by name, counts", "[federation]") {
  std::string out;
  size_t hidden = 0;
  REQUIRE(filterListAnswer(
      ListKind::kResources,
      R"({"result":{"resources":[{"uri":"docs://secret","name":"a"},{"uri":"docs://x","name":"secret"}]}})",
      keepAllButSecret, out, hidden));
  CHECK(hidden == 1);
  CHECK(out.find("docs://x") != std::string::npos);
  CHECK(out.find("docs://secret") == std::string::npos);
  REQUIRE(filterListAnswer(ListKind::kPrompts,
                           R"({"result":{"prompts":[{"name":"p"},{"name":"secret"}]}})",
                           keepAllButSecret, out, hidden));
  CHECK(hidden == 1);
}

TEST_CASE("visibility filter: not a list answer is refused", "[federation]") {
  const char* bad[] = {
      R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}})",
      R"({"result":{"prompts":[]}})",  // another method's array
      R"({"result":{"tools":{}}})",
      R"({"result":"x"})",
      R"([{"result":{"tools":[]}}])",
      R"({"result":{"tools":[{"name":"a"}]})",  // truncated
      "",
      "not json",
  };
  for (const char* b : bad) {
    std::string out;
    size_t hidden = 0;
    INFO(b);
    CHECK_FALSE(filterListAnswer(ListKind::kTools, b, keepAllButSecret, out, hidden));
  }
}

}  // namespace gw::federation
