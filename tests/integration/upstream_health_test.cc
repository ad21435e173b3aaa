// Failing upstreams (issue #29): passive ejection of an endpoint after consecutive failed
// answers, the fail-fast 503 when no endpoint is usable (no connect attempt, no timeout), the
// circuit breaker's overflow, /readyz per `readiness`, and what /upstreams and /metrics show.

#include <catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

std::string config(const std::string& endpoints, const std::string& extra = "",
                   const std::string& top = "") {
  return "listen: 127.0.0.1:${PORT}\nworkers: 2\nadmin: 127.0.0.1:0\n"
         "access_log:\n  path: ${ACCESS_LOG}\n" +
         top + "upstreams:\n  - name: flaky\n    endpoints: [" + endpoints +
         "]\n    connect_timeout: 500ms\n    response_timeout: 500ms\n" + extra +
         "routes:\n  - name: default\n    upstream: flaky\n";
}

Response call(const Gateway& gw) {
  return fetch(gw.port(), mcpPost(toolsCallBody("echo", 1)));
}

TEST_CASE("upstream health: five failed answers eject the endpoint, then 503 at once",
          "[upstream_health]") {
  ClosedPort closed;
  Gateway gw(config(closed.address()));
  for (int i = 0; i < 5; ++i) {
    CHECK(call(gw).status == 502);
  }
  // Ejected: answered at once, naming the upstream, with Retry-After (the ejection's 30 s).
  const auto t0 = std::chrono::steady_clock::now();
  Response r = call(gw);
  const auto took = std::chrono::steady_clock::now() - t0;
  CHECK(r.status == 503);
  CHECK(took < std::chrono::milliseconds(50));
  CHECK(r.body.find("'flaky'") != std::string::npos);
  CHECK(r.body.find("\"code\":-31012") != std::string::npos);
  const int retry = std::stoi(r.header("retry-after").value_or("0"));
  CHECK(retry >= 29);
  CHECK(retry <= 30);
  CHECK(waitLogLine(gw, "upstream_unavailable").size() > 0);
  // What operators see.
  Response u = adminGet(gw.adminPort(), "/upstreams");
  INFO(u.body);
  CHECK(u.status == 200);
  CHECK(u.body.find(R"("state":"ejected")") != std::string::npos);
  CHECK(u.body.find(R"("reason":"connect failed")") != std::string::npos);
  Response ready = adminGet(gw.adminPort(), "/readyz");
  CHECK(ready.status == 503);
  CHECK(ready.body.find("no upstream") != std::string::npos);
  const std::string metrics = adminGet(gw.adminPort(), "/metrics").body;
  CHECK(sample(metrics, "mcp_gateway_upstream_endpoint_healthy{upstream=\"flaky\",endpoint=\"" +
                            closed.address() + "\"}") == 0);
  CHECK(sample(metrics, "mcp_gateway_upstream_ejections_total{upstream=\"flaky\",endpoint=\"" +
                            closed.address() + "\"}") == 1);
}

TEST_CASE("upstream health: one bad endpoint of two is ejected, the other serves",
          "[upstream_health]") {
  ClosedPort closed;
  RawUpstream good{RawUpstream::respond(200, kOkBody)};
  // 503 answers count like refused connects.
  RawUpstream busy{RawUpstream::respond(503, kOkBody)};
  Gateway gw(config(busy.address() + ", " + good.address(),
                    "    outlier_detection: { consecutive_failures: 2, ejection_time: 10s }\n",
                    "readiness: all_upstreams\n"));
  int ok = 0;
  int unavailable = 0;
  for (int i = 0; i < 12; ++i) {
    const int st = call(gw).status;
    ok += st == 200 ? 1 : 0;
    unavailable += st == 503 ? 1 : 0;
  }
  // The busy endpoint answered its 503 twice (relayed), then was ejected: the rest went to
  // the good one.
  CHECK(busy.requestCount() == 2);
  CHECK(ok == 10);
  CHECK(unavailable == 2);
  Response u = adminGet(gw.adminPort(), "/upstreams");
  INFO(u.body);
  CHECK(u.body.find(R"("state":"ejected")") != std::string::npos);
  CHECK(u.body.find(R"("state":"healthy")") != std::string::npos);
  CHECK(adminGet(gw.adminPort(), "/readyz").status == 200);  // the upstream has one usable
  (void)closed;
}

