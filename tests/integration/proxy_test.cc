// Core proxy behaviour of the real mcp-gateway binary (issue 2): request canonicalisation
// towards the upstream, strict framing rejects that never reach the upstream, keep-alive and
// pipelining, upstream failures mapped to 502/504, and the access log.

#include <catch.hpp>

#include <string>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

GatewayConfig configFor(const RawUpstream& up) {
  GatewayConfig cfg;
  cfg.upstream_endpoints = {up.address()};
  return cfg;
}

// Answers every request on the connection with its own body (keep-alive).
UpstreamScript echoBody() {
  return [](UpstreamConn& c) {
    while (auto req = c.readRequest(Ms(15000))) {
      std::string resp = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                         std::to_string(req->body.size()) + "\r\n\r\n" + req->body;
      if (!c.send(resp)) {
        return;
      }
    }
  };
}

const char kUpstreamJson[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

}  // namespace

TEST_CASE("proxy: POST /mcp JSON round trip canonicalises the head and keeps Mcp-* bytes",
          "[proxy]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson, "application/json", "X-Up: 1\r\n"));
  Gateway gw(configFor(up));
  std::string body = toolsCallBody("echo", 1);
  std::string req =
      "POST /mcp HTTP/1.1\r\n"
      "Host: 127.0.0.1\r\n"
      "Content-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n"
      "MCP-Protocol-Version: 2026-07-28\r\n"
      "Mcp-Method: tools/call\r\n"
      "mcp-name: echo\r\n"
      "mCp-pArAm-Region: eu-west-1\r\n"
      "Mcp-Param-Foo: =?base64?SGVsbG8=?=\r\n"
      "Connection: keep-alive, X-Drop-Me\r\n"
      "X-Drop-Me: secret\r\n"
      "Keep-Alive: timeout=5\r\n"
      "TE: trailers\r\n"
      "Trailer: X-Trailing\r\n"
      "Upgrade: h2c\r\n"
      "Proxy-Connection: keep-alive\r\n"
      "X-Forwarded-For: 1.2.3.4\r\n"
      "X-Custom: kept as is\r\n"
      "Content-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  Client c(gw.port());
  REQUIRE(c.send(req));
  auto r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(r->body == kUpstreamJson);
  CHECK(r->header("X-Up") == "1");

  REQUIRE(up.waitForRequests(1, Ms(2000)));
  auto got = up.requests().at(0);
  INFO("upstream received:\n" << got.head);
  CHECK(got.requestLine() == "POST /mcp HTTP/1.1");
  CHECK(got.headerValues("Content-Length") ==
        std::vector<std::string>{std::to_string(body.size())});
  CHECK_FALSE(got.hasHeader("Transfer-Encoding"));
  for (const char* hop :
       {"Connection", "Keep-Alive", "TE", "Trailer", "Upgrade", "Proxy-Connection", "X-Drop-Me"}) {
    INFO("hop-by-hop header " << hop);
    CHECK_FALSE(got.hasHeader(hop));
  }
  // Issue #12 item 10: the client is not in trusted_proxies (default empty), so its
  // X-Forwarded-For is replaced by the peer address, not appended to.
  CHECK(got.headerValues("X-Forwarded-For") == std::vector<std::string>{"127.0.0.1"});
  CHECK(got.headerValues("X-Forwarded-Proto") == std::vector<std::string>{"http"});
  for (const char* line :
       {"\r\nMCP-Protocol-Version: 2026-07-28\r\n", "\r\nMcp-Method: tools/call\r\n",
        "\r\nmcp-name: echo\r\n", "\r\nmCp-pArAm-Region: eu-west-1\r\n",
        "\r\nMcp-Param-Foo: =?base64?SGVsbG8=?=\r\n", "\r\nX-Custom: kept as is\r\n"}) {
    INFO("expected byte-exact line " << line);
    CHECK(got.head.find(line) != std::string::npos);
  }
  CHECK(got.body == body);
}

TEST_CASE("proxy: chunked request body reaches the upstream with one Content-Length", "[proxy]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson));
  Gateway gw(configFor(up));
  std::string body = toolsCallBody("echo", 7);
  std::string req = mcpPost("", "Transfer-Encoding: chunked\r\n", "echo", false) +
                    chunk(body.substr(0, 10)) + chunk(body.substr(10)) + chunk("");
  Client c(gw.port());
  REQUIRE(c.send(req));
  auto r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  REQUIRE(up.waitForRequests(1, Ms(2000)));
  auto got = up.requests().at(0);
  INFO("upstream received:\n" << got.head);
  CHECK(got.headerValues("Content-Length") ==
        std::vector<std::string>{std::to_string(body.size())});
  CHECK_FALSE(got.hasHeader("Transfer-Encoding"));
  CHECK(got.body == body);
}

