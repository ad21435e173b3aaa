// What tripped up a new user (issue 13 item 5), through the real mcp-gateway binary:
// credential forwarding without policy files (what the upstream gets, /config and /explain
// agree), a streamed answer whose final JSON-RPC response was delivered before the client
// closed (logged `complete`, not `client_closed`), the missing-version 400's data.supported,
// and the command line: --help/-h/help, and the messages for an unreadable config file and an
// unknown upstream name.

#include <catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

Response adminGet(uint16_t port, const std::string& target) {
  return fetch(port, "GET " + target + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n");
}

}  // namespace

// ---- 1. credentials without policy files -------------------------------------------------

TEST_CASE(
    "newuser: Authorization forwarding is what /config and /explain say, with and "
    "without policy files",
    "[newuser][credentials]") {
  struct Case {
    const char* what;
    bool policy_file;
    bool forwards;
    const char* source;
  };
  const Case cases[] = {
      {"no policy files: the gateway checks nothing, the upstream gets the credential", false, true,
       "no_policies"},
      {"a policy file: the credential stops at the gateway", true, false, "default"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    RawUpstream up(RawUpstream::respond(200, kOkBody));
    TempDir dir;
    uint16_t admin = freePort();
    GatewayConfig cfg;
    cfg.upstream_endpoints = {up.address()};
    cfg.extra_yaml = "admin: 127.0.0.1:" + std::to_string(admin) + "\n";
    if (c.policy_file) {
      std::string pol = dir.file("policy.yaml");
      REQUIRE(writeFile(pol, "default: allow\n"));
      cfg.extra_yaml += "policies: [" + pol + "]\n";
    }
    Gateway gw(cfg);
    REQUIRE(waitFor([&] { return canConnect(admin); }, Ms(3000)));

    // What really happens.
    Response r = fetch(gw.port(), mcpPost(toolsCallBody(), "Authorization: Bearer tok-123\r\n"));
    CHECK(r.status == 200);
    REQUIRE(up.waitForRequests(1, Ms(2000)));
    CHECK(up.requests()[0].hasHeader("Authorization") == c.forwards);
    if (c.forwards) {
      CHECK(up.requests()[0].header("Authorization").value_or("") == "Bearer tok-123");
    }

    const std::string want = std::string("\"forward_credentials\":") +
                             (c.forwards ? "true" : "false") +
                             ",\"forward_credentials_source\":\"" + c.source + "\"";
    // /config: the route's entry shows the value that applies and why.
    Response cfg_json = adminGet(admin, "/config");
    INFO(cfg_json.body);
    CHECK(cfg_json.status == 200);
    CHECK(cfg_json.body.find(want) != std::string::npos);
    // /explain: the same request, the same decision.
    Response ex = adminGet(admin, "/explain?method=tools/call&name=echo&token=tok-123");
    INFO(ex.body);
    CHECK(ex.status == 200);
    CHECK(ex.body.find(want) != std::string::npos);
  }
}
