// federation/ list answers: one upstream page parsed (every spelling of a key, every shape the
// answer can take, ttl and scope), the pages merged (keep mode conflicts, prefix mode rename
// that keeps every other byte) and the response built.

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/federation/federation.h"
#include "tests/unit/federation/json_util.h"

namespace gw::federation {
namespace {

using test::validJson;

std::string answer(std::string_view result) {
  return std::string(R"({"jsonrpc":"2.0","id":1,"result":)") + std::string(result) + "}";
}

std::string replaceAt(std::string_view pattern, std::string_view token) {
  std::string s(pattern);
  const size_t at = s.find('@');
  REQUIRE(at != std::string::npos);
  s.replace(at, 1, token);
  return s;
}

TEST_CASE("federation: list kinds, their methods, array keys and key members", "[federation]") {
  const std::string_view methods[] = {"tools/list", "prompts/list", "resources/list",
                                      "resources/templates/list", "server/discover"};
  const std::string_view arrays[] = {"tools", "prompts", "resources", "resourceTemplates", ""};
  const std::string_view keys[] = {"name", "name", "uri", "uriTemplate", ""};
  for (size_t k = 0; k < kListKinds; ++k) {
    const auto kind = static_cast<ListKind>(k);
    CHECK(methodOf(kind) == methods[k]);
    CHECK(arrayKey(kind) == arrays[k]);
    CHECK(keyMember(kind) == keys[k]);
    REQUIRE(listKindOf(methods[k]).has_value());
    CHECK(*listKindOf(methods[k]) == kind);
  }
  for (std::string_view m : {"", "tools/call", "tools/list ", "Tools/list", "resources/read"}) {
    CHECK_FALSE(listKindOf(m).has_value());
  }
}

TEST_CASE("federation: parsePage keeps each item as written and trims around it", "[federation]") {
  const std::string json =
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"tools\":[ \n"
      "  {\"name\":\"a\",  \"inputSchema\" : {\"type\":\"object\"}}\t,\n"
      "{ \"name\" : \"b\" }\r\n ] } }";
  Page page;
  std::string detail;
  REQUIRE(parsePage(ListKind::kTools, json, page, detail) == PageError::kNone);
  REQUIRE(page.items.size() == 2);
  CHECK(page.items[0] == R"({"name":"a",  "inputSchema" : {"type":"object"}})");
  CHECK(page.items[1] == R"({ "name" : "b" })");
  CHECK(page.keys == std::vector<std::string>{"a", "b"});
  CHECK_FALSE(page.has_next);
  CHECK(page.ttl_ms == 0);
  CHECK_FALSE(page.public_scope);

  // An empty array is a page with no items.
  REQUIRE(parsePage(ListKind::kTools, answer(R"({"tools":[ ]})"), page, detail) ==
          PageError::kNone);
  CHECK(page.items.empty());
  CHECK(page.keys.empty());
}

TEST_CASE("federation: parsePage reads the key member however it is spelled", "[federation]") {
  struct Case {
    std::string_view item;  // `K` stands for the key member's name
    std::string_view key;
  };
  const Case cases[] = {
      {R"({"K":"a"})", "a"},
      {R"({ "K" : "a" })", "a"},
      {"{\n\t\"K\"\r\n:\n\"a\"\n}", "a"},
      {R"({"title":"t","K":"z"})", "z"},
      {R"({"K":"a","K":"b"})", ""},  // written twice: readers differ, dropped
      {R"({"K":1,"K":"b"})", ""},
      {R"({"K":1})", ""},
      {R"({"K":null})", ""},
      {R"({"K":["a"]})", ""},
      {R"({"K":{"K":"a"}})", ""},
      {R"({})", ""},
      {R"({"inner":{"K":"deep"}})", ""},             // deeper members are not the key
      {R"({"d":"\"K\":\"x\"","e":["K","x"]})", ""},  // nor text inside strings
      {R"({"inner":{"K":"deep"},"K":"top"})", "top"},
      {R"({"K":"a\"b\\c\/d"})", "a\"b\\c/d"},
      {R"({"K":"\u00e9t\u00E9 "})", "\xc3\xa9t\xc3\xa9 "},
      {R"({"K":"\u00e9t\u00E9 \n\t"})", ""},  // control characters: dropped
      {R"({"K":"a\u007f"})", ""},
      {R"({"K":"\ud83d\ude00"})", "\xf0\x9f\x98\x80"},
      {R"({"K":"日本"})", "日本"},
      {R"({"K":""})", ""},
      {R"({"k":"a"})", ""},  // case-sensitive
  };
  for (ListKind kind :
       {ListKind::kTools, ListKind::kPrompts, ListKind::kResources, ListKind::kTemplates}) {
    const std::string k(keyMember(kind));
    for (const Case& c : cases) {
      std::string item(c.item);
      for (size_t at = item.find("\"K\""); at != std::string::npos;
           at = item.find("\"K\"", at + 1)) {
        item.replace(at + 1, 1, k);
      }
      const std::string json = answer("{\"" + std::string(arrayKey(kind)) + "\":[" + item + "]}");
      INFO(json);
      Page page;
      std::string detail;
      REQUIRE(parsePage(kind, json, page, detail) == PageError::kNone);
      if (c.key.empty()) {  // an item without a usable key is dropped, and counted
        CHECK(page.items.empty());
        CHECK(page.dropped.total() == 1);
        continue;
      }
      REQUIRE(page.items.size() == 1);
      CHECK(page.items[0] == item);
      CHECK(page.keys[0] == c.key);
      CHECK(page.dropped.total() == 0);
    }
  }

  // Escaped spellings of the key member's name itself.
  Page page;
  std::string detail;
  const std::pair<ListKind, std::string_view> escaped[] = {
      {ListKind::kTools, R"({"tools":[{"n\u0061me":"a"}]})"},
      {ListKind::kPrompts, R"({"prompts":[{"\u006e\u0061\u006d\u0065":"a"}]})"},
      {ListKind::kResources, R"({"resources":[{"ur\u0069":"a"}]})"},
      {ListKind::kTemplates, R"({"resourceTemplates":[{"uri\u0054emplate":"a"}]})"},
  };
  for (const auto& [kind, result] : escaped) {
    INFO(result);
    REQUIRE(parsePage(kind, answer(result), page, detail) == PageError::kNone);
    CHECK(page.keys == std::vector<std::string>{"a"});
  }
  // Near misses of the name are other members.
  for (std::string_view result : {R"({"tools":[{"name ":"a"}]})", R"({"tools":[{"nam":"a"}]})",
                                  R"({"tools":[{"name\u0000":"a"}]})"}) {
    INFO(result);
    REQUIRE(parsePage(ListKind::kTools, answer(result), page, detail) == PageError::kNone);
    CHECK(page.keys.empty());
    CHECK(page.dropped.count[static_cast<size_t>(ItemFault::kMissingKey)] == 1);
  }
}

