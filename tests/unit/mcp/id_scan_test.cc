// mcp::scanIdPrefix: the id a 502/504 echoes for a buffered body that already went upstream.

#include <catch.hpp>

#include <string>
#include <string_view>

#include "gateway/mcp/id_scan.h"

namespace {

using gw::mcp::RequestId;

std::string show(const RequestId& id) {
  switch (id.kind) {
    case RequestId::Kind::kAbsent:
      return "<absent>";
    case RequestId::Kind::kNull:
      return "null";
    case RequestId::Kind::kJson:
      return id.json;
  }
  return "?";
}

}  // namespace

TEST_CASE("id scan: a top-level id anywhere in the prefix, any JSON spelling", "[id_scan]") {
  struct Case {
    std::string_view body;
    std::string_view id;
  };
  for (const Case& c : {
           Case{R"({"jsonrpc":"2.0","id":1,"method":"tools/call"})", "1"},
           Case{R"({"id":"a-b","jsonrpc":"2.0"})", R"("a-b")"},
           Case{R"(  {  "jsonrpc" : "2.0" , "id" : -12.5e3 , "method":"x"})", "-12.5e3"},
           Case{R"({"method":"x","params":{"id":7,"a":[1,{"id":8}]},"id":9})", "9"},
           Case{R"({"params":{"s":"\"id\":5"},"id":"q\"x"})", R"("q\"x")"},
           Case{R"({"id":null,"method":"x"})", "null"},
           Case{R"({"jsonrpc":"2.0","method":"x"})", "<absent>"},
           Case{R"({"id":12)", "<absent>"},                // the number may go on
           Case{R"({"params":{"big":"....)", "<absent>"},  // id past the prefix
           Case{R"({"id":true})", "<absent>"},
           Case{R"({"id":{"a":1}})", "<absent>"},
           Case{R"([{"id":1}])", "<absent>"},
           Case{R"({"\u0069d":1})", "<absent>"},
           Case{R"({"id":1 2})", "<absent>"},
           Case{"", "<absent>"},
           Case{"{", "<absent>"},
           Case{"{}", "<absent>"},
       }) {
    INFO(c.body);
    CHECK(show(gw::mcp::scanIdPrefix(c.body)) == c.id);
  }
}

TEST_CASE("id scan: deep nesting and long prefixes are bounded", "[id_scan]") {
  std::string deep = "{\"a\":" + std::string(10000, '[') + std::string(10000, ']') + ",\"id\":1}";
  CHECK(gw::mcp::scanIdPrefix(deep).kind == RequestId::Kind::kAbsent);
  std::string many = "{";
  for (int i = 0; i < 300; ++i) {
    many += "\"k" + std::to_string(i) + "\":1,";
  }
  many += "\"id\":1}";
  CHECK(gw::mcp::scanIdPrefix(many).kind == RequestId::Kind::kAbsent);
}
