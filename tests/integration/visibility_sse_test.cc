// A plain route's list answer read whole (visibility: filter, or tool_pinning) from an
// upstream that answers in SSE and then keeps its stream open: the gateway finishes at the
// event that carries the JSON-RPC response, as the federation fan-out does, instead of
// waiting for the stream to end (which, here, only a 30 s timeout would bring).

#include <catch.hpp>
#include <string>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

bool has(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

constexpr char kFilterPolicy[] =
    "rules:\n"
    "  - name: no-secrets\n"
    "    match: { method: tools/call, name: \"secret_*\" }\n"
    "    action: deny\n"
    "default: allow\n";

constexpr char kPinningPolicy[] =
    "tool_pinning:\n"
    "  mode: log\n"
    "  store: pins.json\n";

constexpr char kList[] = R"({"jsonrpc":"2.0","id":4,"result":{"tools":[)"
                         R"({"name":"open_tool","inputSchema":{"type":"object"}},)"
                         R"({"name":"secret_tool","inputSchema":{"type":"object"}}]}})";

constexpr char kProgress[] =
    R"({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}})";

std::string toolsListRequest() {
  const std::string body = R"({"jsonrpc":"2.0","id":4,"method":"tools/list","params":{"_meta":)"
                           R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
         "Mcp-Method: tools/list\r\nConnection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

}  // namespace

TEST_CASE("visibility: a filtered SSE list ends at its response event, the stream left open",
          "[visibility][pins]") {
  const std::string policy = GENERATE(std::string(kFilterPolicy), std::string(kPinningPolicy));
  const bool filters = policy == kFilterPolicy;
  INFO("policy:\n" << policy);

  // A notification, the response, then the stream stays open (never ended from this side).
  RawUpstream up([](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    c.send(sseHead() + chunk(std::string("event: message\ndata: ") + kProgress + "\n\n") +
           chunk(std::string("event: message\ndata: ") + kList + "\n\n"));
    c.waitPeerClose(Ms(40000));
  });
  TempDir dir;
  REQUIRE(writeFile(dir.file("policy.yaml"), policy));
  GatewayConfig cfg;
  cfg.upstream_endpoints = {up.address()};
  cfg.response_timeout = "30s";
  cfg.stream_idle_timeout = "30s";
  cfg.extra_yaml = "policies: [" + dir.file("policy.yaml") + "]\n";
  Gateway gw(cfg);

  const auto t0 = Clock::now();
  Response r = fetch(gw.port(), toolsListRequest(), Ms(10000));
  const long long ms = msBetween(t0, Clock::now());
  INFO("answer after " << ms << " ms: " << r.head << r.body << "\ngateway stderr:\n"
                       << gw.process().stderrText());
  CHECK(ms < 2000);
  CHECK(r.status == 200);
  CHECK(r.header("Content-Length").has_value());
  CHECK(has(r.body, "notifications/message"));  // the events before the response are kept
  CHECK(has(r.body, "\"open_tool\""));
  CHECK(has(r.body, "\"secret_tool\"") != filters);
  // The upstream stream still open is closed by the gateway (never pooled, never waited for).
  CHECK(waitFor([&] { return !up.peerCloses().empty(); }, Ms(3000)));
}

TEST_CASE("visibility: a filtered SSE list that ends in the read of its response event",
          "[visibility]") {
  // Framed by Content-Length: the upstream request ends in the same read that completes the
  // response event (the list is sent once, outside that read).
  const std::string event = std::string("event: message\ndata: ") + kList + "\n\n";
  RawUpstream up(RawUpstream::respond(200, event, "text/event-stream"));
  TempDir dir;
  REQUIRE(writeFile(dir.file("policy.yaml"), kFilterPolicy));
  GatewayConfig cfg;
  cfg.upstream_endpoints = {up.address()};
  cfg.extra_yaml = "policies: [" + dir.file("policy.yaml") + "]\n";
  Gateway gw(cfg);
  for (int i = 0; i < 3; ++i) {
    Response r = fetch(gw.port(), toolsListRequest(), Ms(5000));
    INFO("#" << i << ": " << r.head << r.body << "\ngateway stderr:\n"
             << gw.process().stderrText());
    CHECK(r.status == 200);
    CHECK(has(r.body, "\"open_tool\""));
    CHECK_FALSE(has(r.body, "\"secret_tool\""));
  }
  CHECK(gw.process().running());
}
