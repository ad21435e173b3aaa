// federation/ rewrites: splitPrefixed, params.name replaced and params.cursor set with every
// other byte kept (every shape and spelling of params, duplicates refused), JSON string
// escaping, the subscription acknowledgements and list_changed mapping, and a bounded
// randomized test of the two rewrites against a simdjson oracle.

#include <simdjson.h>

#include <catch.hpp>
#include <cstdint>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/federation/federation.h"
#include "tests/unit/federation/json_util.h"

namespace gw::federation {
namespace {

using test::validJson;

std::string replaceAt(std::string_view pattern, std::string_view token) {
  std::string s(pattern);
  const size_t at = s.find('@');
  REQUIRE(at != std::string::npos);
  s.replace(at, 1, token);
  return s;
}

std::string jsonString(std::string_view s) {
  std::string out;
  appendJsonString(out, s);
  return out;
}

TEST_CASE("federation: splitPrefixed takes the longest upstream name", "[federation]") {
  const std::string_view ups[] = {"a", "a__b", "github", "git", "x.y"};
  struct Case {
    std::string_view name;
    std::string_view sep;
    bool ok;
    size_t upstream;
    std::string_view inner;
  };
  const Case cases[] = {
      {"a__tool", "__", true, 0, "tool"},
      {"a__b__tool", "__", true, 1, "tool"},  // the longer name wins
      {"a__b__", "__", true, 0, "b__"},       // a__b would leave nothing
      {"a__c__d", "__", true, 0, "c__d"},     // the inner name may hold the separator
      {"a____", "__", true, 0, "__"},
      {"github__search", "__", true, 2, "search"},
      {"git__search", "__", true, 3, "search"},
      {"gith__search", "__", false, 0, ""},
      {"x.y__z", "__", true, 4, "z"},
      {"x.y.z", ".", true, 4, "z"},
      {"a__", "__", false, 0, ""},  // empty inner name
      {"a_tool", "__", false, 0, ""},
      {"atool", "__", false, 0, ""},
      {"a", "__", false, 0, ""},
      {"", "__", false, 0, ""},
      {"b__tool", "__", false, 0, ""},
      {"A__tool", "__", false, 0, ""},
      {"a/b/c", "/", true, 0, "b/c"},
  };
  for (const Case& c : cases) {
    INFO(c.name << " sep " << c.sep);
    size_t upstream = 99;
    std::string_view inner = "unset";
    REQUIRE(splitPrefixed(c.name, ups, c.sep, upstream, inner) == c.ok);
    if (c.ok) {
      CHECK(upstream == c.upstream);
      CHECK(inner == c.inner);
    }
  }
  size_t upstream = 0;
  std::string_view inner;
  CHECK_FALSE(splitPrefixed("a__x", {}, "__", upstream, inner));
  // Two upstreams of one name: the first.
  const std::string_view twins[] = {"dup", "dup"};
  REQUIRE(splitPrefixed("dup__x", twins, "__", upstream, inner));
  CHECK(upstream == 0);
}

TEST_CASE("federation: rewriteParamsName replaces exactly the params.name token", "[federation]") {
  struct Case {
    std::string_view body;  // '@' marks the params.name token
    std::string_view token;
  };
  const Case cases[] = {
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":@,"arguments":{}}})",
       R"("up__get")"},
      {R"({"params":{"arguments":{"name":"arg"},"name":@},"method":"tools/call","id":"x"})",
       R"("up__get")"},
      {"{ \"jsonrpc\" : \"2.0\" ,\n\t\"params\" :\r\n { \"name\"\t:\n@ } , \"id\" : 1 }\n",
       R"("up__get")"},
      {R"({"p\u0061rams":{"n\u0061me":@}})", R"("up__get")"},
      {R"({"\u0070arams":{"\u006eame":@}})", R"("up__get")"},
      {R"({"method":"\"params\":{\"name\":\"no\"}","params":{"name":@}})", R"("up__get")"},
      {R"({"meta":{"params":{"name":"nested"}},"params":{"x":{"name":"deep"},"name":@}})",
       R"("up__get")"},
      {R"({"params":{"name":@,"arguments":{"name":"keep","list":[{"name":"keep"}]}}})",
       R"("up__get")"},
      {R"({"params":{"name":@}})", R"("a\"b")"},
      {R"({"params":{"name":@}})", R"("\u00e9\ud83d\ude00\n")"},
      {R"({"params":{"name":@}})", R"("")"},
      {R"({"params":{"name":@}})", R"("x\\y\/z")"},
      {R"({"params":{"name":@},"id":[1,{"params":{"name":"z"}}]})", R"("t")"},
  };
  const std::string_view names[] = {"get", "a\"b\\c", "日本語", "", "\n\t\x01", "x y"};
  for (const Case& c : cases) {
    for (std::string_view name : names) {
      const std::string body = replaceAt(c.body, c.token);
      INFO(body << " <- " << name);
      std::string out = "untouched";
      REQUIRE(rewriteParamsName(body, name, out));
      CHECK(out == replaceAt(c.body, jsonString(name)));
      CHECK(validJson(out));
    }
  }
}

