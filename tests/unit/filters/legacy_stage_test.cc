// The legacy inspection stages (issue #13), driven through explain(), which runs the real
// Pipeline::onHeaders / onBody and collectLimits: a legacy (2025-era) POST's body is its MCP
// view, and routing, rules and limit keys decide on it exactly as on a modern request's
// headers. Batches are checked message by message; unreadable bodies are refused whenever
// a decision would need the view.

#include <catch.hpp>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gateway/filters/explain.h"
#include "tests/unit/policy/test_util.h"

namespace {

using gw::filters::ExplainInput;

constexpr const char* kPolicy =
    "rules:\n"
    "  - name: block-deletes\n"
    "    match: { method: tools/call, name: \"delete_*\" }\n"
    "    action: deny\n"
    "  - name: eu-only\n"
    "    match: { method: tools/call, params: { Region: \"us-*\" } }\n"
    "    action: deny\n"
    "default: allow\n"
    "rate_limits:\n"
    "  - name: per-tool\n"
    "    match: { method: tools/call }\n"
    "    key: [name, \"param:Region\"]\n"
    "    rate: 2/min\n";

constexpr const char* kUpstreams =
    "upstreams:\n"
    "  - name: backend\n"
    "    endpoints: [127.0.0.1:9000]\n"
    "  - name: other\n"
    "    endpoints: [127.0.0.1:9001]\n";

struct Setup {
  gw::policy::test::TempDir dir;
  std::shared_ptr<gw::mcp::SchemaCache> schemas = std::make_shared<gw::mcp::SchemaCache>();
  std::shared_ptr<const gw::filters::Snapshot> snap;

  Setup(const std::string& mcp, const std::string& routes, const char* policy) {
    std::string yaml = "listen: 127.0.0.1:8080\n" + mcp + kUpstreams + "routes:\n" + routes;
    if (policy != nullptr) {
      dir.write("policy.yaml", policy);
      yaml += "policies: [policy.yaml]\n";
    }
    std::string path = dir.write("gateway.yaml", yaml);
    std::vector<gw::settings::Diagnostic> errors;
    snap = gw::filters::Snapshot::load(path, schemas, errors);
    for (const auto& e : errors) {
      UNSCOPED_INFO(e.str());
    }
    REQUIRE(snap);
  }

  void learn(const std::string& upstream, const std::string& tool, const std::string& header,
             const std::string& property) {
    std::vector<gw::mcp::ToolSchema> tools;
    tools.push_back({tool, {{header, {property}, gw::mcp::ParamType::kString}}});
    schemas->learn(upstream, std::move(tools), 0, std::chrono::steady_clock::now());
  }

  std::string legacy(const std::string& body, std::string version = "") const {
    ExplainInput in;
    in.protocol_version = std::move(version);  // "": no MCP-Protocol-Version at all
    in.body = body;
    auto r = gw::filters::explain(*snap, in, nullptr);
    REQUIRE(r);
    return *r;
  }

  std::string modern(const std::string& method, const std::string& name,
                     std::vector<std::pair<std::string, std::string>> params = {}) const {
    ExplainInput in;
    in.method = method;
    in.name = name;
    in.params = std::move(params);
    auto r = gw::filters::explain(*snap, in, nullptr);
    REQUIRE(r);
    return *r;
  }
};

const std::string kDefaultRoute = "  - name: default\n    upstream: backend\n";

std::string call(const std::string& name, const std::string& args = "{}",
                 const std::string& id = "1") {
  return R"({"jsonrpc":"2.0","id":)" + id + R"(,"method":"tools/call","params":{"name":")" + name +
         R"(","arguments":)" + args + "}}";
}

