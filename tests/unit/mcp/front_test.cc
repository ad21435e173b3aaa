// mcp/front: the gateway answering 2025-era clients itself and translating their traffic for
// 2026-07-28 upstreams.

#include <simdjson.h>

#include <catch.hpp>

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gateway/mcp/front.h"
#include "gateway/mcp/session.h"

using namespace gw::mcp;

namespace {

constexpr std::string_view kCaps = R"({"sampling":{},"roots":{"listChanged":true}})";
constexpr std::string_view kInfo = R"({"name":"c","version":"1"})";

// A parsed copy of a JSON text the test reads members of.
struct Doc {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  bool ok = false;
  explicit Doc(std::string_view json) {
    ok = parser.parse(simdjson::padded_string(json)).get(root) == simdjson::SUCCESS;
  }
  std::string at(std::string_view pointer) {
    simdjson::dom::element e;
    if (root.at_pointer(pointer).get(e) != simdjson::SUCCESS) {
      return "<absent>";
    }
    return simdjson::minify(e);
  }
};

std::string modern(std::string_view body, std::string_view info = kInfo,
                   std::string_view caps = kCaps) {
  std::string out = "<untouched>";
  if (!front::modernizeRequest(body, info, caps, out)) {
    return out == "<untouched>" ? "<false>" : "<false, out written>";
  }
  return out;
}

// `json` with whitespace after every `{ [ : ,` and before every `} ]` outside strings.
std::string spaced(std::string_view json) {
  std::string out;
  bool in_string = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < json.size()) {
        out += json[++i];
      } else if (c == '"') {
        in_string = false;
      }
      continue;
    }
    if (c == '}' || c == ']') {
      out += "\r\n ";
    }
    out += c;
    if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[' || c == ':' || c == ',') {
      out += " \t";
    }
  }
  return out;
}

std::string minified(std::string_view json) {
  Doc d(json);
  return d.ok ? simdjson::minify(d.root) : "<not json>";
}

}  // namespace

// ---- parseInitializeRequest -------------------------------------------------------------

TEST_CASE("front: an initialize request is read whatever its spelling", "[front][mcp]") {
  struct Case {
    std::string body;
    std::string id;
    std::string version;
    std::string caps;
    std::string info;
  };
  const std::vector<Case> cases = {
      {R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
       R"("capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"c","version":"1"}}})",
       "0", "2025-06-18", R"({"roots":{"listChanged":true}})", R"({"name":"c","version":"1"})"},
      {" \n{ \"params\" : { \"clientInfo\" : { \"name\" : \"x y\" } , \"capabilities\" : { } ,"
       " \"protocolVersion\" : \"2024-11-05\" } ,\t\"method\" : \"initialize\" , \"id\" : \"a\" } "
       "\n",
       R"("a")", "2024-11-05", "{}", R"({"name":"x y"})"},
      {R"({"id":-7,"method":"initialize","params":{"protocolVersion":"2025-11-25"}})", "-7",
       "2025-11-25", "{}", ""},
      {R"({"id":18446744073709551615,"method":"initialize","params":{"protocolVersion":"9"}})",
       "18446744073709551615", "9", "{}", ""},
      {R"({"id":-9223372036854775808,"method":"initialize","params":{"protocolVersion":"v"}})",
       "-9223372036854775808", "v", "{}", ""},
      {R"({"id":1.50,"method":"initialize","params":{"protocolVersion":"v"}})", "1.50", "v", "{}",
       ""},
      {R"({"id":"\u0041\"{}","method":"initial\u0069ze","par\u0061ms":{"protocol\u0056ersion":)"
       R"("2025-03-26","capabilities":null,"clientInfo":null}})",
       R"("A\"{}")", "2025-03-26", "{}", ""},
      {R"({"id":"","method":"initialize","params":{"protocolVersion":"","capabilities":)"
       R"({"experimental":{"x":[1,2,{"_meta":{}}]}}}})",
       R"("")", "", R"({"experimental":{"x":[1,2,{"_meta":{}}]}})", ""},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    front::InitRequest r;
    std::string why;
    REQUIRE(front::parseInitializeRequest(c.body, r, why));
    CHECK(r.id.kind == RequestId::Kind::kJson);
    CHECK(r.id.json == c.id);
    CHECK(r.version == c.version);
    CHECK(r.capabilities == c.caps);
    CHECK(r.client_info == c.info);
    front::InitRequest w;
    REQUIRE(front::parseInitializeRequest(spaced(c.body), w, why));
    CHECK(w.id.json == r.id.json);
    CHECK(w.version == r.version);
    CHECK(w.capabilities == r.capabilities);
    CHECK(w.client_info == r.client_info);
  }
}

