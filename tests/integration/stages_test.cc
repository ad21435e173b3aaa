// The exchange's stages that stop and resume (issue #25): a Redis-backed rate limit whose
// store is slow stops the request; the store's answer (or its timeout, by `on_error`) resumes
// it; a client that leaves while it waits ends it as 499 and nothing reaches the upstream.
// The store here is a stand-in that accepts and never answers, so every wait is the stage's.

#include <catch.hpp>

#include <string>
#include <thread>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

std::string config(const std::string& upstream, const std::string& policy) {
  return "listen: 127.0.0.1:${PORT}\n"
         "workers: 1\n"
         "access_log:\n"
         "  path: ${ACCESS_LOG}\n"
         "mcp:\n"
         "  protocol_versions: [2026-07-28]\n"
         "upstreams:\n  - name: main\n    endpoints: [" +
         upstream +
         "]\n"
         "routes:\n  - name: default\n    upstream: main\n"
         "policies: [" +
         policy + "]\n";
}

std::string redisPolicy(uint16_t store_port, const std::string& on_error,
                        const std::string& timeout) {
  return "rate_limits:\n"
         "  - name: per-method\n"
         "    match: { method: tools/call }\n"
         "    key: [method]\n"
         "    rate: 100/s\n"
         "    backend: redis\n"
         "redis:\n"
         "  address: 127.0.0.1:" +
         std::to_string(store_port) +
         "\n"
         "  on_error: " +
         on_error +
         "\n"
         "  timeout: " +
         timeout + "\n";
}

std::string call(std::string_view id) {
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::string(id) +
                     R"(,"method":"tools/call","params":{"name":"echo","arguments":{},)"
                     R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
         "Content-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\n"
         "MCP-Protocol-Version: 2026-07-28\r\n"
         "Mcp-Method: tools/call\r\n"
         "Mcp-Name: echo\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A "Redis" that takes connections and commands and never answers.
RawUpstream silentStore() {
  return RawUpstream([](UpstreamConn& c) { c.stall(); });
}

}  // namespace

TEST_CASE("stages: a limit waiting on its store resumes by on_error when the store is silent",
          "[stages][ratelimit][redis]") {
  TempDir dir;
  RawUpstream store = silentStore();
  RawUpstream up(RawUpstream::respond(200, kOkBody));

  SECTION("on_error: allow — the request waits for the timeout, then goes upstream") {
    const std::string pol = dir.file("allow.yaml");
    REQUIRE(writeFile(pol, redisPolicy(store.port(), "allow", "300ms")));
    Gateway gw(config(up.address(), pol));
    auto t0 = Clock::now();
    Response r = fetch(gw.port(), call("1"));
    const long long ms = msBetween(t0, Clock::now());
    INFO("status " << r.status << " after " << ms << " ms: " << r.body);
    CHECK(r.status == 200);
    CHECK(ms >= 250);  // it waited for the store's timeout
    CHECK(ms < 5000);
    CHECK(up.requestCount() == 1);
  }
  SECTION("on_error: deny — the resumed stage refuses with 503 -31012, nothing goes upstream") {
    const std::string pol = dir.file("deny.yaml");
    REQUIRE(writeFile(pol, redisPolicy(store.port(), "deny", "300ms")));
    Gateway gw(config(up.address(), pol));
    Response r = fetch(gw.port(), call("7"));
    INFO(r.body);
    CHECK(r.status == 503);
    CHECK(r.header("Retry-After") == "1");
    CHECK(r.body.find("-31012") != std::string::npos);
    CHECK(r.body.find("\"id\":7") != std::string::npos);
    CHECK(up.requestCount() == 0);
  }
}

TEST_CASE("stages: a client that leaves while a limit waits ends the request as 499",
          "[stages][ratelimit][redis][slow]") {
  TempDir dir;
  RawUpstream store = silentStore();
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  const std::string pol = dir.file("policy.yaml");
  REQUIRE(writeFile(pol, redisPolicy(store.port(), "allow", "3s")));
  Gateway gw(config(up.address(), pol));

  {
    Client c(gw.port());
    REQUIRE(c.send(call("1")));
    // The request is in (it waits on the store, which never answers); then the client goes.
    REQUIRE(waitFor([&] { return store.acceptCount() >= 1; }, Ms(3000)));
    c.close();
  }
  // The access log gets the request's line with status 499 well before the store's 3 s.
  std::string log;
  const bool logged = waitFor(
      [&] {
        log = readFile(gw.accessLogPath());
        return log.find("\"status\":499") != std::string::npos;
      },
      Ms(2500));
  INFO(log);
  CHECK(logged);
  CHECK(log.find("client_closed") != std::string::npos);
  CHECK(up.requestCount() == 0);

  // The gateway goes on serving (the next request waits out the store, then passes).
  Response r = fetch(gw.port(), call("2"));
  CHECK(r.status == 200);
}
