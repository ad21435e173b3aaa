// gw::mcp::parseToolsList (x-mcp-header learning and the item-43 validity rules) and
// SchemaCache expiry.

#include <catch.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "gateway/mcp/schema.h"

namespace gw::mcp {
namespace {

using Path = std::vector<std::string>;

const ToolSchema* findTool(const std::vector<ToolSchema>& tools, std::string_view name) {
  for (const ToolSchema& t : tools) {
    if (t.tool == name) {
      return &t;
    }
  }
  return nullptr;
}

// A tools/list response with the given tool objects (comma-separated JSON).
std::string toolsList(std::string_view tools, std::string_view extra = R"(,"ttlMs":0)") {
  return std::string(R"({"jsonrpc":"2.0","id":0,"result":{"tools":[)") + std::string(tools) + "]" +
         std::string(extra) + "}}";
}

std::string tool(std::string_view name, std::string_view properties) {
  return std::string(R"({"name":")") + std::string(name) +
         R"(","inputSchema":{"type":"object","properties":)" + std::string(properties) + "}}";
}

// The spec's captured sample (Part B.1.1), with its elisions filled in.
constexpr std::string_view kSample =
    R"({"result":{"tools":[{"name":"execute_sql","description":"Execute SQL in a region",)"
    R"("inputSchema":{"type":"object","properties":{"region":{"type":"string",)"
    R"("x-mcp-header":"Region"},"count":{"type":"integer","x-mcp-header":"Count"},)"
    R"("dry":{"type":"boolean","x-mcp-header":"Dry"},"opts":{"type":"object","properties":)"
    R"({"tenant":{"type":"string","x-mcp-header":"Tenant"}}},"query":{"type":"string"}},)"
    R"("required":["region","query"]}},{"name":"confirm","inputSchema":{"type":"object",)"
    R"("properties":{"env":{"type":"string"}}}}],"resultType":"complete","ttlMs":0,)"
    R"("cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":{"name":"lab-server",)"
    R"("version":"0.0.1"}}},"jsonrpc":"2.0","id":0})";

TEST_CASE("parseToolsList learns the spec sample") {
  std::vector<ToolSchema> tools;
  uint64_t ttl = 99;
  REQUIRE(parseToolsList(kSample, tools, ttl));
  CHECK(ttl == 0);
  REQUIRE(tools.size() == 2);
  const ToolSchema* sql = findTool(tools, "execute_sql");
  REQUIRE(sql != nullptr);
  REQUIRE(sql->params.size() == 4);
  CHECK(sql->params[0].header == "Region");
  CHECK(sql->params[0].path == Path{"region"});
  CHECK(sql->params[0].type == ParamType::kString);
  CHECK(sql->params[1].header == "Count");
  CHECK(sql->params[1].path == Path{"count"});
  CHECK(sql->params[1].type == ParamType::kInteger);
  CHECK(sql->params[2].header == "Dry");
  CHECK(sql->params[2].path == Path{"dry"});
  CHECK(sql->params[2].type == ParamType::kBoolean);
  CHECK(sql->params[3].header == "Tenant");
  CHECK(sql->params[3].path == Path{"opts", "tenant"});
  CHECK(sql->params[3].type == ParamType::kString);
  const ToolSchema* confirm = findTool(tools, "confirm");
  REQUIRE(confirm != nullptr);  // known tool, nothing to check
  CHECK(confirm->params.empty());
}

TEST_CASE("parseToolsList ttlMs and non-tools/list inputs") {
  std::vector<ToolSchema> tools;
  uint64_t ttl = 0;
  CHECK(parseToolsList(toolsList(tool("t", "{}"), R"(,"ttlMs":30000)"), tools, ttl));
  CHECK(ttl == 30000);
  CHECK(parseToolsList(toolsList(tool("t", "{}"), ""), tools, ttl));
  CHECK(ttl == 0);
  CHECK(parseToolsList(toolsList(tool("t", "{}"), R"(,"ttlMs":-5)"), tools, ttl));
  CHECK(ttl == 0);

  const std::string_view not_lists[] = {
      "",
      "not json",
      R"({"jsonrpc":"2.0","id":0,"result":{}})",
      R"({"jsonrpc":"2.0","id":0,"result":{"tools":{}}})",
      R"({"jsonrpc":"2.0","id":0,"error":{"code":-32601,"message":"x"}})",
      R"([{"result":{"tools":[]}}])",
      R"({"jsonrpc":"2.0","id":0,"result":{"tools":[]}} trailing)",
  };
  for (std::string_view s : not_lists) {
    INFO(std::string(s));
    std::vector<ToolSchema> none;
    CHECK_FALSE(parseToolsList(s, none, ttl));
    CHECK(none.empty());
  }
}