TEST_CASE("front: what is not an initialize request is refused with a reason", "[front][mcp]") {
  const std::vector<std::string> bad = {
      "",
      "   ",
      "not json",
      R"({"id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"})",
      R"([{"id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18"}}])",
      R"("initialize")",
      R"({"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
      R"({"id":null,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
      R"({"id":true,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
      R"({"id":[1],"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
      R"({"id":1,"method":"tools/list","params":{"protocolVersion":"2025-06-18"}})",
      R"({"id":1,"method":"Initialize","params":{"protocolVersion":"2025-06-18"}})",
      R"({"id":1,"params":{"protocolVersion":"2025-06-18"}})",
      R"({"id":1,"result":{"protocolVersion":"2025-06-18"}})",
      R"({"id":1,"method":"initialize"})",
      R"({"id":1,"method":"initialize","params":null})",
      R"({"id":1,"method":"initialize","params":[]})",
      R"({"id":1,"method":"initialize","params":{}})",
      R"({"id":1,"method":"initialize","params":{"protocolVersion":null}})",
      R"({"id":1,"method":"initialize","params":{"protocolVersion":20250618}})",
      R"({"id":1,"method":"initialize","params":{"_meta":{"protocolVersion":"2025-06-18"}}})",
      R"({"id":1,"method":"initialize","params":{"protocolVersion":"v","capabilities":[]}})",
      R"({"id":1,"method":"initialize","params":{"protocolVersion":"v","capabilities":"x"}})",
      R"({"id":1,"method":"initialize","params":{"protocolVersion":"v","clientInfo":"c"}})",
      "{\"id\":1,\"method\":\"initialize\",\"params\":{\"protocolVersion\":\"\xff\"}}",
  };
  for (const std::string& b : bad) {
    INFO(b);
    front::InitRequest r;
    std::string why;
    CHECK_FALSE(front::parseInitializeRequest(b, r, why));
    CHECK_FALSE(why.empty());
  }
}

// ---- negotiateLegacy and initializeAnswer ---------------------------------------------------

TEST_CASE("front: the 2025 version rule", "[front][mcp]") {
  CHECK(front::negotiateLegacy("2025-11-25") == "2025-11-25");
  CHECK(front::negotiateLegacy("2025-06-18") == "2025-06-18");
  CHECK(front::negotiateLegacy("2025-03-26") == "2025-03-26");
  CHECK(front::negotiateLegacy("2024-11-05") == "2024-11-05");
  for (std::string_view other : {"2026-07-28", "", "2025-06-18 ", " 2025-06-18", "2025-06-1",
                                 "2025-06-188", "2099-01-01", "2024-10-07", "latest"}) {
    CHECK(front::negotiateLegacy(other) == "2025-11-25");
  }
  CHECK(front::kModernVersion == "2026-07-28");
}