TEST_CASE("federation: rewriteParamsName refuses what it cannot rewrite", "[federation]") {
  const std::string_view bad[] = {
      "",
      "not json",
      R"({"params":{"name":"a"})",
      R"({"params":{"name":"a"}} {})",
      R"([{"params":{"name":"a"}}])",
      R"("params")",
      R"({})",
      R"({"method":"tools/call"})",
      R"({"params":null})",
      R"({"params":[{"name":"a"}]})",
      R"({"params":"name"})",
      R"({"params":{}})",
      R"({"params":{"arguments":{"name":"a"}}})",
      R"({"params":{"name":1}})",
      R"({"params":{"name":null}})",
      R"({"params":{"name":{"name":"a"}}})",
      R"({"params":{"name":["a"]}})",
      R"({"params":{"name":"a","name":"b"}})",             // duplicate name
      R"({"params":{"name":"a","n\u0061me":"b"}})",        // … spelled another way
      R"({"params":{"name":"a"},"params":{"name":"b"}})",  // duplicate params
      R"({"params":{"name":"a"},"p\u0061rams":{}})",
      R"({"params":{"name":"a"},"params":null})",
      R"({"Params":{"name":"a"}})",
      R"({"params":{"Name":"a"}})",
      R"({"meta":{"params":{"name":"a"}}})",
  };
  for (std::string_view body : bad) {
    INFO(body);
    std::string out = "untouched";
    CHECK_FALSE(rewriteParamsName(body, "x", out));
    CHECK(out == "untouched");
  }
  // Nested deeper than 64 is refused as not JSON.
  std::string deep = R"({"params":{"name":"a","x":)";
  for (int i = 0; i < 70; ++i) {
    deep += "[";
  }
  for (int i = 0; i < 70; ++i) {
    deep += "]";
  }
  deep += "}}";
  std::string out;
  CHECK_FALSE(rewriteParamsName(deep, "x", out));
}

TEST_CASE("federation: setParamsCursor sets the cursor in every shape of params", "[federation]") {
  struct Case {
    std::string_view body;
    std::string_view out;  // with cursor "c"
  };
  const Case cases[] = {
      // No params: one inserted first.
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})",
       R"({"params":{"cursor":"c"},"jsonrpc":"2.0","id":1,"method":"tools/list"})"},
      {R"({})", R"({"params":{"cursor":"c"}})"},
      {"{ }", "{\"params\":{\"cursor\":\"c\"} }"},
      {" {\n\"id\" : 1 }\n", " {\"params\":{\"cursor\":\"c\"},\n\"id\" : 1 }\n"},
      {R"({"meta":{"params":{}},"id":1})",
       R"({"params":{"cursor":"c"},"meta":{"params":{}},"id":1})"},
      // Empty params.
      {R"({"params":{},"id":1})", R"({"params":{"cursor":"c"},"id":1})"},
      {"{\"params\": { \n },\"id\":1}", "{\"params\": {\"cursor\":\"c\" \n },\"id\":1}"},
      // Params with members: inserted first.
      {R"({"params":{"_meta":{"cursor":"no"}},"id":1})",
       R"({"params":{"cursor":"c","_meta":{"cursor":"no"}},"id":1})"},
      {"{\"params\" : { \"x\" : 1 } }", "{\"params\" : {\"cursor\":\"c\", \"x\" : 1 } }"},
      {R"({"p\u0061rams":{"a":"\"cursor\":1"}})",
       R"({"p\u0061rams":{"cursor":"c","a":"\"cursor\":1"}})"},
      // An existing cursor: its value replaced, whatever it was.
      {R"({"params":{"cursor":"old"},"id":1})", R"({"params":{"cursor":"c"},"id":1})"},
      {R"({"params":{"a":1,"cursor" : "o\"ld" ,"b":2}})",
       R"({"params":{"a":1,"cursor" : "c" ,"b":2}})"},
      {R"({"params":{"cursor":null}})", R"({"params":{"cursor":"c"}})"},
      {R"({"params":{"cursor":42}})", R"({"params":{"cursor":"c"}})"},
      {R"({"params":{"cursor":{"a":[1]}}})", R"({"params":{"cursor":"c"}})"},
      {R"({"params":{"c\u0075rsor":"old"}})", R"({"params":{"c\u0075rsor":"c"}})"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    std::string out = "untouched";
    REQUIRE(setParamsCursor(c.body, "c", out));
    CHECK(out == c.out);
    CHECK(validJson(out));
  }
  // The cursor is escaped.
  std::string out;
  REQUIRE(setParamsCursor(R"({"params":{}})", "a\"b\\\n日", out));
  CHECK(out == "{\"params\":{\"cursor\":\"a\\\"b\\\\\\n日\"}}");
  REQUIRE(setParamsCursor(R"({"params":{"cursor":"x"}})", "", out));
  CHECK(out == R"({"params":{"cursor":""}})");
}

