// federation/ server/discover: the upstreams' answers merged (versions common to all, in the
// gateway's order; the union of capabilities; instructions), and the object union behind it.

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/federation/federation.h"
#include "tests/unit/federation/json_util.h"

namespace gw::federation {
namespace {

using test::validJson;

TEST_CASE("federation: mergeDiscover intersects versions and unions capabilities", "[federation]") {
  const std::string a =
      R"({"supportedVersions":["2025-11-25","2026-07-28"],"capabilities":{"tools":{"listChanged":false},)"
      R"("logging":{}},"instructions":"Use a for search.","serverInfo":{"name":"a"}})";
  const std::string b =
      R"({"supportedVersions":["2026-07-28","2025-11-25","2024-01-01"],)"
      R"("capabilities":{"tools":{"listChanged":true},"prompts":{"listChanged":false}}})";
  const std::string c =
      R"({"supportedVersions":["2026-07-28","2025-11-25"],"instructions":"C \"quoted\"\nline"})";
  const DiscoverPart parts[] = {{"a", a}, {"b", b}, {"c", c}};
  const std::vector<std::string> gateway = {"2026-07-28", "2025-11-25", "2025-06-18"};
  std::string members;
  std::string error;
  REQUIRE(mergeDiscover(parts, gateway, "mcp-gateway", "1.2", members, error));
  CHECK(error.empty());
  CHECK(
      members ==
      R"("supportedVersions":["2026-07-28","2025-11-25"],)"
      R"("capabilities":{"tools":{"listChanged":true},"logging":{},"prompts":{"listChanged":false}},)"
      R"("instructions":"a:\nUse a for search.\n\nc:\nC \"quoted\"\nline",)"
      R"("resultType":"complete",)"
      R"("_meta":{"io.modelcontextprotocol/serverInfo":{"name":"mcp-gateway","version":"1.2"}})");
  CHECK(validJson("{" + members + "}"));
}

TEST_CASE("federation: mergeDiscover without instructions or capabilities", "[federation]") {
  const std::string a = R"({"supportedVersions":["2026-07-28"],"instructions":""})";
  const std::string b = R"({"supportedVersions":["2026-07-28"],"capabilities":"odd",)"
                        R"("instructions":7})";
  const DiscoverPart parts[] = {{"a", a}, {"b", b}};
  const std::vector<std::string> gateway = {"2026-07-28"};
  std::string members;
  std::string error;
  REQUIRE(mergeDiscover(parts, gateway, "g\"w", "v\n", members, error));
  CHECK(members ==
        R"("supportedVersions":["2026-07-28"],"capabilities":{},"resultType":"complete",)"
        R"("_meta":{"io.modelcontextprotocol/serverInfo":{"name":"g\"w","version":"v\n"}})");
  CHECK(members.find("instructions") == std::string::npos);
  CHECK(validJson("{" + members + "}"));
}

TEST_CASE("federation: mergeDiscover fails when no version is common to all", "[federation]") {
  const std::vector<std::string> gateway = {"2026-07-28", "2025-11-25"};
  std::string members;
  std::string error;
  struct Case {
    std::string_view a;
    std::string_view b;
  };
  const Case cases[] = {
      {R"({"supportedVersions":["2026-07-28"]})", R"({"supportedVersions":["2025-11-25"]})"},
      {R"({"supportedVersions":["2026-07-28"]})", R"({"supportedVersions":[]})"},
      {R"({"supportedVersions":["2026-07-28"]})", R"({})"},
      {R"({"supportedVersions":["2026-07-28"]})", R"({"supportedVersions":"2026-07-28"})"},
      {R"({"supportedVersions":["2026-07-28"]})", R"({"supportedVersions":[20260728]})"},
      {R"({"supportedVersions":["2026-07-28"]})", R"(not json)"},
      {R"({"supportedVersions":["2024-01-01"]})", R"({"supportedVersions":["2024-01-01"]})"},
      {R"({"supportedVersions":["2026-07-28 "]})", R"({"supportedVersions":["2026-07-28"]})"},
  };
  for (const Case& c : cases) {
    INFO(c.a << " " << c.b);
    const DiscoverPart parts[] = {{"first", c.a}, {"second", c.b}};
    CHECK_FALSE(mergeDiscover(parts, gateway, "gw", "1", members, error));
    CHECK_FALSE(error.empty());
  }
  // The error names the upstream that left none.
  const std::string a = R"({"supportedVersions":["2026-07-28"]})";
  const std::string b = R"({"supportedVersions":["2025-11-25"]})";
  const DiscoverPart parts[] = {{"alpha", a}, {"beta", b}};
  CHECK_FALSE(mergeDiscover(parts, gateway, "gw", "1", members, error));
  CHECK(error.find("beta") != std::string::npos);
  CHECK_FALSE(mergeDiscover(parts, std::span<const std::string>{}, "gw", "1", members, error));
  // Escaped version strings compare unescaped; no parts: every gateway version.
  const std::string e = R"({"supportedVersions":["2026\u002d07-28"]})";
  const DiscoverPart escaped[] = {{"e", e}};
  REQUIRE(mergeDiscover(escaped, gateway, "gw", "1", members, error));
  CHECK(members.rfind(R"("supportedVersions":["2026-07-28"],)", 0) == 0);
  REQUIRE(mergeDiscover({}, gateway, "gw", "1", members, error));
  CHECK(members.rfind(R"("supportedVersions":["2026-07-28","2025-11-25"],)", 0) == 0);
}

