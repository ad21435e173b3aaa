// The era bridge on plain routes (issue #26): a 2026-07-28 client (the SDK v2 client pinned
// to 2026-07-28) reaches a 2025-only server — @modelcontextprotocol/server-everything, and
// tests/fixtures/mcp-server.mjs with MCP_LEGACY=only — through a plain route whose upstream
// is `era: auto` or `era: legacy`: the gateway initializes the server, answers
// server/discover from its initialize result and carries the client's requests in its
// session. Rules and limits hold as for a modern upstream; a restarted server (its session
// lost) is initialized again without the client seeing it; `era: modern` on a 2025 server
// fails at the client's first request.

#include <catch.hpp>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "tests/integration/era_fixtures.h"
#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

// dir/policy.yaml (its path returned): anonymous callers, tools/call of `deny` denied, of
// `limited` limited to 2/min.
std::string writePolicy(const TempDir& dir, const std::string& deny, const std::string& limited) {
  const std::string policy = dir.file("policy.yaml");
  std::ofstream(policy) << "identity:\n  anonymous: allow\n"
                           "visibility: all\n"
                           "rules:\n"
                           "  - name: deny-one\n"
                           "    match: { method: tools/call, name: \""
                        << deny
                        << "\" }\n"
                           "    action: deny\n"
                           "default: allow\n"
                           "rate_limits:\n"
                           "  - name: echo-2-per-min\n"
                           "    match: { method: tools/call, name: \""
                        << limited
                        << "\" }\n"
                           "    key: [name]\n"
                           "    rate: 2/min\n"
                           "    burst: 2\n";
  return policy;
}

// One plain route to one upstream of the given era; a deny rule and a 2/min limit on echo.
std::string gatewayYaml(const TempDir& dir, const std::string& deny) {
  const std::string policy = writePolicy(dir, deny, "echo");
  return "listen: \"127.0.0.1:${PORT}\"\n"
         "workers: 1\n"
         "upstreams:\n"
         "  - name: up\n"
         "    endpoints: [\"${EP}\"]\n"
         "    era: ${ERA}\n"
         "    connect_timeout: 2s\n"
         "    response_timeout: 10s\n"
         "routes:\n"
         "  - name: default\n"
         "    upstream: up\n"
         "policies: [\"" +
         policy +
         "\"]\n"
         "access_log: { path: \"${ACCESS_LOG}\" }\n";
}

// The SDK v2 client (`mode`: pin — 2026-07-28 —, legacy or auto), scenario `bridge`, with
// these tools/call steps.
Ran runClient(const TempDir& dir, uint16_t port, const std::string& steps, const std::string& name,
              const std::string& mode = "pin") {
  return run(dir,
             sdkArgv(dir, "http://127.0.0.1:" + std::to_string(port) + "/mcp", mode, "bridge", "",
                     {"MCP_STEPS=" + steps}),
             name);
}

std::string token(const std::string& json, std::string_view key) {
  return jsonToken(json, key).value_or("<absent>");
}

// Node 22 and server-everything (this file runs no Inspector).
void requireBridgeFixtures() {
  requireFiles({kNode22, kEverything});
}

const std::string kFixtureSteps =
    R"([{"name":"weather_get","arguments":{"city":"Paris"}},)"
    R"({"name":"delete_everything","arguments":{}},)"
    R"({"name":"echo","arguments":{"message":"a"}},{"name":"echo","arguments":{"message":"b"}},)"
    R"({"name":"echo","arguments":{"message":"c"}}])";

}  // namespace

TEST_CASE("bridge: a 2026 client uses server-everything (2025 only) through a plain route",
          "[bridge][legacy][slow]") {
  requireBridgeFixtures();
  const std::string era = GENERATE(std::string("auto"), std::string("legacy"));
  INFO("era: " << era);
  TempDir dir;
  EverythingServer server(dir);
  Gateway gw(gatewayYaml(dir, "get-env"), {{"EP", server.endpoint()}, {"ERA", era}});

  const std::string steps =
      R"([{"name":"get-sum","arguments":{"a":1,"b":2}},{"name":"get-env","arguments":{}},)"
      R"({"name":"echo","arguments":{"message":"a"}},{"name":"echo","arguments":{"message":"b"}},)"
      R"({"name":"echo","arguments":{"message":"c"}}])";
  Ran r = runClient(dir, gw.port(), steps, "client-" + era);
  INFO("client: " << r.out << r.err << "\ngateway:\n" << gw.process().stderrText());
  REQUIRE(r.code == 0);
  CHECK(token(r.out, "era") == "\"modern\"");
  CHECK(token(r.out, "version") == "\"2026-07-28\"");
  CHECK(token(r.out, "session") == "null");  // a 2026 client holds no session
  CHECK(token(r.out, "server") != "null");   // serverInfo from the initialize result
  CHECK(r.out.find("\"tools\"") != std::string::npos);
  CHECK(token(r.out, "summary") == "\"ok|403/-31004|ok|ok|429/-31005\"");
  CHECK(token(r.out, "prompt") != "null");
  CHECK(token(r.out, "resource") != "null");
}