TEST_CASE("federation: setParamsCursor refuses bodies it cannot set", "[federation]") {
  const std::string_view bad[] = {
      "",
      "{",
      "[]",
      R"([{"params":{}}])",
      "null",
      R"("x")",
      R"({"params":null})",
      R"({"params":[]})",
      R"({"params":"cursor"})",
      R"({"params":1})",
      R"({"params":{},"params":{}})",
      R"({"params":{},"p\u0061rams":{}})",
      R"({"params":{"cursor":"a","cursor":"b"}})",
      R"({"params":{"cursor":"a","\u0063ursor":"b"}})",
      R"({"params":{}} trailing)",
  };
  for (std::string_view body : bad) {
    INFO(body);
    std::string out = "untouched";
    CHECK_FALSE(setParamsCursor(body, "c", out));
    CHECK(out == "untouched");
  }
}

TEST_CASE("federation: appendJsonString escapes what JSON requires", "[federation]") {
  struct Case {
    std::string_view in;
    std::string_view out;
  };
  const Case cases[] = {
      {"", R"("")"},
      {"plain", R"("plain")"},
      {"q\"b\\s/", R"("q\"b\\s/")"},
      {"\n\r\t\b\f", R"("\n\r\t\b\f")"},
      {std::string_view("\x00\x01\x1f", 3), R"("\u0000\u0001\u001f")"},
      {"\x7f", "\"\x7f\""},
      {"日本語 é 😀", "\"日本語 é 😀\""},
      {"\xff", R"("\ufffd")"},                      // not UTF-8: replaced so the output stays JSON
      {"a\xc3", R"("a\ufffd")"},                    // truncated sequence
      {"\xed\xa0\x80", R"("\ufffd\ufffd\ufffd")"},  // an encoded surrogate
      {"\xc0\xaf", R"("\ufffd\ufffd")"},            // overlong
  };
  for (const Case& c : cases) {
    std::string out = "x";
    appendJsonString(out, c.in);
    CHECK(out == "x" + std::string(c.out));
  }
  // Every byte value gives valid JSON that reads back (ASCII exactly).
  for (int b = 0; b < 256; ++b) {
    const std::string s(1, static_cast<char>(b));
    const std::string json = jsonString(s);
    INFO(b);
    CHECK(validJson(json));
    if (b < 0x80) {
      simdjson::dom::parser parser;
      std::string_view back;
      REQUIRE(parser.parse(json).get_string().get(back) == simdjson::SUCCESS);
      CHECK(back == s);
    }
  }
}

TEST_CASE("federation: ackNotifications reads only the acknowledgement", "[federation]") {
  std::string n;
  REQUIRE(
      ackNotifications(R"({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",)"
                       R"("params":{"notifications":{ "tools/list_changed" : true },"_meta":{}}})",
                       n));
  CHECK(n == R"({ "tools/list_changed" : true })");
  REQUIRE(ackNotifications(
      R"({"params":{"notifications":{}},"m\u0065thod":"notifications/subscriptions/acknowledged"})",
      n));
  CHECK(n == "{}");
  const std::string_view bad[] = {
      "",
      "[]",
      R"({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged"})",
      R"({"method":"notifications/subscriptions/acknowledged","params":{}})",
      R"({"method":"notifications/subscriptions/acknowledged","params":{"notifications":[]}})",
      R"({"method":"notifications/subscriptions/acknowledged","params":{"notifications":true}})",
      R"({"method":"notifications/subscriptions/acknowledged","params":[{"notifications":{}}]})",
      R"({"method":"notifications/progress","params":{"notifications":{}}})",
      R"({"method":"notifications/subscriptions/acknowledged ","params":{"notifications":{}}})",
      R"({"id":1,"result":{"notifications":{}}})",
      R"({"method":"notifications/subscriptions/acknowledged","params":{"notifications":{})",
  };
  for (std::string_view t : bad) {
    INFO(t);
    n = "untouched";
    CHECK_FALSE(ackNotifications(t, n));
  }
}