TEST_CASE("federation: parsePage finds result and the array however the answer is spelled",
          "[federation]") {
  Page page;
  std::string detail;
  const std::string_view texts[] = {
      R"({"result":{"tools":[{"name":"a"}]},"jsonrpc":"2.0","id":1})",
      " \n{ \"jsonrpc\" : \"2.0\" , \"id\" : \"x\" , \"result\" : { \"tools\" : [ { \"name\" : "
      "\"a\" } ] } } \n",
      R"({"jsonrpc":"2.0","id":1,"r\u0065sult":{"t\u006fols":[{"name":"a"}]}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"other":{"tools":[]},"tools":[{"name":"a"}]}})",
      R"({"jsonrpc":"2.0","id":1,"error":null,"result":{"tools":[{"name":"a"}]}})",
      R"({"jsonrpc":"2.0","id":{"result":1},"result":{"x":"\"tools\":[]","tools":[{"name":"a"}]}})",
  };
  for (std::string_view t : texts) {
    INFO(t);
    REQUIRE(parsePage(ListKind::kTools, t, page, detail) == PageError::kNone);
    CHECK(page.keys == std::vector<std::string>{"a"});
  }
}

TEST_CASE("federation: parsePage rejects what is not JSON or nests deeper than 64",
          "[federation]") {
  Page page;
  page.items = {"stale"};
  std::string detail;
  const std::string_view bad[] = {
      "",
      " ",
      "{",
      "not json",
      R"({"result":{"tools":[]})",
      R"({"result":{"tools":[]}} x)",
      R"({"result":{"tools":[]}}{})",
      R"({"result":{"tools":[{"name":"a",}]}})",
      R"({'result':{}})",
      "{\"result\":{\"tools\":[{\"name\":\"\xff\"}]}}",
      "{\"result\":{\"tools\":[{\"name\":\"a\nb\"}]}}",
      R"({"result":{"tools":[{"name":"\x"}]}})",
      R"({"result":{"tools":[01]}})",
  };
  for (std::string_view t : bad) {
    INFO(t);
    CHECK(parsePage(ListKind::kTools, t, page, detail) == PageError::kInvalidJson);
    CHECK_FALSE(detail.empty());
    CHECK(page.items.empty());
  }

  // The root object is depth 1, result 2, tools 3, the item 4: items nesting to 64 pass.
  const auto nested = [](size_t depth) {
    std::string item = "{\"name\":\"a\",\"x\":";
    for (size_t d = 5; d <= depth; ++d) {
      item += "[";
    }
    item += "0";
    for (size_t d = 5; d <= depth; ++d) {
      item += "]";
    }
    item += "}";
    return answer("{\"tools\":[" + item + "]}");
  };
  CHECK(parsePage(ListKind::kTools, nested(64), page, detail) == PageError::kNone);
  CHECK(page.keys == std::vector<std::string>{"a"});
  CHECK(parsePage(ListKind::kTools, nested(65), page, detail) == PageError::kInvalidJson);
  CHECK(detail.find("64") != std::string::npos);
  CHECK(parsePage(ListKind::kTools, nested(5000), page, detail) == PageError::kInvalidJson);
}

