// gw::mcp::verifyBody: syntax rejects, classification, ids, and every header/body mismatch.

#include <catch.hpp>

#include <functional>
#include <string>
#include <string_view>

#include "gateway/mcp/verifier.h"

namespace gw::mcp {
namespace {

// The body in a buffer with bodyPadding() readable bytes after it, as the caller provides.
struct Padded {
  explicit Padded(std::string_view body) : size(body.size()) {
    buf.assign(body);
    buf.append(bodyPadding(), '\0');
  }
  std::string_view view() const { return {buf.data(), size}; }
  std::string buf;
  size_t size;
};

VerifyResult verify(std::string_view body, const McpHeaders& h, const ToolSchema* tool = nullptr,
                    VerifyOptions opts = {}) {
  const Padded p(body);
  return verifyBody(p.view(), h, tool, opts);
}

VerifyResult classify(std::string_view body, VerifyOptions opts = {}) {
  opts.check_headers = false;
  return verify(body, McpHeaders{}, nullptr, opts);
}

const ToolSchema kSqlTool{"execute_sql",
                          {{"Region", {"region"}, ParamType::kString},
                           {"Count", {"count"}, ParamType::kInteger},
                           {"Dry", {"dry"}, ParamType::kBoolean},
                           {"Tenant", {"opts", "tenant"}, ParamType::kString}}};

constexpr std::string_view kMeta =
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"})";

std::string callBody(std::string_view args, std::string_view name = "execute_sql") {
  return std::string(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":")") +
         std::string(name) + R"(","arguments":)" + std::string(args) + "," + std::string(kMeta) +
         "}}";
}

const std::string kFullArgs =
    R"({"region":"us-west1","count":42,"dry":true,"opts":{"tenant":"Hello, 世界"},)"
    R"("query":"SELECT 1"})";

McpHeaders callHeaders() {
  McpHeaders h;
  h.has_version = true;
  h.version = "2026-07-28";
  h.has_method = true;
  h.method = "tools/call";
  h.has_name = true;
  h.name = McpValue{"execute_sql", "execute_sql", false};
  h.params = {
      {"Region", {"us-west1", "us-west1", false}},
      {"Count", {"42", "42", false}},
      {"Dry", {"true", "true", false}},
      {"Tenant", {"=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界", true}},
  };
  return h;
}

void setParam(McpHeaders& h, std::string_view name, std::string_view value) {
  for (McpParam& p : h.params) {
    if (p.name == name) {
      p.v = McpValue{value, value, false};
      return;
    }
  }
  h.params.push_back({name, {value, value, false}});
}

void dropParam(McpHeaders& h, std::string_view name) {
  std::erase_if(h.params, [&](const McpParam& p) { return p.name == name; });
}

TEST_CASE("verifyBody accepts the captured tools/call sample") {
  const std::string sample =
      R"({"method":"tools/call","params":{"name":"execute_sql","arguments":{"region":"us-west1",)"
      R"("count":42,"dry":true,"opts":{"tenant":"Hello, 世界"},"query":"SELECT 1"},"_meta":{)"
      R"("io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/)"
      R"(clientInfo":{"name":"lab-client","version":"0.0.1"},"io.modelcontextprotocol/)"
      R"(clientCapabilities":{"elicitation":{}}}},"jsonrpc":"2.0","id":1})";
  const VerifyResult r = verify(sample, callHeaders(), &kSqlTool);
  INFO(r.message);
  CHECK(r.ok);
  CHECK(r.kind == BodyKind::kRequest);
  CHECK(r.method == "tools/call");
  CHECK(r.id.kind == RequestId::Kind::kJson);
  CHECK(r.id.json == "1");
  CHECK(r.code == 0);
}