TEST_CASE("federation: ackMessage and changedListOf", "[federation]") {
  const std::string m = ackMessage(R"({"tools/list_changed":true})", R"("sub-1")");
  CHECK(m == R"({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",)"
             R"("params":{"notifications":{"tools/list_changed":true},)"
             R"("_meta":{"io.modelcontextprotocol/subscriptionId":"sub-1"}}})");
  CHECK(validJson(m));
  std::string back;
  REQUIRE(ackNotifications(m, back));
  CHECK(back == R"({"tools/list_changed":true})");
  CHECK(validJson(ackMessage("{}", "7")));

  CHECK(changedListOf("notifications/tools/list_changed") == ListKind::kTools);
  CHECK(changedListOf("notifications/prompts/list_changed") == ListKind::kPrompts);
  CHECK(changedListOf("notifications/resources/list_changed") == ListKind::kResources);
  for (std::string_view m2 :
       {"", "notifications/resources/updated", "notifications/progress", "tools/list",
        "notifications/tools/list_changed ", "notifications/Tools/list_changed"}) {
    CHECK_FALSE(changedListOf(m2).has_value());
  }
}

// ---- randomized ----------------------------------------------------------------------------

// The oracle: simdjson's view of a body (the mutated bodies nest far less than 64).
struct Oracle {
  bool object = false;  // valid JSON, an object
  size_t params = 0;    // top-level "params" members
  bool params_object = false;
  size_t names = 0;  // params."name" members (when params is one object)
  bool name_string = false;
  size_t cursors = 0;
};

Oracle oracleOf(std::string_view body) {
  thread_local simdjson::dom::parser parser;
  thread_local bool sized = parser.allocate(4096, 128) == simdjson::SUCCESS;
  (void)sized;
  Oracle o;
  simdjson::dom::object root;
  if (parser.parse(body.data(), body.size(), true).get_object().get(root) != simdjson::SUCCESS) {
    return o;
  }
  o.object = true;
  simdjson::dom::element params;
  for (auto field : root) {
    if (field.key == "params") {
      ++o.params;
      params = field.value;
    }
  }
  simdjson::dom::object p;
  if (o.params == 1 && params.get_object().get(p) == simdjson::SUCCESS) {
    o.params_object = true;
    for (auto field : p) {
      if (field.key == "name") {
        ++o.names;
        o.name_string = field.value.is_string();
      }
      if (field.key == "cursor") {
        ++o.cursors;
      }
    }
  }
  return o;
}

// params.<member> of `json` as a string (json already known valid).
std::string paramsString(std::string_view json, std::string_view member) {
  simdjson::dom::parser parser;
  std::string_view v;
  if (parser.parse(json.data(), json.size(), true)["params"][member].get_string().get(v) !=
      simdjson::SUCCESS) {
    return "<none>";
  }
  return std::string(v);
}

// Whether out == body[0..b) + seg + body[e..) for some b ≤ e where body[b..e) is `removed`-like:
// one JSON value when `value` (a replaced token), empty otherwise (an insertion).
bool spliced(std::string_view body, std::string_view out, std::string_view seg, bool value) {
  for (size_t b = 0; b <= body.size() && b <= out.size(); ++b) {
    if (b > 0 && body[b - 1] != out[b - 1]) {
      break;
    }
    if (out.substr(b, seg.size()) != seg) {
      continue;
    }
    const std::string_view rest = out.substr(b + seg.size());
    if (rest.size() > body.size() - b) {
      continue;
    }
    const size_t e = body.size() - rest.size();
    if (body.substr(e) != rest) {
      continue;
    }
    if (!value && e == b) {
      return true;
    }
    if (value && e > b && validJson(body.substr(b, e - b))) {
      return true;
    }
  }
  return false;
}