TEST_CASE("front: initialize is answered from a discover result", "[front][mcp]") {
  const std::string discover =
      R"({"supportedVersions":["2026-07-28"],"capabilities":{ "tools" : {"listChanged":true},)"
      R"("extensions":{"io.x/y":{}}},"instructions":"a:\nuse \"x\"","resultType":"complete",)"
      R"("ttlMs":0,"cacheScope":"private","_meta":{"io.modelcontextprotocol/serverInfo":)"
      R"({"name":"gw","version":"0"}}})";
  RequestId id{RequestId::Kind::kJson, R"("init-1")"};
  const std::string want =
      R"({"jsonrpc":"2.0","id":"init-1","result":{"protocolVersion":"2025-06-18","capabilities":)"
      R"({"tools":{"listChanged":true},"extensions":{"io.x/y":{}}},"serverInfo":{"name":)"
      R"("mcp-gateway","version":"0.1.0"},"instructions":"a:\nuse \"x\""}})";
  CHECK(front::initializeAnswer(discover, "2025-06-18", "mcp-gateway", "0.1.0", id) == want);

  // The members form federation::mergeDiscover gives, with whitespace around it.
  const std::string members = discover.substr(1, discover.size() - 2);
  CHECK(front::initializeAnswer(" \n" + members + "\t", "2025-06-18", "mcp-gateway", "0.1.0", id) ==
        want);
  CHECK(front::initializeAnswer("  " + discover + "\n", "2025-06-18", "mcp-gateway", "0.1.0", id) ==
        want);

  // Ids of every kind; absent capabilities and instructions; names that need escaping.
  struct IdCase {
    RequestId id;
    std::string text;
  };
  const std::vector<IdCase> ids = {
      {{RequestId::Kind::kJson, "0"}, "0"},
      {{RequestId::Kind::kJson, "-1"}, "-1"},
      {{RequestId::Kind::kJson, "18446744073709551615"}, "18446744073709551615"},
      {{RequestId::Kind::kJson, R"("a\"b")"}, R"("a\"b")"},
      {RequestId::null(), "null"},
      {RequestId::absent(), "null"},
  };
  for (const IdCase& c : ids) {
    const std::string body = front::initializeAnswer(R"({"supportedVersions":["2026-07-28"]})",
                                                     "2024-11-05", "gw \"q\"", "1\n", c.id);
    CHECK(body == R"({"jsonrpc":"2.0","id":)" + c.text +
                      R"(,"result":{"protocolVersion":"2024-11-05","capabilities":{},)"
                      R"("serverInfo":{"name":"gw \"q\"","version":"1\n"}}})");
    Doc d(body);
    CHECK(d.ok);
  }
  // Nothing readable: a valid answer still, with no capabilities.
  for (std::string_view junk : {"", "{", "[]", "not json", R"("x")", R"({"capabilities":[1]})",
                                R"({"capabilities":{},"instructions":7})"}) {
    const std::string body = front::initializeAnswer(junk, "2025-11-25", "g", "1", {});
    CHECK(body ==
          R"({"jsonrpc":"2.0","id":null,"result":{"protocolVersion":"2025-11-25","capabilities":)"
          R"({},"serverInfo":{"name":"g","version":"1"}}})");
  }
}

// ---- modernizeRequest -------------------------------------------------------------------

