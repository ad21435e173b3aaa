// filters/config_json: policy settings are shown in the words the YAML uses, every field a
// rate limit accepts is shown, and restart-only keys show what the process bound.

#include "gateway/filters/config_json.h"

#include <catch.hpp>
#include <string>
#include <vector>

#include "tests/unit/policy/test_util.h"

namespace {

std::string configFor(const std::string& policy, const gw::filters::Bound* bound = nullptr) {
  gw::policy::test::TempDir dir;
  std::string policy_path = dir.write("policy.yaml", policy);
  std::string path = dir.write("gateway.yaml",
                               "listen: 127.0.0.1:8080\n"
                               "upstreams:\n"
                               "  - name: backend\n"
                               "    endpoints: [127.0.0.1:9000]\n"
                               "routes:\n"
                               "  - name: default\n"
                               "    upstream: backend\n"
                               "policies: [" +
                                   policy_path + "]\n");
  std::vector<gw::settings::Diagnostic> errors;
  auto snap = gw::filters::Snapshot::load(path, nullptr, errors);
  for (const auto& e : errors) {
    UNSCOPED_INFO(e.str());
  }
  REQUIRE(snap);
  return gw::filters::configJson(*snap, bound);
}

bool has(const std::string& json, const std::string& part) {
  INFO(json);
  return json.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("config json: policy.anonymous is allow or deny, as written", "[config]") {
  CHECK(has(configFor("identity: { anonymous: allow }\n"), "\"anonymous\":\"allow\""));
  CHECK(has(configFor("identity:\n"
                      "  anonymous: deny\n"
                      "  api_keys:\n"
                      "    - subject: alice\n"
                      "      key_sha256: \"" +
                      std::string(64, 'a') + "\"\n"),
            "\"anonymous\":\"deny\""));
}

TEST_CASE("config json: rate limits show match, key, rate, burst and backend", "[config]") {
  std::string j = configFor(
      "rate_limits:\n"
      "  - name: per-tool\n"
      "    match: { method: tools/call, name: \"get_*\", params: { Region: \"eu-*\" },\n"
      "             subject: \"svc-*\", groups: [dev, ops], claims: { tier: gold } }\n"
      "    key: [subject, name]\n"
      "    rate: 10/min\n"
      "    burst: 25\n"
      "  - name: everyone\n"
      "    key: [client_ip]\n"
      "    rate: 5/s\n");
  CHECK(has(j,
            "{\"name\":\"per-tool\",\"match\":{\"method\":\"tools/call\",\"name\":\"get_*\","
            "\"params\":{\"Region\":\"eu-*\"},\"subject\":\"svc-*\",\"groups\":[\"dev\","
            "\"ops\"],\"claims\":{\"tier\":\"gold\"}},\"key\":[\"subject\",\"name\"],"
            "\"rate\":\"10/min\",\"burst\":25,\"backend\":\"local\""));
  // No burst in the YAML: the default (the rate's count) is what applies and is shown.
  CHECK(has(j,
            "{\"name\":\"everyone\",\"match\":{},\"key\":[\"client_ip\"],\"rate\":\"5/s\","
            "\"burst\":5,\"backend\":\"local\""));
}

TEST_CASE("config json: listen, workers and admin show what is bound, the file values are pending",
          "[config]") {
  // As written (the explain command binds nothing): no restart_pending.
  std::string plain = configFor("default: allow\n");
  CHECK(has(plain,
            "\"listen\":\"127.0.0.1:8080\",\"endpoint\":\"/mcp\",\"workers\":0,"
            "\"admin\":null,"));
  CHECK_FALSE(has(plain, "restart_pending"));

  gw::filters::Bound same{.listen = "127.0.0.1:8080", .workers = 0, .admin = std::nullopt};
  CHECK_FALSE(has(configFor("default: allow\n", &same), "restart_pending"));

  gw::filters::Bound other{.listen = "127.0.0.1:9000", .workers = 4, .admin = "127.0.0.1:9901"};
  CHECK(has(configFor("default: allow\n", &other),
            "\"listen\":\"127.0.0.1:9000\",\"endpoint\":\"/mcp\",\"workers\":4,"
            "\"admin\":\"127.0.0.1:9901\",\"restart_pending\":{\"listen\":\"127.0.0.1:8080\","
            "\"workers\":0,\"admin\":null},"));

  // A port started with TLS whose file dropped `tls`: it still speaks HTTPS until a restart.
  gw::filters::Bound was_tls{
      .listen = "127.0.0.1:8080", .workers = 0, .admin = std::nullopt, .tls = true};
  CHECK(has(configFor("default: allow\n", &was_tls),
            "\"admin\":null,\"restart_pending\":{\"tls\":false},\"tls\":null,"));
  CHECK(has(plain, "\"admin\":null,\"tls\":null,\"admin_auth\":null,"));

  // Listeners bound at start; a file that changed them waits for a restart.
  gw::filters::Bound bound_listeners{.listen = "127.0.0.1:8080",
                                     .workers = 0,
                                     .admin = std::nullopt,
                                     .tls = false,
                                     .listeners = {"127.0.0.1:8080"}};
  CHECK_FALSE(has(configFor("default: allow\n", &bound_listeners), "restart_pending"));
  bound_listeners.listeners = {"127.0.0.1:8080", "127.0.0.1:8443 (tls)"};
  CHECK(has(configFor("default: allow\n", &bound_listeners),
            "\"restart_pending\":{\"listeners\":[\"127.0.0.1:8080\"]}"));
}