TEST_CASE("federation: parsePage reports error answers with code and message", "[federation]") {
  Page page;
  std::string detail;
  CHECK(
      parsePage(ListKind::kTools,
                R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"Method not found"}})",
                page, detail) == PageError::kRpcError);
  CHECK(detail == "-32601: Method not found");
  CHECK(parsePage(ListKind::kPrompts,
                  R"({"error":{"message":"M\u00e9thode \"x\"","data":{},"code":-1},"id":1})", page,
                  detail) == PageError::kRpcError);
  CHECK(detail == "-1: M\xc3\xa9thode \"x\"");
  CHECK(parsePage(ListKind::kDiscover, R"({"id":1,"error":{}})", page, detail) ==
        PageError::kRpcError);
  CHECK(detail == "?: ");
  // An answer with both a result and an error is malformed: a client might read either, so
  // it is neither relayed as an error nor listed.
  CHECK(parsePage(ListKind::kTools,
                  R"({"id":1,"result":{"tools":[]},"error":{"code":1,"message":"m"}})", page,
                  detail) == PageError::kShape);
  CHECK(detail == "both result and error");
  CHECK(parsePage(ListKind::kTools, R"({"id":1,"error":"boom"})", page, detail) ==
        PageError::kRpcError);
  CHECK(detail == "error: \"boom\"");

  // The detail is bounded to 200 bytes, cut at a UTF-8 boundary.
  std::string long_message;
  for (int i = 0; i < 300; ++i) {
    long_message += "\xc3\xa9";
  }
  REQUIRE(parsePage(ListKind::kTools,
                    R"({"id":1,"error":{"code":-32000,"message":")" + long_message + "\"}}", page,
                    detail) == PageError::kRpcError);
  CHECK(detail.size() <= 200);
  CHECK(detail.size() >= 190);
  CHECK(detail.rfind("-32000: \xc3\xa9", 0) == 0);
  CHECK(validJson("\"" + detail + "\""));  // a whole sequence at the end
}

