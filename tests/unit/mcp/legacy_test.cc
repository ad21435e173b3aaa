// gw::mcp::LegacyBody (issue #13): a legacy (2025-era) body → the MCP view the router,
// rules and limits read. Every method family, names/uris/taskIds, arguments of every JSON
// type by x-mcp-header annotation, escapes, duplicates, batches and garbage (JSON-RPC 2.0
// §4-§6 / RFC 8259 / MCP 2025-03-26 batching).

#include "gateway/mcp/legacy.h"

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace gw::mcp {
namespace {

struct Padded {
  explicit Padded(std::string_view body) : size(body.size()) {
    buf.assign(body);
    buf.append(bodyPadding(), '\0');
  }
  std::string_view view() const { return {buf.data(), size}; }
  std::string buf;
  size_t size;
};

// Parses and fills every message's view (with `tool`'s params) into owned strings.
struct Parsed {
  bool ok = false;
  LegacyError error;
  bool batch = false;
  std::vector<LegacyMessage> msgs;
  std::vector<McpHeaders> views;
};

Parsed parse(std::string_view body, const ToolSchema* tool = nullptr, ValueArena* arena = nullptr) {
  static thread_local ValueArena own(64 * 1024);
  ValueArena& a = arena != nullptr ? *arena : own;
  a.reset();
  Padded p(body);
  static thread_local LegacyBody lb;
  Parsed r;
  r.ok = lb.parse(p.view(), r.error);
  if (!r.ok) {
    return r;
  }
  r.batch = lb.batch();
  r.msgs = lb.messages();
  for (size_t i = 0; i < r.msgs.size(); ++i) {
    McpHeaders h;
    REQUIRE(lb.fillView(i, a, h));
    REQUIRE(lb.fillParams(i, tool, a, h));
    r.views.push_back(h);
  }
  return r;
}

std::string param(const McpHeaders& h, std::string_view name) {
  const McpParam* p = h.findParam(name);
  return p != nullptr ? std::string(p->v.value) : std::string("<absent>");
}

}  // namespace

TEST_CASE("legacy view: method and name/uri/taskId of every method family (MCP 2025-06-18)",
          "[legacy][mcp]") {
  struct Case {
    const char* body;
    BodyKind kind;
    const char* method;
    const char* name;  // nullptr: no name
  };
  const Case cases[] = {
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"get_weather"}})",
       BodyKind::kRequest, "tools/call", "get_weather"},
      {R"({"jsonrpc":"2.0","id":"a","method":"prompts/get","params":{"name":"greet"}})",
       BodyKind::kRequest, "prompts/get", "greet"},
      {R"({"jsonrpc":"2.0","id":2,"method":"resources/read","params":{"uri":"file:///x y"}})",
       BodyKind::kRequest, "resources/read", "file:///x y"},
      {R"({"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"t-1"}})",
       BodyKind::kRequest, "tasks/get", "t-1"},
      {R"({"jsonrpc":"2.0","id":3,"method":"tasks/update","params":{"taskId":"t-2"}})",
       BodyKind::kRequest, "tasks/update", "t-2"},
      {R"({"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"t-3"}})",
       BodyKind::kRequest, "tasks/cancel", "t-3"},
      // 2025 revisions: what resources/subscribe|unsubscribe and tasks/result act on.
      {R"({"jsonrpc":"2.0","id":9,"method":"resources/subscribe","params":{"uri":"file:///a"}})",
       BodyKind::kRequest, "resources/subscribe", "file:///a"},
      {R"({"jsonrpc":"2.0","id":9,"method":"resources/unsubscribe","params":{"uri":"file:///b"}})",
       BodyKind::kRequest, "resources/unsubscribe", "file:///b"},
      {R"({"jsonrpc":"2.0","id":9,"method":"tasks/result","params":{"taskId":"t-4"}})",
       BodyKind::kRequest, "tasks/result", "t-4"},
      {R"({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"name":"not-a-name"}})",
       BodyKind::kRequest, "tools/list", nullptr},
      {R"({"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"2025-06-18"}})",
       BodyKind::kRequest, "initialize", nullptr},
      {R"({"jsonrpc":"2.0","id":6,"method":"ping"})", BodyKind::kRequest, "ping", nullptr},
      {R"({"jsonrpc":"2.0","method":"notifications/initialized"})", BodyKind::kNotification,
       "notifications/initialized", nullptr},
      {R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}})",
       BodyKind::kNotification, "notifications/cancelled", nullptr},
      {R"({"jsonrpc":"2.0","id":7,"method":"x/custom","params":{"name":"n"}})", BodyKind::kRequest,
       "x/custom", nullptr},
      // uri and taskId are only the name of their own methods
      {R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"uri":"u","taskId":"t"}})",
       BodyKind::kRequest, "tools/call", nullptr},
      // a response POSTed by a 2025-era client (answer to sampling/elicitation)
      {R"({"jsonrpc":"2.0","id":9,"result":{"action":"accept"}})", BodyKind::kResponse, "",
       nullptr},
      {R"({"jsonrpc":"2.0","id":null,"error":{"code":-1,"message":"m"}})", BodyKind::kResponse, "",
       nullptr},
      // key order and whitespace do not matter
      {" \n{ \"params\" : { \"name\" : \"b\" } , \"method\":\"tools/call\",\"id\":1,"
       "\"jsonrpc\":\"2.0\" }\t\n",
       BodyKind::kRequest, "tools/call", "b"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    Parsed r = parse(c.body);
    INFO(r.error.message);
    REQUIRE(r.ok);
    REQUIRE(r.views.size() == 1);
    CHECK_FALSE(r.batch);
    CHECK(r.msgs[0].kind == c.kind);
    CHECK(r.views[0].has_method == (c.kind != BodyKind::kResponse));
    CHECK(r.views[0].method == c.method);
    CHECK(r.views[0].has_name == (c.name != nullptr));
    if (c.name != nullptr) {
      CHECK(r.views[0].name.value == c.name);
      CHECK_FALSE(r.views[0].name.sentinel);
    }
    CHECK(r.views[0].params.empty());
  }
}

