// The OAuth resource-server half of policy/ (issue #17 item 3): identity.resource_metadata
// (RFC 9728) checked and rendered at load, a rule's `require: { scopes }` decided against the
// caller's scopes (API keys here; JWT scope/scp claims in jwt_test.cc), visibility with
// scopes, and the audience rule that ties JWTs to the gateway's own resource URI.

#include <catch.hpp>

#include <string>
#include <vector>

#include "gateway/policy/policy.h"

namespace gw::policy {
namespace {

constexpr const char* kFile = "/tmp/resource-server-test.yaml";

std::shared_ptr<const PolicySet> load(const std::string& yaml,
                                      std::vector<settings::Diagnostic>& errors) {
  return PolicySet::loadString(yaml, kFile, errors);
}

std::string allErrors(const std::vector<settings::Diagnostic>& errors) {
  std::string out;
  for (const auto& e : errors) {
    out += e.str() + "\n";
  }
  return out;
}

std::string metadata(const std::string& resource, const std::string& more = "") {
  return "identity:\n"
         "  resource_metadata:\n"
         "    resource: \"" +
         resource +
         "\"\n"
         "    authorization_servers: [https://idp.example.com]\n" +
         more;
}

Identity caller(std::vector<std::string> scopes) {
  Identity id;
  id.authenticated = true;
  id.subject = "alice";
  id.scopes = std::move(scopes);
  return id;
}

struct Call {
  mcp::McpHeaders h;
  explicit Call(std::string_view name) {
    h.has_method = true;
    h.method = "tools/call";
    h.has_name = true;
    h.name.value = name;
    h.name.raw = name;
  }
  RequestView view() const { return RequestView{h.method, &h}; }
};

TEST_CASE("resource_metadata: the well-known URI and the document (RFC 9728 §3)",
          "[policy][oauth]") {
  struct Case {
    const char* resource;
    const char* path;
    const char* url;
  };
  const Case cases[] = {
      {"https://gw.example.com/mcp", "/.well-known/oauth-protected-resource/mcp",
       "https://gw.example.com/.well-known/oauth-protected-resource/mcp"},
      {"https://gw.example.com", "/.well-known/oauth-protected-resource",
       "https://gw.example.com/.well-known/oauth-protected-resource"},
      // §3.1: the slash after the host goes, a path's own trailing slash stays.
      {"https://gw.example.com/", "/.well-known/oauth-protected-resource",
       "https://gw.example.com/.well-known/oauth-protected-resource"},
      {"https://gw.example.com:8443/tenant/a/mcp/",
       "/.well-known/oauth-protected-resource/tenant/a/mcp/",
       "https://gw.example.com:8443/.well-known/oauth-protected-resource/tenant/a/mcp/"},
      {"http://127.0.0.1:8080/mcp", "/.well-known/oauth-protected-resource/mcp",
       "http://127.0.0.1:8080/.well-known/oauth-protected-resource/mcp"},
      {"http://localhost/mcp", "/.well-known/oauth-protected-resource/mcp",
       "http://localhost/.well-known/oauth-protected-resource/mcp"},
      {"http://[::1]:9000/mcp", "/.well-known/oauth-protected-resource/mcp",
       "http://[::1]:9000/.well-known/oauth-protected-resource/mcp"},
  };
  for (const Case& c : cases) {
    INFO(c.resource);
    std::vector<settings::Diagnostic> errors;
    auto set = load(metadata(c.resource), errors);
    INFO(allErrors(errors));
    REQUIRE(set != nullptr);
    const ResourceMetadata* m = set->resourceMetadata();
    REQUIRE(m != nullptr);
    CHECK(m->resource == c.resource);
    CHECK(m->well_known_path == c.path);
    CHECK(m->url == c.url);
  }
  std::vector<settings::Diagnostic> errors;
  auto set = load(metadata("https://gw.example.com/mcp",
                           "    scopes_supported: [mcp:tools, \"mcp:admin\"]\n"
                           "    resource_name: \"The \\\"gateway\\\"\"\n"),
                  errors);
  REQUIRE(set != nullptr);
  CHECK(set->resourceMetadata()->document ==
        R"({"resource":"https://gw.example.com/mcp",)"
        R"("authorization_servers":["https://idp.example.com"],)"
        R"("scopes_supported":["mcp:tools","mcp:admin"],"bearer_methods_supported":["header"],)"
        R"("resource_name":"The \"gateway\""})");
  CHECK(load("rules: []\n", errors)->resourceMetadata() == nullptr);
}

TEST_CASE("resource_metadata: bad values are load errors at the value", "[policy][oauth]") {
  struct Case {
    std::string yaml;
    int line;
    const char* fragment;
  };
  const Case cases[] = {
      {metadata("gw.example.com/mcp"), 3, "must be an absolute https:// URL"},
      {metadata("ftp://gw.example.com/mcp"), 3, "must be an absolute https:// URL"},
      {metadata("http://gw.example.com/mcp"), 3, "http is allowed only for a loopback host"},
      {metadata("http://127.example.com/mcp"), 3, "http is allowed only for a loopback host"},
      {metadata("https:///mcp"), 3, "has no host"},
      {metadata("https://user:pw@gw.example.com/mcp"), 3, "must not contain credentials"},
      {metadata("https://gw.example.com/mcp#top"), 3, "must not have a fragment"},
      {metadata("https://gw.example.com/mcp?tenant=a"), 3, "must not have a query"},
      {metadata("https://gw.example.com/m cp"), 3, "contains a space"},
      {metadata("https://gw.example.com/m\\\"cp"), 3, "contains a space, a quote"},
      {"identity:\n  resource_metadata:\n    resource: https://gw.example.com/mcp\n"
       "    authorization_servers: []\n",
       4, "at least one authorization server"},
      {"identity:\n  resource_metadata:\n    resource: https://gw.example.com/mcp\n"
       "    authorization_servers: [idp.example.com]\n",
       4, "must be an absolute https:// URL"},
      {"identity:\n  resource_metadata:\n    resource: https://gw.example.com/mcp\n", 2,
       "needs 'authorization_servers'"},
      {"identity:\n  resource_metadata:\n    authorization_servers: [https://idp.example.com]\n", 2,
       "needs 'resource'"},
      {metadata("https://gw.example.com/mcp", "    scopes_supported: [\"mcp tools\"]\n"), 5,
       "invalid scope 'mcp tools'"},
      {metadata("https://gw.example.com/mcp", "    scope_supported: [a]\n"), 5,
       "did you mean 'scopes_supported'?"},
  };
  for (const Case& c : cases) {
    INFO(c.yaml);
    std::vector<settings::Diagnostic> errors;
    CHECK(load(c.yaml, errors) == nullptr);
    INFO(allErrors(errors));
    bool found = false;
    for (const auto& e : errors) {
      found = found || (e.line == c.line && e.message.find(c.fragment) != std::string::npos);
    }
    CHECK(found);
  }
}

TEST_CASE("require.scopes: every scope is needed, the decision names them", "[policy][oauth]") {
  std::vector<settings::Diagnostic> errors;
  auto set = load(
      "rules:\n"
      "  - name: admin-tools-need-scope\n"
      "    match: { method: tools/call, name: \"admin_*\" }\n"
      "    require: { scopes: [mcp:admin, mcp:write] }\n"
      "  - name: no-drop\n"
      "    match: { name: drop_all }\n"
      "    action: deny\n",
      errors);
  INFO(allErrors(errors));
  REQUIRE(set != nullptr);
  struct Case {
    const char* what;
    const char* tool;
    Identity id;
    bool allow;
    bool scope_denied;
  };
  const Case cases[] = {
      {"both scopes", "admin_reset", caller({"mcp:write", "mcp:admin"}), true, false},
      {"one of two", "admin_reset", caller({"mcp:admin"}), false, true},
      {"none", "admin_reset", caller({}), false, true},
      {"anonymous", "admin_reset", Identity{}, false, true},
      {"a scope is a whole token, not a prefix", "admin_reset",
       caller({"mcp:admin:extra", "mcp:writer"}), false, true},
      {"another tool needs none", "echo", caller({}), true, false},
      {"a plain deny is not a scope denial", "drop_all", caller({"mcp:admin", "mcp:write"}), false,
       false},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Call call(c.tool);
    Decision d = set->decide(call.view(), c.id);
    CHECK(d.allow == c.allow);
    CHECK((d.missing_scopes != nullptr) == c.scope_denied);
    if (d.missing_scopes != nullptr) {
      CHECK(*d.missing_scopes == std::vector<std::string>{"mcp:admin", "mcp:write"});
      CHECK(d.rule == "admin-tools-need-scope");
    }
    // Visibility agrees: the tool is listed exactly when the call could be allowed.
    CHECK(set->mayUse("tools/call", c.tool, c.id) == c.allow);
  }
  CHECK(set->filtersLists());  // a scope rule can deny, so lists are filtered
}

TEST_CASE("scope_implies: a scope grants what it lists, transitively, before require.scopes",
          "[policy][oauth]") {
  std::vector<settings::Diagnostic> errors;
  auto set = load(
      "identity:\n"
      "  scope_implies:\n"
      "    \"mcp:admin\": [\"mcp:tools\", \"mcp:write\"]\n"
      "    \"mcp:write\": [\"mcp:read\"]\n"
      "    \"mcp:owner\": [\"mcp:admin\"]\n"
      "rules:\n"
      "  - name: reads\n"
      "    match: { method: tools/call, name: \"read_*\" }\n"
      "    require: { scopes: [mcp:read] }\n",
      errors);
  INFO(allErrors(errors));
  REQUIRE(set != nullptr);
  // Closed transitively, sorted by scope.
  REQUIRE(set->scopeImplies().size() == 3);
  CHECK(set->scopeImplies()[0].first == "mcp:admin");
  CHECK(set->scopeImplies()[0].second ==
        std::vector<std::string>{"mcp:tools", "mcp:write", "mcp:read"});
  CHECK(set->scopeImplies()[1].first == "mcp:owner");
  CHECK(set->scopeImplies()[1].second ==
        std::vector<std::string>{"mcp:admin", "mcp:tools", "mcp:write", "mcp:read"});
  struct Case {
    std::vector<std::string> held;
    bool allow;
  };
  const Case cases[] = {
      {{"mcp:read"}, true},     {{"mcp:write"}, true},  {{"mcp:admin"}, true},
      {{"mcp:owner"}, true},    {{"mcp:tools"}, false}, {{}, false},
      {{"mcp:readers"}, false},
  };
  for (const Case& c : cases) {
    Identity id = caller(c.held);
    set->expandScopes(id.scopes);
    INFO(id.scopes.size());
    Call call("read_file");
    CHECK(set->decide(call.view(), id).allow == c.allow);
    CHECK(set->mayUse("tools/call", "read_file", id) == c.allow);
  }
  Identity twice = caller({"mcp:admin", "mcp:write"});
  set->expandScopes(twice.scopes);
  CHECK(twice.scopes ==
        std::vector<std::string>{"mcp:admin", "mcp:write", "mcp:tools", "mcp:read"});
}

TEST_CASE("scope_implies: cycles and bad scopes are load errors", "[policy][oauth]") {
  struct Case {
    const char* what;
    const char* yaml;
    const char* message;
  };
  const Case cases[] = {
      {"a scope that implies itself",
       "identity:\n  scope_implies:\n    a: [b]\n    b: [c]\n    c: [a]\n",
       "scope 'a' implies itself (a -> b -> c -> a)"},
      {"directly", "identity:\n  scope_implies:\n    a: [a]\n",
       "scope 'a' implies itself (a -> a)"},
      {"a bad scope", "identity:\n  scope_implies:\n    a: [\"b c\"]\n", "invalid scope 'b c'"},
      {"not a map", "identity:\n  scope_implies: [a]\n", "must be a map of scope"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::vector<settings::Diagnostic> errors;
    auto set = load(c.yaml, errors);
    CHECK(set == nullptr);
    CHECK(allErrors(errors).find(c.message) != std::string::npos);
    INFO(allErrors(errors));
  }
}

TEST_CASE("require.scopes: with param and equals_claim both must hold, bad forms are errors",
          "[policy][oauth]") {
  std::vector<settings::Diagnostic> errors;
  auto set = load(
      "rules:\n"
      "  - name: own-tenant-admin\n"
      "    match: { method: tools/call }\n"
      "    require: { scopes: [mcp:admin], param: Tenant, equals_claim: tenant }\n",
      errors);
  INFO(allErrors(errors));
  REQUIRE(set != nullptr);
  Call call("x");
  mcp::McpParam p;
  p.name = "Tenant";
  p.v.value = "acme";
  call.h.params.push_back(p);
  Identity id = caller({"mcp:admin"});
  id.claims = {{"tenant", "acme"}};
  CHECK(set->decide(call.view(), id).allow);
  id.claims = {{"tenant", "other"}};
  CHECK_FALSE(set->decide(call.view(), id).allow);
  CHECK(set->decide(call.view(), id).missing_scopes == nullptr);
  id = caller({});
  id.claims = {{"tenant", "acme"}};
  CHECK(set->decide(call.view(), id).missing_scopes != nullptr);

  struct Bad {
    const char* yaml;
    const char* fragment;
  };
  const Bad bad[] = {
      {"rules:\n  - name: a\n    require: { scopes: [] }\n", "at least one scope"},
      {"rules:\n  - name: a\n    require: {}\n", "needs 'scopes', or 'param' and 'equals_claim'"},
      {"rules:\n  - name: a\n    require: { scopes: [\"a b\"] }\n", "invalid scope 'a b'"},
      {"rules:\n  - name: a\n    require: { scopes: mcp:admin }\n", "list"},
      {"rules:\n  - name: a\n    require: { scope: [x] }\n", "did you mean 'scopes'?"},
      {"identity:\n  api_keys:\n    - subject: a\n      key_sha256: "
       "\"0000000000000000000000000000000000000000000000000000000000000000\"\n"
       "      scopes: [\"\\\\x\"]\n",
       "invalid scope"},
  };
  for (const Bad& b : bad) {
    INFO(b.yaml);
    errors.clear();
    CHECK(load(b.yaml, errors) == nullptr);
    INFO(allErrors(errors));
    bool found = false;
    for (const auto& e : errors) {
      found = found || e.message.find(b.fragment) != std::string::npos;
    }
    CHECK(found);
  }
}

}  // namespace
}  // namespace gw::policy