TEST_CASE("front: the envelope is added to params wherever params is", "[front][mcp]") {
  const std::string env = R"("io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                          R"("io.modelcontextprotocol/clientCapabilities":)"
                          R"({"sampling":{},"roots":{"listChanged":true}},)"
                          R"("io.modelcontextprotocol/clientInfo":{"name":"c","version":"1"})";
  struct Case {
    std::string body;
    std::string want;
  };
  const std::vector<Case> cases = {
      // params absent: made at the end of the message
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})",
       R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{)" + env + "}}}"},
      {" { \"jsonrpc\" : \"2.0\" , \"method\" : \"ping\" , \"id\" : \"x\" } \n",
       " { \"jsonrpc\" : \"2.0\" , \"method\" : \"ping\" , \"id\" : \"x\" "
       ",\"params\":{\"_meta\":{" +
           env + "}}} \n"},
      {R"({"method":"notifications/initialized"})",
       R"({"method":"notifications/initialized","params":{"_meta":{)" + env + "}}}"},
      // params null
      {R"({"id":1,"method":"tools/list","params":null})",
       R"({"id":1,"method":"tools/list","params":{"_meta":{)" + env + "}}}"},
      {R"({"id":1,"params" : null ,"method":"tools/list"})",
       R"({"id":1,"params" : {"_meta":{)" + env + R"(}} ,"method":"tools/list"})"},
      // params {} and params with members
      {R"({"id":1,"method":"tools/list","params":{}})",
       R"({"id":1,"method":"tools/list","params":{"_meta":{)" + env + "}}}"},
      {R"({"id":1,"method":"tools/list","params":{ }})",
       R"({"id":1,"method":"tools/list","params":{ "_meta":{)" + env + "}}}"},
      {R"({"id":1,"method":"tools/list","params":{"cursor":"c}"}})",
       R"({"id":1,"method":"tools/list","params":{"cursor":"c}","_meta":{)" + env + "}}}"},
      {"{\"id\":1,\"method\":\"tools/list\",\"params\":{\"cursor\":\"c\"\n}\n}",
       "{\"id\":1,\"method\":\"tools/list\",\"params\":{\"cursor\":\"c\"\n,\"_meta\":{" + env +
           "}}\n}"},
      // _meta inside arguments is not params._meta
      {R"({"id":2,"method":"tools/call","params":{"name":"t","arguments":{"_meta":{"a":1}}}})",
       R"({"id":2,"method":"tools/call","params":{"name":"t","arguments":{"_meta":{"a":1}},)"
       R"("_meta":{)" +
           env + "}}}"},
      {R"({"id":2,"method":"tools/call","params":{"arguments":{"x":{"params":{"_meta":null}}},)"
       R"("name":"_meta"}})",
       R"({"id":2,"method":"tools/call","params":{"arguments":{"x":{"params":{"_meta":null}}},)"
       R"("name":"_meta","_meta":{)" +
           env + "}}}"},
      // keys and strings that look like what is searched for
      {R"({"id":2,"method":"m","params":{"s":"\"_meta\":{","\"_meta":{}}})",
       R"({"id":2,"method":"m","params":{"s":"\"_meta\":{","\"_meta":{},"_meta":{)" + env + "}}}"},
      {R"({"id":2,"method":"m","x":"\"params\":{}","params":{"a":"}\\"}})",
       R"({"id":2,"method":"m","x":"\"params\":{}","params":{"a":"}\\","_meta":{)" + env + "}}}"},
      // _meta with other keys (progressToken, traceparent) keeps them
      {R"({"id":3,"method":"tools/call","params":{"_meta":{"progressToken":7},"name":"t"}})",
       R"({"id":3,"method":"tools/call","params":{"_meta":{"progressToken":7,)" + env +
           R"(},"name":"t"}})"},
      {R"({"id":3,"method":"m","params":{"_meta":{ "traceparent" : "00-x" , "p" : [ "}" ] } }})",
       R"({"id":3,"method":"m","params":{"_meta":{ "traceparent" : "00-x" , "p" : [ "}" ] ,)" +
           env + "} }}"},
      // _meta {} and null
      {R"({"id":3,"method":"m","params":{"_meta":{}}})",
       R"({"id":3,"method":"m","params":{"_meta":{)" + env + "}}}"},
      {R"({"id":3,"method":"m","params":{"_meta":null,"a":1}})",
       R"({"id":3,"method":"m","params":{"_meta":{)" + env + R"(},"a":1}})"},
      // keys spelled with escapes are the same keys
      {R"({"id":3,"method":"m","par\u0061ms":{"_m\u0065ta":{"a":1}}})",
       R"({"id":3,"method":"m","par\u0061ms":{"_m\u0065ta":{"a":1,)" + env + "}}}"},
      {R"({"id":3,"method":"m","p\u0041rams":{"_meta":{}}})",
       R"({"id":3,"method":"m","p\u0041rams":{"_meta":{}},"params":{"_meta":{)" + env + "}}}"},
      // ids of every type, unicode in values
      {R"({"id":-9223372036854775808,"method":"m"})",
       R"({"id":-9223372036854775808,"method":"m","params":{"_meta":{)" + env + "}}}"},
      {R"({"id":18446744073709551615,"method":"m"})",
       R"({"id":18446744073709551615,"method":"m","params":{"_meta":{)" + env + "}}}"},
      {R"({"id":1e3,"method":"m"})", R"({"id":1e3,"method":"m","params":{"_meta":{)" + env + "}}}"},
      {R"({"id":"\u00e9\ud83d\ude00","method":"m","params":{"q":"日本"}})",
       R"({"id":"\u00e9\ud83d\ude00","method":"m","params":{"q":"日本","_meta":{)" + env + "}}}"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    const std::string got = modern(c.body);
    CHECK(got == c.want);
    Doc d(got);
    CHECK(d.ok);
    // The same message spelled with whitespace everywhere gets the same members.
    const std::string wide = modern(spaced(c.body));
    CHECK(minified(wide) == minified(c.want));
    CHECK(wide.size() > got.size());
    // Adding the envelope again changes nothing.
    CHECK(modern(got) == got);
    CHECK(modern(wide) == wide);
  }
}

