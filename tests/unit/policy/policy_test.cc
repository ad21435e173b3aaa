// Policy files: API keys, rule evaluation (order, unless, default, groups, claims,
// require / equals_claim, decoded names) and loader diagnostics with line:column.

#include <catch.hpp>

#include <string>

#include "gateway/policy/policy.h"
#include "tests/unit/policy/test_util.h"

namespace gw::policy {
namespace {

using test::AuthHeader;
using test::TempDir;

std::shared_ptr<const PolicySet> mustLoad(const std::string& yaml) {
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::loadString(yaml, "/tmp/policy-test.yaml", errors);
  for (const auto& e : errors) {
    UNSCOPED_INFO(e.str());
  }
  REQUIRE(errors.empty());
  REQUIRE(set != nullptr);
  return set;
}

std::vector<settings::Diagnostic> loadErrors(const std::string& yaml) {
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::loadString(yaml, "/tmp/policy-test.yaml", errors);
  CHECK(set == nullptr);
  return errors;
}

// A request: method, decoded name (with optional raw sentinel form) and params.
struct Req {
  mcp::McpHeaders h;
  explicit Req(std::string_view method, std::string_view name = {},
               std::vector<std::pair<std::string_view, std::string_view>> params = {},
               std::string_view raw_name = {}) {
    h.has_method = !method.empty();
    h.method = method;
    if (!name.empty()) {
      h.has_name = true;
      h.name.value = name;
      h.name.raw = raw_name.empty() ? name : raw_name;
      h.name.sentinel = !raw_name.empty();
    }
    for (auto& [k, v] : params) {
      h.params.push_back(mcp::McpParam{k, mcp::McpValue{v, v, false}});
    }
  }
  RequestView view() const { return RequestView{h.method, &h}; }
};

Identity user(std::string subject, std::vector<std::string> groups = {},
              std::vector<std::pair<std::string, std::string>> claims = {}) {
  Identity id;
  id.authenticated = true;
  id.subject = std::move(subject);
  id.groups = std::move(groups);
  id.claims = std::move(claims);
  return id;
}

// Placeholder digests: these cases only check refusals.
constexpr const char* kKeys = R"(
identity:
  api_keys:
    - subject: alice
      key_sha256: "6d16a0c7e3b3d5ea06f8d7a1e5e4a98bd3c1d4c2e5be7dd6d3faba6b1d0b5c0e"
      groups: [dev]
    - subject: bob
      key_sha256: "9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f9f"
      groups: [admin, ops]
      claims: { tenant: acme }
  anonymous: deny
)";

TEST_CASE("api keys: the right key authenticates, others do not") {
  auto set = mustLoad(kKeys);
  CHECK(set->requiresAuth());
  Identity id;
  const char* reason = "";

  SECTION("no header, anonymous deny") {
    std::vector<http::HeaderField> none;
    CHECK(set->authenticate(none, 0, id, &reason) == AuthResult::kMissing);
    CHECK_FALSE(id.authenticated);
  }
  SECTION("wrong key") {
    AuthHeader h("Bearer not-the-key");
    CHECK(set->authenticate(h.fields, 0, id, &reason) == AuthResult::kInvalid);
    CHECK(std::string(reason) == "unknown API key");
  }
  SECTION("not bearer") {
    AuthHeader h("Basic Ym9iOmtleQ==");
    CHECK(set->authenticate(h.fields, 0, id, &reason) == AuthResult::kUnsupported);
  }
  SECTION("two Authorization headers") {
    AuthHeader h("Bearer x");
    h.fields.push_back(h.fields[0]);
    CHECK(set->authenticate(h.fields, 0, id, &reason) == AuthResult::kMalformed);
  }
  SECTION("Bearer without a credential, in every case") {
    for (const char* v : {"Bearer", "bearer", "BEARER", "Bearer    "}) {
      AuthHeader h(v);
      CHECK(set->authenticate(h.fields, 0, id, &reason) == AuthResult::kMalformed);
      CHECK(std::string(reason) == "empty Bearer credential");
    }
  }
}

TEST_CASE("api keys: a configured key maps to subject, groups and claims") {
  TempDir dir;
  // The key is "abc": its SHA-256 is the FIPS 180-2 test vector (upper case hex accepted).
  std::string p = dir.write("k.yaml", R"(
identity:
  api_keys:
    - subject: other
      key_sha256: "0000000000000000000000000000000000000000000000000000000000000000"
    - subject: bob
      key_sha256: "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD"
      groups: [admin]
      claims: { tenant: acme }
)");
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::load({p}, errors);
  REQUIRE(set != nullptr);
  CHECK_FALSE(set->requiresAuth());
  Identity id;
  const char* reason = "";
  AuthHeader good("bearer abc");
  REQUIRE(set->authenticate(good.fields, 0, id, &reason) == AuthResult::kAuthenticated);
  CHECK(id.subject == "bob");
  CHECK(id.groups == std::vector<std::string>{"admin"});
  REQUIRE(id.claim("tenant") != nullptr);
  CHECK(*id.claim("tenant") == "acme");
  AuthHeader bad("Bearer abd");
  CHECK(set->authenticate(bad.fields, 0, id, &reason) == AuthResult::kInvalid);
  CHECK_FALSE(id.authenticated);
  CHECK(id.subject.empty());
  std::vector<http::HeaderField> none;
  CHECK(set->authenticate(none, 0, id, &reason) == AuthResult::kAnonymous);
  AuthHeader jwt_like("Bearer a.b.c");
  CHECK(set->authenticate(jwt_like.fields, 0, id, &reason) == AuthResult::kInvalid);
}

constexpr const char* kRules = R"(
rules:
  - name: block-deletes
    match: { method: tools/call, name: "delete_*" }
    unless: { groups: [admin] }
    action: deny
  - name: tenant-bound
    match: { method: tools/call, params: { Tenant: "*" } }
    require: { param: Tenant, equals_claim: tenant }
  - name: beta-only
    match: { method: tools/call, name: "beta_*" }
    unless: { claims: { plan: "beta-*" } }
    action: deny
  - name: no-bob
    match: { subject: "bob*" }
    action: deny
  - name: allow-tools
    match: { method: tools/call }
    action: allow
default: deny
)";