TEST_CASE("parseToolsList excludes invalid tools and keeps valid ones") {
  struct Case {
    std::string_view name;
    std::string properties;
    bool valid;
  };
  const Case cases[] = {
      {"number type", R"({"x":{"type":"number","x-mcp-header":"X"}})", false},
      {"object type", R"({"x":{"type":"object","x-mcp-header":"X"}})", false},
      {"array type", R"({"x":{"type":"array","x-mcp-header":"X"}})", false},
      {"missing type", R"({"x":{"x-mcp-header":"X"}})", false},
      {"type list", R"({"x":{"type":["string","null"],"x-mcp-header":"X"}})", false},
      {"empty name", R"({"x":{"type":"string","x-mcp-header":""}})", false},
      {"non-token name", R"({"x":{"type":"string","x-mcp-header":"A B"}})", false},
      {"name with colon", R"({"x":{"type":"string","x-mcp-header":"A:B"}})", false},
      {"name with CRLF", R"({"x":{"type":"string","x-mcp-header":"A\r\nB"}})", false},
      {"non-ASCII name", R"({"x":{"type":"string","x-mcp-header":"Région"}})", false},
      {"name not a string", R"({"x":{"type":"string","x-mcp-header":7}})", false},
      {"duplicate names differing in case",
       R"({"a":{"type":"string","x-mcp-header":"Region"},"b":{"type":"string",)"
       R"("x-mcp-header":"REGION"}})",
       false},
      {"duplicate across nesting",
       R"({"a":{"type":"string","x-mcp-header":"R"},"o":{"type":"object","properties":)"
       R"({"b":{"type":"string","x-mcp-header":"r"}}}})",
       false},
      {"under items", R"({"list":{"type":"array","items":{"type":"string","x-mcp-header":"X"}}})",
       false},
      {"under items.properties",
       R"({"list":{"type":"array","items":{"type":"object","properties":{"a":{"type":"string",)"
       R"("x-mcp-header":"X"}}}}})",
       false},
      {"under prefixItems",
       R"({"list":{"type":"array","prefixItems":[{"type":"string","x-mcp-header":"X"}]}})", false},
      {"under oneOf",
       R"({"x":{"oneOf":[{"type":"string","x-mcp-header":"X"},{"type":"integer"}]}})", false},
      {"under anyOf", R"({"x":{"anyOf":[{"type":"string","x-mcp-header":"X"}]}})", false},
      {"under allOf", R"({"x":{"allOf":[{"type":"string","x-mcp-header":"X"}]}})", false},
      {"under not", R"({"x":{"type":"string","not":{"type":"string","x-mcp-header":"X"}}})", false},
      {"under if/then",
       R"({"x":{"type":"string","if":{"type":"string"},"then":{"type":"string",)"
       R"("x-mcp-header":"X"}}})",
       false},
      {"under additionalProperties",
       R"({"o":{"type":"object","additionalProperties":{"type":"string","x-mcp-header":"X"}}})",
       false},
      {"under patternProperties",
       R"({"o":{"type":"object","patternProperties":{"^a":{"type":"string",)"
       R"("x-mcp-header":"X"}}}})",
       false},
      {"under an unknown keyword", R"({"x":{"type":"string","x-ext":{"x-mcp-header":"X"}}})",
       false},
      {"properties of a oneOf branch",
       R"({"o":{"oneOf":[{"type":"object","properties":{"a":{"type":"string",)"
       R"("x-mcp-header":"X"}}}]}})",
       false},
      {"valid nested chain",
       R"({"o":{"type":"object","properties":{"p":{"type":"object","properties":)"
       R"({"q":{"type":"integer","x-mcp-header":"Q"}}}}}})",
       true},
      {"property named x-mcp-header",
       R"({"x-mcp-header":{"type":"string"},"y":{"type":"string","x-mcp-header":"Y"}})", true},
      {"property named x-mcp-header under items",
       R"({"l":{"type":"array","items":{"type":"object","properties":{"x-mcp-header":)"
       R"({"type":"string"}}}}})",
       true},
      {"annotation-looking default value",
       R"({"x":{"type":"object","default":{"x-mcp-header":"X"}}})", true},
      {"annotation-looking const/enum/examples",
       R"({"x":{"type":"object","const":{"x-mcp-header":"X"},"enum":[{"x-mcp-header":"X"}],)"
       R"("examples":[{"x-mcp-header":"X"}]}})",
       true},
      {"token with specials", R"({"x":{"type":"string","x-mcp-header":"!#$%&'*+-.^_`|~9"}})", true},
      {"Method is a fine name", R"({"x":{"type":"string","x-mcp-header":"Method"}})", true},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    const std::string json =
        toolsList(tool("good", R"({"r":{"type":"string","x-mcp-header":"Region"}})") + "," +
                  tool("candidate", c.properties) + "," + tool("plain", "{}"));
    std::vector<ToolSchema> tools;
    uint64_t ttl = 0;
    REQUIRE(parseToolsList(json, tools, ttl));
    CHECK((findTool(tools, "candidate") != nullptr) == c.valid);
    const ToolSchema* good = findTool(tools, "good");
    REQUIRE(good != nullptr);
    REQUIRE(good->params.size() == 1);
    CHECK(good->params[0].path == Path{"r"});
    CHECK(findTool(tools, "plain") != nullptr);
  }
}

TEST_CASE("parseToolsList annotation at the schema root or under $defs/$ref is invalid") {
  const std::string json =
      toolsList(R"({"name":"root","inputSchema":{"type":"string","x-mcp-header":"X"}},)"
                R"({"name":"defs","inputSchema":{"type":"object","$defs":{"s":{"type":"string",)"
                R"("x-mcp-header":"X"}},"properties":{"a":{"$ref":"#/$defs/s"}}}},)"
                R"({"name":"noschema"},)"
                R"({"inputSchema":{"type":"object"}},)"
                R"({"name":"ok","inputSchema":{"type":"object","properties":{"n":{"type":"string",)"
                R"("x-mcp-header":"N"}}}})");
  std::vector<ToolSchema> tools;
  uint64_t ttl = 0;
  REQUIRE(parseToolsList(json, tools, ttl));
  CHECK(findTool(tools, "root") == nullptr);
  CHECK(findTool(tools, "defs") == nullptr);
  REQUIRE(findTool(tools, "noschema") != nullptr);
  CHECK(findTool(tools, "noschema")->params.empty());
  REQUIRE(tools.size() == 2);  // the nameless tool is skipped
  REQUIRE(findTool(tools, "ok") != nullptr);
  CHECK(findTool(tools, "ok")->params[0].header == "N");
}

TEST_CASE("parseToolsList reads readOnlyHint and idempotentHint as JSON true only") {
  std::vector<ToolSchema> tools;
  uint64_t ttl = 0;
  REQUIRE(parseToolsList(
      toolsList(
          R"({"name":"ro","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},)"
          R"({"name":"idem","annotations":{"idempotentHint":true,"readOnlyHint":false}},)"
          R"({"name":"both","annotations":{"readOnlyHint":true,"idempotentHint":true}},)"
          R"({"name":"none","inputSchema":{"type":"object"}},)"
          R"({"name":"empty","annotations":{}},)"
          R"({"name":"strings","annotations":{"readOnlyHint":"true","idempotentHint":1}},)"
          R"({"name":"nulls","annotations":{"readOnlyHint":null}},)"
          R"({"name":"notobj","annotations":[{"readOnlyHint":true}]},)"
          R"({"name":"nested","annotations":{"hints":{"readOnlyHint":true}}},)"
          R"({"name":"top","readOnlyHint":true})"),
      tools, ttl));
  struct Want {
    const char* name;
    bool read_only;
    bool idempotent;
  };
  for (const Want& w :
       {Want{"ro", true, false}, Want{"idem", false, true}, Want{"both", true, true},
        Want{"none", false, false}, Want{"empty", false, false}, Want{"strings", false, false},
        Want{"nulls", false, false}, Want{"notobj", false, false}, Want{"nested", false, false},
        Want{"top", false, false}}) {
    INFO(w.name);
    const ToolSchema* t = findTool(tools, w.name);
    REQUIRE(t != nullptr);
    CHECK(t->read_only == w.read_only);
    CHECK(t->idempotent == w.idempotent);
  }
}

