// filters/credentialForwarding: one rule for whether `Authorization` goes upstream, and the
// two views of it — /config (per route: the value that applies and its source) and /explain —
// say what the identity stage decides, in every combination of policy files, the policy's
// `identity.forward_credentials` and the route's `forward_credentials` (RFC 9110 §11.6.2:
// Authorization is the client's credential for the server it names; a gateway that checks it
// keeps it unless told otherwise).

#include <catch.hpp>
#include <string>
#include <vector>

#include "gateway/filters/config_json.h"
#include "gateway/filters/explain.h"
#include "gateway/filters/pipeline.h"
#include "tests/unit/policy/test_util.h"

namespace {

struct Case {
  const char* what;
  bool policy_file;      // policies: [file]
  bool policy_forwards;  // identity.forward_credentials: true in that file
  bool route_forwards;   // the route's forward_credentials: true
  bool forward;          // expected
  const char* source;    // expected
};

const Case kCases[] = {
    {"no policy files: nothing checks credentials, so they pass", false, false, false, true,
     "no_policies"},
    {"no policy files, the route also says so: the route is the reason", false, false, true, true,
     "route"},
    {"a policy file: credentials stop at the gateway", true, false, false, false, "default"},
    {"a policy file that forwards", true, true, false, true, "policy"},
    {"a policy file, the route forwards", true, false, true, true, "route"},
    {"both forward: the route is named first", true, true, true, true, "route"},
};

std::shared_ptr<const gw::filters::Snapshot> load(const gw::policy::test::TempDir& dir,
                                                  const Case& c) {
  std::string policies;
  if (c.policy_file) {
    std::string text = "default: allow\n";
    if (c.policy_forwards) {
      text += "identity: { forward_credentials: true }\n";
    }
    policies = "policies: [" + dir.write("policy.yaml", text) + "]\n";
  }
  std::string path = dir.write(
      "gateway.yaml",
      "listen: 127.0.0.1:8080\n"
      "upstreams:\n"
      "  - name: backend\n"
      "    endpoints: [127.0.0.1:9000]\n"
      "routes:\n"
      "  - name: default\n"
      "    upstream: backend\n" +
          std::string(c.route_forwards ? "    forward_credentials: true\n" : "") + policies);
  std::vector<gw::settings::Diagnostic> errors;
  auto snap = gw::filters::Snapshot::load(path, nullptr, errors);
  for (const auto& e : errors) {
    UNSCOPED_INFO(e.str());
  }
  REQUIRE(snap);
  return snap;
}

bool has(const std::string& json, const std::string& part) {
  INFO(json);
  return json.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("credentials: the identity stage, /config and /explain agree on forwarding",
          "[config][explain][credentials]") {
  for (const Case& c : kCases) {
    INFO(c.what);
    gw::policy::test::TempDir dir;
    auto snap = load(dir, c);
    REQUIRE(snap->settings->routes.size() == 1);

    gw::filters::CredentialForwarding fc = gw::filters::credentialForwarding(
        snap->settings->routes[0], *snap->policy, *snap->settings);
    CHECK(fc.forward == c.forward);
    CHECK(std::string(fc.source) == c.source);

    // /config: the route shows what applies, and why.
    const std::string want = std::string("\"forward_credentials\":") +
                             (c.forward ? "true" : "false") + ",\"forward_credentials_source\":\"" +
                             c.source + "\"";
    CHECK(has(gw::filters::configJson(*snap, nullptr), want));

    // /explain runs the real stages: its answer is the identity stage's decision.
    gw::filters::ExplainInput in;
    in.method = "tools/call";
    in.name = "echo";
    in.headers.emplace_back("Authorization", "Bearer some-token");
    auto answer = gw::filters::explain(*snap, in, nullptr);
    REQUIRE(answer);
    CHECK(has(*answer, "\"decision\":\"forward\""));
    CHECK(has(*answer, want));
  }
}

TEST_CASE("credentials: a request refused before routing shows no forwarding source",
          "[explain][credentials]") {
  gw::policy::test::TempDir dir;
  auto snap = load(dir, kCases[0]);
  gw::filters::ExplainInput in;
  in.method = "tools/call";
  in.name = "echo";
  in.headers.emplace_back("Origin", "http://evil.example");  // refused before the route stage
  auto answer = gw::filters::explain(*snap, in, nullptr);
  REQUIRE(answer);
  CHECK(has(*answer, "\"decision\":\"reject\""));
  CHECK(has(*answer, "\"forward_credentials\":false,\"forward_credentials_source\":null"));
}
