// pins/ canonical JSON and tool hashing: what makes two tools/list items the same definition
// (key order, whitespace, escapes do not; any pinned member's value does) and what is refused.

#include <algorithm>
#include <array>
#include <catch.hpp>
#include <cctype>
#include <cstddef>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/pins/pins.h"

namespace gw::pins {
namespace {

std::string canon(std::string_view json) {
  std::string out;
  std::string error;
  INFO(json);
  REQUIRE(canonicalJson(json, out, error));
  CHECK(error.empty());
  return out;
}

Definition hashed(std::string_view json, std::string* name = nullptr) {
  Definition def;
  std::string error;
  INFO(json);
  REQUIRE(hashTool(json, def, error, name));
  return def;
}

// A JSON value the tests re-emit with shuffled member order and random whitespace.
struct Value {
  std::string raw;  // a scalar token; used when neither container flag is set
  bool is_object = false;
  bool is_array = false;
  std::vector<std::string> keys;  // raw JSON string tokens (quotes and escapes included)
  std::vector<Value> items;       // object member values (parallel to keys) or array items
};

Value raw(std::string token) {
  Value v;
  v.raw = std::move(token);
  return v;
}

Value obj(std::vector<std::string> keys, std::vector<Value> values) {
  Value v;
  v.is_object = true;
  v.keys = std::move(keys);
  v.items = std::move(values);
  return v;
}

Value arr(std::vector<Value> items) {
  Value v;
  v.is_array = true;
  v.items = std::move(items);
  return v;
}

void emit(const Value& v, std::mt19937& rng, std::string& out) {
  static constexpr std::array<std::string_view, 5> kSpace{"", " ", "\n", "\t", "\r\n  "};
  const auto ws = [&] { out += kSpace[rng() % kSpace.size()]; };
  ws();
  if (v.is_object) {
    std::vector<size_t> order(v.keys.size());
    for (size_t i = 0; i < order.size(); ++i) {
      order[i] = i;
    }
    std::shuffle(order.begin(), order.end(), rng);
    out.push_back('{');
    for (size_t k = 0; k < order.size(); ++k) {
      if (k > 0) {
        out.push_back(',');
      }
      ws();
      out += v.keys[order[k]];
      ws();
      out.push_back(':');
      emit(v.items[order[k]], rng, out);
    }
    ws();
    out.push_back('}');
  } else if (v.is_array) {
    out.push_back('[');
    for (size_t k = 0; k < v.items.size(); ++k) {
      if (k > 0) {
        out.push_back(',');
      }
      emit(v.items[k], rng, out);
    }
    ws();
    out.push_back(']');
  } else {
    out += v.raw;
  }
  ws();
}

// A tool with every pinned member, nested objects, arrays of objects and unpinned members.
Value sampleTool() {
  const Value schema =
      obj({R"("type")", R"("properties")", R"("required")", R"("anyOf")"},
          {raw(R"("object")"),
           obj({R"("city")", R"("units")", R"("days")"},
               {obj({R"("type")", R"("minLength")"}, {raw(R"("string")"), raw("1")}),
                obj({R"("enum")", R"("default")"},
                    {arr({raw(R"("c")"), raw(R"("f")")}), raw(R"("c")")}),
                obj({R"("type")", R"("maximum")", R"("minimum")"},
                    {raw(R"("integer")"), raw("1.50e+1"), raw("-0")})}),
           arr({raw(R"("city")")}),
           arr({obj({R"("required")", R"("b")"}, {arr({raw(R"("city")")}), raw("true")}),
                obj({R"("z")", R"("a")", R"("m")"}, {raw("null"), raw("false"), arr({})}),
                obj({}, {})})});
  return obj({R"("name")", R"("title")", R"("description")", R"("inputSchema")",
              R"("outputSchema")", R"("annotations")", R"("_meta")", R"("icons")"},
             {raw(R"("get_weather")"), raw(R"("Weather")"), raw(R"("Gets \"the\" weather")"),
              schema, obj({R"("type")"}, {raw(R"("object")")}),
              obj({R"("readOnlyHint")", R"("idempotentHint")"}, {raw("true"), raw("false")}),
              obj({R"("x")"}, {raw("1")}),
              arr({obj({R"("src")", R"("sizes")"}, {raw(R"("a.png")"), raw(R"("48x48")")})})});
}

TEST_CASE("pins: canonical form sorts keys and drops whitespace", "[pins]") {
  CHECK(canon(R"( { "b" : 1 , "a" : [ 3 , { "d" : null , "c" : true } ] } )") ==
        R"({"a":[3,{"c":true,"d":null}],"b":1})");
  CHECK(canon("\t\r\n[ ]\n") == "[]");
  CHECK(canon("{ }") == "{}");
  CHECK(canon(R"("x")") == R"("x")");
  CHECK(canon("-12.5e-3") == "-12.5e-3");
  CHECK(canon("true") == "true");
  // Keys ordered by their UTF-8 bytes, unsigned: "Z" < "a" < "é" (0xC3…) < "😀" (0xF0…).
  CHECK(canon(R"({"😀":4,"é":3,"a":2,"Z":1,"":0})") == R"({"":0,"Z":1,"a":2,"é":3,"😀":4})");
  // A prefix sorts before its extensions.
  CHECK(canon(R"({"ab":1,"a":2,"abc":3})") == R"({"a":2,"ab":1,"abc":3})");
  // Sorting uses the decoded key: "\u00e9" sorts (and prints) as "é".
  CHECK(canon(R"({"\u00e9":1,"f":2})") == R"({"f":2,"é":1})");
}

TEST_CASE("pins: key order and whitespace never change a tool's hash", "[pins]") {
  const Value tool = sampleTool();
  std::mt19937 rng(20261205);
  std::string reference;
  emit(tool, rng, reference);
  const std::string expected = canon(reference);
  CHECK(canon(expected) == expected);  // idempotent
  std::string name;
  const Definition def = hashed(reference, &name);
  CHECK(name == "get_weather");
  for (int round = 0; round < 300; ++round) {
    std::string text;
    emit(tool, rng, text);
    INFO(text);
    CHECK(canon(text) == expected);
    CHECK(hashed(text) == def);
  }
}

TEST_CASE("pins: every order of the top-level members gives the same definition", "[pins]") {
  std::array<std::string, 6> members{
      R"("name":"t")",
      R"("title":"T")",
      R"("description":"d")",
      R"("inputSchema":{"type":"object","properties":{"a":{"type":"string"}}})",
      R"("outputSchema":{"type":"object"})",
      R"("annotations":{"destructiveHint":true,"openWorldHint":false})"};
  std::sort(members.begin(), members.end());
  const auto join = [&] {
    std::string text = "{";
    for (size_t i = 0; i < members.size(); ++i) {
      text += i > 0 ? "," : "";
      text += members[i];
    }
    return text + "}";
  };
  const Definition def = hashed(join());
  int permutations = 0;
  do {
    ++permutations;
    INFO(join());
    CHECK(hashed(join()) == def);
  } while (std::next_permutation(members.begin(), members.end()));
  CHECK(permutations == 720);
}

TEST_CASE("pins: escapes decode before hashing", "[pins]") {
  CHECK(canon(R"("\u0041")") == R"("A")");
  CHECK(canon(R"({"\u0061":"\u0041"})") == R"({"a":"A"})");
  CHECK(canon(R"("\/")") == R"("/")");
  CHECK(canon(R"("\u00E9\u00e9")") == "\"\xC3\xA9\xC3\xA9\"");
  CHECK(canon(R"("\ud83d\ude00")") == "\"\xF0\x9F\x98\x80\"");
  CHECK(canon(R"("\uD83D\uDE00")") == "\"\xF0\x9F\x98\x80\"");
  CHECK(canon(R"("\u0000")") == R"("\u0000")");
  CHECK(hashed(R"({"name":"\u0067et","description":"\u0041"})") ==
        hashed(R"({"name":"get","description":"A"})"));
  // An escaped member name is still the pinned member it decodes to.
  std::string name;
  CHECK(hashed(R"({"n\u0061me":"x\"y","descr\u0069ption":"d"})", &name) ==
        hashed(R"({"name":"x\"y","description":"d"})"));
  CHECK(name == "x\"y");
}

TEST_CASE("pins: canonical string escapes", "[pins]") {
  struct Case {
    std::string decoded;
    std::string canonical;  // without the quotes
  };
  std::vector<Case> cases = {
      {"\"", R"(\")"},
      {"\\", R"(\\)"},
      {"/", "/"},
      {"\x7F", "\x7F"},
      {"\xC3\xA9", "\xC3\xA9"},                  // é
      {"\xE2\x80\xA8", "\xE2\x80\xA8"},          // U+2028 stays raw
      {"\xF0\x9F\x98\x80", "\xF0\x9F\x98\x80"},  // U+1F600
      {"a b~", "a b~"},
      {std::string("\0", 1), R"(\u0000)"},
  };
  constexpr std::string_view kHex = "0123456789abcdef";
  for (unsigned c = 1; c < 0x20; ++c) {
    std::string expected;
    switch (c) {
      case 0x08:
        expected = R"(\b)";
        break;
      case 0x09:
        expected = R"(\t)";
        break;
      case 0x0A:
        expected = R"(\n)";
        break;
      case 0x0C:
        expected = R"(\f)";
        break;
      case 0x0D:
        expected = R"(\r)";
        break;
      default:
        expected = R"(\u00)";
        expected.push_back(kHex[c >> 4]);
        expected.push_back(kHex[c & 0xF]);
    }
    cases.push_back({std::string(1, static_cast<char>(c)), expected});
  }
  for (const Case& c : cases) {
    INFO("decoded byte(s): " << c.canonical);
    std::string out;
    appendJsonString(out, c.decoded);
    CHECK(out == "\"" + c.canonical + "\"");
    // The same through the reader, from a \u escape of each byte below U+0080, and from the
    // canonical text itself (a fixed point).
    CHECK(canon("\"" + c.canonical + "\"") == out);
    if (c.decoded.size() == 1 && static_cast<unsigned char>(c.decoded[0]) < 0x80) {
      const auto b = static_cast<unsigned char>(c.decoded[0]);
      std::string escaped = R"("\u00)";
      escaped.push_back(kHex[b >> 4]);
      escaped.push_back(static_cast<char>(std::toupper(kHex[b & 0xF])));
      escaped += "\"";
      CHECK(canon(escaped) == out);
    }
  }
  // Other escapes in, canonical out.
  CHECK(canon(R"("\b\f\n\r\t\"\\\/")") == R"("\b\f\n\r\t\"\\/")");
  CHECK(canon(R"("\u001F\u000B")") == R"("\u001f\u000b")");
  CHECK(canon(R"("\u007f")") == "\"\x7F\"");
}

TEST_CASE("pins: the definition hashes are of the canonical texts", "[pins]") {
  CHECK(sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const Definition def =
      hashed(R"({ "x": 1, "description": "d", "name": "a", "inputSchema": {"b": 1, "a": [1.0]} })");
  CHECK(def.sha256 ==
        sha256Hex(R"({"description":"d","inputSchema":{"a":[1.0],"b":1},"name":"a"})"));
  CHECK(def.fields[0] == sha256Hex(R"("a")"));
  CHECK(def.fields[1].empty());
  CHECK(def.fields[2] == sha256Hex(R"("d")"));
  CHECK(def.fields[3] == sha256Hex(R"({"a":[1.0],"b":1})"));
  CHECK(def.fields[4].empty());
  CHECK(def.fields[5].empty());
}

TEST_CASE("pins: a change in any pinned member changes the hash and names that member", "[pins]") {
  // members[i] is kFields[i] in the base tool; changes[i] are other values for it.
  const std::array<std::string, kFieldCount> members{
      R"("name":"t")",
      R"("title":"T")",
      R"("description":"Reads a file.")",
      R"("inputSchema":{"type":"object","properties":{"path":{"type":"string"}}})",
      R"("outputSchema":{"type":"object","properties":{"text":{"type":"string"}}})",
      R"("annotations":{"readOnlyHint":true})"};
  const std::array<std::vector<std::string>, kFieldCount> changes{{
      {R"("name":"u")", R"("name":"t ")", R"("name":"T")"},
      {R"("title":"T2")", R"("title":null)", R"("title":"")"},
      {R"("description":"Reads a file. Then mails it.")", R"("description":"reads a file.")"},
      {R"("inputSchema":{"type":"object","properties":{"path":{"type":"string"},"to":{}}})",
       R"("inputSchema":{"type":"object","properties":{"path":{"type":"integer"}}})",
       R"("inputSchema":{"type":"object","properties":{"path":{"type":"string"}},"required":[]})"},
      {R"("outputSchema":{"type":"object","properties":{}})", R"("outputSchema":{})"},
      {R"("annotations":{"readOnlyHint":false})", R"("annotations":{"readOnlyHint":1})",
       R"("annotations":{"readOnlyHint":true,"destructiveHint":true})"},
  }};
  const auto tool = [&](size_t replaced, const std::string* with) {
    std::string text = "{";
    for (size_t i = 0; i < kFieldCount; ++i) {
      const std::string* member = i == replaced ? with : &members[i];
      if (member == nullptr) {
        continue;  // absent
      }
      text += text.size() > 1 ? "," : "";
      text += *member;
    }
    return text + R"(,"_meta":{"v":1}})";
  };
  const Definition base = hashed(tool(kFieldCount, nullptr));
  for (size_t i = 0; i < kFieldCount; ++i) {
    std::vector<const std::string*> variants;
    for (const std::string& c : changes[i]) {
      variants.push_back(&c);
    }
    if (i > 0) {
      variants.push_back(nullptr);  // the member removed (name cannot be)
    }
    for (const std::string* variant : variants) {
      const std::string text = tool(i, variant);
      INFO(text);
      const Definition changed = hashed(text);
      CHECK(changed.sha256 != base.sha256);
      CHECK(changedFields(base, changed) == std::vector<std::string_view>{kFields[i]});
      CHECK(changedFields(changed, base) == std::vector<std::string_view>{kFields[i]});
      for (size_t j = 0; j < kFieldCount; ++j) {
        CHECK((changed.fields[j] == base.fields[j]) == (j != i));
      }
      CHECK(changed.fields[i].empty() == (variant == nullptr));
    }
  }
  CHECK(changedFields(base, base).empty());
  // Two members at once, reported in kFields order.
  const Definition two = hashed(R"({"name":"t","annotations":{},"title":"x"})");
  const Definition one = hashed(R"({"name":"t","description":"d"})");
  CHECK(changedFields(one, two) ==
        std::vector<std::string_view>{"title", "description", "annotations"});
}

TEST_CASE("pins: unpinned members do not change the definition", "[pins]") {
  const Definition base = hashed(R"({"name":"t","description":"d"})");
  for (const std::string_view text : {
           R"({"name":"t","description":"d","_meta":{"a":1}})",
           R"({"name":"t","description":"d","_meta":{"a":2},"icons":[{"src":"x.png"}]})",
           R"({"icons":[],"name":"t","description":"d","execution":{"taskSupport":"optional"}})",
           R"({"name":"t","Name":"u","description":"d","descriptions":"e","name ":1})",
       }) {
    INFO(text);
    CHECK(hashed(text) == base);
  }
}

TEST_CASE("pins: absent and null differ, number tokens are kept as written", "[pins]") {
  const Definition absent = hashed(R"({"name":"t"})");
  const Definition null_title = hashed(R"({"name":"t","title":null})");
  CHECK(absent.sha256 != null_title.sha256);
  CHECK(absent.fields[1].empty());
  CHECK(null_title.fields[1] == sha256Hex("null"));
  CHECK(changedFields(absent, null_title) == std::vector<std::string_view>{"title"});

  const std::array<std::string_view, 7> numbers{"1", "1.0", "1e0", "1E0", "1e+0", "10e-1", "1.00"};
  std::vector<std::string> hashes;
  for (const std::string_view n : numbers) {
    const std::string text =
        R"({"inputSchema":{"maximum":)" + std::string(n) + R"(},"name":"t"})";  // canonical
    CHECK(canon(text) == text);
    hashes.push_back(hashed(text).sha256);
  }
  std::sort(hashes.begin(), hashes.end());
  CHECK(std::adjacent_find(hashes.begin(), hashes.end()) == hashes.end());
  CHECK(canon("[-0,0,-0.0,1E+2]") == "[-0,0,-0.0,1E+2]");
}

std::string nested(size_t depth, std::string_view open, std::string_view close) {
  std::string text;
  for (size_t i = 0; i < depth; ++i) {
    text += open;
  }
  text += "1";
  for (size_t i = 0; i < depth; ++i) {
    text += close;
  }
  return text;
}

TEST_CASE("pins: nesting is bounded at 64", "[pins]") {
  std::string out;
  std::string error;
  CHECK(canonicalJson(nested(64, "[", "]"), out, error));
  CHECK(canonicalJson(nested(64, R"({"a":)", "}"), out, error));
  CHECK(canonicalJson(nested(32, R"([{"a":)", "}]"), out, error));
  for (const std::string& deep : {nested(65, "[", "]"), nested(65, R"({"a":)", "}"),
                                  nested(33, R"([{"a":)", "}]"), nested(100000, "[", "]")}) {
    out = "untouched";
    error.clear();
    CHECK_FALSE(canonicalJson(deep, out, error));
    CHECK(error.find("deeper than 64") != std::string::npos);
    CHECK(out == "untouched");
  }
  Definition def;
  CHECK(hashTool(R"({"name":"t","inputSchema":)" + nested(63, "[", "]") + "}", def, error));
  CHECK_FALSE(hashTool(R"({"name":"t","inputSchema":)" + nested(64, "[", "]") + "}", def, error));
  CHECK(error.find("deeper than 64") != std::string::npos);
}

TEST_CASE("pins: malformed JSON is refused with what and where", "[pins]") {
  struct Case {
    std::string text;
    std::string what;  // a substring of the error
  };
  const std::vector<Case> cases = {
      {"", "unexpected end of input at offset 0"},
      {"  \n", "unexpected end of input at offset 3"},
      {R"({"a":1,"a":2})", R"(duplicate key "a" at offset 7)"},
      {R"({"a":1,"\u0061":2})", R"(duplicate key "a" at offset 7)"},
      {R"({"x":{"b":1,"c":2,"b":3}})", R"(duplicate key "b" at offset 18)"},
      {R"([{"x":1},{"y":1,"y":2}])", R"(duplicate key "y")"},
      {R"({"a":1}x)", "trailing characters at offset 7"},
      {R"({"a":1}{})", "trailing characters"},
      {R"({"a":1},)", "trailing characters"},
      {"1 2", "trailing characters at offset 2"},
      {std::string("{\"a\":1}\0", 8), "trailing characters"},
      {"\"\xFF\"", "not valid UTF-8 at offset 1"},
      {"[\"ok\",\"\xC0\xAF\"]", "not valid UTF-8 at offset 7"},  // overlong '/'
      {"\"\xE0\x80\xAF\"", "not valid UTF-8"},                   // overlong
      {"\"\xED\xA0\x80\"", "not valid UTF-8"},                   // encoded U+D800
      {"\"\xE2\x82\"", "not valid UTF-8"},                       // truncated
      {"\"\xF4\x90\x80\x80\"", "not valid UTF-8"},               // above U+10FFFF
      {"\"\x80\"", "not valid UTF-8"},                           // lone continuation
      {"\xEF\xBB\xBF{}", "unexpected character at offset 0"},    // BOM
      {R"("\ud800")", "lone surrogate"},
      {R"("\udc00")", "lone surrogate"},
      {R"("\ud800\u0041")", "lone surrogate"},
      {R"("\ud800x")", "lone surrogate"},
      {R"("\ud800\ud800")", "lone surrogate"},
      {R"({"\udfff":1})", "lone surrogate"},
      {R"("\u12g4")", "bad \\u escape"},
      {R"("\u12")", "bad \\u escape"},
      {R"("\x")", "bad escape"},
      {R"("\')", "bad escape"},
      {"\"a\x01\"", "control character in a string"},
      {"\"a\nb\"", "control character in a string"},
      {R"("abc)", "unterminated string"},
      {"\"abc\\", "unterminated string"},
      {"01", "trailing characters"},
      {"[01]", "expected ',' or ']'"},
      {"-", "bad number"},
      {"-a", "bad number"},
      {"1.", "bad number"},
      {"1.e5", "bad number"},
      {".5", "unexpected character"},
      {"+1", "unexpected character"},
      {"1e", "bad number"},
      {"1e+", "bad number"},
      {"NaN", "unexpected character"},
      {"Infinity", "unexpected character"},
      {"tru", "unexpected character"},
      {"nul", "unexpected character"},
      {"True", "unexpected character"},
      {"'a'", "unexpected character"},
      {"[1,]", "unexpected character"},
      {"[1 2]", "expected ',' or ']'"},
      {"[", "unexpected end of input"},
      {"{", "expected a member name"},
      {"{,}", "expected a member name"},
      {R"({"a":1,})", "expected a member name"},
      {R"({a:1})", "expected a member name"},
      {R"({"a" 1})", "expected ':'"},
      {R"({"a":})", "unexpected character"},
      {R"({"a":1 "b":2})", "expected ',' or '}'"},
      {"\v1", "unexpected character"},  // not JSON whitespace
  };
  for (const Case& c : cases) {
    INFO("input: " << c.text);
    std::string out = "untouched";
    std::string error;
    CHECK_FALSE(canonicalJson(c.text, out, error));
    CHECK(out == "untouched");
    CHECK(error.find(c.what) != std::string::npos);
    CHECK(error.find("offset") != std::string::npos);
    // hashTool refuses the same text without writing its result.
    Definition def;
    def.sha256 = "untouched";
    std::string tool_error;
    CHECK_FALSE(hashTool(c.text, def, tool_error));
    CHECK(def.sha256 == "untouched");
    CHECK(tool_error.find(c.what) != std::string::npos);
  }
}

TEST_CASE("pins: a tool must be an object with a string name", "[pins]") {
  const std::vector<std::string> cases = {
      "[]",
      R"("name")",
      "1",
      "null",
      R"([{"name":"t"}])",
      "{}",
      R"({"title":"t"})",
      R"({"Name":"t"})",
      R"({"name":1})",
      R"({"name":null})",
      R"({"name":{"a":"b"}})",
      R"({"name":["t"]})",
      R"({"name":true,"title":"t"})",
  };
  for (const std::string& text : cases) {
    INFO(text);
    Definition def;
    def.sha256 = "untouched";
    std::string name = "untouched";
    std::string error;
    CHECK_FALSE(hashTool(text, def, error, &name));
    CHECK(def.sha256 == "untouched");
    CHECK_FALSE(error.empty());
  }
  std::string error;
  Definition def;
  CHECK_FALSE(hashTool("[]", def, error));
  CHECK(error.find("not a JSON object") != std::string::npos);
  CHECK_FALSE(hashTool(R"({"name":2})", def, error));
  CHECK(error.find(R"(no string "name")") != std::string::npos);
  // The empty string is a string.
  std::string name = "x";
  CHECK(hashTool(R"({"name":""})", def, error, &name));
  CHECK(name.empty());
}

}  // namespace
}  // namespace gw::pins