TEST_CASE("front: envelope keys the client sent are kept, only the missing ones added",
          "[front][mcp]") {
  const std::string v = R"("io.modelcontextprotocol/protocolVersion")";
  const std::string c = R"("io.modelcontextprotocol/clientCapabilities")";
  const std::string i = R"("io.modelcontextprotocol/clientInfo")";
  // All three there: the body as sent.
  const std::string all = R"({"id":1,"method":"m","params":{"_meta":{)" + v + R"(:"2025-06-18",)" +
                          c + ":{}," + i + R"(:{"name":"own"}}}})";
  CHECK(modern(all) == all);
  // Each one there alone.
  CHECK(modern(R"({"id":1,"method":"m","params":{"_meta":{)" + v + R"(:"x"}}})") ==
        R"({"id":1,"method":"m","params":{"_meta":{)" + v + R"(:"x",)" + c + ":" +
            std::string(kCaps) + "," + i + ":" + std::string(kInfo) + "}}}");
  CHECK(modern(R"({"id":1,"method":"m","params":{"_meta":{)" + c + R"(:{"x":{}}}}})") ==
        R"({"id":1,"method":"m","params":{"_meta":{)" + c + R"(:{"x":{}},)" + v +
            R"(:"2026-07-28",)" + i + ":" + std::string(kInfo) + "}}}");
  CHECK(modern(R"({"id":1,"method":"m","params":{"_meta":{)" + i + ":null}}}") ==
        R"({"id":1,"method":"m","params":{"_meta":{)" + i + ":null," + v + R"(:"2026-07-28",)" + c +
            ":" + std::string(kCaps) + "}}}");
  // A key spelled with an escape counts as there.
  CHECK(modern(
            R"({"id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol\/clientInfo":1}}})",
            kInfo, "{}") ==
        R"({"id":1,"method":"m","params":{"_meta":{"io.modelcontextprotocol\/clientInfo":1,)" + v +
            R"(:"2026-07-28",)" + c + ":{}}}}");
  // Empty clientInfo: left out; empty capabilities: {}.
  CHECK(modern(R"({"id":1,"method":"m"})", "", "") ==
        R"({"id":1,"method":"m","params":{"_meta":{)" + v + R"(:"2026-07-28",)" + c + ":{}}}}");
  CHECK(modern(R"({"id":1,"method":"m","params":{"_meta":{)" + v + ":\"x\"," + c + ":{}}}}", "",
               "") == R"({"id":1,"method":"m","params":{"_meta":{)" + v + ":\"x\"," + c + ":{}}}}");
}

TEST_CASE("front: bodies the envelope cannot go into are refused, out untouched", "[front][mcp]") {
  const std::vector<std::string> bad = {
      "",
      " ",
      "not json",
      "null",
      "[]",
      R"("m")",
      R"([{"id":1,"method":"m"}])",
      R"([{"id":1,"method":"m"},{"id":2,"method":"n"}])",
      R"({"id":1,"method":"m")",
      R"({"id":1,"method":"m"} x)",
      R"({"id":1,"method":"m"}{})",
      R"({"id":1})",
      R"({})",
      R"({"id":1,"method":7})",
      R"({"id":1,"method":null})",
      R"({"id":1,"result":{}})",
      R"({"id":1,"error":{"code":1,"message":"x"}})",
      R"({"id":1,"method":"m","params":[]})",
      R"({"id":1,"method":"m","params":[{"_meta":{}}]})",
      R"({"id":1,"method":"m","params":"x"})",
      R"({"id":1,"method":"m","params":1})",
      R"({"id":1,"method":"m","params":true})",
      R"({"id":1,"method":"m","params":{"_meta":[]}})",
      R"({"id":1,"method":"m","params":{"_meta":"x"}})",
      R"({"id":1,"method":"m","params":{"_meta":0}})",
      R"({"id":1,"method":"m","params":{},"params":{}})",
      R"({"id":1,"method":"m","params":null,"par\u0061ms":{}})",
      R"({"id":1,"method":"m","params":{"_meta":{},"_meta":{}}})",
      R"({"id":1,"method":"m","params":{"_meta":{},"\u005fmeta":null}})",
      "{\"id\":1,\"method\":\"m\",\"params\":{\"a\":\"\xff\"}}",
  };
  for (const std::string& b : bad) {
    INFO(b);
    CHECK(modern(b) == "<false>");
  }
}