TEST_CASE("proxy: malformed or oversized requests are answered locally, never forwarded",
          "[proxy]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson));
  GatewayConfig cfg = configFor(up);
  cfg.max_body_bytes = "1KiB";
  cfg.header_timeout = "300ms";
  Gateway gw(cfg);
  std::string body = toolsCallBody();

  std::string many_fields;
  for (int i = 0; i < 94; ++i) {  // mcpPost's 7 fields + 94 = 101
    many_fields += "X-F" + std::to_string(i) + ": v\r\n";
  }
  struct Case {
    const char* name;
    std::string bytes;
    int status;
  };
  std::vector<Case> cases = {
      {"Content-Length with Transfer-Encoding",
       mcpPost("", "Transfer-Encoding: chunked\r\nContent-Length: 5\r\n", "echo", false) +
           chunk(body) + chunk(""),
       400},
      {"two different Content-Lengths",
       mcpPost(body, "Content-Length: " + std::to_string(body.size() + 1) + "\r\n"), 400},
      {"Transfer-Encoding gzip", mcpPost("", "Transfer-Encoding: gzip\r\n", "echo", false), 501},
      {"obs-fold", mcpPost(body, "X-Folded: a\r\n b\r\n"), 400},
      {"request line over 8 KiB",
       "POST /mcp?" + std::string(9000, 'x') + " HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 414},
      {"101 header fields", mcpPost(body, many_fields), 431},
  };
  for (const auto& tc : cases) {
    INFO("case: " << tc.name);
    Client c(gw.port());
    REQUIRE(c.send(tc.bytes));
    auto r = c.readResponse(Ms(3000));
    REQUIRE(r);
    CHECK(r->status == tc.status);
    if (tc.status == 400 || tc.status == 501) {
      CHECK(c.waitClosed(Ms(2000)));
    }
  }

  SECTION("Content-Length above max_body_bytes: 413 with a JSON-RPC body, body not read") {
    Client c(gw.port());
    std::string head = mcpPost("", "Content-Length: 2000\r\n", "echo", false);
    REQUIRE(c.send(head));
    auto r = c.readResponse(Ms(3000));
    REQUIRE(r);
    CHECK(r->status == 413);
    CHECK(r->body.find("\"jsonrpc\"") != std::string::npos);
  }
  SECTION("head incomplete after header_timeout: 408 and close") {
    Client c(gw.port());
    REQUIRE(c.send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"));
    auto t0 = Clock::now();
    auto r = c.readResponse(Ms(3000));
    REQUIRE(r);
    CHECK(r->status == 408);
    CHECK(msBetween(t0, Clock::now()) < 2000);
    CHECK(c.waitClosed(Ms(2000)));
  }
  // What the gateway would have forwarded is at the upstream once a marker is.
  REQUIRE(forwardMarker(gw.port(), up));
  CHECK(up.acceptCount() == 1);
  CHECK(up.requestCount() == 1);
}

TEST_CASE("proxy: keep-alive client requests share one pooled upstream connection", "[proxy]") {
  RawUpstream up(echoBody());
  Gateway gw(configFor(up));
  Client c(gw.port());
  for (int id = 1; id <= 2; ++id) {
    std::string body = toolsCallBody("echo", id);
    REQUIRE(c.send(mcpPost(body)));
    auto r = c.readResponse();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->body == body);
  }
  CHECK(up.requestCount() == 2);
  CHECK(up.acceptCount() == 1);
  CHECK_FALSE(c.peerClosed());
}

TEST_CASE("proxy: pipelined requests are answered in order", "[proxy]") {
  RawUpstream up(echoBody());
  Gateway gw(configFor(up));
  Client c(gw.port());
  std::string b1 = toolsCallBody("echo", 1);
  std::string b2 = toolsCallBody("echo", 2);
  REQUIRE(c.send(mcpPost(b1) + mcpPost(b2)));
  auto r1 = c.readResponse();
  REQUIRE(r1);
  CHECK(r1->status == 200);
  CHECK(r1->body == b1);
  auto r2 = c.readResponse();
  REQUIRE(r2);
  CHECK(r2->status == 200);
  CHECK(r2->body == b2);
}

TEST_CASE("proxy: a bad request followed by a good one in one write: 400, close, none forwarded",
          "[proxy]") {
  RawUpstream up(echoBody());
  Gateway gw(configFor(up));
  Client c(gw.port());
  std::string body = toolsCallBody();
  REQUIRE(c.send(mcpPost(body, "X-Folded: a\r\n b\r\n") + mcpPost(body)));
  auto r = c.readResponse();
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(c.waitClosed(Ms(2000)));
  // Nothing after the 400 on the wire.
  CHECK(c.received().find("HTTP/1.1", 1) == std::string::npos);
  // What the gateway would have forwarded is at the upstream once a marker is.
  REQUIRE(forwardMarker(gw.port(), up));
  CHECK(up.acceptCount() == 1);
}

TEST_CASE("proxy: upstream failures map to 502 / 504 with JSON-RPC bodies, no retry", "[proxy]") {
  std::string body = toolsCallBody();
  SECTION("connection refused: 502") {
    ClosedPort closed;
    GatewayConfig cfg;
    cfg.upstream_endpoints = {closed.address()};
    Gateway gw(cfg);
    Client c(gw.port());
    REQUIRE(c.send(mcpPost(body)));
    auto r = c.readResponse();
    REQUIRE(r);
    CHECK(r->status == 502);
    CHECK(r->body.find("\"jsonrpc\"") != std::string::npos);
  }
  SECTION("reset after the request reached the upstream: 502, not retried") {
    RawUpstream up([](UpstreamConn& c) {
      c.readRequest();
      c.reset();
    });
    Gateway gw(configFor(up));
    Client c(gw.port());
    REQUIRE(c.send(mcpPost(body)));
    auto r = c.readResponse();
    REQUIRE(r);
    CHECK(r->status == 502);
    CHECK(r->body.find("\"jsonrpc\"") != std::string::npos);
    // A retry would have reached the upstream before a marker does.
    REQUIRE(forwardMarker(gw.port(), up));
    CHECK(up.acceptCount() == 2);
    CHECK(up.requestCount() == 2);
  }
  SECTION("malformed upstream head: 502") {
    RawUpstream up(RawUpstream::respondRaw("HTTP/1.1 2x0 Weird\r\nBroken header line\r\n\r\n"));
    Gateway gw(configFor(up));
    Client c(gw.port());
    REQUIRE(c.send(mcpPost(body)));
    auto r = c.readResponse();
    REQUIRE(r);
    CHECK(r->status == 502);
    CHECK(r->body.find("\"jsonrpc\"") != std::string::npos);
  }
  SECTION("upstream stalls past response_timeout: 504") {
    RawUpstream up([](UpstreamConn& c) {
      c.readRequest();
      c.stall();
    });
    GatewayConfig cfg = configFor(up);
    cfg.response_timeout = "300ms";
    Gateway gw(cfg);
    Client c(gw.port());
    REQUIRE(c.send(mcpPost(body)));
    auto t0 = Clock::now();
    auto r = c.readResponse(Ms(3000));
    REQUIRE(r);
    CHECK(r->status == 504);
    CHECK(r->body.find("\"jsonrpc\"") != std::string::npos);
    auto waited = msBetween(t0, Clock::now());
    CHECK(waited >= 250);
    CHECK(waited < 1500);
    CHECK(up.acceptCount() == 1);
  }
}

TEST_CASE("proxy: one request writes one JSON access-log line", "[proxy][access_log]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson));
  Gateway gw(configFor(up));
  Client c(gw.port());
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  auto r = c.readResponse();
  REQUIRE(r);
  REQUIRE(r->status == 200);
  auto deadline = Clock::now() + Ms(2000);
  while (fileLines(gw.accessLogPath()).empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(Ms(20));
  }
  // Anything more the first request wrote comes before a second request's line.
  REQUIRE(fetch(gw.port(), mcpPost(toolsCallBody("echo", 2))).status == 200);
  REQUIRE(waitFor([&] { return fileLines(gw.accessLogPath()).size() >= 2; }, Ms(3000)));
  auto lines = fileLines(gw.accessLogPath());
  REQUIRE(lines.size() == 2);
  const std::string& line = lines[0];
  INFO("access log line: " << line);
  CHECK(line.front() == '{');
  CHECK(line.back() == '}');
  CHECK(jsonToken(line, "status") == "200");
  CHECK(jsonToken(line, "method") == "\"POST\"");
  CHECK(jsonToken(line, "path") == "\"/mcp\"");
  CHECK(line.find("\"bytes") != std::string::npos);
  CHECK(line.find("\"duration") != std::string::npos);
  CHECK(line.find(up.address()) != std::string::npos);
}