TEST_CASE("bridge: the fixture server in 2025-only mode, and its restart", "[bridge][legacy]") {
  requireBridgeFixtures();
  const std::string era = GENERATE(std::string("auto"), std::string("legacy"));
  INFO("era: " << era);
  TempDir dir;
  auto server = std::make_unique<FixtureServer>(dir, "server-1", "only");
  const uint16_t port = server->port();
  Gateway gw(gatewayYaml(dir, "delete_*"), {{"EP", server->endpoint()}, {"ERA", era}});

  Ran r = runClient(dir, gw.port(), kFixtureSteps, "client-1");
  INFO("client: " << r.out << r.err << "\ngateway:\n" << gw.process().stderrText());
  REQUIRE(r.code == 0);
  CHECK(token(r.out, "era") == "\"modern\"");
  CHECK(token(r.out, "server") == "\"fixture-server\"");
  CHECK(token(r.out, "summary") == "\"ok|403/-31004|ok|ok|429/-31005\"");
  CHECK(token(r.out, "prompt") == "\"Hello, x\"");
  CHECK(token(r.out, "resource") == "\"fixture readme\"");
  // The server's progress notifications reach the client; its elicitation (a
  // server-to-client request) is refused at once: the gateway's session declared none.
  CHECK(token(r.out, "progress") == "3");
  CHECK(token(r.out, "confirm") == "\"tool_error\"");
  // One session for the whole client run (and every tool call ran in it); the denied and
  // the limited calls never reached the server.
  const std::string traces = server->process().stderrText();
  INFO("server: " << traces);
  CHECK(countOf(traces, "SESSION_NEW ") == 1);
  CHECK(countOf(traces, "TOOL weather_get") == 1);
  CHECK(countOf(traces, "TOOL delete_everything") == 0);
  CHECK(countOf(traces, "TOOL echo") == 2);
  CHECK(countOf(traces, "TOOL weather_get -") == 0);

  // The server restarts on the same port: the gateway's session is gone; the next client
  // sees nothing of it (the 404 is answered by a new session and the request sent again).
  server->process().terminate();
  server.reset();
  server = std::make_unique<FixtureServer>(dir, "server-2", "only", "", port);
  Ran again = runClient(dir, gw.port(), R"([{"name":"weather_get","arguments":{"city":"Oslo"}}])",
                        "client-2");
  INFO("client after restart: " << again.out << again.err << "\ngateway:\n"
                                << gw.process().stderrText());
  REQUIRE(again.code == 0);
  CHECK(token(again.out, "summary") == "\"ok\"");
  const std::string traces2 = server->process().stderrText();
  INFO("server 2: " << traces2);
  CHECK(countOf(traces2, "SESSION_NEW ") == 1);
  CHECK(countOf(traces2, "TOOL weather_get") == 1);
}

TEST_CASE("bridge: era auto finds a 2026 server modern and opens no session", "[bridge]") {
  requireBridgeFixtures();
  TempDir dir;
  FixtureServer server(dir, "server", "sessions");
  Gateway gw(gatewayYaml(dir, "delete_*"), {{"EP", server.endpoint()}, {"ERA", "auto"}});
  Ran r = runClient(dir, gw.port(), kFixtureSteps, "client");
  INFO("client: " << r.out << r.err << "\ngateway:\n" << gw.process().stderrText());
  REQUIRE(r.code == 0);
  CHECK(token(r.out, "summary") == "\"ok|403/-31004|ok|ok|429/-31005\"");
  const std::string traces = server.process().stderrText();
  INFO("server: " << traces);
  CHECK(countOf(traces, "SESSION_NEW ") == 0);  // served as 2026-07-28, statelessly
  CHECK(countOf(traces, "TOOL weather_get -") == 1);
}

TEST_CASE("bridge: era modern on a 2025-only server fails at the client's first request",
          "[bridge]") {
  requireBridgeFixtures();
  TempDir dir;
  FixtureServer server(dir, "server", "only");
  Gateway gw(gatewayYaml(dir, "delete_*"), {{"EP", server.endpoint()}, {"ERA", "modern"}});
  Ran r = runClient(dir, gw.port(), "[]", "client");
  INFO("client: " << r.out << r.err << "\ngateway:\n" << gw.process().stderrText());
  CHECK(r.code == 1);
  CHECK(token(r.out, "ok") == "false");
  const std::string traces = server.process().stderrText();
  CHECK(countOf(traces, "SESSION_NEW ") == 0);
}