TEST_CASE("SchemaCache learn, find and expiry") {
  using namespace std::chrono_literals;
  const SchemaCache::Clock::time_point t0{std::chrono::seconds(1000)};
  SchemaCache cache(5s);

  std::vector<ToolSchema> tools;
  uint64_t ttl = 0;
  REQUIRE(parseToolsList(kSample, tools, ttl));
  cache.learn("main", tools, 20000, t0);

  auto sql = cache.find("main", "execute_sql", t0);
  REQUIRE(sql != nullptr);
  CHECK(sql->params.size() == 4);
  CHECK(cache.find("main", "confirm", t0 + 19s) != nullptr);
  CHECK(cache.find("main", "nope", t0) == nullptr);
  CHECK(cache.find("other", "execute_sql", t0) == nullptr);
  CHECK(cache.find("main", "execute_sql", t0 + 19999ms) != nullptr);
  CHECK(cache.find("main", "execute_sql", t0 + 20s) == nullptr);
  CHECK(sql->params.size() == 4);  // a copy held by a caller outlives expiry

  SECTION("ttlMs 0 gets the floor") {
    cache.learn("main", tools, 0, t0);
    CHECK(cache.find("main", "execute_sql", t0 + 4999ms) != nullptr);
    CHECK(cache.find("main", "execute_sql", t0 + 5s) == nullptr);
  }
  SECTION("learn replaces the upstream's tools") {
    std::vector<ToolSchema> only_confirm{ToolSchema{"confirm", {}}};
    cache.learn("main", only_confirm, 60000, t0 + 1s);
    CHECK(cache.find("main", "execute_sql", t0 + 2s) == nullptr);
    CHECK(cache.find("main", "confirm", t0 + 60s) != nullptr);
    CHECK(cache.find("main", "confirm", t0 + 61s) == nullptr);
  }
  SECTION("huge ttl does not overflow") {
    cache.learn("main", tools, UINT64_MAX, t0);
    CHECK(cache.find("main", "execute_sql", t0 + std::chrono::hours(24 * 300)) != nullptr);
  }
}

}  // namespace
}  // namespace gw::mcp