TEST_CASE("federation: parsePage rejects answers of the wrong shape", "[federation]") {
  Page page;
  std::string detail;
  const std::string_view bad[] = {
      "[]",
      R"([{"result":{"tools":[]}}])",
      R"("result")",
      "null",
      "42",
      R"({})",
      R"({"jsonrpc":"2.0","id":1})",
      R"({"jsonrpc":"2.0","id":1,"result":null})",
      R"({"jsonrpc":"2.0","id":1,"result":[]})",
      R"({"jsonrpc":"2.0","id":1,"result":"x"})",
      R"({"jsonrpc":"2.0","id":1,"result":{}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"prompts":[]}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":{}}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":null}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":"[]"}})",
      // a member the gateway reads written twice (JavaScript's JSON.parse keeps the last)
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],"tools":"dup"}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":[]},"result":{"tools":[{"name":"a"}]}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}]},"result":7})",
      R"({"jsonrpc":"2.0","id":1,"r\u0065sult":{"tools":[]},"result":{"tools":[]}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":[],"cacheScope":"private","cacheScope":"public"}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":[],"nextCursor":"a","nextCursor":"b"}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":[],"ttlMs":1,"ttlMs":2}})",
      R"({"jsonrpc":"2.0","id":1,"error":{"code":1},"error":null,"result":{"tools":[]}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":[]},"error":{"code":1,"message":"m"}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":"dup","tools":[]}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"x":{"tools":[]}}})",
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":[]},"x":1}extra)",
  };
  for (std::string_view t : bad) {
    INFO(t);
    const PageError e = parsePage(ListKind::kTools, t, page, detail);
    CHECK((e == PageError::kShape || (e == PageError::kInvalidJson && !validJson(t))));
    CHECK_FALSE(detail.empty());
    CHECK(page.items.empty());
  }
  CHECK(parsePage(ListKind::kResources, answer(R"({"tools":[]})"), page, detail) ==
        PageError::kShape);
  CHECK(parsePage(ListKind::kTemplates, answer(R"({"resources":[]})"), page, detail) ==
        PageError::kShape);
  CHECK(parsePage(ListKind::kTemplates, answer(R"({"resourceTemplates":[]})"), page, detail) ==
        PageError::kNone);
}

TEST_CASE("federation: parsePage reads nextCursor only when it is a string", "[federation]") {
  struct Case {
    std::string_view member;
    bool has_next;
    std::string_view cursor;
  };
  const Case cases[] = {
      {"", false, ""},
      {R"(,"nextCursor":"abc")", true, "abc"},
      {R"(,"nextCursor":"")", true, ""},
      {R"(,"nextCursor":"c\u0031\"\\")", true, "c1\"\\"},
      {R"(,"next\u0043ursor":"e")", true, "e"},
      {R"(,"nextCursor":null)", false, ""},
      {R"(,"nextCursor":7)", false, ""},
      {R"(,"nextCursor":{"c":"x"})", false, ""},
      {R"(,"nextcursor":"x")", false, ""},
      {R"(,"meta":{"nextCursor":"x"})", false, ""},
  };
  for (const Case& c : cases) {
    const std::string json = answer(R"({"tools":[])" + std::string(c.member) + "}");
    INFO(json);
    Page page;
    std::string detail;
    REQUIRE(parsePage(ListKind::kTools, json, page, detail) == PageError::kNone);
    CHECK(page.has_next == c.has_next);
    CHECK(page.next_cursor == c.cursor);
  }
}