TEST_CASE("verifyBody syntax rejects") {
  struct Case {
    std::string_view name;
    std::string body;
    int code;
    std::string_view message_part;
  };
  const Case cases[] = {
      {"BOM", "\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"method\":\"x\"}", code::kParseError,
       "byte order mark"},
      {"empty", "", code::kParseError, "Parse error"},
      {"whitespace only", "  \r\n", code::kParseError, "Parse error"},
      {"truncated", R"({"jsonrpc":"2.0","method":"x")", code::kParseError, "Parse error"},
      {"trailing garbage", R"({"jsonrpc":"2.0","method":"x"} x)", code::kParseError, "Parse error"},
      {"second value", R"({"jsonrpc":"2.0","method":"x"}{})", code::kParseError, "Parse error"},
      {"trailing comma", R"({"jsonrpc":"2.0","method":"x",})", code::kParseError, "Parse error"},
      {"invalid UTF-8 in string", "{\"jsonrpc\":\"2.0\",\"method\":\"a\xff\"}", code::kParseError,
       "invalid UTF-8"},
      {"overlong UTF-8 in key", "{\"\xc0\xaf\":1,\"jsonrpc\":\"2.0\",\"method\":\"x\"}",
       code::kParseError, "invalid UTF-8"},
      {"batch", R"([{"jsonrpc":"2.0","id":1,"method":"x"}])", code::kInvalidRequest, "batch"},
      {"empty batch", "[]", code::kInvalidRequest, "batch"},
      {"top-level string", R"("hello")", code::kInvalidRequest, "not a JSON object"},
      {"top-level number", "42", code::kInvalidRequest, "not a JSON object"},
      {"top-level null", "null", code::kInvalidRequest, "not a JSON object"},
      {"duplicate top-level key", R"({"jsonrpc":"2.0","method":"x","method":"y"})",
       code::kInvalidRequest, "duplicate key 'method'"},
      {"duplicate nested key", R"({"jsonrpc":"2.0","method":"x","params":{"a":{"b":1,"b":2}}})",
       code::kInvalidRequest, "duplicate key 'b'"},
      {"duplicate in array element", R"({"jsonrpc":"2.0","method":"x","params":[{"k":1,"k":1}]})",
       code::kInvalidRequest, "duplicate key 'k'"},
      {"escaped duplicate", R"({"jsonrpc":"2.0","method":"x","params":{"name":1,"n\u0061me":2}})",
       code::kInvalidRequest, "duplicate key 'name'"},
      {"duplicate key quoted safely", R"({"jsonrpc":"2.0","method":"x","a\"\n":1,"a\"\n":2})",
       code::kInvalidRequest, R"(duplicate key 'a\"\n')"},
      {"missing jsonrpc", R"({"method":"x"})", code::kInvalidRequest, "jsonrpc"},
      {"wrong jsonrpc", R"({"jsonrpc":"1.0","method":"x"})", code::kInvalidRequest, "jsonrpc"},
      {"numeric jsonrpc", R"({"jsonrpc":2.0,"method":"x"})", code::kInvalidRequest, "jsonrpc"},
      {"no method, no result", R"({"jsonrpc":"2.0","id":1})", code::kInvalidRequest, "method"},
      {"method not a string", R"({"jsonrpc":"2.0","id":1,"method":7})", code::kInvalidRequest,
       "method"},
      {"id is an object", R"({"jsonrpc":"2.0","id":{"a":1},"method":"x"})", code::kInvalidRequest,
       "\"id\""},
      {"id is a boolean", R"({"jsonrpc":"2.0","id":true,"method":"x"})", code::kInvalidRequest,
       "\"id\""},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    for (bool check : {true, false}) {
      VerifyOptions opts;
      opts.check_headers = check;
      const VerifyResult r = verify(c.body, callHeaders(), nullptr, opts);
      INFO(r.message);
      CHECK_FALSE(r.ok);
      CHECK(r.code == c.code);
      CHECK(r.message.find(c.message_part) != std::string::npos);
    }
  }
}

TEST_CASE("verifyBody nesting cap") {
  auto nested = [](size_t containers) {
    // containers == total nesting including the top-level object.
    std::string inner;
    for (size_t i = 1; i < containers; ++i) {
      inner += (i % 2 == 1) ? "[" : "{\"k\":";
    }
    inner += "1";
    for (size_t i = containers - 1; i >= 1; --i) {
      inner += (i % 2 == 1) ? "]" : "}";
    }
    return R"({"jsonrpc":"2.0","method":"x","params":)" + inner + "}";
  };
  SECTION("default cap 64") {
    CHECK(classify(nested(64)).ok);
    const VerifyResult r = classify(nested(65));
    CHECK_FALSE(r.ok);
    CHECK(r.code == code::kInvalidRequest);
    CHECK(r.message.find("nesting") != std::string::npos);
  }
  SECTION("custom cap") {
    VerifyOptions opts;
    opts.max_depth = 5;
    CHECK(classify(nested(5), opts).ok);
    CHECK_FALSE(classify(nested(6), opts).ok);
  }
  SECTION("beyond simdjson's own limit") {
    const VerifyResult r = classify(nested(5000));
    CHECK_FALSE(r.ok);
    CHECK(r.code == code::kInvalidRequest);
  }
}

TEST_CASE("verifyBody classification and ids") {
  struct Case {
    std::string_view body;
    BodyKind kind;
    RequestId::Kind id_kind;
    std::string_view id_json;
    std::string_view method;
  };
  const Case cases[] = {
      {R"({"jsonrpc":"2.0","id":7,"method":"tools/list"})", BodyKind::kRequest,
       RequestId::Kind::kJson, "7", "tools/list"},
      {R"({"jsonrpc":"2.0","id":-3,"method":"a"})", BodyKind::kRequest, RequestId::Kind::kJson,
       "-3", "a"},
      {R"({"jsonrpc":"2.0","id":2.5,"method":"a"})", BodyKind::kRequest, RequestId::Kind::kJson,
       "2.5", "a"},
      // Fractions and exponents are accepted (JSON-RPC: SHOULD NOT) and echoed as written.
      {R"({"jsonrpc":"2.0","id":2.50,"method":"a"})", BodyKind::kRequest, RequestId::Kind::kJson,
       "2.50", "a"},
      {R"({"jsonrpc":"2.0","id":1e3,"method":"a"})", BodyKind::kRequest, RequestId::Kind::kJson,
       "1e3", "a"},
      {R"({"jsonrpc":"2.0","id" : 1.0E+3 ,"method":"a"})", BodyKind::kRequest,
       RequestId::Kind::kJson, "1.0E+3", "a"},
      {R"({"jsonrpc":"2.0","method":"a","\u0069d":-0.000})", BodyKind::kRequest,
       RequestId::Kind::kJson, "-0.000", "a"},
      {R"({"jsonrpc":"2.0","id":-0,"method":"a"})", BodyKind::kRequest, RequestId::Kind::kJson,
       "-0", "a"},
      {R"({"jsonrpc":"2.0","id":0,"method":"a"})", BodyKind::kRequest, RequestId::Kind::kJson, "0",
       "a"},
      {R"({"jsonrpc":"2.0","id":9007199254740993,"method":"a"})", BodyKind::kRequest,
       RequestId::Kind::kJson, "9007199254740993", "a"},
      {R"({"jsonrpc":"2.0","id":18446744073709551615,"method":"a"})", BodyKind::kRequest,
       RequestId::Kind::kJson, "18446744073709551615", "a"},
      {R"({"jsonrpc":"2.0","id":123456789012345678901234567890e-10,"method":"a"})",
       BodyKind::kRequest, RequestId::Kind::kJson, "123456789012345678901234567890e-10", "a"},
      {R"({"jsonrpc":"2.0","id":"","method":"a"})", BodyKind::kRequest, RequestId::Kind::kJson,
       R"("")", "a"},
      {R"({"jsonrpc":"2.0","method":"notifications/progress"})", BodyKind::kNotification,
       RequestId::Kind::kAbsent, "", "notifications/progress"},
      {R"({"jsonrpc":"2.0","method":"custom/thing"})", BodyKind::kNotification,
       RequestId::Kind::kAbsent, "", "custom/thing"},
      {R"({"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen"})", BodyKind::kRequest,
       RequestId::Kind::kJson, R"("listen:0")", "subscriptions/listen"},
      {R"({"jsonrpc":"2.0","id":"q\"\\\u0041\n","method":"a"})", BodyKind::kRequest,
       RequestId::Kind::kJson, R"("q\"\\A\n")", "a"},
      {R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{}})",
       BodyKind::kNotification, RequestId::Kind::kAbsent, "", "notifications/cancelled"},
      {" \r\n\t{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"m\"} \r\n\t ", BodyKind::kRequest,
       RequestId::Kind::kJson, "1", "m"},
  };
  for (const Case& c : cases) {
    INFO(std::string(c.body));
    const VerifyResult r = classify(c.body);
    INFO(r.message);
    CHECK(r.ok);
    CHECK(r.kind == c.kind);
    CHECK(r.id.kind == c.id_kind);
    CHECK(r.id.json == c.id_json);
    CHECK(r.method == c.method);
  }
}