std::string mutate(std::string s, std::mt19937& rng) {
  static const std::string_view kTokens[] = {"\"name\"",
                                             "\"params\"",
                                             "\"cursor\"",
                                             "{",
                                             "}",
                                             "[",
                                             "]",
                                             ",",
                                             ":",
                                             "\"",
                                             "\\",
                                             "\\u0061",
                                             "\\\"",
                                             " ",
                                             "\n",
                                             "null",
                                             "1",
                                             "\"x\"",
                                             "\"n\\u0061me\"",
                                             "{}",
                                             "\xc3\xa9",
                                             "\xff"};
  const int edits = 1 + static_cast<int>(rng() % 3);
  for (int k = 0; k < edits; ++k) {
    const size_t at = s.empty() ? 0 : rng() % (s.size() + 1);
    switch (rng() % 5) {
      case 0:  // overwrite a byte
        if (at < s.size()) {
          s[at] = static_cast<char>(rng() % 256);
        }
        break;
      case 1:  // insert a byte
        s.insert(at, 1, static_cast<char>(rng() % 128));
        break;
      case 2:  // insert a token
        s.insert(at, kTokens[rng() % std::size(kTokens)]);
        break;
      case 3:  // delete a few bytes
        if (at < s.size()) {
          s.erase(at, 1 + rng() % 4);
        }
        break;
      default:  // truncate
        s.resize(at);
        break;
    }
  }
  return s;
}

TEST_CASE("federation: rewriteParamsName and setParamsCursor hold on mutated bodies",
          "[federation]") {
  const std::string_view bases[] = {
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"up__get","arguments":{"name":"x","n":[1,2]}}})",
      R"({"params":{"arguments":{"q":"\"name\""},"name":"a\u0062c"},"id":"s","method":"tools/call"})",
      " { \"id\" : 2 , \"params\" : { \"name\" : \"x\\ny\" , \"_meta\" : { \"progressToken\" : 1 } "
      "} } ",
      R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"cursor":"abc"}})",
      R"({"jsonrpc":"2.0","id":4,"method":"prompts/list"})",
      R"({"jsonrpc":"2.0","id":5,"method":"resources/list","params":{}})",
      R"({"p\u0061rams":{"n\u0061me":"e","cursor":null},"id":[{"params":{}}]})",
  };
  const std::string_view values[] = {"new", "", "a\"b\\c", "日本", "\n\x01", "\xff!"};
  std::mt19937 rng(20260728);
  size_t rewrites = 0;
  size_t cursors = 0;
  for (int iter = 0; iter < 20000; ++iter) {
    const std::string body = mutate(std::string(bases[rng() % std::size(bases)]), rng);
    const std::string_view value = values[rng() % std::size(values)];
    const std::string token = jsonString(value);
    const Oracle o = oracleOf(body);
    INFO(iter << ": " << body);

    std::string out;
    const bool renamed = rewriteParamsName(body, value, out);
    const bool can_rename =
        o.object && o.params == 1 && o.params_object && o.names == 1 && o.name_string;
    REQUIRE(renamed == can_rename);
    if (renamed) {
      ++rewrites;
      REQUIRE(validJson(out));
      // The value as read back: `value` with non-UTF-8 bytes replaced, as appendJsonString does.
      CHECK(paramsString(out, "name") ==
            paramsString("{\"params\":{\"name\":" + token + "}}", "name"));
      CHECK(spliced(body, out, token, true));
    }

    out.clear();
    const bool set = setParamsCursor(body, value, out);
    const bool can_set =
        o.object && o.params <= 1 && (o.params == 0 || o.params_object) && o.cursors <= 1;
    REQUIRE(set == can_set);
    if (set) {
      ++cursors;
      REQUIRE(validJson(out));
      CHECK(paramsString(out, "cursor") ==
            paramsString("{\"params\":{\"cursor\":" + token + "}}", "cursor"));
      const std::string member = "\"cursor\":" + token;
      const bool ok =
          (o.cursors == 1 && spliced(body, out, token, true)) ||
          (o.cursors == 0 && o.params == 1 &&
           (spliced(body, out, member + ",", false) || spliced(body, out, member, false))) ||
          (o.params == 0 && (spliced(body, out, "\"params\":{" + member + "},", false) ||
                             spliced(body, out, "\"params\":{" + member + "}", false)));
      CHECK(ok);
    }
  }
  // The mutations leave enough bodies intact that both paths are exercised.
  CHECK(rewrites > 500);
  CHECK(cursors > 500);
}

}  // namespace
}  // namespace gw::federation
