// visibility: filter (issue #16) — PolicySet::mayUse, the decision behind a caller's filtered
// lists, checked against decide() itself: for every policy, caller, method and name below,
// mayUse is true exactly when some call (over a set of parameter values that reaches every
// branch of the rules) would be allowed; a condition on an Mcp-Param value only ever makes an
// item "may use", never hides it.

#include <catch.hpp>

#include <string>
#include <vector>

#include "gateway/policy/policy.h"

namespace gw::policy {
namespace {

std::shared_ptr<const PolicySet> load(const std::string& yaml) {
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::loadString(yaml, "/tmp/visibility-test.yaml", errors);
  for (const auto& e : errors) {
    UNSCOPED_INFO(e.str());
  }
  REQUIRE(set != nullptr);
  return set;
}

Identity caller(std::string subject, std::vector<std::string> groups,
                std::vector<std::pair<std::string, std::string>> claims) {
  Identity id;
  id.authenticated = !subject.empty();
  id.subject = std::move(subject);
  id.groups = std::move(groups);
  id.claims = std::move(claims);
  return id;
}

// Whether decide() allows any call of `method` `name` with Region (and Tenant) taken from a
// set of values that hits every glob below, or absent.
bool someCallAllowed(const PolicySet& p, std::string_view method, std::string_view name,
                     const Identity& id) {
  const std::vector<std::string_view> regions{"", "eu-west1", "us-east1", "acme", "globex"};
  for (std::string_view region : regions) {
    for (std::string_view tenant : regions) {
      mcp::McpHeaders h;
      h.has_method = true;
      h.method = method;
      h.has_name = true;
      h.name.value = name;
      h.name.raw = name;
      if (!region.empty()) {
        h.params.push_back(mcp::McpParam{"Region", mcp::McpValue{region, region, false}});
      }
      if (!tenant.empty()) {
        h.params.push_back(mcp::McpParam{"Tenant", mcp::McpValue{tenant, tenant, false}});
      }
      if (p.decide(RequestView{method, &h}, id).allow) {
        return true;
      }
    }
  }
  return false;
}

const char* const kPolicies[] = {
    // name globs, default deny
    R"(
default: deny
rules:
  - name: reads
    match: { method: tools/call, name: "get_*" }
    action: allow
  - name: prompts
    match: { method: prompts/get }
    action: allow
)",
    // groups and subject, unless
    R"(
rules:
  - name: admin-only
    match: { method: tools/call, name: "admin_*" }
    unless: { groups: [admins] }
    action: deny
  - name: no-bob
    match: { subject: bob, name: "delete_*" }
    action: deny
)",
    // claims
    R"(
rules:
  - name: paid
    match: { method: tools/call, name: "premium_*", claims: { plan: "pro*" } }
    action: allow
  - name: premium
    match: { method: tools/call, name: "premium_*" }
    action: deny
)",
    // a param condition: allowed for some values only
    R"(
rules:
  - name: eu-denied
    match: { method: tools/call, name: execute_sql, params: { Region: "eu-*" } }
    action: deny
  - name: sql-needs-region
    match: { method: tools/call, name: execute_sql }
    unless: { params: { Region: "*" } }
    action: deny
)",
    // require: the param must equal the caller's claim
    R"(
default: deny
rules:
  - name: tenant-bound
    match: { method: tools/call, name: "tenant_*" }
    require: { param: Tenant, equals_claim: tenant }
  - name: rest
    match: { method: tools/call, name: "open_*" }
    action: allow
)",
    // resources by URI glob, everything else denied
    R"(
default: deny
rules:
  - name: public-docs
    match: { method: resources/read, name: "docs://public/*" }
    action: allow
)",
    // no rules at all, default allow
    R"(
rules: []
)",
};

}  // namespace

TEST_CASE("visibility: mayUse is true exactly when some call would be allowed", "[policy]") {
  const std::vector<Identity> callers{
      caller("", {}, {}),
      caller("alice", {"admins"}, {{"plan", "pro-yearly"}, {"tenant", "acme"}}),
      caller("bob", {"dev"}, {{"plan", "free"}}),
      caller("carol", {}, {{"tenant", "globex"}}),
  };
  const std::vector<std::pair<std::string_view, std::string_view>> calls{
      {"tools/call", "get_weather"},       {"tools/call", "set_weather"},
      {"tools/call", "admin_reset"},       {"tools/call", "delete_user"},
      {"tools/call", "premium_report"},    {"tools/call", "execute_sql"},
      {"tools/call", "tenant_billing"},    {"tools/call", "open_status"},
      {"prompts/get", "summarize"},        {"resources/read", "docs://public/readme"},
      {"resources/read", "docs://secret"},
  };
  for (const char* yaml : kPolicies) {
    auto p = load(yaml);
    for (const Identity& id : callers) {
      for (const auto& [method, name] : calls) {
        INFO(yaml << "caller '" << id.subject << "' " << method << " " << name);
        CHECK(p->mayUse(method, name, id) == someCallAllowed(*p, method, name, id));
      }
    }
  }
}

TEST_CASE("visibility: filter is on by default and only when something can be denied", "[policy]") {
  CHECK_FALSE(load("rules: []\n")->filtersLists());  // nothing can be hidden
  CHECK(load("default: deny\n")->filtersLists());
  CHECK(load("rules:\n  - name: d\n    match: { name: x }\n    action: deny\n")->filtersLists());
  CHECK(load("rules:\n  - name: r\n    match: { name: x }\n    require: { param: T, "
             "equals_claim: t }\n")
            ->filtersLists());
  auto all = load("visibility: all\ndefault: deny\n");
  CHECK_FALSE(all->filtersLists());
  CHECK_FALSE(all->visibilityFilter());
  std::vector<settings::Diagnostic> errors;
  CHECK(PolicySet::loadString("visibility: hidden\n", "/tmp/v.yaml", errors) == nullptr);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message.find("filter") != std::string::npos);
}

TEST_CASE("visibility: a param condition never hides a tool some values may use", "[policy]") {
  auto p = load(R"(
default: deny
rules:
  - name: us-only
    match: { method: tools/call, name: execute_sql, params: { Region: "us-*" } }
    action: allow
)");
  const Identity anyone = caller("x", {}, {});
  CHECK(p->mayUse("tools/call", "execute_sql", anyone));
  CHECK_FALSE(p->mayUse("tools/call", "drop_table", anyone));
  // A maybe-deny followed by a certain allow: visible.
  auto q = load(R"(
rules:
  - name: eu
    match: { name: sql, params: { Region: "eu-*" } }
    action: deny
  - name: rest
    match: { name: sql }
    action: deny
)");
  CHECK_FALSE(q->mayUse("tools/call", "sql", anyone));
  CHECK(q->mayUse("tools/call", "other", anyone));
}

}  // namespace gw::policy