TEST_CASE("verifyBody keeps the id readable on later rejects") {
  SECTION("id echoed on a jsonrpc reject") {
    const VerifyResult r = classify(R"({"jsonrpc":"3.0","id":"x","method":"a"})");
    CHECK_FALSE(r.ok);
    CHECK(r.id.json == R"("x")");
  }
  SECTION("id echoed on a duplicate elsewhere") {
    const VerifyResult r = classify(R"({"jsonrpc":"2.0","id":5,"method":"a","method":"b"})");
    CHECK_FALSE(r.ok);
    CHECK(r.id.json == "5");
  }
  SECTION("duplicated id becomes null") {
    const VerifyResult r = classify(R"({"jsonrpc":"2.0","id":5,"id":6,"method":"a"})");
    CHECK_FALSE(r.ok);
    CHECK(r.id.kind == RequestId::Kind::kNull);
  }
  SECTION("unparseable body has a null id") {
    const VerifyResult r = classify(R"({"jsonrpc":"2.0","id":5,"method":"a")");
    CHECK(r.id.kind == RequestId::Kind::kNull);
  }
}

TEST_CASE("verifyBody rejects POSTed responses when checking headers") {
  McpHeaders h;
  const VerifyResult r = verify(R"({"jsonrpc":"2.0","id":1,"result":{}})", h);
  CHECK_FALSE(r.ok);
  CHECK(r.kind == BodyKind::kResponse);
  CHECK(r.code == code::kInvalidRequest);
  CHECK(r.message == "JSON-RPC responses may not be POSTed");
  CHECK(std::string_view(r.reason) == "response_posted");
  CHECK(r.id.json == "1");
}

// The JSON-RPC 2.0 / MCP message rules hold with and without header checks (verify mode, and
// the body of a trusted request without Mcp-Method read to tell a notification).
struct MessageCase {
  std::string_view name;
  std::string body;
  std::string_view reason;
  RequestId::Kind id_kind;
  std::string_view id_json;
  std::string_view message_part;
};

void runMessageCases(const std::vector<MessageCase>& cases) {
  for (const MessageCase& c : cases) {
    INFO(c.name << ": " << c.body);
    for (bool check : {true, false}) {
      VerifyOptions opts;
      opts.check_headers = check;
      const VerifyResult r = verify(c.body, callHeaders(), &kSqlTool, opts);
      INFO("check_headers=" << check << " message: " << r.message);
      CHECK_FALSE(r.ok);
      CHECK(r.code == code::kInvalidRequest);
      CHECK(std::string_view(r.reason) == c.reason);
      CHECK(r.id.kind == c.id_kind);
      CHECK(r.id.json == c.id_json);
      CHECK(r.message.find(c.message_part) != std::string::npos);
    }
  }
}

TEST_CASE("verifyBody: id must be a string or a number (JSON-RPC 2.0 §4, MCP RequestId)") {
  const std::string tail = R"("method":"tools/list","params":{)" + std::string(kMeta) + "}}";
  auto withId = [&](std::string_view id) {
    return R"({"jsonrpc":"2.0","id":)" + std::string(id) + "," + tail;
  };
  const std::string_view msg = R"("id" must be a string or a number)";
  std::vector<MessageCase> cases = {
      {"null", withId("null"), "id_invalid", RequestId::Kind::kNull, "", msg},
      {"null with whitespace", withId(" \r\n\tnull \t"), "id_invalid", RequestId::Kind::kNull, "",
       msg},
      {"true", withId("true"), "id_invalid", RequestId::Kind::kNull, "", msg},
      {"false", withId("false"), "id_invalid", RequestId::Kind::kNull, "", msg},
      {"empty object", withId("{}"), "id_invalid", RequestId::Kind::kNull, "", msg},
      {"object", withId(R"({"id":1})"), "id_invalid", RequestId::Kind::kNull, "", msg},
      {"empty array", withId("[]"), "id_invalid", RequestId::Kind::kNull, "", msg},
      {"array of a number", withId("[1]"), "id_invalid", RequestId::Kind::kNull, "", msg},
      {"nested array", withId(R"([["x"]])"), "id_invalid", RequestId::Kind::kNull, "", msg},
      {"escaped key, null", R"({"jsonrpc":"2.0","\u0069\u0064":null,)" + tail, "id_invalid",
       RequestId::Kind::kNull, "", msg},
      {"id last, null", R"({"jsonrpc":"2.0",)" + tail.substr(0, tail.size() - 1) + R"(,"id":null})",
       "id_invalid", RequestId::Kind::kNull, "", msg},
      {"null id on a notification method", R"({"jsonrpc":"2.0","id":null,"method":"x"})",
       "id_invalid", RequestId::Kind::kNull, "", msg},
  };
  runMessageCases(cases);
}