TEST_CASE("rules: first match wins, unless excludes, default decides the rest") {
  auto set = mustLoad(kRules);
  struct Case {
    const char* what;
    Req req;
    Identity id;
    bool allow;
    std::string_view rule;
  };
  const Case cases[] = {
      {"delete by dev", Req("tools/call", "delete_user"), user("alice", {"dev"}), false,
       "block-deletes"},
      {"delete by admin", Req("tools/call", "delete_user"), user("alice", {"dev", "admin"}), true,
       "allow-tools"},
      {"delete anonymous", Req("tools/call", "delete_user"), Identity{}, false, "block-deletes"},
      {"plain tool", Req("tools/call", "get_weather"), user("alice"), true, "allow-tools"},
      {"not a tool call", Req("resources/read"), user("alice"), false, "default"},
      {"subject glob", Req("tools/call", "get_weather"), user("bobby"), false, "no-bob"},
      {"beta without claim", Req("tools/call", "beta_x"), user("alice"), false, "beta-only"},
      {"beta with claim", Req("tools/call", "beta_x"), user("alice", {}, {{"plan", "beta-2"}}),
       true, "allow-tools"},
      {"beta with other claim", Req("tools/call", "beta_x"), user("alice", {}, {{"plan", "free"}}),
       false, "beta-only"},
      {"no method", Req(""), user("alice"), false, "default"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Decision d = set->decide(c.req.view(), c.id);
    CHECK(d.allow == c.allow);
    CHECK(d.rule == c.rule);
  }
}

TEST_CASE("rules: require equals_claim binds a param to the caller") {
  auto set = mustLoad(kRules);
  Identity acme = user("alice", {}, {{"tenant", "acme"}});
  Decision d = set->decide(Req("tools/call", "get", {{"tenant", "acme"}}).view(), acme);
  CHECK(d.allow);
  CHECK(d.rule == "tenant-bound");

  d = set->decide(Req("tools/call", "get", {{"Tenant", "globex"}}).view(), acme);
  CHECK_FALSE(d.allow);
  CHECK(d.rule == "tenant-bound");
  CHECK(std::string(d.reason) == "param does not equal the caller's claim");

  d = set->decide(Req("tools/call", "get", {{"Tenant", "acme"}}).view(), user("x"));
  CHECK_FALSE(d.allow);
  CHECK(std::string(d.reason) == "caller lacks the required claim");

  d = set->decide(Req("tools/call", "get", {{"Tenant", "acme"}}).view(), Identity{});
  CHECK_FALSE(d.allow);

  // The prefix "acme" of a longer value is not equal.
  d = set->decide(Req("tools/call", "get", {{"Tenant", "acme2"}}).view(), acme);
  CHECK_FALSE(d.allow);
}

TEST_CASE("rules: require with the param absent is refused") {
  auto set = mustLoad(R"(
rules:
  - name: bound
    match: { method: tools/call }
    require: { param: Tenant, equals_claim: tenant }
)");
  Identity acme = user("alice", {}, {{"tenant", "acme"}});
  Decision d = set->decide(Req("tools/call", "get").view(), acme);
  CHECK_FALSE(d.allow);
  CHECK(d.rule == "bound");
  CHECK(std::string(d.reason) == "required param is absent");
  CHECK(set->decide(Req("tools/list").view(), acme).allow);  // default allow
}

TEST_CASE("rules: names and params match on decoded sentinel values") {
  auto set = mustLoad(R"(
rules:
  - name: no-unicode-delete
    match: { name: "löschen_*", params: { Region: "eu-*" } }
    action: deny
)");
  Req sentinel("tools/call", "löschen_alles", {{"region", "eu-west"}},
               "=?base64?bMO2c2NoZW5fYWxsZXM=?=");
  Decision d = set->decide(sentinel.view(), Identity{});
  CHECK_FALSE(d.allow);
  CHECK(d.rule == "no-unicode-delete");
  // The raw sentinel text itself is not what is matched.
  Req raw_only("tools/call", "=?base64?bMO2c2NoZW5fYWxsZXM=?=", {{"Region", "eu-west"}});
  CHECK(set->decide(raw_only.view(), Identity{}).allow);
  // An absent param does not match even `*`-like globs.
  CHECK(set->decide(Req("tools/call", "löschen_x").view(), Identity{}).allow);
}

TEST_CASE("policy: no files is allow-all, anonymous") {
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::load({}, errors);
  REQUIRE(set != nullptr);
  CHECK_FALSE(set->requiresAuth());
  CHECK(set->decide(Req("tools/call", "x").view(), Identity{}).allow);
  AuthHeader h("Bearer whatever");
  Identity id;
  CHECK(set->authenticate(h.fields, 0, id, nullptr) == AuthResult::kAnonymous);
}

TEST_CASE("policy: several files merge in order") {
  TempDir dir;
  std::string a = dir.write("a.yaml", R"(
rules:
  - name: first
    match: { name: "x" }
    action: deny
default: deny
rate_limits:
  - name: one
    key: [subject]
    rate: 5/min
)");
  std::string b = dir.write("b.yaml", R"(
rules:
  - name: second
    match: { name: "y" }
    action: allow
default: allow
identity: { anonymous: deny, forward_credentials: true }
rate_limits:
  - name: two
    match: { params: { Region: "*" } }
    key: ["param:Region", "header:X-Tenant", client_ip]
    rate: 100/h
    burst: 7
    backend: redis
redis: { address: "127.0.0.1:6380", on_error: deny, timeout: 20ms }
)");
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::load({a, b}, errors);
  REQUIRE(errors.empty());
  REQUIRE(set != nullptr);
  REQUIRE(set->rules().size() == 2);
  CHECK(set->rules()[0].name == "first");
  CHECK(set->rules()[0].line == 3);
  CHECK(set->rules()[0].file == a);
  CHECK(set->defaultAllow());
  CHECK(set->requiresAuth());
  CHECK(set->forwardCredentials());
  REQUIRE(set->rateLimits().size() == 2);
  const RateLimitSpec& one = set->rateLimits()[0];
  CHECK(one.window_ms == 60000);
  CHECK(one.burst == 5);
  CHECK(one.rate_per_sec == Approx(5.0 / 60));
  CHECK(one.backend == RateLimitSpec::Backend::kLocal);
  const RateLimitSpec& two = set->rateLimits()[1];
  CHECK(two.rate_text == "100/h");
  CHECK(two.window_ms == 3600000);
  CHECK(two.burst == 7);
  CHECK(two.key == std::vector<std::string>{"param:Region", "header:X-Tenant", "client_ip"});
  CHECK(two.backend == RateLimitSpec::Backend::kRedis);
  CHECK(set->redis().present);
  CHECK(set->redis().port == 6380);
  CHECK(set->redis().on_error == RedisSettings::OnError::kDeny);
  CHECK(set->redis().timeout == std::chrono::milliseconds(20));
  CHECK_FALSE(set->decide(Req("tools/call", "x").view(), Identity{}).allow);
  CHECK(set->decide(Req("tools/call", "y").view(), Identity{}).allow);
}

TEST_CASE("loader: errors carry line and column") {
  struct Case {
    const char* what;
    const char* yaml;
    int line;
    int column;
    const char* fragment;
  };
  const Case cases[] = {
      {"unknown top key", "rulez: []\n", 1, 1, "unknown key 'rulez'"},
      {"unknown nested key", "rules:\n  - name: a\n    acton: deny\n", 3, 5,
       "unknown key 'rules[0].acton'"},
      {"unknown match key", "rules:\n  - name: a\n    match: { methd: x }\n    action: deny\n", 3,
       14, "unknown key"},
      {"bad rate", "rate_limits:\n  - name: r\n    key: [subject]\n    rate: 10/sec\n", 4, 11,
       "invalid rate '10/sec'"},
      {"zero rate", "rate_limits:\n  - name: r\n    key: [subject]\n    rate: 0/s\n", 4, 11,
       "invalid rate"},
      {"bad burst", "rate_limits:\n  - name: r\n    key: [subject]\n    rate: 1/s\n    burst: -1\n",
       5, 12, "positive integer"},
      {"bad key part", "rate_limits:\n  - name: r\n    key: [subject, tenant]\n    rate: 1/s\n", 3,
       20, "unknown key part 'tenant'"},
      {"redis backend without redis",
       "rate_limits:\n  - name: r\n    key: [subject]\n    rate: 1/s\n    backend: redis\n", 5, 14,
       "needs a 'redis' section"},
      {"bad action", "rules:\n  - name: a\n    action: block\n", 3, 13,
       "must be allow or deny, not 'block'"},
      {"bad default", "default: maybe\n", 1, 10, "allow or deny"},
      {"bad anonymous", "identity:\n  anonymous: yes\n", 2, 14, "allow or deny"},
      {"bad claim name",
       "rules:\n  - name: a\n    match: { claims: { \"ten ant\": x } }\n"
       "    action: deny\n",
       3, 24, "invalid claim names"},
      {"bad require claim",
       "rules:\n  - name: a\n    require: { param: Tenant, equals_claim: \"a b\" }\n", 3, 45,
       "invalid claim name"},
      {"require without claim", "rules:\n  - name: a\n    require: { param: Tenant }\n", 3, 5,
       "needs 'param' and 'equals_claim'"},
      {"rule without name", "rules:\n  - action: deny\n", 2, 5, "needs a 'name'"},
      {"rule without action", "rules:\n  - name: a\n", 2, 5, "needs 'action'"},
      {"duplicate rule name", "rules:\n  - {name: a, action: deny}\n  - {name: a, action: deny}\n",
       3, 12, "used twice"},
      {"bad key digest", "identity:\n  api_keys:\n    - subject: a\n      key_sha256: abc\n", 4, 19,
       "64 hex"},
      {"bad redis address", "redis: { address: nowhere }\n", 1, 19, "invalid address"},
      {"yaml syntax", "rules: [\n", 2, 1, ""},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    auto errors = loadErrors(c.yaml);
    REQUIRE(errors.size() >= 1);
    INFO(errors[0].str());
    CHECK(errors[0].file == "/tmp/policy-test.yaml");
    CHECK(errors[0].line == c.line);
    CHECK(errors[0].column == c.column);
    CHECK(errors[0].message.find(c.fragment) != std::string::npos);
  }
}

TEST_CASE("loader: unreadable files") {
  TempDir dir;
  std::string p = dir.write("p.yaml",
                            "identity:\n  jwt:\n    issuer: i\n    audiences: [a]\n"
                            "    keys_file: missing.json\n");
  std::vector<settings::Diagnostic> errors;
  CHECK(PolicySet::load({p}, errors) == nullptr);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].file == p);
  CHECK(errors[0].line == 5);
  CHECK(errors[0].column == 16);
  CHECK(errors[0].message.find("cannot read key file") != std::string::npos);
  CHECK(errors[0].message.find(dir.path() + "/missing.json") != std::string::npos);

  errors.clear();
  CHECK(PolicySet::load({dir.path() + "/nope.yaml"}, errors) == nullptr);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message == "cannot read policy file: No such file or directory");
}

