// Federation (issue #15) and untrusted traffic: under `mcp.legacy: passthrough` (the default) a
// 2025-era request (no MCP-Protocol-Version, or one not in mcp.protocol_versions) that lands
// on a federated default route goes to the route's first upstream as on a plain route — no
// fan-out, no merged list, no name routing, its legacy session kept on that one server — and
// a client's Mcp-Session-Id is never copied into a fan-out. Two raw upstreams stand for the
// servers, so the test sees exactly which request reached which.

#include <catch.hpp>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

bool has(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

// A server that answers every request (keep-alive) with one tool `<name>_tool` — a valid
// tools/list result, which is all the gateway reads of it — and its session id.
UpstreamScript listingServer(const std::string& name) {
  return RawUpstream::respond(200,
                              R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":")" + name +
                                  R"(_tool","inputSchema":{"type":"object"}}]}})",
                              "application/json", "Mcp-Session-Id: sess-" + name + "\r\n");
}

constexpr char kYaml[] = R"(listen: "127.0.0.1:${PORT}"
workers: 1
upstreams:
  - name: a
    endpoints: ["${A}"]
  - name: b
    endpoints: ["${B}"]
routes:
  - name: default
    upstreams: [a, b]
    names: keep
access_log: { path: "${ACCESS_LOG}" }
)";

// A 2025-era POST /mcp: `version_line` is "" (no MCP-Protocol-Version) or a whole header line.
std::string legacyPost(const std::string& body, const std::string& version_line,
                       const std::string& session = "") {
  std::string r =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n" +
      version_line;
  if (!session.empty()) {
    r += "Mcp-Session-Id: " + session + "\r\n";
  }
  return r + "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         body;
}

std::string rpc(const std::string& method, int id, const std::string& params = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
         R"(","params":)" + params + "}";
}

}  // namespace

TEST_CASE("federation: legacy traffic on a federated route reaches only its first upstream",
          "[federation][legacy]") {
  // No MCP-Protocol-Version at all, and a 2025 version the gateway does not trust.
  const std::string version_line = GENERATE(std::string(""), std::string("MCP-Protocol-Version: "
                                                                         "2025-06-18\r\n"));
  RawUpstream a(listingServer("a"));
  RawUpstream b(listingServer("b"));
  Gateway gw(kYaml, {{"A", a.address()}, {"B", b.address()}});
  INFO("version line: '" << version_line << "'");

  const std::string init = rpc(
      "initialize", 1,
      R"({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}})");
  Response r = fetch(gw.port(), legacyPost(init, version_line));
  INFO("initialize: " << r.head << r.body << "\ngateway stderr:\n" << gw.process().stderrText());
  REQUIRE(r.status == 200);
  REQUIRE(r.headerCount("Mcp-Session-Id") == 1);
  const std::string wrapped = *r.header("Mcp-Session-Id");
  CHECK(wrapped == gatewaySessionToken("a", a.address()) + ".sess-a");

  // The list is a's alone: not fanned out, not merged.
  Response list = fetch(gw.port(), legacyPost(rpc("tools/list", 2), version_line, wrapped));
  INFO("tools/list: " << list.head << list.body);
  CHECK(list.status == 200);
  CHECK(has(list.body, "\"a_tool\""));
  CHECK_FALSE(has(list.body, "\"b_tool\""));
  CHECK(list.header("Mcp-Session-Id").value_or("") == wrapped);

  // A call of a name b lists goes to a too (the session is a's; a answers for its tools).
  Response call = fetch(
      gw.port(), legacyPost(rpc("tools/call", 3, R"({"name":"b_tool"})"), version_line, wrapped));
  INFO("tools/call: " << call.head << call.body);
  CHECK(call.status == 200);
  CHECK_FALSE(has(call.body, "Session not found"));

  REQUIRE(a.waitForRequests(3, Ms(3000)));
  CHECK(a.requestCount() == 3);
  CHECK(b.requestCount() == 0);
  auto reqs = a.requests();
  REQUIRE(reqs.size() == 3);
  CHECK(reqs[0].headerValues("Mcp-Session-Id").empty());
  for (size_t i = 1; i < reqs.size(); ++i) {
    INFO(reqs[i].head);
    // The server's own id, never the wrapped one.
    CHECK(reqs[i].headerValues("Mcp-Session-Id") == std::vector<std::string>{"sess-a"});
  }
}

TEST_CASE("federation: a client's Mcp-Session-Id is not copied into a fan-out", "[federation]") {
  RawUpstream a(listingServer("a"));
  RawUpstream b(listingServer("b"));
  Gateway gw(kYaml, {{"A", a.address()}, {"B", b.address()}});

  const std::string body = R"({"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":)"
                           R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  const std::string req =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
      "Mcp-Method: tools/list\r\nMcp-Session-Id: " +
      gatewaySessionToken("a", a.address()) +
      ".sess-a\r\n"
      "Connection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  Response r = fetch(gw.port(), req);
  INFO("tools/list: " << r.head << r.body << "\ngateway stderr:\n" << gw.process().stderrText());
  CHECK(r.status == 200);
  CHECK(has(r.body, "\"a_tool\""));  // merged: both upstreams were asked
  CHECK(has(r.body, "\"b_tool\""));
  REQUIRE(a.waitForRequests(1, Ms(3000)));
  REQUIRE(b.waitForRequests(1, Ms(3000)));
  for (RawUpstream* up : {&a, &b}) {
    for (const RecordedRequest& q : up->requests()) {
      INFO(q.head);
      CHECK_FALSE(q.hasHeader("Mcp-Session-Id"));
    }
  }
}
