// gw::mcp JSON-RPC error bodies, JSON escaping and the best-effort id reader.

#include <catch.hpp>

#include <simdjson.h>

#include <string>
#include <string_view>

#include "gateway/mcp/jsonrpc.h"

namespace gw::mcp {
namespace {

std::string escaped(std::string_view s) {
  std::string out;
  appendJsonEscaped(out, s);
  return out;
}

bool isValidJson(const std::string& s) {
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  return parser.parse(s).get(e) == simdjson::SUCCESS;
}

TEST_CASE("appendJsonEscaped escapes quotes, backslashes, controls and bad UTF-8") {
  struct Case {
    std::string_view in;
    std::string_view want;
  };
  const Case cases[] = {
      {"plain text", "plain text"},
      {"", ""},
      {"a\"b", "a\\\"b"},
      {"a\\b", "a\\\\b"},
      {"\n\r\t\b\f", "\\n\\r\\t\\b\\f"},
      {std::string_view("\x00\x01\x1f", 3), "\\u0000\\u0001\\u001f"},
      {"\x7f", "\\u007f"},
      {"/<>'", "/<>'"},
      {"Hello, \xe4\xb8\x96\xe7\x95\x8c", "Hello, \xe4\xb8\x96\xe7\x95\x8c"},  // valid UTF-8 kept
      {"\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},                                // 4-byte kept
      {"a\xffz", "a\\ufffdz"},
      {"\xc3", "\\ufffd"},                                   // truncated sequence at end
      {"\xc3(", "\\ufffd("},                                 // bad continuation
      {"\xc0\xaf", "\\ufffd\\ufffd"},                        // overlong
      {"\xed\xa0\x80", "\\ufffd\\ufffd\\ufffd"},             // surrogate
      {"\xf4\x90\x80\x80", "\\ufffd\\ufffd\\ufffd\\ufffd"},  // above U+10FFFF
      {"\x80", "\\ufffd"},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.in));
    CHECK(escaped(c.in) == c.want);
  }
}

TEST_CASE("appendJsonEscaped output is always a valid JSON string body") {
  std::string all;
  for (int i = 0; i < 256; ++i) {
    all.push_back(static_cast<char>(i));
  }
  const std::string doc = "\"" + escaped(all) + "\"";
  CHECK(isValidJson(doc));
}

TEST_CASE("errorBody shapes") {
  CHECK(errorBody(RequestId::absent(), code::kOriginForbidden, "Origin not allowed") ==
        R"({"jsonrpc":"2.0","error":{"code":-31003,"message":"Origin not allowed"}})");
  CHECK(errorBody(RequestId::null(), code::kParseError, "Parse error") ==
        R"({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}})");
  CHECK(errorBody(RequestId{RequestId::Kind::kJson, "1"}, code::kHeaderMismatch,
                  "Header mismatch: Mcp-Name header value 'foo' does not match body value "
                  "'bar'") ==
        R"({"jsonrpc":"2.0","id":1,"error":{"code":-32020,"message":"Header mismatch: )"
        R"(Mcp-Name header value 'foo' does not match body value 'bar'"}})");
  CHECK(errorBody(RequestId{RequestId::Kind::kJson, R"("a\"b")"}, code::kUnsupportedProtocolVersion,
                  "Unsupported protocol version",
                  R"({"supported":["2026-07-28"],"requested":"1900-01-01"})") ==
        R"({"jsonrpc":"2.0","id":"a\"b","error":{"code":-32022,"message":)"
        R"("Unsupported protocol version","data":{"supported":["2026-07-28"],)"
        R"("requested":"1900-01-01"}}})");
  const std::string nasty =
      errorBody(RequestId::null(), code::kInvalidRequest, std::string_view("q\"\\\n\x01\xff", 6));
  CHECK(nasty == R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":)"
                 R"("q\"\\\n\u0001\ufffd"}})");
  CHECK(isValidJson(nasty));
}

TEST_CASE("extractId") {
  struct Case {
    std::string_view body;
    RequestId::Kind kind;
    std::string_view json;
  };
  const Case cases[] = {
      {R"({"jsonrpc":"2.0","id":1,"method":"x"})", RequestId::Kind::kJson, "1"},
      {R"({"id":-7})", RequestId::Kind::kJson, "-7"},
      {R"({"id":18446744073709551615})", RequestId::Kind::kJson, "18446744073709551615"},
      {R"({"id":1.5})", RequestId::Kind::kJson, "1.5"},
      // Fractions, exponents and -0 are echoed exactly as written (JSON-RPC: SHOULD NOT use).
      {R"({"id":1.50})", RequestId::Kind::kJson, "1.50"},
      {R"({"id":1e3})", RequestId::Kind::kJson, "1e3"},
      {R"({"method":"x", "id" :  -1.0E+3 , "jsonrpc":"2.0"})", RequestId::Kind::kJson, "-1.0E+3"},
      {R"({"\u0069d":2.0e-1})", RequestId::Kind::kJson, "2.0e-1"},
      {R"({"id":-0})", RequestId::Kind::kJson, "-0"},
      {R"({"id":0})", RequestId::Kind::kJson, "0"},
      {R"({"id":123456789012345678901234567890e-10})", RequestId::Kind::kJson,
       "123456789012345678901234567890e-10"},
      {R"({"id":"abc"})", RequestId::Kind::kJson, R"("abc")"},
      {R"({"id":"a\"b\\c\u0001"})", RequestId::Kind::kJson, R"("a\"b\\c\u0001")"},
      {R"({"id":"\u00e9"})", RequestId::Kind::kJson, "\"\xc3\xa9\""},
      {R"({"id":null})", RequestId::Kind::kNull, ""},
      {R"({"id":{"x":1}})", RequestId::Kind::kNull, ""},
      {R"({"id":true})", RequestId::Kind::kNull, ""},
      {R"({"jsonrpc":"2.0","method":"x"})", RequestId::Kind::kAbsent, ""},
      {R"([{"id":1}])", RequestId::Kind::kNull, ""},
      {R"({"id":1,)", RequestId::Kind::kNull, ""},
      {"", RequestId::Kind::kNull, ""},
      {"not json", RequestId::Kind::kNull, ""},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.body));
    const RequestId id = extractId(c.body);
    CHECK(id.kind == c.kind);
    CHECK(id.json == c.json);
  }
}

}  // namespace
}  // namespace gw::mcp