TEST_CASE("federation: mergeObjects unions objects recursively", "[federation]") {
  const std::string_view objs[] = {
      R"({"tools":{"listChanged":false},"logging":{},"experimental":{"a":[1,2],"x":"first"}})",
      R"({"tools":{"listChanged":true,"extra":1},"experimental":{"a":[2,3,{"k":1}],"x":"second"},)"
      R"("resources":{"subscribe":true}})",
      R"({"experimental":{"a":[{"k":1},1]},"logging":{"level":"debug"},"tools":{"listChanged":false}})",
  };
  CHECK(mergeObjects(objs) ==
        R"({"tools":{"listChanged":true,"extra":1},"logging":{"level":"debug"},)"
        R"("experimental":{"a":[1,2,3,{"k":1}],"x":"first"},"resources":{"subscribe":true}})");

  struct Case {
    std::vector<std::string_view> in;
    std::string_view out;
  };
  const Case cases[] = {
      {{}, "{}"},
      {{"not json", "[]", "1", R"("x")"}, "{}"},
      {{R"({"a":1})"}, R"({"a":1})"},
      {{R"( { "a" : 1 } )"}, R"({"a":1})"},
      {{"bad", R"({"a":1})", "{", R"({"b":2})"}, R"({"a":1,"b":2})"},
      {{R"({"a":false})", R"({"a":false})"}, R"({"a":false})"},
      {{R"({"a":false})", R"({"a":true})", R"({"a":false})"}, R"({"a":true})"},
      {{R"({"a":true})", R"({"a":{"x":1}})"}, R"({"a":true})"},  // mismatched: the first
      {{R"({"a":{"x":1}})", R"({"a":true})"}, R"({"a":{"x":1}})"},
      {{R"({"a":null})", R"({"a":{"x":1}})"}, R"({"a":null})"},
      {{R"({"a":[1]})", R"({"a":2})"}, R"({"a":[1]})"},
      {{R"({"a":[1, 2]})", R"({"a":[1,2]})"}, R"({"a":[1,2]})"},  // element texts as written
      {{R"({"a":[[1],"s"]})", R"({"a":["s",[1],[2]]})"}, R"({"a":[[1],"s",[2]]})"},
      {{R"({"a":1,"a":2})"}, R"({"a":1})"},
      {{R"({"a":{"x":1},"a":{"y":2}})"}, R"({"a":{"x":1,"y":2}})"},
      {{R"({"list\u0043hanged":false})", R"({"listChanged":true})"},
       R"({"list\u0043hanged":true})"},
      {{R"({"a":"é"})", R"({"b":"\u00e9"})"}, R"({"a":"é","b":"\u00e9"})"},
      {{R"({"n":1.50})", R"({"n":2})"}, R"({"n":1.50})"},
  };
  for (const Case& c : cases) {
    INFO(c.out);
    const std::string merged = mergeObjects(c.in);
    CHECK(merged == c.out);
    CHECK(validJson(merged));
  }
}

TEST_CASE("federation: mergeObjects skips inputs nested deeper than 64", "[federation]") {
  std::string deep = "{\"a\":";
  for (int i = 0; i < 64; ++i) {
    deep += "{\"a\":";
  }
  deep += "1";
  for (int i = 0; i < 65; ++i) {
    deep += "}";
  }
  const std::string_view objs[] = {deep, R"({"b":true})"};
  CHECK(mergeObjects(objs) == R"({"b":true})");
  std::string ok = "{\"a\":";
  for (int i = 0; i < 62; ++i) {
    ok += "{\"a\":";
  }
  ok += "1";
  for (int i = 0; i < 63; ++i) {
    ok += "}";
  }
  const std::string_view two[] = {ok, ok};
  CHECK(mergeObjects(two) == ok);
}

}  // namespace
}  // namespace gw::federation