// ---- legacyAnswer ------------------------------------------------------------------------

TEST_CASE("front: an input_required result becomes an error a 2025 client can read",
          "[front][mcp]") {
  struct Case {
    std::string message;
    std::string id;
  };
  const std::vector<Case> cases = {
      {R"({"jsonrpc":"2.0","id":4,"result":{"resultType":"input_required","inputRequests":{}}})",
       "4"},
      {R"({"result":{"inputRequests":{"ok":{"method":"elicitation/create"}},"requestState":"s",)"
       R"("resultType":"input_required","_meta":{}},"jsonrpc":"2.0","id":"x\"y"})",
       R"("x\"y")"},
      {" { \"id\" : -3 , \"result\" : { \"resultType\" : \"input_\\u0072equired\" } } ", "-3"},
      {R"({"id":18446744073709551615,"result":{"resultType":"input_required"}})",
       "18446744073709551615"},
      {R"({"id":2.50,"result":{"resultType":"input_required"}})", "2.50"},
      {R"({"id":"\u00e9","result":{"resultType":"input_required"}})", "\"\xc3\xa9\""},
      {R"({"id":null,"result":{"resultType":"input_required"}})", "null"},
      {R"({"result":{"resultType":"input_required"}})", "null"},
  };
  for (const Case& c : cases) {
    INFO(c.message);
    std::string out;
    std::string wide;
    REQUIRE(front::legacyAnswer(spaced(c.message), wide));
    REQUIRE(front::legacyAnswer(c.message, out));
    CHECK(wide == out);
    CHECK(out == R"({"jsonrpc":"2.0","id":)" + c.id +
                     R"(,"error":{"code":-32603,"message":"the server asked the client for )"
                     R"(input, which the gateway cannot ask a 2025-era client"}})");
  }
}

TEST_CASE("front: every other answer goes to a 2025 client as it came", "[front][mcp]") {
  const std::vector<std::string> unchanged = {
      "",
      "not json",
      R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","content":[]}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})",
      R"({"jsonrpc":"2.0","id":1,"result":{}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"Input_Required"}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required "}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"resultType":null}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"resultType":["input_required"]}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"x":{"resultType":"input_required"}}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"text":)"
      R"("\"resultType\":\"input_required\""}]}})",
      R"({"jsonrpc":"2.0","id":1,"result":"input_required"})",
      R"({"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"input_required"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"m","params":{"resultType":"input_required"}})",
      R"({"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}})",
      R"([{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}}])",
      R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"})",
  };
  for (const std::string& m : unchanged) {
    INFO(m);
    std::string out = "<untouched>";
    CHECK_FALSE(front::legacyAnswer(m, out));
    CHECK(out == "<untouched>");
  }
}

// ---- session ids -------------------------------------------------------------------------