TEST_CASE("federation: parsePage reads ttlMs and cacheScope strictly", "[federation]") {
  struct Case {
    std::string_view members;
    uint64_t ttl;
    bool pub;
  };
  const Case cases[] = {
      {"", 0, false},
      {R"(,"ttlMs":5000)", 5000, false},
      {R"(,"ttlMs":0)", 0, false},
      {R"(,"ttlMs":-1)", 0, false},
      {R"(,"ttlMs":-0)", 0, false},
      {R"(,"ttlMs":1.5)", 0, false},
      {R"(,"ttlMs":1.0)", 0, false},
      {R"(,"ttlMs":1e3)", 0, false},
      {R"(,"ttlMs":"1000")", 0, false},
      {R"(,"ttlMs":true)", 0, false},
      {R"(,"ttlMs":null)", 0, false},
      {R"(,"ttlMs":18446744073709551615)", 18446744073709551615ull, false},
      {R"(,"ttl\u004ds":12)", 12, false},
      {R"(,"cacheScope":"public")", 0, true},
      {R"(,"cacheScope":"private")", 0, false},
      {R"(,"cacheScope":"Public")", 0, false},
      {R"(,"cacheScope":"public ")", 0, false},
      {R"(,"cacheScope":"publicx")", 0, false},
      {R"(,"cacheScope":"")", 0, false},
      {R"(,"cacheScope":true)", 0, false},
      {R"(,"cacheScope":["public"])", 0, false},
      {R"(,"cacheScope":"publ\u0069c")", 0, true},
      {R"(,"ttlMs":60000,"cacheScope":"public")", 60000, true},
  };
  // simdjson refuses integers beyond 64 bits: such an answer is not JSON to the gateway.
  for (std::string_view big : {"18446744073709551616", "99999999999999999999999", "1e400"}) {
    Page page;
    std::string detail;
    CHECK(parsePage(ListKind::kTools, answer(R"({"tools":[],"ttlMs":)" + std::string(big) + "}"),
                    page, detail) == PageError::kInvalidJson);
  }
  for (const Case& c : cases) {
    const std::string json = answer(R"({"tools":[])" + std::string(c.members) + "}");
    INFO(json);
    Page page;
    std::string detail;
    REQUIRE(parsePage(ListKind::kTools, json, page, detail) == PageError::kNone);
    CHECK(page.ttl_ms == c.ttl);
    CHECK(page.public_scope == c.pub);
  }
}

TEST_CASE("federation: parsePage for server/discover keeps the result object as written",
          "[federation]") {
  Page page;
  std::string detail;
  const std::string result =
      "{ \"supportedVersions\" : [\"2026-07-28\"],\n \"capabilities\":{\"tools\":{}},"
      "\"ttlMs\":30000,\"cacheScope\":\"public\" }";
  REQUIRE(parsePage(ListKind::kDiscover, answer(" " + result + " "), page, detail) ==
          PageError::kNone);
  CHECK(page.result == result);
  CHECK(page.ttl_ms == 30000);
  CHECK(page.public_scope);
  CHECK(page.items.empty());
  for (std::string_view r : {"[]", "null", "\"x\"", "1"}) {
    CHECK(parsePage(ListKind::kDiscover, answer(r), page, detail) == PageError::kShape);
    CHECK(page.result.empty());
  }
  CHECK(parsePage(ListKind::kDiscover, R"({"id":1})", page, detail) == PageError::kShape);
}

// ---- mergeItems ---------------------------------------------------------------------------