bool has(const std::string& json, const std::string& part) {
  return json.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("legacy stage: a deny rule stops a legacy tools/call exactly as a modern one",
          "[legacy][filters]") {
  Setup s("", kDefaultRoute, kPolicy);
  const std::string modern = s.modern("tools/call", "delete_all");
  for (const char* version : {"", "2025-06-18", "2025-03-26", "garbage"}) {
    INFO("version: " << version);
    const std::string old = s.legacy(call("delete_all"), version);
    INFO(old);
    CHECK(has(old, R"("decision":"reject","status":403,"reason":"policy_denied")"));
    CHECK(has(old, R"("error":{"code":-31004,"message":"Forbidden: denied by rule")"));
    CHECK(has(old, R"("trusted":false,"legacy":true,"mcp_method":"tools/call")"));
    CHECK(has(old, R"("mcp_name":"delete_all","route":"default")"));
    CHECK(has(old, R"("policy_rule":"block-deletes")"));
    CHECK(has(modern, R"("decision":"reject","status":403,"reason":"policy_denied")"));
  }
  // An escaped name is the same name.
  CHECK(has(s.legacy(call("dele\\u0074e_all")), R"("reason":"policy_denied")"));
  // An allowed call is forwarded, with the limit key built from the body's name.
  const std::string ok = s.legacy(call("get_weather"));
  INFO(ok);
  CHECK(has(ok, R"("decision":"forward")"));
  CHECK(has(ok, R"("policy_rule":"default")"));
  CHECK(has(ok, R"("key":"per-tool\u001fget_weather\u001f-")"));
}

TEST_CASE("legacy stage: an untrusted version's Mcp-* headers are ignored, the body decides",
          "[legacy][filters]") {
  Setup s("", kDefaultRoute, kPolicy);
  ExplainInput in;
  in.protocol_version = "2025-06-18";
  in.method = "tools/list";  // sent as Mcp-Method: tools/list, a lie
  in.name = "harmless";
  in.params.emplace_back("Region", "eu-1");
  in.body = call("delete_all");
  auto r = gw::filters::explain(*s.snap, in, nullptr);
  REQUIRE(r);
  INFO(*r);
  CHECK(has(*r, R"("reason":"policy_denied")"));
  CHECK(has(*r, R"("mcp_method":"tools/call","mcp_name":"delete_all")"));
}

TEST_CASE("legacy stage: params come from arguments by the learned x-mcp-header annotations",
          "[legacy][filters]") {
  Setup s("", kDefaultRoute, kPolicy);
  const std::string us = call("execute_sql", R"({"region":"us-east1"})");
  const std::string eu = call("execute_sql", R"({"region":"eu-west1"})");
  // Nothing learned yet: no param, the rule does not apply (as a modern call without header).
  CHECK(has(s.legacy(us), R"("decision":"forward")"));
  // Learned for another upstream: still nothing for this route's upstream.
  s.learn("other", "execute_sql", "Region", "region");
  CHECK(has(s.legacy(us), R"("decision":"forward")"));
  s.learn("backend", "execute_sql", "Region", "region");
  const std::string denied = s.legacy(us);
  INFO(denied);
  CHECK(has(denied, R"("reason":"policy_denied")"));
  CHECK(has(denied, R"("policy_rule":"eu-only")"));
  const std::string allowed = s.legacy(eu);
  INFO(allowed);
  CHECK(has(allowed, R"("decision":"forward")"));
  CHECK(has(allowed, R"("key":"per-tool\u001fexecute_sql\u001feu-west1")"));
  // The same call in header mode gets the same answers.
  CHECK(has(s.modern("tools/call", "execute_sql", {{"Region", "us-east1"}}),
            R"("reason":"policy_denied")"));
}

TEST_CASE("legacy stage: routing by method, name and params works on the body",
          "[legacy][filters]") {
  const std::string routes =
      "  - name: sql-us\n    match: { method: tools/call, params: { Region: \"us-*\" } }\n"
      "    upstream: other\n"
      "  - name: prompts\n    match: { method: prompts/get, name: \"greet*\" }\n"
      "    upstream: other\n"
      "  - name: default\n    upstream: backend\n";
  Setup s("", routes, nullptr);
  CHECK(has(
      s.legacy(R"({"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"greeting"}})"),
      R"("route":"prompts")"));
  CHECK(has(s.legacy(R"({"jsonrpc":"2.0","id":1,"method":"prompts/get","params":{"name":"bye"}})"),
            R"("route":"default")"));
  const std::string us = call("execute_sql", R"({"region":"us-east1"})");
  // The params of a route's match come from that route's upstream's annotations.
  CHECK(has(s.legacy(us), R"("route":"default")"));
  s.learn("backend", "execute_sql", "Region", "region");
  CHECK(has(s.legacy(us), R"("route":"default")"));  // learned, but for the wrong upstream
  s.learn("other", "execute_sql", "Region", "region");
  CHECK(has(s.legacy(us), R"("route":"sql-us")"));
  CHECK(
      has(s.modern("tools/call", "execute_sql", {{"Region", "us-east1"}}), R"("route":"sql-us")"));
  CHECK(has(s.legacy(call("execute_sql", R"({"region":"eu-1"})")), R"("route":"default")"));
}

