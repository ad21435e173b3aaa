// mode: audit (issue #16) — an audit-mode rule is decided and recorded but never enforced:
// decide() gives exactly the decision of the same policy with the audit rules deleted, and
// lists (in order) each audit rule that matched before the deciding rule with what it would
// have decided. mayUse() and the "can anything be denied" test ignore audit rules too.

#include <catch.hpp>

#include <string>
#include <vector>

#include "gateway/policy/policy.h"

namespace gw::policy {
namespace {

std::shared_ptr<const PolicySet> load(const std::string& yaml) {
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::loadString(yaml, "/tmp/audit-test.yaml", errors);
  for (const auto& e : errors) {
    UNSCOPED_INFO(e.str());
  }
  REQUIRE(errors.empty());
  REQUIRE(set != nullptr);
  return set;
}

std::vector<settings::Diagnostic> loadErrors(const std::string& yaml) {
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::loadString(yaml, "/tmp/audit-test.yaml", errors);
  CHECK(set == nullptr);
  return errors;
}

struct Call {
  mcp::McpHeaders h;
  Call(std::string_view method, std::string_view name, std::string_view tenant = {}) {
    h.has_method = true;
    h.method = method;
    if (!name.empty()) {
      h.has_name = true;
      h.name.value = name;
      h.name.raw = name;
    }
    if (!tenant.empty()) {
      h.params.push_back(mcp::McpParam{"Tenant", mcp::McpValue{tenant, tenant, false}});
    }
  }
  RequestView view() const { return RequestView{h.method, &h}; }
};

Identity caller(std::string subject, std::vector<std::string> groups = {},
                std::vector<std::pair<std::string, std::string>> claims = {}) {
  Identity id;
  id.authenticated = !subject.empty();
  id.subject = std::move(subject);
  id.groups = std::move(groups);
  id.claims = std::move(claims);
  return id;
}

// The same rules three times: audit rules at the front, between the enforced ones and at the
// end. `kEnforcedOnly` is the policy with every audit rule deleted.
constexpr const char* kEnforcedOnly = R"(
rules:
  - name: admins
    match: { groups: [admin] }
    action: allow
  - name: no-delete
    match: { method: tools/call, name: "delete_*" }
    action: deny
  - name: tools
    match: { method: tools/call }
    action: allow
default: deny
)";

constexpr const char* kAudit = R"(
rules:
  - name: audit-no-write
    mode: audit
    match: { method: tools/call, name: "write_*" }
    action: deny
  - name: admins
    match: { groups: [admin] }
    action: allow
  - name: audit-tenant
    mode: audit
    match: { method: tools/call }
    require: { param: Tenant, equals_claim: tenant }
  - name: no-delete
    match: { method: tools/call, name: "delete_*" }
    action: deny
  - name: audit-allow-delete
    mode: audit
    match: { method: tools/call, name: "delete_*" }
    action: allow
  - name: tools
    mode: enforce
    match: { method: tools/call }
    action: allow
  - name: audit-lists
    mode: audit
    match: { method: "*/list" }
    action: deny
default: deny
)";

TEST_CASE("audit: decide() is exactly the policy without its audit rules", "[policy][audit]") {
  auto audit = load(kAudit);
  auto plain = load(kEnforcedOnly);
  const std::vector<Identity> callers{caller(""), caller("alice", {"dev"}, {{"tenant", "acme"}}),
                                      caller("root", {"admin"})};
  const std::vector<std::pair<std::string_view, std::string_view>> calls{
      {"tools/call", "write_file"}, {"tools/call", "delete_user"}, {"tools/call", "get_weather"},
      {"tools/list", ""},           {"prompts/get", "p"},          {"resources/read", ""}};
  const std::vector<std::string_view> tenants{"", "acme", "globex"};
  size_t recorded = 0;
  for (const Identity& id : callers) {
    for (const auto& [method, name] : calls) {
      for (std::string_view tenant : tenants) {
        INFO(id.subject << " " << method << " " << name << " tenant=" << tenant);
        Call c(method, name, tenant);
        std::vector<Verdict> verdicts;
        const Decision a = audit->decide(c.view(), id, &verdicts);
        const Decision p = plain->decide(c.view(), id);
        CHECK(a.allow == p.allow);
        CHECK(std::string_view(a.rule) == std::string_view(p.rule));
        CHECK(std::string_view(a.reason) == std::string_view(p.reason));
        // The same decision without asking for the audit list.
        CHECK(audit->decide(c.view(), id).allow == a.allow);
        for (const Verdict& v : verdicts) {
          CHECK(v.audit);
          CHECK_FALSE(v.limit);
          CHECK(v.name.substr(0, 6) == "audit-");
        }
        recorded += verdicts.size();
      }
    }
  }
  CHECK(recorded > 0);
}

