// upstreams[].headers on the real mcp-gateway binary (issue 17, part 2): raw upstreams record
// each request head; the configured fields arrive (with ${VAR} expanded from the gateway's
// environment, $$ as '$'), the client's fields of the same names do not (Authorization
// forwarded under "no policies" included), on plain routes and on every request of a
// federated fan-out; an upstream without `headers` gets the client's fields untouched. An
// unset variable stops the load, naming it and its place. Everything on 127.0.0.1, ports and
// the token chosen at run time.

#include <catch.hpp>
#include <random>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kListBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"tools":[]}})";

std::string randomToken() {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (int i = 0; i < 24; ++i) {
    out += kHex[rd() & 0xf];
  }
  return out;
}

constexpr char kYaml[] = R"(listen: "127.0.0.1:${PORT}"
admin: "127.0.0.1:${ADMIN}"
workers: 1
upstreams:
  - name: remote
    endpoints: ["${REMOTE}"]
    headers:
      Authorization: "Bearer ${GW_ITEST_REMOTE_TOKEN}"
      X-Tenant: "acme-${GW_ITEST_TENANT}"
      X-Price: "$$5"
  - name: other
    endpoints: ["${OTHER}"]
routes:
  - name: fed
    match: { method: tools/list }
    upstreams: [remote, other]
  - name: to-other
    match: { method: tools/call, name: "other_*" }
    upstream: other
  - name: default
    upstream: remote
access_log: { path: "${ACCESS_LOG}" }
)";

// The client's own fields, some of which remote's `headers` replace.
constexpr char kClientFields[] =
    "Authorization: Bearer client-token\r\n"
    "x-tenant: client-tenant\r\n"
    "X-Keep: kept\r\n";

std::string listRequest() {
  const std::string body = R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{)"
                           R"("io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                           R"("io.modelcontextprotocol/clientCapabilities":{}}}})";
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\n"
         "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n" +
         std::string(kClientFields) + "Content-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

void checkConfigured(const RecordedRequest& r, const std::string& token) {
  INFO(r.head);
  CHECK(r.headerValues("Authorization") == std::vector<std::string>{"Bearer " + token});
  CHECK(r.headerValues("X-Tenant") == std::vector<std::string>{"acme-eu"});
  CHECK(r.headerValues("X-Price") == std::vector<std::string>{"$5"});
  CHECK(r.header("X-Keep") == "kept");
  CHECK(r.head.find("client-token") == std::string::npos);
  CHECK(r.head.find("client-tenant") == std::string::npos);
}

void checkUntouched(const RecordedRequest& r) {
  INFO(r.head);
  CHECK(r.headerValues("Authorization") == std::vector<std::string>{"Bearer client-token"});
  CHECK(r.headerValues("X-Tenant") == std::vector<std::string>{"client-tenant"});
  CHECK_FALSE(r.hasHeader("X-Price"));
  CHECK(r.header("X-Keep") == "kept");
}

}  // namespace

TEST_CASE("upstream headers: set on every request to that upstream, and only there",
          "[upstream][headers]") {
  const std::string token = randomToken();
  RawUpstream remote{RawUpstream::respond(200, kListBody)};
  RawUpstream other{RawUpstream::respond(200, kListBody)};
  Gateway gw(kYaml, {{"ADMIN", "0"}, {"REMOTE", remote.address()}, {"OTHER", other.address()}},
             {"GW_ITEST_REMOTE_TOKEN=" + token, "GW_ITEST_TENANT=eu"});
  const uint16_t admin = gw.adminPort();

  // A plain route to each upstream.
  REQUIRE(fetch(gw.port(), mcpPost(toolsCallBody("echo"), kClientFields, "echo")).status == 200);
  REQUIRE(remote.waitForRequests(1, Ms(5000)));
  checkConfigured(remote.requests().at(0), token);
  REQUIRE(fetch(gw.port(), mcpPost(toolsCallBody("other_x"), kClientFields, "other_x")).status ==
          200);
  REQUIRE(other.waitForRequests(1, Ms(5000)));
  checkUntouched(other.requests().at(0));

  // A federated fan-out: one request to each upstream, each with its own fields.
  Response list = fetch(gw.port(), listRequest());
  INFO(list.body);
  CHECK(list.status == 200);
  REQUIRE(remote.waitForRequests(2, Ms(5000)));
  REQUIRE(other.waitForRequests(2, Ms(5000)));
  const RecordedRequest fan_remote = remote.requests().at(1);
  CHECK(fan_remote.header("Mcp-Method") == "tools/list");
  checkConfigured(fan_remote, token);
  const RecordedRequest fan_other = other.requests().at(1);
  CHECK(fan_other.header("Mcp-Method") == "tools/list");
  checkUntouched(fan_other);

  // /config names the fields and hides the values; no log line holds the token.
  Response cfg = fetch(admin, "GET /config HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n");
  CHECK(cfg.body.find(R"("headers":{"Authorization":"<redacted>","X-Tenant":"<redacted>",)"
                      R"("X-Price":"<redacted>"})") != std::string::npos);
  CHECK(cfg.body.find(token) == std::string::npos);
  const std::string logs =
      gw.process().stdoutText() + gw.process().stderrText() + readFile(gw.accessLogPath());
  CHECK(logs.find(token) == std::string::npos);
}

TEST_CASE("upstream headers: an unset variable stops the load, naming it and where",
          "[upstream][headers]") {
  TempDir dir;
  RawUpstream remote{RawUpstream::respond(200, kListBody)};
  const std::string yaml =
      "listen: 127.0.0.1:1\n"
      "upstreams:\n"
      "  - name: remote\n"
      "    endpoints: [\"" +
      remote.address() +
      "\"]\n"
      "    headers:\n"
      "      Authorization: \"Bearer ${GW_ITEST_NEVER_SET_TOKEN}\"\n"
      "routes:\n"
      "  - name: default\n"
      "    upstream: remote\n";
  REQUIRE(writeFile(dir.file("gw.yaml"), yaml));
  for (const char* cmd : {"check", "run"}) {
    INFO(cmd);
    Process p({GW_BINARY, cmd, "-c", dir.file("gw.yaml")}, dir.path(), cmd);
    CHECK(p.wait(Ms(5000)) == 1);
    CHECK(p.stderrText().find("gw.yaml:6:22: 'upstreams[0].headers.Authorization': environment "
                              "variable 'GW_ITEST_NEVER_SET_TOKEN' is not set") !=
          std::string::npos);
  }
  // Set, it loads (`check` never prints the value).
  Process ok({GW_BINARY, "check", "-c", dir.file("gw.yaml")}, dir.path(), "ok",
             {"GW_ITEST_NEVER_SET_TOKEN=value-of-the-token"});
  CHECK(ok.wait(Ms(5000)) == 0);
  CHECK(ok.stdoutText().find("value-of-the-token") == std::string::npos);
  CHECK(remote.requestCount() == 0);
}