TEST_CASE("front: session ids are minted in their form and check with their secret",
          "[front][mcp]") {
  std::array<uint8_t, 16> zero{};
  std::array<uint8_t, 16> ff{};
  ff.fill(0xff);
  std::array<uint8_t, 16> seq{};
  for (size_t i = 0; i < seq.size(); ++i) {
    seq[i] = static_cast<uint8_t>(i * 17 + 3);
  }
  for (const auto* r : {&zero, &ff, &seq}) {
    for (std::string_view secret : {"", "s3cret", "another key"}) {
      const std::string id = front::mintFrontSession(secret, *r);
      INFO(id);
      REQUIRE(id.size() == front::kFrontSessionChars);
      CHECK(id.starts_with("gw1."));
      CHECK(id[26] == '.');
      CHECK(validServerSessionId(id));                                 // visible ASCII only
      CHECK(unwrapSessionId(id).error == SessionError::kNoSeparator);  // not a wrapped id
      CHECK(front::checkFrontSession(secret, id));
      CHECK(front::mintFrontSession(secret, *r) == id);  // deterministic in its inputs
    }
  }
  CHECK(front::mintFrontSession("", zero) ==
        "gw1.AAAAAAAAAAAAAAAAAAAAAA." +
            sessionTag("", std::string("mcp-front/v1\0", 13) + std::string(16, '\0')));
  // The built-in key and a secret give different ids; each checks only under its own key.
  CHECK(front::mintFrontSession("", seq) != front::mintFrontSession("x", seq));
  CHECK_FALSE(front::checkFrontSession("x", front::mintFrontSession("", seq)));
  CHECK_FALSE(front::checkFrontSession("", front::mintFrontSession("x", seq)));
  CHECK_FALSE(front::checkFrontSession("s3cret", front::mintFrontSession("s3cre", seq)));
  // The wrong random length is a caller's bug: no id.
  std::array<uint8_t, 15> short_random{};
  std::array<uint8_t, 17> long_random{};
  CHECK(front::mintFrontSession("", short_random).empty());
  CHECK(front::mintFrontSession("", long_random).empty());
  CHECK(front::mintFrontSession("", std::span<const uint8_t>()).empty());
}

TEST_CASE("front: a tampered session id is refused, whatever part is changed", "[front][mcp]") {
  std::array<uint8_t, 16> seq{};
  for (size_t i = 0; i < seq.size(); ++i) {
    seq[i] = static_cast<uint8_t>(i * 31 + 7);
  }
  const std::string secret = "k";
  const std::string id = front::mintFrontSession(secret, seq);
  REQUIRE(front::checkFrontSession(secret, id));

  // Every single character changed to every other visible ASCII character.
  size_t tried = 0;
  for (size_t i = 0; i < id.size(); ++i) {
    for (int ch = 0x21; ch <= 0x7e; ++ch) {
      if (static_cast<char>(ch) == id[i]) {
        continue;
      }
      std::string t = id;
      t[i] = static_cast<char>(ch);
      ++tried;
      if (front::checkFrontSession(secret, t)) {
        FAIL_CHECK("accepted " << t);
      }
    }
  }
  CHECK(tried == id.size() * 93);

  std::vector<std::string> bad = {
      "",
      "gw1.",
      "gw1..",
      "gw2" + id.substr(3),
      "GW1" + id.substr(3),
      "xgw1." + id.substr(5),
      id.substr(1),
      id.substr(0, id.size() - 1),
      id + "A",
      id + ".",
      " " + id,
      id + " ",
      id + "\n",
      id + std::string(1, '\0'),
      "." + id.substr(1),
      id.substr(0, 26) + id.substr(27) + "A",                    // separator moved
      id.substr(0, 4) + id.substr(27) + "." + id.substr(4, 22),  // parts swapped
      "gw1." + id.substr(4, 22) + ":" + id.substr(27),
      "gw1." + id.substr(4, 22) + "." + std::string(16, 'A'),
      "gw1." + std::string(22, 'A') + "." + id.substr(27),
      "gw1." + id.substr(4, 22) + "=" + id.substr(28),
      id.substr(0, 25) + "=" + id.substr(26),
      std::string(id.size(), 'A'),
      std::string(4096, 'A'),
  };
  // The random part's last character carries 4 unused bits: a non-canonical spelling of the
  // same 16 bytes is refused (one id per session).
  {
    std::string t = id;
    const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    const size_t v = alphabet.find(t[25]);
    REQUIRE(v != std::string::npos);
    t[25] = alphabet[v ^ 1];
    bad.push_back(t);
  }
  // A tag from another session's random part, and another id's tag.
  const std::string other = front::mintFrontSession(secret, std::array<uint8_t, 16>{});
  bad.push_back(id.substr(0, 27) + other.substr(27));
  bad.push_back(other.substr(0, 27) + id.substr(27));
  // A tag minted under sessionToken's domain for the same bytes.
  bad.push_back(id.substr(0, 27) + sessionToken(secret, std::string(seq.begin(), seq.end()), ""));
  for (const std::string& b : bad) {
    INFO(b);
    CHECK_FALSE(front::checkFrontSession(secret, b));
  }
}