TEST_CASE("legacy view: escapes are decoded before anything compares (RFC 8259 §7)",
          "[legacy][mcp]") {
  struct Case {
    const char* body;
    const char* method;
    const char* name;
  };
  const Case cases[] = {
      {R"({"jsonrpc":"2.0","id":1,"method":"tools\/call","params":{"name":"del\u0065te_all"}})",
       "tools/call", "delete_all"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/c\u0061ll","params":{"n\u0061me":"x"}})",
       "tools/call", "x"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"caf\u00e9 \"q\""}})",
       "tools/call", "caf\xc3\xa9 \"q\""},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tab\there\n"}})",
       "tools/call", "tab\there\n"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\ud83d\ude00"}})",
       "tools/call", "\xf0\x9f\x98\x80"},
      {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xe4\xb8"
       "\x96\"}}",
       "tools/call", "\xe4\xb8\x96"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    Parsed r = parse(c.body);
    INFO(r.error.message);
    REQUIRE(r.ok);
    CHECK(r.views[0].method == c.method);
    CHECK(r.views[0].name.value == c.name);
  }
}

TEST_CASE("legacy view: duplicate keys anywhere are refused, in every spelling (RFC 8259 §4)",
          "[legacy][mcp]") {
  const char* cases[] = {
      R"({"jsonrpc":"2.0","id":1,"method":"tools/list","method":"tools/call"})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","meth\u006fd":"tools/list"})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","name":"b"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","n\u0061me":"b"}})",
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a","arguments":{"r":1,"r":2}}})",
      R"({"jsonrpc":"2.0","id":1,"id":2,"method":"ping"})",
      R"({"jsonrpc":"2.0","jsonrpc":"2.0","id":1,"method":"ping"})",
      R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":"ping","id":3}])",
  };
  for (const char* body : cases) {
    INFO(body);
    Parsed r = parse(body);
    REQUIRE_FALSE(r.ok);
    CHECK(r.error.code == -32600);
    CHECK(r.error.message.find("duplicate key") != std::string::npos);
    CHECK(std::string_view(r.error.reason) == "body_invalid");
  }
}