TEST_CASE("upstream health: the circuit breaker answers 503 past max_requests",
          "[upstream_health]") {
  RawUpstream stall([](UpstreamConn& c) {
    if (c.readRequest()) {
      c.stall();
    }
  });
  Gateway gw(config(stall.address(),
                    "    circuit_breaker: { max_requests: 1, max_pending: 5 }\n"
                    "    outlier_detection: { consecutive_failures: 0 }\n",
                    "readiness: always\n"));
  Client first(gw.port());
  REQUIRE(first.send(mcpPost(toolsCallBody("echo", 1))));
  REQUIRE(stall.waitForRequests(1, Ms(2000)));
  const auto t0 = std::chrono::steady_clock::now();
  Response r = call(gw);
  CHECK(r.status == 503);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(50));
  CHECK(r.body.find("circuit_breaker") != std::string::npos);
  CHECK(r.header("retry-after").value_or("") == "1");
  CHECK(waitLogLine(gw, "upstream_overflow").size() > 0);
  CHECK(stall.requestCount() == 1);
  // The first ends (504 after response_timeout): the next is admitted again.
  auto first_answer = first.readResponse(Ms(3000));
  REQUIRE(first_answer);
  CHECK(first_answer->status == 504);
  CHECK(call(gw).status == 504);
  CHECK(adminGet(gw.adminPort(), "/readyz").status == 200);  // readiness: always
}

}  // namespace

namespace {

TEST_CASE("upstream health: active checks take an endpoint down and bring it back",
          "[upstream_health][slow]") {
  std::atomic<bool> healthy{true};
  std::atomic<int> probes{0};
  RawUpstream up([&](UpstreamConn& c) {
    while (auto req = c.readRequest(Ms(3000))) {
      const bool probe = req->requestLine().find("/healthz") != std::string::npos;
      probes += probe ? 1 : 0;
      const int st = probe && !healthy ? 503 : 200;
      const std::string body = probe ? "ok" : kOkBody;
      if (!c.send("HTTP/1.1 " + std::to_string(st) +
                  " X\r\nContent-Type: application/json\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body)) {
        return;
      }
    }
  });
  ClosedPort closed;
  Gateway gw(
      "listen: 127.0.0.1:${PORT}\nworkers: 2\nadmin: 127.0.0.1:0\n"
      "upstreams:\n  - name: checked\n    endpoints: [" +
      up.address() +
      "]\n    health_check: { probe: http, path: /healthz, interval: 1s, timeout: 300ms,"
      " unhealthy_threshold: 2, healthy_threshold: 1 }\n"
      "  - name: gone\n    endpoints: [" +
      closed.address() +
      "]\n    health_check: { probe: tcp, interval: 1s, timeout: 300ms, unhealthy_threshold: 1 }\n"
      "routes:\n  - name: gone\n    match: { name: \"gone_*\" }\n    upstream: gone\n"
      "  - name: default\n    upstream: checked\n");
  CHECK(call(gw).status == 200);
  // The tcp probe of a closed port: down (one failure suffices here).
  REQUIRE(waitFor(
      [&] {
        return adminGet(gw.adminPort(), "/upstreams").body.find(R"("state":"down")") !=
               std::string::npos;
      },
      Ms(4000)));
  Response r = fetch(gw.port(), mcpPost(toolsCallBody("gone_x", 1), "", "gone_x"));
  CHECK(r.status == 503);
  CHECK(r.body.find("'gone'") != std::string::npos);
  // The http probe answers 503: down after two probes, calls answered at once.
  healthy = false;
  REQUIRE(waitFor([&] { return call(gw).status == 503; }, Ms(5000)));
  // Healthy again: back after one good probe.
  healthy = true;
  REQUIRE(waitFor([&] { return call(gw).status == 200; }, Ms(4000)));
  CHECK(probes >= 3);
  CHECK(adminGet(gw.adminPort(), "/readyz").status == 200);  // `checked` is usable
}

}  // namespace