TEST_CASE("loader: jwt may be set by one file only") {
  TempDir dir;
  dir.write("jwks.json",
            R"({"keys":[{"kty":"oct","k":"MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE"}]})");
  std::string jwt =
      "identity:\n  jwt:\n    issuer: i\n    audiences: [a]\n"
      "    keys_file: jwks.json\n";
  std::string a = dir.write("a.yaml", jwt);
  std::string b = dir.write("b.yaml", jwt);
  std::vector<settings::Diagnostic> errors;
  CHECK(PolicySet::load({a}, errors) != nullptr);
  CHECK(errors.empty());
  CHECK(PolicySet::load({a, b}, errors) == nullptr);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].file == b);
  CHECK(errors[0].line == 2);
}

TEST_CASE("loader: hermetic test load reads no keys_file") {
  // The fuzz targets' hook (tests/fuzz/policy_fuzz.cc): the key file exists and is valid, but
  // is not read while the hook is on.
  TempDir dir;
  dir.write("jwks.json",
            R"({"keys":[{"kty":"oct","k":"MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE"}]})");
  const std::string jwt =
      "identity:\n  jwt:\n    issuer: i\n    audiences: [a]\n"
      "    keys_file: jwks.json\n";
  const std::string file = dir.path() + "/p.yaml";
  std::vector<settings::Diagnostic> errors;
  settings::setHermeticLoadForTesting(true);
  auto set = PolicySet::loadString(jwt, file, errors);
  settings::setHermeticLoadForTesting(false);
  CHECK(set == nullptr);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].line == 5);
  CHECK(errors[0].message == "'identity.jwt.keys_file': key file not read (hermetic test load)");
  errors.clear();
  CHECK(PolicySet::loadString(jwt, file, errors) != nullptr);
  CHECK(errors.empty());
}