TEST_CASE(
    "legacy view: annotated arguments of every JSON type become header values (spec "
    "x-mcp-header: strings as-is, numbers as JSON text, booleans true/false)",
    "[legacy][mcp]") {
  const ToolSchema tool{"execute_sql",
                        {{"Region", {"region"}, ParamType::kString},
                         {"Count", {"count"}, ParamType::kInteger},
                         {"Dry", {"dry"}, ParamType::kBoolean},
                         {"Tenant", {"opts", "tenant"}, ParamType::kString}}};
  auto call = [](std::string_view args, std::string_view name = "execute_sql") {
    return std::string(R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":")") +
           std::string(name) + R"(","arguments":)" + std::string(args) + "}}";
  };
  struct Case {
    std::string args;
    const char* region;
    const char* count;
    const char* dry;
    const char* tenant;
  };
  const Case cases[] = {
      {R"({"region":"eu-west1","count":42,"dry":true,"opts":{"tenant":"acme"}})", "eu-west1", "42",
       "true", "acme"},
      {R"({"region":"e\u0075-1","count":-7,"dry":false})", "eu-1", "-7", "false", "<absent>"},
      {R"({"region":"","count":18446744073709551615})", "", "18446744073709551615", "<absent>",
       "<absent>"},
      {R"({"count":1.50})", "<absent>", "1.50", "<absent>", "<absent>"},
      {R"({"count":4.2e1})", "<absent>", "4.2e1", "<absent>", "<absent>"},
      {R"({"count":-0})", "<absent>", "0", "<absent>", "<absent>"},
      // null, objects and arrays have no header representation
      {R"({"region":null,"count":[1],"dry":{},"opts":{"tenant":null}})", "<absent>", "<absent>",
       "<absent>", "<absent>"},
      // the JSON type given wins over the annotated one: the value is still shown to rules
      {R"({"region":7,"count":"42","dry":"yes"})", "7", "42", "yes", "<absent>"},
      // a path step that is not an object
      {R"({"opts":"flat"})", "<absent>", "<absent>", "<absent>", "<absent>"},
      {R"({})", "<absent>", "<absent>", "<absent>", "<absent>"},
  };
  for (const Case& c : cases) {
    const std::string body = call(c.args);
    INFO(body);
    Parsed r = parse(body, &tool);
    INFO(r.error.message);
    REQUIRE(r.ok);
    const McpHeaders& h = r.views[0];
    CHECK(param(h, "Region") == c.region);
    CHECK(param(h, "region") == c.region);  // {Name} compared case-insensitively
    CHECK(param(h, "Count") == c.count);
    CHECK(param(h, "Dry") == c.dry);
    CHECK(param(h, "Tenant") == c.tenant);
  }

  SECTION("no arguments, arguments not an object, another tool, another method: no params") {
    for (
        const std::string& body :
        {std::string(
             R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_sql"}})"),
         std::string(
             R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"execute_sql","arguments":[1]}})"),
         call(R"({"region":"eu"})", "other_tool"),
         std::string(
             R"({"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"execute_sql","arguments":{"region":"eu"}}})")}) {
      INFO(body);
      Parsed r = parse(body, &tool);
      REQUIRE(r.ok);
      CHECK(r.views[0].params.empty());
    }
  }
  SECTION("without a learned schema no argument is a param") {
    Parsed r = parse(call(R"({"region":"eu"})"), nullptr);
    REQUIRE(r.ok);
    CHECK(r.views[0].params.empty());
  }
  SECTION("a batch: each element's own arguments; numbers with a fraction print shortest") {
    std::string body = "[" + call(R"({"region":"a","count":2.50})") + "," +
                       call(R"({"region":"b","count":3})") + "]";
    Parsed r = parse(body, &tool);
    REQUIRE(r.ok);
    REQUIRE(r.views.size() == 2);
    CHECK(param(r.views[0], "Region") == "a");
    CHECK(param(r.views[0], "Count") == "2.5");
    CHECK(param(r.views[1], "Region") == "b");
    CHECK(param(r.views[1], "Count") == "3");
  }
}

