// The real MCP TypeScript SDK v2 (server and client fixtures in tests/fixtures/) talking
// through the real mcp-gateway binary: a full client session, a notification POST, and
// cancellation by client abort reaching the server.

#include <catch.hpp>

#include <filesystem>
#include <memory>
#include <string>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const std::string kFixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";

void requireFixtures() {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
}

// The SDK server fixture on an ephemeral port; port() once it printed LISTENING.
class SdkServer {
 public:
  explicit SdkServer(const TempDir& dir)
      : process_({"node", kFixtures + "/mcp-server.mjs", "0"}, dir.path(), "mcp-server") {
    auto deadline = Clock::now() + Ms(10000);
    while (Clock::now() < deadline) {
      std::string out = process_.stdoutText();
      size_t pos = out.find("LISTENING ");
      if (pos != std::string::npos && out.find('\n', pos) != std::string::npos) {
        port_ = static_cast<uint16_t>(std::stoi(out.substr(pos + 10)));
        return;
      }
      if (!process_.running()) {
        break;
      }
      std::this_thread::sleep_for(Ms(20));
    }
    throw std::runtime_error("mcp-server.mjs did not print LISTENING; stderr:\n" +
                             process_.stderrText());
  }
  uint16_t port() const { return port_; }
  Process& process() { return process_; }

 private:
  Process process_;
  uint16_t port_ = 0;
};

// Runs the client fixture against url with a scenario; returns its exit code and stdout.
std::pair<int, std::string> runClient(const TempDir& dir, const std::string& url,
                                      const std::string& scenario) {
  Process client({"node", kFixtures + "/mcp-client.mjs", url, scenario}, dir.path(),
                 "mcp-client-" + scenario);
  auto code = client.wait(Ms(15000));
  if (!code) {
    client.terminate();
    return {-1, client.stdoutText() + client.stderrText()};
  }
  return {*code, client.stdoutText() + client.stderrText()};
}

GatewayConfig configFor(uint16_t upstream_port) {
  GatewayConfig cfg;
  cfg.upstream_endpoints = {"127.0.0.1:" + std::to_string(upstream_port)};
  return cfg;
}

}  // namespace

TEST_CASE("sdk: the v2 client's basic scenario works through the gateway", "[sdk][slow]") {
  requireFixtures();
  TempDir dir;
  SdkServer server(dir);
  Gateway gw(configFor(server.port()));
  auto [code, out] =
      runClient(dir, "http://127.0.0.1:" + std::to_string(gw.port()) + "/mcp", "basic");
  INFO("client output: " << out << "\nserver stderr: " << server.process().stderrText()
                         << "\ngateway stderr: " << gw.process().stderrText());
  CHECK(code == 0);
  CHECK(out.find("\"ok\":true") != std::string::npos);
  CHECK(out.find("\"progress\":3") != std::string::npos);
  CHECK(out.find("\"echo\":\"hi there\"") != std::string::npos);
}

TEST_CASE("sdk: a notification POST without Mcp-Method gets 202 through the gateway", "[sdk]") {
  requireFixtures();
  TempDir dir;
  SdkServer server(dir);
  Gateway gw(configFor(server.port()));
  std::string body =
      R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x-1",)"
      R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
      R"("io.modelcontextprotocol/clientInfo":{"name":"itest","version":"1"},)"
      R"("io.modelcontextprotocol/clientCapabilities":{}}}})";
  std::string req =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n"
      "MCP-Protocol-Version: 2026-07-28\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  Client c(gw.port());
  REQUIRE(c.send(req));
  auto r = c.readResponse();
  REQUIRE(r);
  INFO("response head:\n" << r->head << "body: " << r->body);
  CHECK(r->status == 202);
  CHECK(r->body.empty());
}

TEST_CASE("sdk: a client abort through the gateway cancels the tool on the server", "[sdk][slow]") {
  requireFixtures();
  TempDir dir;
  SdkServer server(dir);
  Gateway gw(configFor(server.port()));
  auto [code, out] =
      runClient(dir, "http://127.0.0.1:" + std::to_string(gw.port()) + "/mcp", "cancel");
  INFO("client output: " << out << "\nserver stderr: " << server.process().stderrText());
  CHECK(code == 0);
  CHECK(out.find("\"outcome\":\"aborted\"") != std::string::npos);
  // The slow tool runs 5 s; the abort comes after 300 ms. CANCELLED must show up well before
  // the tool would have finished on its own.
  CHECK(server.process().waitForOutput("CANCELLED", Ms(2000), false, true));
}