TEST_CASE("federation: mergeItems in keep mode hides later keys and reports them", "[federation]") {
  const std::vector<std::string> a_items = {R"({"name":"x","d":"a"})", R"({"name":"y"})",
                                            R"({"noname":1})"};
  const std::vector<std::string> a_keys = {"x", "y", ""};
  const std::vector<std::string> b_items = {R"({"name":"y","d":"b"})", R"({"name":"z"})",
                                            R"({"other":2})", R"({"name":"x"})"};
  const std::vector<std::string> b_keys = {"y", "z", "", "x"};
  const std::vector<std::string> c_items = {R"({"name":"w"})"};
  const std::vector<std::string> c_keys = {"w"};
  const Contribution parts[] = {{"a", &a_items, &a_keys},
                                {"off", nullptr, nullptr},
                                {"b", &b_items, &b_keys},
                                {"c", &c_items, &c_keys}};
  MergedItems m;
  m.conflicts.push_back({"stale", 9, 9});
  mergeItems(ListKind::kTools, parts, NamesMode::kKeep, "__", m);
  CHECK(m.array == R"([{"name":"x","d":"a"},{"name":"y"},{"noname":1},{"name":"z"},{"other":2},)"
                   R"({"name":"w"}])");
  CHECK(m.count == 6);
  CHECK(validJson(m.array));
  REQUIRE(m.conflicts.size() == 2);
  CHECK(m.conflicts[0].key == "y");
  CHECK(m.conflicts[0].kept == 0);
  CHECK(m.conflicts[0].hidden == 2);  // contribution indexes: the skipped one counts
  CHECK(m.conflicts[1].key == "x");
  CHECK(m.conflicts[1].kept == 0);
  CHECK(m.conflicts[1].hidden == 2);

  // Within one upstream the first occurrence wins as well.
  const std::vector<std::string> dup_items = {R"({"uri":"u"})", R"({"uri":"u","v":2})"};
  const std::vector<std::string> dup_keys = {"u", "u"};
  const Contribution dup[] = {{"d", &dup_items, &dup_keys}};
  mergeItems(ListKind::kResources, dup, NamesMode::kKeep, "__", m);
  CHECK(m.array == R"([{"uri":"u"}])");
  REQUIRE(m.conflicts.size() == 1);
  CHECK(m.conflicts[0].kept == 0);
  CHECK(m.conflicts[0].hidden == 0);

  // Nothing to merge.
  mergeItems(ListKind::kTools, {}, NamesMode::kKeep, "__", m);
  CHECK(m.array == "[]");
  CHECK(m.count == 0);
  CHECK(m.conflicts.empty());
  const Contribution none[] = {{"a", nullptr, nullptr}, {"b", nullptr, nullptr}};
  mergeItems(ListKind::kTools, none, NamesMode::kPrefix, "__", m);
  CHECK(m.array == "[]");

  // Items without keys (keys null or shorter) never conflict.
  const Contribution keyless[] = {{"a", &a_items, nullptr}, {"b", &a_items, nullptr}};
  mergeItems(ListKind::kTools, keyless, NamesMode::kKeep, "__", m);
  CHECK(m.count == 6);
  CHECK(m.conflicts.empty());
}

TEST_CASE("federation: mergeItems in prefix mode rewrites only the top-level name token",
          "[federation]") {
  struct Case {
    std::string_view item;  // '@' marks the name token
    std::string_view token;
    std::string_view renamed;  // the token the merge writes for upstream "up", separator "__"
  };
  const Case cases[] = {
      {R"({"name":@})", R"("get")", R"("up__get")"},
      {R"({ "name" : @ , "description" : "d" })", R"("get")", R"("up__get")"},
      {"{\n\t\"name\"\r\n:\n@\n}", R"("get")", R"("up__get")"},
      {R"({"description":"the \"name\": \"x\"","name":@})", R"("get")", R"("up__get")"},
      {R"({"inputSchema":{"properties":{"name":{"type":"string"}},"name":"deep"},"name":@})",
       R"("get")", R"("up__get")"},
      {R"({"annotations":[{"name":"n"}],"name":@,"meta":{"name":"m"}})", R"("get")",
       R"("up__get")"},
      {R"({"n\u0061me":@})", R"("get")", R"("up__get")"},
      {R"({"name":@,"name":"second"})", R"("first")", R"("up__first")"},
      {R"({"name":@})", R"("a\u0062c")", R"("up__abc")"},
      {R"({"name":@})", R"("q\"uo\\te\/")", R"("up__q\"uo\\te/")"},
      {R"({"name":@})", R"("tab\there\n")", R"("up__tab\there\n")"},
      {R"({"name":@})", R"("\u00e9\ud83d\ude00")", "\"up__\xc3\xa9\xf0\x9f\x98\x80\""},
      {R"({"name":@})", R"("")", R"("up__")"},
      {R"({"name":@})", R"("\u0001")", R"("up__\u0001")"},
  };
  for (ListKind kind : {ListKind::kTools, ListKind::kPrompts}) {
    for (const Case& c : cases) {
      const std::string item = replaceAt(c.item, c.token);
      const std::string expected = replaceAt(c.item, c.renamed);
      INFO(item);
      const std::vector<std::string> items = {item};
      const std::vector<std::string> keys = {"k"};
      const Contribution parts[] = {{"up", &items, &keys}};
      MergedItems m;
      mergeItems(kind, parts, NamesMode::kPrefix, "__", m);
      CHECK(m.array == "[" + expected + "]");
      CHECK(m.count == 1);
      CHECK(m.conflicts.empty());
      CHECK(validJson(m.array));
      // Every byte but the token is the same.
      const size_t at = std::string_view(c.item).find('@');
      const std::string out = m.array.substr(1, m.array.size() - 2);
      CHECK(out.substr(0, at) == item.substr(0, at));
      CHECK(out.substr(at + c.renamed.size()) == item.substr(at + c.token.size()));
    }
  }

  // The upstream and separator are escaped too.
  const std::vector<std::string> items = {R"({"name":"t"})"};
  const Contribution quoted[] = {{"u\"p", &items, nullptr}};
  MergedItems m;
  mergeItems(ListKind::kTools, quoted, NamesMode::kPrefix, "\\", m);
  CHECK(m.array == R"([{"name":"u\"p\\t"}])");
}