TEST_CASE("legacy stage: a legacy:true route takes all inspected legacy traffic",
          "[legacy][filters]") {
  const std::string routes =
      "  - name: old\n    match: { method: nothing }\n    upstream: other\n    legacy: true\n"
      "  - name: default\n    upstream: backend\n";
  Setup s("", routes, kPolicy);
  const std::string r = s.legacy(call("get_weather"));
  CHECK(has(r, R"("route":"old")"));
  CHECK(has(r, R"("decision":"forward")"));
  CHECK(has(s.legacy(call("delete_all")), R"("reason":"policy_denied")"));
}

TEST_CASE(
    "legacy stage: batches are checked message by message and refused whole "
    "(JSON-RPC 2.0 §6)",
    "[legacy][filters]") {
  SECTION("policy") {
    Setup s("", kDefaultRoute, kPolicy);
    const std::string ok = s.legacy("[" + call("a") + "," + call("b", "{}", "2") + "]");
    INFO(ok);
    CHECK(has(ok, R"("decision":"forward")"));
    CHECK(has(ok, R"("key":"per-tool\u001fa\u001f-")"));
    CHECK(has(ok, R"("key":"per-tool\u001fb\u001f-")"));
    const std::string bad = s.legacy("[" + call("a") + "," + call("delete_all", "{}", "2") + "," +
                                     R"({"jsonrpc":"2.0","method":"notifications/x"}])");
    INFO(bad);
    CHECK(has(bad, R"("status":403,"reason":"policy_denied")"));
    CHECK(has(bad, R"("policy_rule":"block-deletes")"));
    // A notification is checked too.
    Setup n("", kDefaultRoute,
            "rules:\n  - name: no-progress\n    match: { method: \"notifications/*\" }\n"
            "    action: deny\n");
    CHECK(has(n.legacy("[" + call("a") + R"(,{"jsonrpc":"2.0","method":"notifications/x"}])"),
              R"("reason":"policy_denied")"));
    // A response is not: it answers the server's own request.
    Setup d("", kDefaultRoute, "default: deny\n");
    CHECK(has(d.legacy(R"([{"jsonrpc":"2.0","id":"s1","result":{}}])"), R"("decision":"forward")"));
    CHECK(has(d.legacy(R"({"jsonrpc":"2.0","id":"s1","result":{}})"), R"("decision":"forward")"));
    CHECK(has(d.legacy(call("a")), R"("reason":"policy_denied")"));
    CHECK(has(d.legacy("[" + call("a") + R"(,{"jsonrpc":"2.0","id":"s1","result":{}}])"),
              R"("reason":"policy_denied")"));
  }
  SECTION("one route for the whole batch") {
    const std::string routes =
        "  - name: calls\n    match: { method: tools/call }\n    upstream: other\n"
        "  - name: default\n    upstream: backend\n";
    Setup s("", routes, nullptr);
    const std::string same = s.legacy("[" + call("a") + "," + call("b", "{}", "2") + "]");
    CHECK(has(same, R"("route":"calls")"));
    const std::string split =
        s.legacy("[" + call("a") + R"(,{"jsonrpc":"2.0","id":2,"method":"tools/list"}])");
    INFO(split);
    CHECK(has(split, R"("status":400,"reason":"batch_split")"));
    CHECK(has(split,
              R"("code":-32600,"message":"Invalid Request: the batch's messages go to )"
              R"(different routes ('calls' and 'default'); send them in separate requests")"));
    // Responses follow the batch's route.
    CHECK(has(s.legacy("[" + call("a") + R"(,{"jsonrpc":"2.0","id":"s","result":{}}])"),
              R"("route":"calls")"));
  }
}

TEST_CASE("legacy stage: an unreadable body is refused whenever a decision needs the view",
          "[legacy][filters]") {
  const char* garbage[] = {"not json", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}", "[]", "42",
                           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"a\",\"method\":\"b\"}"};
  SECTION("a rule looks at method/name/params: 400") {
    Setup s("", kDefaultRoute, kPolicy);
    for (const char* g : garbage) {
      INFO(g);
      const std::string r = s.legacy(g);
      INFO(r);
      CHECK(has(r, R"("decision":"reject","status":400)"));
      CHECK((has(r, R"("code":-32700)") || has(r, R"("code":-32600)")));
    }
    CHECK(has(s.legacy("not json"), R"("code":-32700,"message":"Parse error")"));
  }
  struct Needs {
    const char* what;
    std::string routes;
    const char* policy;
    bool needs;
  };
  const Needs cases[] = {
      {"no policy, default route", kDefaultRoute, nullptr, false},
      // A rule that can deny filters the lists its callers see: the view tells a list.
      {"rules on subject only", kDefaultRoute,
       "rules:\n  - name: r\n    match: { subject: \"x*\" }\n    action: deny\n", true},
      {"a limit keyed on client_ip", kDefaultRoute,
       "rate_limits:\n  - name: l\n    key: [client_ip]\n    rate: 5/s\n", false},
      {"a limit keyed on name", kDefaultRoute,
       "rate_limits:\n  - name: l\n    key: [name]\n    rate: 5/s\n", true},
      {"a limit keyed on a param", kDefaultRoute,
       "rate_limits:\n  - name: l\n    key: [\"param:Region\"]\n    rate: 5/s\n", true},
      {"a limit matching a method", kDefaultRoute,
       "rate_limits:\n  - name: l\n    match: { method: tools/call }\n    key: [client_ip]\n"
       "    rate: 5/s\n",
       true},
      {"a rule's unless looks at a name", kDefaultRoute,
       "rules:\n  - name: r\n    match: { subject: \"*\" }\n    unless: { name: a }\n"
       "    action: deny\n",
       true},
      {"a require", kDefaultRoute,
       "rules:\n  - name: r\n    require: { param: Tenant, equals_claim: tenant }\n", true},
      {"a route matching a method",
       "  - name: calls\n    match: { method: tools/call }\n    upstream: other\n" + kDefaultRoute,
       nullptr, true},
      {"a route matching a header only",
       "  - name: h\n    match: { headers: { X-A: \"1\" } }\n    upstream: other\n" + kDefaultRoute,
       nullptr, false},
      {"a legacy:true route takes legacy traffic whatever routes match",
       "  - name: calls\n    match: { method: tools/call }\n    upstream: other\n"
       "  - name: old\n    upstream: backend\n    legacy: true\n",
       nullptr, false},
  };
  for (const Needs& c : cases) {
    INFO(c.what);
    Setup s("", c.routes, c.policy);
    const std::string r = s.legacy("not json");
    INFO(r);
    if (c.needs) {
      CHECK(has(r, R"("decision":"reject","status":400,"reason":"body_invalid")"));
    } else {
      CHECK(has(r, R"("decision":"forward")"));
      CHECK(has(r, R"("mcp_method":null)"));
    }
  }
}

TEST_CASE("legacy stage: identity is decided from the head, before the body", "[legacy][filters]") {
  Setup s("", kDefaultRoute, "identity:\n  anonymous: deny\n");
  const std::string r = s.legacy("not json");
  INFO(r);
  CHECK(has(r, R"("status":401,"reason":"auth_missing")"));
}

TEST_CASE("legacy stage: legacy: reject still answers 400 -32020 / -32022", "[legacy][filters]") {
  Setup s("mcp:\n  legacy: reject\n", kDefaultRoute, kPolicy);
  CHECK(has(s.legacy(call("get_weather")), R"("status":400,"reason":"version_missing")"));
  CHECK(has(s.legacy(call("get_weather"), "2025-06-18"),
            R"("status":400,"reason":"version_unsupported")"));
  CHECK(s.snap->settings->mcp.legacy == gw::settings::LegacyMode::kReject);
  Setup d("", kDefaultRoute, nullptr);
  CHECK(d.snap->settings->mcp.legacy == gw::settings::LegacyMode::kPassthrough);
}