TEST_CASE("audit: each audit rule reached before the deciding rule is recorded, in order",
          "[policy][audit]") {
  auto set = load(kAudit);
  struct Case {
    const char* what;
    Call call;
    Identity id;
    bool allow;
    std::string_view rule;
    // name:allow|deny of every recorded audit verdict, in order
    std::vector<std::string> audit;
  };
  const Identity acme = caller("alice", {"dev"}, {{"tenant", "acme"}});
  const Identity root = caller("root", {"admin"});
  const Case cases[] = {
      {"audit rule at the front, then an enforced rule allows",
       Call("tools/call", "write_x"),
       root,
       true,
       "admins",
       {"audit-no-write:deny"}},
      {"admins decide first: later audit rules are not reached",
       Call("tools/call", "get"),
       root,
       true,
       "admins",
       {}},
      {"require in audit: param absent",
       Call("tools/call", "get"),
       acme,
       true,
       "tools",
       {"audit-tenant:deny"}},
      {"require in audit: param equals the claim",
       Call("tools/call", "get", "acme"),
       acme,
       true,
       "tools",
       {"audit-tenant:allow"}},
      {"require in audit: wrong tenant",
       Call("tools/call", "get", "globex"),
       acme,
       true,
       "tools",
       {"audit-tenant:deny"}},
      {"two audit rules then an enforced deny",
       Call("tools/call", "write_x", "acme"),
       acme,
       true,
       "tools",
       {"audit-no-write:deny", "audit-tenant:allow"}},
      {"an enforced deny stops before the audit allow",
       Call("tools/call", "delete_u", "acme"),
       acme,
       false,
       "no-delete",
       {"audit-tenant:allow"}},
      {"audit rule after every enforced rule, before default",
       Call("tools/list", ""),
       acme,
       false,
       "default",
       {"audit-lists:deny"}},
      {"nothing audit matches", Call("prompts/get", "p"), acme, false, "default", {}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::vector<Verdict> verdicts;
    const Decision d = set->decide(c.call.view(), c.id, &verdicts);
    CHECK(d.allow == c.allow);
    CHECK(std::string_view(d.rule) == c.rule);
    std::vector<std::string> got;
    for (const Verdict& v : verdicts) {
      got.push_back(std::string(v.name) + (v.allow ? ":allow" : ":deny"));
      CHECK(*v.reason != '\0');
    }
    CHECK(got == c.audit);
  }
}

TEST_CASE("audit: mayUse and visibility ignore audit rules", "[policy][audit]") {
  // Only audit rules: nothing can be denied, so lists are not filtered at all.
  auto only_audit = load(R"(
rules:
  - name: audit-deny-all
    mode: audit
    match: { method: "*" }
    action: deny
)");
  CHECK(only_audit->hasAudit());
  CHECK_FALSE(only_audit->filtersLists());
  CHECK(only_audit->mayUse("tools/call", "anything", caller("")));
  CHECK(only_audit->decide(Call("tools/call", "x").view(), caller("")).allow);

  // An audit deny in front of an enforced allow does not hide the tool; an audit allow in
  // front of an enforced deny does not show it.
  auto mixed = load(R"(
rules:
  - name: audit-hide
    mode: audit
    match: { method: tools/call, name: "a_*" }
    action: deny
  - name: audit-show
    mode: audit
    match: { method: tools/call, name: "b_*" }
    action: allow
  - name: deny-b
    match: { method: tools/call, name: "b_*" }
    action: deny
)");
  CHECK(mixed->filtersLists());
  CHECK(mixed->mayUse("tools/call", "a_tool", caller("")));
  CHECK_FALSE(mixed->mayUse("tools/call", "b_tool", caller("")));
  CHECK(mixed->mayUse("tools/call", "c_tool", caller("")));

  auto none = load("rules:\n  - {name: r, action: deny}\n");
  CHECK_FALSE(none->hasAudit());
}

TEST_CASE("audit: rate limits take mode too", "[policy][audit]") {
  auto set = load(R"(
rate_limits:
  - name: enforced
    key: [subject]
    rate: 10/s
  - name: shadow
    mode: audit
    key: [subject]
    rate: 1/s
  - name: explicit
    mode: enforce
    key: [subject]
    rate: 5/s
)");
  REQUIRE(set->rateLimits().size() == 3);
  CHECK_FALSE(set->rateLimits()[0].audit);
  CHECK(set->rateLimits()[1].audit);
  CHECK_FALSE(set->rateLimits()[2].audit);
  CHECK(set->hasAudit());
  CHECK_FALSE(set->filtersLists());  // limits are not rules
}

TEST_CASE("audit: a bad mode is a load error at its value", "[policy][audit]") {
  struct Case {
    const char* what;
    const char* yaml;
    int line;
    int column;
  };
  const Case cases[] = {
      {"rule mode typo", "rules:\n  - name: a\n    action: deny\n    mode: audits\n", 4, 11},
      {"rule mode upper case", "rules:\n  - name: a\n    action: deny\n    mode: Audit\n", 4, 11},
      {"rule mode empty", "rules:\n  - name: a\n    action: deny\n    mode: \"\"\n", 4, 11},
      {"rule mode list", "rules:\n  - name: a\n    action: deny\n    mode: [audit]\n", 4, 11},
      {"limit mode",
       "rate_limits:\n  - name: r\n    key: [subject]\n    rate: 1/s\n    mode: dry\n", 5, 11},
      {"limit mode bool",
       "rate_limits:\n  - name: r\n    key: [subject]\n    rate: 1/s\n"
       "    mode: true\n",
       5, 11},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto errors = loadErrors(c.yaml);
    REQUIRE_FALSE(errors.empty());
    INFO(errors[0].str());
    CHECK(errors[0].line == c.line);
    CHECK(errors[0].column == c.column);
    CHECK(errors[0].message.find("enforce or audit") != std::string::npos);
  }
  // A typo'd key gets its hint.
  auto errors = loadErrors("rules:\n  - name: a\n    action: deny\n    mdoe: audit\n");
  REQUIRE_FALSE(errors.empty());
  CHECK(errors[0].message.find("mode") != std::string::npos);
}

}  // namespace
}  // namespace gw::policy