TEST_CASE("bridge: a server-to-client request inside a bridged call is refused, not relayed",
          "[bridge]") {
  requireBridgeFixtures();
  TempDir dir;
  // A 2025 server that asks for sampling whatever the client declared, and says what it got.
  FixtureServer server(dir, "asker", "only", "", 0, "legacy-asker.mjs");
  Gateway gw(gatewayYaml(dir, "delete_*"), {{"EP", server.endpoint()}, {"ERA", "legacy"}});
  Ran r = runClient(dir, gw.port(), R"([{"name":"ask","arguments":{}}])", "client");
  INFO("client: " << r.out << r.err << "\ngateway:\n" << gw.process().stderrText());
  REQUIRE(r.code == 0);
  CHECK(token(r.out, "server") == "\"legacy-asker\"");
  CHECK(token(r.out, "summary") == "\"ok\"");
  CHECK(r.out.find("refused -32601") != std::string::npos);
  CHECK(r.out.find("sampling/createMessage") == std::string::npos);
}

// ---- federated routes ---------------------------------------------------------------------

namespace {

// One federated route over server-everything (2025 only, first) and the fixture server in
// 2026-only mode; `names` keep or prefix. The deny rule and the 2/min limit are written on
// the names the route shows.
std::string federatedYaml(const TempDir& dir, const std::string& names) {
  const bool prefix = names == "prefix";
  const std::string policy = writePolicy(dir, prefix ? "everything__get-env" : "get-env",
                                         prefix ? "everything__echo" : "echo");
  return "listen: \"127.0.0.1:${PORT}\"\n"
         "workers: 1\n"
         "upstreams:\n"
         "  - name: everything\n"
         "    endpoints: [\"${EP1}\"]\n"
         "    era: ${ERA}\n"
         "    connect_timeout: 2s\n"
         "    response_timeout: 10s\n"
         "  - name: fixture\n"
         "    endpoints: [\"${EP2}\"]\n"
         "    connect_timeout: 2s\n"
         "    response_timeout: 10s\n"
         "routes:\n"
         "  - name: default\n"
         "    upstreams: [everything, fixture]\n"
         "    names: " +
         names +
         "\n"
         "policies: [\"" +
         policy +
         "\"]\n"
         "access_log: { path: \"${ACCESS_LOG}\" }\n";
}

}  // namespace

TEST_CASE("bridge: a 2025-only server behind a federated route, for clients of both eras",
          "[bridge][federation][legacy][slow]") {
  requireBridgeFixtures();
  const std::string names = GENERATE(std::string("keep"), std::string("prefix"));
  const std::string era = GENERATE(std::string("auto"), std::string("legacy"));
  const std::string mode = GENERATE(std::string("pin"), std::string("legacy"));
  INFO("names: " << names << ", era: " << era << ", client: " << mode);
  TempDir dir;
  EverythingServer everything(dir);
  FixtureServer fixture(dir, "fixture", "reject");
  Gateway gw(federatedYaml(dir, names),
             {{"EP1", everything.endpoint()}, {"EP2", fixture.endpoint()}, {"ERA", era}});

  const std::string p = names == "prefix" ? "everything__" : "";
  const std::string f = names == "prefix" ? "fixture__" : "";
  const std::string steps = R"([{"name":")" + p + R"(get-sum","arguments":{"a":1,"b":2}},)" +
                            R"({"name":")" + f + R"(weather_get","arguments":{"city":"Oslo"}},)" +
                            R"({"name":")" + p + R"(get-env","arguments":{}},)" + R"({"name":")" +
                            p + R"(echo","arguments":{"message":"a"}},)" + R"({"name":")" + p +
                            R"(echo","arguments":{"message":"b"}},)" + R"({"name":")" + p +
                            R"(echo","arguments":{"message":"c"}}])";
  Ran r = runClient(dir, gw.port(), steps, "client", mode);
  INFO("client: " << r.out << r.err << "\ngateway:\n" << gw.process().stderrText());
  REQUIRE(r.code == 0);
  if (mode == "pin") {
    CHECK(token(r.out, "era") == "\"modern\"");
    CHECK(token(r.out, "session") == "null");
  } else {
    // The gateway answered initialize (its own session) for the route's servers.
    CHECK(token(r.out, "era") == "\"legacy\"");
    CHECK(token(r.out, "version") == "\"2025-11-25\"");
    CHECK(token(r.out, "server") == "\"mcp-gateway\"");
    CHECK(token(r.out, "session").rfind("\"gw1.", 0) == 0);
  }
  CHECK(token(r.out, "summary") == "\"ok|ok|403/-31004|ok|ok|429/-31005\"");
  CHECK(token(r.out, "prompt") != "null");
  CHECK(token(r.out, "resource") != "null");
  // The fixture (modern) served its call statelessly; nothing was left out of a list.
  const std::string traces = fixture.process().stderrText();
  INFO("fixture: " << traces);
  CHECK(countOf(traces, "SESSION_NEW ") == 0);
  CHECK(countOf(traces, "TOOL weather_get") == 1);
  // No upstream was left out of a merged list or the merged server/discover.
  CHECK(gw.process().stderrText().find("left out of") == std::string::npos);
  CHECK(readFile(gw.accessLogPath()).find("\"owner\":\"everything\"") != std::string::npos);
}