TEST_CASE("federation: mergeItems in prefix mode keeps items without a string name",
          "[federation]") {
  const std::vector<std::string> items = {R"({"title":"no name"})",
                                          R"({"name":7})",
                                          R"({"name":null,"x":1})",
                                          R"({"name":{"name":"inner"}})",
                                          R"({"name":["a"]})",
                                          R"({"nested":{"name":"x"}})",
                                          R"({"name":1,"name":"later"})",
                                          R"({})"};
  const Contribution parts[] = {{"up", &items, nullptr}};
  MergedItems m;
  mergeItems(ListKind::kTools, parts, NamesMode::kPrefix, "__", m);
  std::string expected = "[";
  for (size_t i = 0; i < items.size(); ++i) {
    expected += (i > 0 ? "," : "") + items[i];
  }
  expected += "]";
  CHECK(m.array == expected);
  CHECK(m.count == items.size());
}

TEST_CASE("federation: mergeItems in prefix mode never conflicts on tools and prompts",
          "[federation]") {
  const std::vector<std::string> a_items = {R"({"name":"search"})", R"({"name":"read"})"};
  const std::vector<std::string> a_keys = {"search", "read"};
  const std::vector<std::string> b_items = {R"({"name":"search"})"};
  const std::vector<std::string> b_keys = {"search"};
  const Contribution parts[] = {{"a", &a_items, &a_keys}, {"b", &b_items, &b_keys}};
  MergedItems m;
  mergeItems(ListKind::kPrompts, parts, NamesMode::kPrefix, ".", m);
  CHECK(m.array == R"([{"name":"a.search"},{"name":"a.read"},{"name":"b.search"}])");
  CHECK(m.count == 3);
  CHECK(m.conflicts.empty());
  mergeItems(ListKind::kTools, parts, NamesMode::kKeep, ".", m);
  CHECK(m.array == R"([{"name":"search"},{"name":"read"}])");
  REQUIRE(m.conflicts.size() == 1);
  CHECK(m.conflicts[0].key == "search");
  CHECK(m.conflicts[0].kept == 0);
  CHECK(m.conflicts[0].hidden == 1);
}