TEST_CASE("legacy view: batches (JSON-RPC 2.0 §6, MCP 2025-03-26)", "[legacy][mcp]") {
  Parsed r = parse(R"([{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"a"}},)"
                   R"({"jsonrpc":"2.0","method":"notifications/progress"},)"
                   R"({"jsonrpc":"2.0","id":"s1","result":{}}])");
  INFO(r.error.message);
  REQUIRE(r.ok);
  CHECK(r.batch);
  REQUIRE(r.msgs.size() == 3);
  CHECK(r.msgs[0].kind == BodyKind::kRequest);
  CHECK(r.views[0].name.value == "a");
  CHECK(r.msgs[0].id.json == "1");
  CHECK(r.msgs[1].kind == BodyKind::kNotification);
  CHECK(r.views[1].method == "notifications/progress");
  CHECK(r.msgs[2].kind == BodyKind::kResponse);
  CHECK_FALSE(r.views[2].has_method);
  CHECK(r.msgs[2].id.json == "\"s1\"");

  Parsed one = parse(R"([{"jsonrpc":"2.0","id":1,"method":"ping"}])");
  REQUIRE(one.ok);
  CHECK(one.batch);
  CHECK(one.msgs.size() == 1);
}

TEST_CASE(
    "legacy view: garbage is refused with -32700 / -32600 and the id when readable "
    "(JSON-RPC 2.0 §5.1)",
    "[legacy][mcp]") {
  struct Case {
    std::string body;
    int code;
    const char* reason;
    const char* id;  // the id JSON echoed; "null" when unreadable
    const char* message;
  };
  const Case cases[] = {
      {"", -32700, "body_invalid", "null", "Parse error"},
      {"not json", -32700, "body_invalid", "null", "Parse error"},
      {"{", -32700, "body_invalid", "null", "Parse error"},
      {"[", -32700, "body_invalid", "null", "Parse error"},
      {R"({"jsonrpc":"2.0","id":1,"method":"ping"} x)", -32700, "body_invalid", "null",
       "Parse error"},
      {R"({"jsonrpc":"2.0","id":1,"method":"ping"}{"jsonrpc":"2.0","id":2,"method":"ping"})",
       -32700, "body_invalid", "null", "Parse error"},
      {"\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", -32700, "body_invalid",
       "null", "byte order mark"},
      {"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":\"\xff\"}}",
       -32700, "body_invalid", "null", "invalid UTF-8"},
      {"42", -32600, "body_invalid", "null", "not a JSON object or batch array"},
      {"\"tools/call\"", -32600, "body_invalid", "null", "not a JSON object or batch array"},
      {"null", -32600, "body_invalid", "null", "not a JSON object or batch array"},
      {"true", -32600, "body_invalid", "null", "not a JSON object or batch array"},
      {"[]", -32600, "body_invalid", "null", "empty batch"},
      {"[1]", -32600, "body_invalid", "null", "not a JSON object"},
      {R"([[{"jsonrpc":"2.0","id":1,"method":"ping"}]])", -32600, "body_invalid", "null",
       "not a JSON object"},
      {"{}", -32600, "body_invalid", "null", "\"jsonrpc\" must be \"2.0\""},
      {R"({"id":5,"method":"ping"})", -32600, "body_invalid", "5", "\"jsonrpc\" must be"},
      {R"({"jsonrpc":"1.0","id":5,"method":"ping"})", -32600, "body_invalid", "5",
       "\"jsonrpc\" must be"},
      {R"({"jsonrpc":2.0,"id":5,"method":"ping"})", -32600, "body_invalid", "5",
       "\"jsonrpc\" must be"},
      {R"({"jsonrpc":"2.0","id":5})", -32600, "body_invalid", "5", "missing \"method\""},
      {R"({"jsonrpc":"2.0","id":5,"method":7})", -32600, "body_invalid", "5",
       "\"method\" must be a string"},
      {R"({"jsonrpc":"2.0","id":5,"method":null})", -32600, "body_invalid", "5",
       "\"method\" must be a string"},
      {R"({"jsonrpc":"2.0","id":"k","method":"tools/call","params":{"name":5}})", -32600,
       "body_invalid", "\"k\"", "params.name must be a string"},
      {R"({"jsonrpc":"2.0","id":"k","method":"resources/read","params":{"uri":["a"]}})", -32600,
       "body_invalid", "\"k\"", "params.uri must be a string"},
      {R"({"jsonrpc":"2.0","id":"k","method":"tasks/get","params":{"taskId":null}})", -32600,
       "body_invalid", "\"k\"", "params.taskId must be a string"},
      {R"({"jsonrpc":"2.0","id":null,"method":"ping"})", -32600, "id_invalid", "null",
       "\"id\" must be a string or a number"},
      {R"({"jsonrpc":"2.0","id":{"a":1},"method":"ping"})", -32600, "id_invalid", "null",
       "\"id\" must be a string or a number"},
      {R"({"jsonrpc":"2.0","id":true,"result":{}})", -32600, "id_invalid", "null",
       "\"id\" must be a string or a number"},
      {R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"a"}})", -32600,
       "request_without_id", "null", "is a request and needs an \"id\""},
      {R"({"jsonrpc":"2.0","method":"initialize"})", -32600, "request_without_id", "null",
       "needs an \"id\""},
      {R"({"jsonrpc":"2.0","id":1.50,"method":"tools/call","params":{"name":5}})", -32600,
       "body_invalid", "1.50", "must be a string"},
      // a batch: the element's error, id null (the batch has no single id)
      {R"([{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":2,"method":3}])", -32600,
       "body_invalid", "null", "(in a batch)"},
      {std::string(200, '[') + std::string(200, ']'), -32600, "body_invalid", "null",
       "nesting too deep"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    Parsed r = parse(c.body);
    REQUIRE_FALSE(r.ok);
    INFO(r.error.message);
    CHECK(r.error.code == c.code);
    CHECK(std::string_view(r.error.reason) == c.reason);
    CHECK(r.error.message.find(c.message) != std::string::npos);
    const std::string id = r.error.id.kind == RequestId::Kind::kJson ? r.error.id.json : "null";
    CHECK(id == c.id);
  }
}

TEST_CASE("legacy view: values are copies in the arena, which bounds them", "[legacy][mcp]") {
  const std::string name(300, 'n');
  const std::string body =
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":")" + name + "\"}}";
  Padded p(body);
  LegacyBody lb;
  LegacyError e;
  REQUIRE(lb.parse(p.view(), e));
  ValueArena small(100);
  McpHeaders h;
  CHECK_FALSE(lb.fillView(0, small, h));
  ValueArena big(1024);
  REQUIRE(lb.fillView(0, big, h));
  // The view outlives the parse: another parse on this thread does not change it.
  LegacyBody other;
  Padded q(R"({"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"zzz"}})");
  REQUIRE(other.parse(q.view(), e));
  CHECK(h.method == "tools/call");
  CHECK(h.name.value == name);
}

}  // namespace gw::mcp