TEST_CASE("policy files in the repo load") {
  for (const char* f : {"/policies/default.yaml", "/policies/examples/strict.yaml"}) {
    INFO(f);
    std::vector<settings::Diagnostic> errors;
    auto set = PolicySet::load({std::string(GW_SOURCE_DIR) + f}, errors);
    for (const auto& e : errors) {
      UNSCOPED_INFO(e.str());
    }
    CHECK(errors.empty());
    CHECK(set != nullptr);
  }
  std::vector<settings::Diagnostic> errors;
  auto strict =
      PolicySet::load({std::string(GW_SOURCE_DIR) + "/policies/examples/strict.yaml"}, errors);
  REQUIRE(strict != nullptr);
  CHECK(strict->requiresAuth());
  Identity id;
  AuthHeader h("Bearer alice-example-key");
  REQUIRE(strict->authenticate(h.fields, 0, id, nullptr) == AuthResult::kAuthenticated);
  CHECK(id.subject == "alice");
  CHECK(strict->decide(Req("tools/call", "delete_all").view(), id).rule == "block-deletes");
  CHECK_FALSE(strict->decide(Req("tools/call", "x", {{"Tenant", "other"}}).view(), id).allow);
  CHECK(strict->decide(Req("tools/call", "x", {{"Tenant", "acme"}}).view(), id).allow);
  CHECK(strict->decide(Req("initialize").view(), id).allow);
}

}  // namespace
}  // namespace gw::policy