TEST_CASE("federation: mergeItems in prefix mode merges resources and templates as keep",
          "[federation]") {
  const std::vector<std::string> a_items = {R"({"uri":"file:///a","name":"a"})",
                                            R"({"uri":"file:///b","name":"b"})"};
  const std::vector<std::string> a_keys = {"file:///a", "file:///b"};
  const std::vector<std::string> b_items = {R"({"uri":"file:///b","name":"b2"})",
                                            R"({"uri":"file:///c","name":"c"})"};
  const std::vector<std::string> b_keys = {"file:///b", "file:///c"};
  const Contribution parts[] = {{"a", &a_items, &a_keys}, {"b", &b_items, &b_keys}};
  for (ListKind kind : {ListKind::kResources, ListKind::kTemplates}) {
    MergedItems m;
    mergeItems(kind, parts, NamesMode::kPrefix, "__", m);
    CHECK(m.array == R"([{"uri":"file:///a","name":"a"},{"uri":"file:///b","name":"b"},)"
                     R"({"uri":"file:///c","name":"c"}])");
    CHECK(m.count == 3);
    REQUIRE(m.conflicts.size() == 1);
    CHECK(m.conflicts[0].key == "file:///b");
    CHECK(m.conflicts[0].kept == 0);
    CHECK(m.conflicts[0].hidden == 1);
  }
}

TEST_CASE("federation: pages parsed then merged give one valid list", "[federation]") {
  Page a;
  Page b;
  std::string detail;
  REQUIRE(parsePage(ListKind::kTools,
                    answer(R"({"tools":[{"name":"x","inputSchema":{"properties":{"name":{}}}},)"
                           R"( {"n\u0061me":"y"}],"nextCursor":"p2"})"),
                    a, detail) == PageError::kNone);
  REQUIRE(parsePage(ListKind::kTools, answer(R"({"tools":[{"name":"x"}]})"), b, detail) ==
          PageError::kNone);
  const Contribution parts[] = {{"one", &a.items, &a.keys}, {"two", &b.items, &b.keys}};
  MergedItems m;
  mergeItems(ListKind::kTools, parts, NamesMode::kPrefix, "__", m);
  CHECK(m.array ==
        R"([{"name":"one__x","inputSchema":{"properties":{"name":{}}}},{"n\u0061me":"one__y"},)"
        R"({"name":"two__x"}])");
  const std::string members = listResultMembers(ListKind::kTools, m);
  std::string response;
  appendResponse(response, "7", members, 1000, false);
  CHECK(validJson(response));
  Page again;
  REQUIRE(parsePage(ListKind::kTools, response, again, detail) == PageError::kNone);
  CHECK(again.keys == std::vector<std::string>{"one__x", "one__y", "two__x"});
  CHECK(again.ttl_ms == 1000);
  CHECK_FALSE(again.public_scope);
}

// ---- result members and response ------------------------------------------------------------

TEST_CASE("federation: listResultMembers and appendResponse are exact", "[federation]") {
  MergedItems m;
  m.array = R"([{"name":"a"}])";
  m.count = 1;
  CHECK(listResultMembers(ListKind::kTools, m) ==
        R"("tools":[{"name":"a"}],"resultType":"complete")");
  CHECK(listResultMembers(ListKind::kPrompts, m) ==
        R"("prompts":[{"name":"a"}],"resultType":"complete")");
  CHECK(listResultMembers(ListKind::kResources, m) ==
        R"("resources":[{"name":"a"}],"resultType":"complete")");
  CHECK(listResultMembers(ListKind::kTemplates, m) ==
        R"("resourceTemplates":[{"name":"a"}],"resultType":"complete")");

  std::string out = "prefix:";
  appendResponse(out, "1", listResultMembers(ListKind::kTools, m), 60000, true);
  CHECK(out == R"(prefix:{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a"}],)"
               R"("resultType":"complete","ttlMs":60000,"cacheScope":"public"}})");
  for (std::string_view id : {"1", "\"abc\"", "null", "-3", "\"a\\\"b\""}) {
    std::string r;
    appendResponse(r, id, R"("tools":[],"resultType":"complete")", 0, false);
    CHECK(r == R"({"jsonrpc":"2.0","id":)" + std::string(id) +
                   R"(,"result":{"tools":[],"resultType":"complete","ttlMs":0,)"
                   R"("cacheScope":"private"}})");
    CHECK(validJson(r));
  }
  std::string big;
  appendResponse(big, "1", "", 18446744073709551615ull, false);
  CHECK(big == R"({"jsonrpc":"2.0","id":1,"result":{"ttlMs":18446744073709551615,)"
               R"("cacheScope":"private"}})");
}

}  // namespace
}  // namespace gw::federation
