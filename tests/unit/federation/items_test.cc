// federation/ list items a client can take (issue #24): every way an upstream can list an
// item no client can take — no string key, an empty, over-long or control-character key, the
// key written twice, a tool schema that is not an object, a repeated key — is dropped from
// the page (parsePage) and from a filtered answer (filterListAnswer), counted by fault, for
// every list kind; the items around it are kept as written.

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/federation/federation.h"
#include "gateway/federation/json_scan.h"
#include "tests/unit/federation/json_util.h"

namespace gw::federation {
namespace {

using test::validJson;

std::string answer(ListKind kind, std::string_view items) {
  return R"({"jsonrpc":"2.0","id":7,"result":{")" + std::string(arrayKey(kind)) + "\":[" +
         std::string(items) + "]}}";
}

// An item of `kind` whose key member is `key_json` (a JSON value text), plus `extra` members.
std::string item(ListKind kind, std::string_view key_json, std::string_view extra = "") {
  std::string s = "{\"" + std::string(keyMember(kind)) + "\":" + std::string(key_json);
  if (kind == ListKind::kTools) {
    s += R"(,"inputSchema":{"type":"object"})";
  }
  if (!extra.empty()) {
    s += ",";
    s += extra;
  }
  return s + "}";
}

const ListKind kKinds[] = {ListKind::kTools, ListKind::kPrompts, ListKind::kResources,
                           ListKind::kTemplates};

size_t count(const ItemDrops& d, ItemFault f) {
  return d.count[static_cast<size_t>(f)];
}

TEST_CASE("federation items: every fault is dropped from a page and counted", "[federation]") {
  struct Case {
    std::string bad;  // the bad item, in the middle of two good ones
    ItemFault fault;
  };
  for (ListKind kind : kKinds) {
    const std::string k(keyMember(kind));
    const size_t max =
        kind == ListKind::kTools || kind == ListKind::kPrompts ? kMaxItemName : kMaxItemUri;
    const std::vector<Case> cases = {
        {"1", ItemFault::kNotObject},
        {"\"x\"", ItemFault::kNotObject},
        {"null", ItemFault::kNotObject},
        {"[]", ItemFault::kNotObject},
        {"{}", ItemFault::kMissingKey},
        {item(kind, "1"), ItemFault::kMissingKey},
        {item(kind, "null"), ItemFault::kMissingKey},
        {item(kind, "[\"a\"]"), ItemFault::kMissingKey},
        {item(kind, "{\"" + k + "\":\"a\"}"), ItemFault::kMissingKey},
        {R"({"inner":{")" + k + R"(":"deep"}})", ItemFault::kMissingKey},
        {item(kind, "\"\""), ItemFault::kEmptyKey},
        {item(kind, "\"" + std::string(max + 1, 'x') + "\""), ItemFault::kKeyTooLong},
        {item(kind, R"("a\nb")"), ItemFault::kControlChar},
        {item(kind, R"("a\u0000")"), ItemFault::kControlChar},
        {item(kind, R"("\u001b[31m")"), ItemFault::kControlChar},
        {item(kind, R"("a\u007F")"), ItemFault::kControlChar},
        {item(kind, R"("\t")"), ItemFault::kControlChar},
        {item(kind, "\"a\"", "\"" + k + "\":\"b\""), ItemFault::kRepeatedMember},
        {item(kind, "\"b\"", "\"" + k + "\":1"), ItemFault::kRepeatedMember},
        {item(kind, "\"dup\""), ItemFault::kDuplicate},  // the first good item is "dup"
    };
    for (const Case& c : cases) {
      const std::string json = answer(kind, item(kind, "\"dup\"") + "," + c.bad + "," +
                                                item(kind, "\"" + std::string(max, 'y') + "\""));
      INFO(json);
      Page page;
      std::string detail;
      REQUIRE(parsePage(kind, json, page, detail) == PageError::kNone);
      CHECK(page.keys == std::vector<std::string>{"dup", std::string(max, 'y')});
      CHECK(page.dropped.total() == 1);
      CHECK(count(page.dropped, c.fault) == 1);
      CHECK(page.dropped.summary() == std::string(itemFaultName(c.fault)) + " 1");
    }
  }
}

TEST_CASE("federation items: a tool schema must be an object when it is there", "[federation]") {
  const std::pair<std::string_view, ItemFault> cases[] = {
      {R"({"name":"t","inputSchema":"object"})", ItemFault::kSchemaNotObject},
      {R"({"name":"t","inputSchema":[]})", ItemFault::kSchemaNotObject},
      {R"({"name":"t","inputSchema":null})", ItemFault::kSchemaNotObject},
      {R"({"name":"t","inputSchema":true})", ItemFault::kSchemaNotObject},
      {R"({"name":"t","inputSchema":{},"outputSchema":"x"})", ItemFault::kSchemaNotObject},
      {R"({"name":"t","inputSchema":{},"outputSchema":[]})", ItemFault::kSchemaNotObject},
      {R"({"name":"t","inputSchema":{},"inputSchema":{}})", ItemFault::kRepeatedMember},
      {R"({"name":"t","inputSchema":{"type":"object"}})", ItemFault::kNone},
      {R"({"name":"t","inputSchema":{},"outputSchema":{}})", ItemFault::kNone},
      {R"({"name":"t","inputSchema":{},"outputSchema":null})", ItemFault::kNone},
      {R"({"name":"t"})", ItemFault::kNone},  // absent: the server's omission, kept
  };
  for (const auto& [text, fault] : cases) {
    INFO(text);
    const std::string json = answer(ListKind::kTools, text);
    std::string key;
    CHECK(checkItem(ListKind::kTools, json, json.find("{\"name\""), key) == fault);
    Page page;
    std::string detail;
    REQUIRE(parsePage(ListKind::kTools, json, page, detail) == PageError::kNone);
    CHECK(page.items.size() == (fault == ItemFault::kNone ? 1u : 0u));
  }
  // Prompts and resources have no schema: the member is nobody's business there.
  std::string key;
  const std::string prompt = answer(ListKind::kPrompts, R"({"name":"p","inputSchema":"x"})");
  CHECK(checkItem(ListKind::kPrompts, prompt, prompt.find("{\"name\""), key) == ItemFault::kNone);
  CHECK(key == "p");
}

TEST_CASE("federation items: a 70-deep schema or a bad UTF-8 byte fails the whole page",
          "[federation]") {
  std::string deep = R"({"name":"t","inputSchema":)";
  for (int i = 0; i < 70; ++i) {
    deep += R"({"a":)";
  }
  deep += "1";
  for (int i = 0; i < 70; ++i) {
    deep += "}";
  }
  deep += "}";
  const std::string texts[] = {
      answer(ListKind::kTools, R"({"name":"ok","inputSchema":{}},)" + deep),
      answer(ListKind::kTools, "{\"name\":\"ok\",\"description\":\"caf\xe9\"}"),
      answer(ListKind::kTools, "{\"name\":\"ok\",\"description\":\"\xed\xa0\x80\"}"),
  };
  for (const std::string& t : texts) {
    Page page;
    std::string detail;
    CHECK(parsePage(ListKind::kTools, t, page, detail) == PageError::kInvalidJson);
    std::string out;
    size_t hidden = 0;
    CHECK_FALSE(filterListAnswer(
        ListKind::kTools, t, [](std::string_view) { return true; }, out, hidden));
  }
}

TEST_CASE("federation items: filterListAnswer drops the same items and counts them",
          "[federation]") {
  for (ListKind kind : kKinds) {
    const std::string json =
        answer(kind, item(kind, "\"a\"") + ",7," + item(kind, "\"\"") + "," + item(kind, "\"a\"") +
                         "," + item(kind, "\"b\"") + "," + item(kind, R"("c\r")"));
    INFO(json);
    std::string out;
    size_t hidden = 0;
    ItemDrops drops;
    REQUIRE(filterListAnswer(
        kind, json, [](std::string_view key) { return key != "b"; }, out, hidden, &drops));
    CHECK(hidden == 1);
    CHECK(drops.total() == 4);
    CHECK(count(drops, ItemFault::kNotObject) == 1);
    CHECK(count(drops, ItemFault::kEmptyKey) == 1);
    CHECK(count(drops, ItemFault::kDuplicate) == 1);
    CHECK(count(drops, ItemFault::kControlChar) == 1);
    CHECK(validJson(out));
    Page page;
    std::string detail;
    REQUIRE(parsePage(kind, out, page, detail) == PageError::kNone);
    CHECK(page.keys == std::vector<std::string>{"a"});
    CHECK(page.dropped.total() == 0);
  }
}

TEST_CASE("federation items: a member the filter reads written twice is no list", "[federation]") {
  // JavaScript keeps the last of two members, the gateway's reader the first: such an answer
  // would be filtered on one list and read on the other.
  const std::string_view texts[] = {
      R"({"id":1,"result":{"tools":[]},"result":{"tools":[{"name":"secret"}]}})",
      R"({"id":1,"result":{"tools":[],"tools":[{"name":"secret"}]}})",
      R"({"id":1,"result":{"tools":[{"name":"secret"}]},"error":{"code":1,"message":"m"}})",
  };
  for (std::string_view t : texts) {
    INFO(t);
    std::string out;
    size_t hidden = 0;
    CHECK_FALSE(filterListAnswer(
        ListKind::kTools, t, [](std::string_view k) { return k != "secret"; }, out, hidden));
    Page page;
    std::string detail;
    CHECK(parsePage(ListKind::kTools, t, page, detail) == PageError::kShape);
  }
}

TEST_CASE("federation items: a prefix renames tools and prompts, and keep sees the new name",
          "[federation]") {
  const std::string json =
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"description":"d","name":"echo",)"
      R"("inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}},)"
      R"({"name":"delete_everything","inputSchema":{}}],"nextCursor":"c"}})";
  std::string out;
  size_t hidden = 0;
  std::vector<std::string> seen;
  REQUIRE(filterListAnswer(
      ListKind::kTools, json,
      [&](std::string_view key) {
        seen.emplace_back(key);
        return key != "ts__delete_everything";
      },
      out, hidden, nullptr, "ts__"));
  CHECK(seen == std::vector<std::string>{"ts__echo", "ts__delete_everything"});
  CHECK(hidden == 1);
  CHECK(out == R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"description":"d","name":"ts__echo",)"
               R"("inputSchema":{"type":"object","properties":{"name":{"type":"string"}}}}],)"
               R"("nextCursor":"c","cacheScope":"private"}})");
  // Resources keep their URIs whatever the prefix.
  const std::string res = R"({"id":1,"result":{"resources":[{"uri":"file:///a"}]}})";
  REQUIRE(filterListAnswer(
      ListKind::kResources, res, [](std::string_view k) { return k == "file:///a"; }, out, hidden,
      nullptr, "ts__"));
  CHECK(out == R"({"id":1,"result":{"resources":[{"uri":"file:///a"}],"cacheScope":"private"}})");
}

}  // namespace
}  // namespace gw::federation