TEST_CASE("verifyBody: a request-only method needs an id (MCP ClientRequest, JSON-RPC §4.1)") {
  const char* methods[] = {"tools/call",
                           "tools/list",
                           "prompts/get",
                           "prompts/list",
                           "resources/read",
                           "resources/list",
                           "resources/templates/list",
                           "server/discover",
                           "subscriptions/listen",
                           "completion/complete",
                           "tasks/get",
                           "tasks/update",
                           "tasks/cancel",
                           "tasks/list",
                           "tasks/result",
                           "initialize",
                           "ping",
                           "logging/setLevel",
                           "resources/subscribe",
                           "resources/unsubscribe"};
  std::vector<MessageCase> cases;
  for (const char* m : methods) {
    cases.push_back({m,
                     R"({"jsonrpc":"2.0","method":")" + std::string(m) + R"(","params":{)" +
                         std::string(kMeta) + "}}",
                     "request_without_id", RequestId::Kind::kAbsent, "",
                     "is a request and needs an \"id\""});
  }
  // Every spelling: escapes in the method or the key, members in any order, no params.
  cases.push_back({"escaped method", R"({"jsonrpc":"2.0","method":"tools\/c\u0061ll"})",
                   "request_without_id", RequestId::Kind::kAbsent, "", "'tools/call'"});
  cases.push_back({"escaped key", R"({"\u006dethod":"tools/list","jsonrpc":"2.0"})",
                   "request_without_id", RequestId::Kind::kAbsent, "", "'tools/list'"});
  cases.push_back({"params first",
                   R"({"params":{"name":"x"},"method":"tools/call","jsonrpc":"2.0"})",
                   "request_without_id", RequestId::Kind::kAbsent, "", "'tools/call'"});
  cases.push_back({"whitespace", " {\r\n \"jsonrpc\" : \"2.0\" ,\t\"method\" : \"ping\" } ",
                   "request_without_id", RequestId::Kind::kAbsent, "", "'ping'"});
  runMessageCases(cases);

  SECTION("case and near-misses are not these methods (the server's business)") {
    for (const char* m : {"TOOLS/CALL", "tools/call ", "tools/callx", "tools", "tasks",
                          "notifications/cancelled", "notifications/tools/list_changed"}) {
      INFO(m);
      const VerifyResult r = classify(R"({"jsonrpc":"2.0","method":")" + std::string(m) + R"("})");
      CHECK(r.ok);
      CHECK(r.kind == BodyKind::kNotification);
    }
  }
}

TEST_CASE("verifyBody: a POSTed response or error is refused in every mode (spec item 3)") {
  std::vector<MessageCase> cases = {
      {"result", R"({"jsonrpc":"2.0","id":1,"result":{}})", "response_posted",
       RequestId::Kind::kJson, "1", "responses may not be POSTed"},
      {"result string id", R"({"jsonrpc":"2.0","id":"a","result":{"resultType":"complete"}})",
       "response_posted", RequestId::Kind::kJson, R"("a")", "responses may not be POSTed"},
      {"error", R"({"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"x"}})", "response_posted",
       RequestId::Kind::kJson, "2", "responses may not be POSTed"},
      {"error with null id", R"({"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"x"}})",
       "response_posted", RequestId::Kind::kNull, "", "responses may not be POSTed"},
      {"error without id", R"({"jsonrpc":"2.0","error":{"code":-1,"message":"x"}})",
       "response_posted", RequestId::Kind::kAbsent, "", "responses may not be POSTed"},
      {"result null", R"({"jsonrpc":"2.0","id":3,"result":null})", "response_posted",
       RequestId::Kind::kJson, "3", "responses may not be POSTed"},
      {"escaped key", R"({"jsonrpc":"2.0","id":4,"r\u0065sult":{}})", "response_posted",
       RequestId::Kind::kJson, "4", "responses may not be POSTed"},
      {"both result and error", R"({"jsonrpc":"2.0","id":5,"result":{},"error":{}})",
       "response_posted", RequestId::Kind::kJson, "5", "responses may not be POSTed"},
  };
  runMessageCases(cases);
}