TEST_CASE("json_scan: a string ends at its first unescaped quote, however the backslashes run",
          "[federation][json]") {
  // The byte-at-a-time rule the scanner is held to: a backslash takes the next byte with it.
  const auto reference = [](std::string_view text, size_t pos) -> size_t {
    size_t i = pos + 1;
    while (i < text.size()) {
      if (text[i] == '\\') {
        i += 2;
      } else if (text[i] == '"') {
        return i + 1;
      } else {
        ++i;
      }
    }
    return gw::federation::json::kNpos;
  };
  // Every string of up to 7 bytes over {a, \, "} after an opening quote and a run of plain
  // bytes (memchr's vector steps start at different offsets): 8 x 3,280 texts, each scanned
  // from its first byte.
  const char alphabet[] = {'a', '\\', '"'};
  size_t checked = 0;
  for (const size_t pad : {0, 26, 27, 28, 29, 30, 31, 32}) {
    for (size_t len = 0; len <= 7; ++len) {
      size_t count = 1;
      for (size_t k = 0; k < len; ++k) {
        count *= 3;
      }
      for (size_t code = 0; code < count; ++code) {
        std::string text = "\"" + std::string(pad, 'p');
        for (size_t k = 0, c = code; k < len; ++k, c /= 3) {
          text += alphabet[c % 3];
        }
        INFO("text " << text);
        REQUIRE(gw::federation::json::skipValue(text, 0) == reference(text, 0));
        ++checked;
      }
    }
  }
  CHECK(checked == 8 * 3280);
  // Long runs around the memchr steps.
  const std::string long_body(100000, 'x');
  CHECK(gw::federation::json::skipValue("\"" + long_body + "\"", 0) == long_body.size() + 2);
  CHECK(gw::federation::json::skipValue("\"" + long_body + "\\\"" + long_body + "\"", 0) ==
        2 * long_body.size() + 4);
  CHECK(gw::federation::json::skipValue("\"" + long_body + "\\\\\"x", 0) == long_body.size() + 4);
  CHECK(gw::federation::json::skipValue("\"" + long_body, 0) == gw::federation::json::kNpos);
  CHECK(gw::federation::json::skipValue("\"" + long_body + "\\", 0) == gw::federation::json::kNpos);
}

TEST_CASE("json_scan: the root of a validated text is found from its two ends",
          "[federation][json]") {
  using gw::federation::json::rootSpan;
  using gw::federation::json::validate;
  using gw::federation::json::Validity;
  size_t b = 0;
  size_t e = 0;
  for (const std::string_view text : {R"({"a":[1,2,{"b":"}"}]})", " \t\r\n{\"a\":1}\n\n ",
                                      "[1 , 2]  ", "\"s\"", " 12 ", "null"}) {
    INFO(text);
    REQUIRE(validate(text) == Validity::kValid);
    REQUIRE(rootSpan(text, b, e));
    const size_t first = text.find_first_not_of(" \t\r\n");
    const size_t last = text.find_last_not_of(" \t\r\n");
    CHECK(b == first);
    CHECK(e == last + 1);
  }
  CHECK_FALSE(rootSpan("", b, e));
  CHECK_FALSE(rootSpan(" \n ", b, e));
}