TEST_CASE("verifyBody: integer Mcp-Param equivalence over every JSON number spelling") {
  auto body = [](std::string_view count) {
    return callBody(R"({"region":"us-west1","count":)" + std::string(count) +
                    R"(,"dry":true,"opts":{"tenant":"Hello, 世界"}})");
  };
  struct Case {
    std::string_view header;
    std::string_view body;
    bool ok;
  };
  const Case cases[] = {
      {"1000", "1e3", true},
      {"1000", "1000.0", true},
      {"1000", "10E2", true},
      {"1000", "1.0e+3", true},
      {"1e3", "1000", true},
      {"1.0e+3", "10E2", true},
      {"10E2", "1000.000", true},
      {"1000", "1e+03", true},
      {"1.5", "1.50", true},
      {"1.50", "15e-1", true},
      {"0", "-0", true},
      {"-0", "0", true},
      {"0", "-0.0", true},
      {"0", "0e10", true},
      {"-7", "-7.0", true},
      {"-7", "-0.7E1", true},
      {"9007199254740993", "9007199254740993", true},
      {"9007199254740993", "9007199254740993.0", true},
      {"9007199254740993.0", "9007199254740993", true},
      {"9.007199254740993e15", "9007199254740993", true},
      {"9223372036854775807", "9223372036854775807", true},
      {"18446744073709551615", "18446744073709551615", true},
      {"18446744073709551615", "1.8446744073709551615e19", true},
      {"9007199254740992", "9007199254740993", false},
      {"9007199254740992.0", "9007199254740993", false},
      {"9007199254740992", "9007199254740993.0", false},
      {"9007199254740993", "9007199254740992.0", false},
      {"9.007199254740992e15", "9007199254740993", false},
      {"18446744073709551614", "18446744073709551615", false},
      {"1000", "1e4", false},
      {"1.5", "1.51", false},
      {"-7", "7", false},
      {"+1000", "1000", false},
      {"01000", "1000", false},
      {"1000.", "1000", false},
      {".5", "0.5", false},
      {"1e999999999999", "1", false},
      {"1e-999999999999", "0", false},
      {"0x3e8", "1000", false},
      {"1_000", "1000", false},
      {"1000 ", "1000", false},  // a decoded sentinel can carry spaces; plain values are trimmed
  };
  for (const Case& c : cases) {
    INFO("header " << c.header << " body " << c.body);
    McpHeaders h = callHeaders();
    setParam(h, "Count", c.header);
    const VerifyResult r = verify(body(c.body), h, &kSqlTool);
    INFO(r.message);
    CHECK(r.ok == c.ok);
    if (!c.ok) {
      CHECK(r.code == code::kHeaderMismatch);
      CHECK(std::string_view(r.reason) == "header_mismatch");
      CHECK(r.message.find("Mcp-Param-Count") != std::string::npos);
      CHECK(r.id.json == "1");
    }
  }
  SECTION("a fraction or exponent body value is quoted as written in the message") {
    McpHeaders h = callHeaders();
    setParam(h, "Count", "7");
    const VerifyResult r = verify(body("4.20e1"), h, &kSqlTool);
    CHECK_FALSE(r.ok);
    CHECK(r.message.find("body value '4.20e1'") != std::string::npos);
  }
  SECTION("nested and escaped argument keys are found for the raw text") {
    const ToolSchema nested{"execute_sql", {{"Deep", {"opts", "n"}, ParamType::kInteger}}};
    McpHeaders h = callHeaders();
    h.params.clear();
    setParam(h, "Deep", "1000");
    const std::string b = callBody(R"({"opts":{"x":1.5,"\u006e":1.0e3,"y":[1e9]}})");
    CHECK(verify(b, h, &nested).ok);
    setParam(h, "Deep", "1001");
    const VerifyResult r = verify(b, h, &nested);
    CHECK_FALSE(r.ok);
    CHECK(r.message.find("body value '1.0e3'") != std::string::npos);
  }
}

TEST_CASE("verifyBody duplicate detection on large objects") {
  std::string many = R"({"jsonrpc":"2.0","method":"x","params":{)";
  for (int i = 0; i < 100; ++i) {
    many += "\"k" + std::to_string(i) + "\":" + std::to_string(i) + ",";
  }
  SECTION("no duplicate") {
    CHECK(classify(many + R"("last":0}})").ok);
  }
  SECTION("escaped duplicate far apart") {
    const VerifyResult r = classify(many + R"("k\u00357":0}})");
    CHECK_FALSE(r.ok);
    CHECK(r.message.find("duplicate key 'k57'") != std::string::npos);
  }
}

struct HeaderCase {
  std::string_view name;
  std::function<void(McpHeaders&)> edit_headers;
  std::string body;
  bool ok;
  std::string_view message_part;  // when !ok
};

void runHeaderCases(const std::vector<HeaderCase>& cases, const ToolSchema* tool) {
  for (const HeaderCase& c : cases) {
    INFO(c.name);
    McpHeaders h = callHeaders();
    if (c.edit_headers) {
      c.edit_headers(h);
    }
    const VerifyResult r = verify(c.body, h, tool);
    INFO(r.message);
    CHECK(r.ok == c.ok);
    if (!c.ok) {
      CHECK(r.code == code::kHeaderMismatch);
      CHECK(r.message.find(c.message_part) != std::string::npos);
      CHECK(r.id.json == "1");
    }
    // Without header checks every one of these bodies is a fine request.
    VerifyOptions opts;
    opts.check_headers = false;
    const VerifyResult plain = verify(c.body, h, tool, opts);
    CHECK(plain.ok);
    CHECK(plain.kind == BodyKind::kRequest);
  }
}

std::string request(std::string_view method, std::string_view params_members) {
  return std::string(R"({"jsonrpc":"2.0","id":1,"method":")") + std::string(method) +
         R"(","params":{)" + std::string(params_members) + "}}";
}

TEST_CASE("verifyBody standard header checks") {
  const std::string meta(kMeta);
  auto setMethod = [](std::string_view m) { return [m](McpHeaders& h) { h.method = m; }; };
  auto setName = [](std::string_view n) {
    return [n](McpHeaders& h) { h.name = McpValue{n, n, false}; };
  };
  auto noName = [](McpHeaders& h) {
    h.has_name = false;
    h.name = {};
  };
  const std::vector<HeaderCase> cases = {
      {"tools/call ok", nullptr, callBody(kFullArgs), true, ""},
      {"method differs", setMethod("tools/list"), callBody(kFullArgs), false,
       "Mcp-Method header value 'tools/list' does not match body value 'tools/call'"},
      {"method differs in case", setMethod("TOOLS/CALL"), callBody(kFullArgs), false,
       "Mcp-Method header value 'TOOLS/CALL'"},
      {"method missing",
       [](McpHeaders& h) {
         h.has_method = false;
         h.method = {};
       },
       callBody(kFullArgs), false, "missing Mcp-Method"},
      {"name differs", setName("foo"), callBody(kFullArgs), false,
       "Mcp-Name header value 'foo' does not match body value 'execute_sql'"},
      {"name missing", noName, callBody(kFullArgs), false, "missing Mcp-Name"},
      {"name decoded value compared",
       [](McpHeaders& h) {
         h.name = McpValue{"=?base64?ZXhlY3V0ZV9zcWw=?=", "execute_sql", true};
       },
       callBody(kFullArgs), true, ""},
      {"raw sentinel text is not the value",
       [](McpHeaders& h) {
         h.name = McpValue{"execute_sql", "=?base64?x?=", true};
       },
       callBody(kFullArgs), false, "Mcp-Name header value '=?base64?x?='"},
      {"mismatch values escaped", setName("a'\"\n"), callBody(kFullArgs), false,
       R"(Mcp-Name header value 'a'\"\n')"},
      {"long value truncated",
       setName("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
               "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"),
       callBody(kFullArgs), false,
       "'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa...'"},
      {"name with header but no params.name", nullptr,
       request("tools/call", R"("arguments":{},)" + meta), false, "no string params.name"},
      {"params.name not a string", nullptr, request("tools/call", R"("name":5,)" + meta), false,
       "no string params.name"},
      {"prompts/get ok", setMethod("prompts/get"),
       request("prompts/get", R"("name":"execute_sql",)" + meta), true, ""},
      {"prompts/get name differs",
       [](McpHeaders& h) {
         h.method = "prompts/get";
         h.name = McpValue{"greet", "greet", false};
       },
       request("prompts/get", R"("name":"farewell",)" + meta), false,
       "'greet' does not match body value 'farewell'"},
      {"resources/read ok",
       [](McpHeaders& h) {
         h.method = "resources/read";
         h.name = McpValue{"file:///a b", "file:///a b", false};
       },
       request("resources/read", R"("uri":"file:///a b",)" + meta), true, ""},
      {"resources/read uri differs",
       [](McpHeaders& h) {
         h.method = "resources/read";
         h.name = McpValue{"file:///a", "file:///a", false};
       },
       request("resources/read", R"("uri":"file:///b",)" + meta), false,
       "'file:///a' does not match body value 'file:///b'"},
      {"resources/read name is not the uri",
       [](McpHeaders& h) {
         h.method = "resources/read";
         h.name = McpValue{"n", "n", false};
       },
       request("resources/read", R"("name":"n",)" + meta), false, "no string params.uri"},
      {"resources/read name missing",
       [noName](McpHeaders& h) {
         h.method = "resources/read";
         noName(h);
       },
       request("resources/read", R"("uri":"file:///b",)" + meta), false, "missing Mcp-Name"},
      {"tasks/get ok",
       [](McpHeaders& h) {
         h.method = "tasks/get";
         h.name = McpValue{"t-1", "t-1", false};
       },
       request("tasks/get", R"("taskId":"t-1",)" + meta), true, ""},
      {"tasks/update taskId differs",
       [](McpHeaders& h) {
         h.method = "tasks/update";
         h.name = McpValue{"t-1", "t-1", false};
       },
       request("tasks/update", R"("taskId":"t-2",)" + meta), false,
       "'t-1' does not match body value 't-2'"},
      {"tasks/cancel taskId missing in header",
       [noName](McpHeaders& h) {
         h.method = "tasks/cancel";
         noName(h);
       },
       request("tasks/cancel", R"("taskId":"t-2",)" + meta), false, "missing Mcp-Name"},
      {"tools/list needs no Mcp-Name",
       [noName](McpHeaders& h) {
         h.method = "tools/list";
         noName(h);
       },
       request("tools/list", meta), true, ""},
      {"Mcp-Name on tools/list ignored", [](McpHeaders& h) { h.method = "tools/list"; },
       request("tools/list", meta), true, ""},
      {"version differs", [](McpHeaders& h) { h.version = "2025-11-25"; }, callBody(kFullArgs),
       false,
       "MCP-Protocol-Version header value '2025-11-25' does not match body value '2026-07-28'"},
      {"version missing",
       [](McpHeaders& h) {
         h.has_version = false;
         h.version = {};
       },
       callBody(kFullArgs), false, "missing MCP-Protocol-Version"},
      {"version missing in body", nullptr,
       request("tools/call", R"("name":"execute_sql","_meta":{})"), false,
       "MCP-Protocol-Version header value '2026-07-28' but the body has no"},
      {"params missing entirely", [](McpHeaders& h) { h.method = "tools/list"; },
       R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", false, "MCP-Protocol-Version"},
  };
  runHeaderCases(cases, nullptr);
}

TEST_CASE("verifyBody Mcp-Param checks against the tool schema") {
  auto param = [](std::string_view name, std::string_view value) {
    return [name, value](McpHeaders& h) { setParam(h, name, value); };
  };
  auto drop = [](std::string_view name) { return [name](McpHeaders& h) { dropParam(h, name); }; };
  auto args = [](std::string_view region, std::string_view count, std::string_view dry,
                 std::string_view opts) {
    return callBody(std::string(R"({"region":)") + std::string(region) + R"(,"count":)" +
                    std::string(count) + R"(,"dry":)" + std::string(dry) + R"(,"opts":)" +
                    std::string(opts) + "}");
  };
  const std::string tenant = R"({"tenant":"Hello, 世界"})";
  const std::vector<HeaderCase> cases = {
      {"all match", nullptr, callBody(kFullArgs), true, ""},
      {"string differs", param("Region", "eu-west1"), callBody(kFullArgs), false,
       "Mcp-Param-Region header value 'eu-west1' does not match body value 'us-west1'"},
      {"string case matters", param("Region", "US-WEST1"), callBody(kFullArgs), false,
       "Mcp-Param-Region"},
      {"header name case-insensitive",
       [](McpHeaders& h) {
         dropParam(h, "Region");
         setParam(h, "rEGION", "us-west1");
       },
       callBody(kFullArgs), true, ""},
      {"string header missing", drop("Region"), callBody(kFullArgs), false,
       "missing Mcp-Param-Region"},
      {"string arg not a string", nullptr, args("7", "42", "true", tenant), false,
       "Mcp-Param-Region argument is not a string"},
      {"nested string differs", param("Tenant", "Hello"), callBody(kFullArgs), false,
       "Mcp-Param-Tenant header value 'Hello' does not match body value 'Hello, 世界'"},
      {"nested header missing", drop("Tenant"), callBody(kFullArgs), false,
       "missing Mcp-Param-Tenant"},
      {"int differs", param("Count", "41"), callBody(kFullArgs), false,
       "Mcp-Param-Count header value '41' does not match body value '42'"},
      {"int header 42.0", param("Count", "42.0"), callBody(kFullArgs), true, ""},
      {"int header 4.2e1", param("Count", "4.2e1"), callBody(kFullArgs), true, ""},
      {"int header 420E-1", param("Count", "420E-1"), callBody(kFullArgs), true, ""},
      {"int body 42.0", nullptr, args(R"("us-west1")", "42.0", "true", tenant), true, ""},
      {"int body 4.2e1 header 42", nullptr, args(R"("us-west1")", "4.2e1", "true", tenant), true,
       ""},
      {"negative int", param("Count", "-7"), args(R"("us-west1")", "-7", "true", tenant), true, ""},
      {"negative int differs", param("Count", "7"), args(R"("us-west1")", "-7", "true", tenant),
       false, "'7' does not match body value '-7'"},
      {"int header not a number", param("Count", "forty-two"), callBody(kFullArgs), false,
       "'forty-two' does not match body value '42'"},
      {"int header with plus", param("Count", "+42"), callBody(kFullArgs), false, "'+42'"},
      {"int header with leading zero", param("Count", "042"), callBody(kFullArgs), false, "'042'"},
      {"int header with spaces", param("Count", "4 2"), callBody(kFullArgs), false, "'4 2'"},
      {"int header empty", param("Count", ""), callBody(kFullArgs), false, "''"},
      {"int header overflow", param("Count", "1e999"), callBody(kFullArgs), false, "'1e999'"},
      {"int body is a string", param("Count", "42"),
       args(R"("us-west1")", R"("42")", "true", tenant), false,
       "Mcp-Param-Count argument is not a number"},
      {"int header missing", drop("Count"), callBody(kFullArgs), false, "missing Mcp-Param-Count"},
      {"large int exact", param("Count", "9007199254740993"),
       args(R"("us-west1")", "9007199254740993", "true", tenant), true, ""},
      {"large int off by one", param("Count", "9007199254740992"),
       args(R"("us-west1")", "9007199254740993", "true", tenant), false, "Mcp-Param-Count"},
      {"bool differs", param("Dry", "false"), callBody(kFullArgs), false,
       "Mcp-Param-Dry header value 'false' does not match body value 'true'"},
      {"bool case matters", param("Dry", "True"), callBody(kFullArgs), false, "'True'"},
      {"bool as 1", param("Dry", "1"), callBody(kFullArgs), false, "'1'"},
      {"bool false ok", param("Dry", "false"), args(R"("us-west1")", "42", "false", tenant), true,
       ""},
      {"bool body is a string", nullptr, args(R"("us-west1")", "42", R"("true")", tenant), false,
       "Mcp-Param-Dry argument is not a boolean"},
      {"absent arg with header", nullptr,
       callBody(R"({"region":"us-west1","count":42,"opts":{"tenant":"Hello, 世界"}})"), false,
       "Mcp-Param-Dry header present but the argument is absent or null"},
      {"absent arg without header", drop("Dry"),
       callBody(R"({"region":"us-west1","count":42,"opts":{"tenant":"Hello, 世界"}})"), true, ""},
      {"null arg with header", nullptr, args(R"("us-west1")", "null", "true", tenant), false,
       "Mcp-Param-Count header present but the argument is absent or null"},
      {"null arg without header", drop("Count"), args(R"("us-west1")", "null", "true", tenant),
       true, ""},
      {"nested parent absent, header present", nullptr,
       callBody(R"({"region":"us-west1","count":42,"dry":true})"), false,
       "Mcp-Param-Tenant header present"},
      {"nested parent not an object, no header", drop("Tenant"),
       args(R"("us-west1")", "42", "true", R"("flat")"), true, ""},
      {"nested parent null, no header", drop("Tenant"), args(R"("us-west1")", "42", "true", "null"),
       true, ""},
      {"no arguments at all, no headers", [](McpHeaders& h) { h.params.clear(); },
       request("tools/call", R"("name":"execute_sql",)" + std::string(kMeta)), true, ""},
      {"undeclared header ignored", param("Unknown", "whatever"), callBody(kFullArgs), true, ""},
      {"Mcp-Param-Method is unrelated to Mcp-Method", param("Method", "x"), callBody(kFullArgs),
       true, ""},
      {"schema of another tool not applied",
       [](McpHeaders& h) {
         h.name = McpValue{"other", "other", false};
         h.params.clear();
       },
       callBody(kFullArgs, "other"), true, ""},
  };
  runHeaderCases(cases, &kSqlTool);
}

TEST_CASE("verifyBody without a tool schema ignores Mcp-Param headers") {
  McpHeaders h = callHeaders();
  setParam(h, "Region", "somewhere-else");
  dropParam(h, "Count");
  CHECK(verify(callBody(kFullArgs), h, nullptr).ok);
  CHECK_FALSE(verify(callBody(kFullArgs), h, &kSqlTool).ok);
}

TEST_CASE("verifyBody notifications") {
  const std::string cancelled =
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"listen:0",)"
      R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  McpHeaders h;
  h.has_version = true;
  h.version = "2026-07-28";
  SECTION("no Mcp-Method header is fine") {
    const VerifyResult r = verify(cancelled, h);
    CHECK(r.ok);
    CHECK(r.kind == BodyKind::kNotification);
    CHECK(r.id.kind == RequestId::Kind::kAbsent);
  }
  SECTION("matching Mcp-Method") {
    h.has_method = true;
    h.method = "notifications/cancelled";
    CHECK(verify(cancelled, h).ok);
  }
  SECTION("different Mcp-Method") {
    h.has_method = true;
    h.method = "notifications/progress";
    const VerifyResult r = verify(cancelled, h);
    CHECK_FALSE(r.ok);
    CHECK(r.code == code::kHeaderMismatch);
    CHECK(r.kind == BodyKind::kNotification);
    CHECK(r.message.find("'notifications/progress' does not match body value "
                         "'notifications/cancelled'") != std::string::npos);
  }
  SECTION("different version") {
    h.version = "2025-11-25";
    const VerifyResult r = verify(cancelled, h);
    CHECK_FALSE(r.ok);
    CHECK(r.code == code::kHeaderMismatch);
  }
  SECTION("no headers at all") {
    CHECK(verify(R"({"jsonrpc":"2.0","method":"notifications/initialized"})", McpHeaders{}).ok);
  }
}

TEST_CASE("verifyBody method view survives until the next call") {
  const Padded p(R"({"jsonrpc":"2.0","id":1,"method":"tools\/list"})");
  VerifyOptions opts;
  opts.check_headers = false;
  const VerifyResult r = verifyBody(p.view(), McpHeaders{}, nullptr, opts);
  REQUIRE(r.ok);
  CHECK(r.method == "tools/list");
}

TEST_CASE("verifyBody check_envelope: the 2026-07-28 _meta envelope, every way it can be missing",
          "[verifier][bridge]") {
  VerifyOptions opts;
  opts.check_headers = false;
  opts.check_envelope = true;
  const McpHeaders none;
  struct Case {
    const char* body;
    const char* missing;  // "" when the envelope is whole
  };
  const Case cases[] = {
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", "params._meta"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":null})", "params._meta"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})", "params._meta"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":null}})", "params._meta"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":[]}})", "params._meta"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{}}})",
       "io.modelcontextprotocol/protocolVersion"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{)"
       R"("io.modelcontextprotocol/protocolVersion":7,)"
       R"("io.modelcontextprotocol/clientCapabilities":{}}}})",
       "io.modelcontextprotocol/protocolVersion"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{)"
       R"("io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})",
       "io.modelcontextprotocol/clientCapabilities"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{)"
       R"("io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
       R"("io.modelcontextprotocol/clientCapabilities":true}}})",
       "io.modelcontextprotocol/clientCapabilities"},
      // The envelope inside arguments is not the request's.
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"x","arguments":{)"
       R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
       R"("io.modelcontextprotocol/clientCapabilities":{}}}}})",
       "params._meta"},
      // Escaped key spellings are the same keys.
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"\u005fmeta":{)"
       R"("io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
       R"("io.modelcontextprotocol/client\u0043apabilities":{}}}})",
       ""},
      {R"( { "jsonrpc" : "2.0" , "id" : "a" , "method" : "tools/list" , "params" : { "_meta" : {)"
       R"( "io.modelcontextprotocol/protocolVersion" : "2026-07-28" ,)"
       R"( "io.modelcontextprotocol/clientCapabilities" : { "x" : 1 } } } } )",
       ""},
  };
  for (const Case& c : cases) {
    const VerifyResult r = verify(c.body, none, nullptr, opts);
    INFO(c.body << " -> " << r.message);
    if (*c.missing == '\0') {
      CHECK(r.ok);
    } else {
      CHECK_FALSE(r.ok);
      CHECK(r.code == -32602);
      CHECK(r.message.find(c.missing) != std::string::npos);
      CHECK(r.id.json == "1");
    }
  }
  // Notifications carry no envelope requirement; without the option nothing is checked.
  CHECK(verify(R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{}})", none, nullptr,
               opts)
            .ok);
  VerifyOptions off;
  off.check_headers = false;
  CHECK(verify(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", none, nullptr, off).ok);
}

}  // namespace
}  // namespace gw::mcp
