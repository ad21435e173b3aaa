// Failing upstreams (issue #29): passive ejection of an endpoint after consecutive failed
// answers, the fail-fast 503 when no endpoint is usable (no connect attempt, no timeout), the
// circuit breaker's overflow, /readyz per `readiness`, and what /upstreams and /metrics show.

#include <catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <set>
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
  // /config shows the same, beside the configuration.
  const std::string config = adminGet(gw.adminPort(), "/config").body;
  INFO(config);
  CHECK(config.find(R"("upstream_state":[{"name":"flaky")") != std::string::npos);
  CHECK(config.find(R"("state":"ejected")") != std::string::npos);
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

namespace {

// The _meta envelope a 2026-07-28 server (and a federated route) checks.
constexpr char kMeta[] = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                         R"("io.modelcontextprotocol/clientInfo":{"name":"itest","version":"1"},)"
                         R"("io.modelcontextprotocol/clientCapabilities":{}})";

const std::string kListBody =
    std::string(R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{)") + kMeta + "}}";

std::string listRequest() {
  return "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
         "Mcp-Method: tools/list\r\nContent-Length: " +
         std::to_string(kListBody.size()) + "\r\n\r\n" + kListBody;
}

constexpr char kList[] = R"({"jsonrpc":"2.0","id":3,"result":{"tools":[]}})";

std::string answer(int status, std::string_view body) {
  return "HTTP/1.1 " + std::to_string(status) +
         " X\r\nContent-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + std::string(body);
}

TEST_CASE("upstream retry: a list that hit a reset or a 503 is sent again, a call is not",
          "[upstream_health][retry]") {
  RawUpstream resets([](UpstreamConn& c) {
    if (c.readRequest()) {
      c.reset();
    }
  });
  RawUpstream good{RawUpstream::respond(200, kList)};
  Gateway gw(config(resets.address() + ", " + good.address(),
                    "    outlier_detection: { consecutive_failures: 0 }\n"
                    "    retry: { attempts: 2, backoff: 5ms, budget: 100% }\n"));
  for (int i = 0; i < 4; ++i) {
    const Response r = fetch(gw.port(), listRequest());
    INFO(r.body);
    CHECK(r.status == 200);
  }
  // Every list reached the good endpoint; those that went to the resetting one first were
  // sent again.
  CHECK(good.requestCount() == 4);
  CHECK(resets.requestCount() >= 1);
  CHECK(waitLogLine(gw, "\"upstream_attempts\":2").size() > 0);
  // A tools/call is never retried: one that meets the reset gets its 502.
  int bad = 0;
  for (int i = 0; i < 6 && bad == 0; ++i) {
    bad += call(gw).status == 502 ? 1 : 0;
  }
  CHECK(bad == 1);
  const std::string metrics = adminGet(gw.adminPort(), "/metrics").body;
  CHECK(sample(metrics, R"(mcp_gateway_upstream_retries_total{upstream="flaky",reason="reset"})") >=
        1);
}

TEST_CASE("upstream retry: a 503 answer is dropped and asked again, within the budget",
          "[upstream_health][retry]") {
  std::atomic<int> seen{0};
  std::atomic<bool> always_busy{false};
  RawUpstream up([&](UpstreamConn& c) {
    while (auto req = c.readRequest(Ms(3000))) {
      const int n = ++seen;
      const bool busy = always_busy || n % 2 == 1;
      if (!c.send(answer(busy ? 503 : 200, busy ? R"({"busy":true})" : kList))) {
        return;
      }
    }
  });
  Gateway gw(config(up.address(),
                    "    outlier_detection: { consecutive_failures: 0 }\n"
                    "    retry: { attempts: 2, on: [503], budget: 0%, backoff: 1ms }\n"));
  // Odd answers are 503: every list gets its 200 on the second try.
  for (int i = 0; i < 2; ++i) {
    const Response r = fetch(gw.port(), listRequest());
    CHECK(r.status == 200);
    CHECK(r.body == kList);
  }
  CHECK(seen == 4);
  // Always busy: within one second at most 3 retries (budget 0 %, the minimum 3/s), so of
  // six lists three are asked twice and three once; each answers the 503.
  std::this_thread::sleep_for(Ms(1100));  // a fresh budget window
  always_busy = true;
  seen = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < 6; ++i) {
    CHECK(fetch(gw.port(), listRequest()).status == 503);
  }
  if (std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(900)) {
    CHECK(seen == 9);
  }
}

}  // namespace

namespace {

// An upstream whose tools/list annotates `look` readOnlyHint, `put` idempotentHint and `act`
// nothing, and that resets every tools/call body the first time it sees it (a retry sends the
// same body, so it is answered).
class AnnotatedTools {
 public:
  AnnotatedTools()
      : up_([this](UpstreamConn& c) {
          while (auto req = c.readRequest(Ms(3000))) {
            if (req->body.find("\"tools/list\"") != std::string::npos) {
              if (!c.send(answer(200, kAnnotatedList))) {
                return;
              }
              continue;
            }
            bool first = false;
            {
              std::lock_guard lock(mu_);
              first = seen_.insert(req->body).second;
            }
            if (first) {
              c.reset();
              return;
            }
            if (!c.send(answer(200, kOkBody))) {
              return;
            }
          }
        }) {}
  std::string address() const { return up_.address(); }
  // How many times the upstream got the tools/call with this id.
  int attemptsOf(int id) const {
    const std::string needle = "\"id\":" + std::to_string(id) + ",";
    int n = 0;
    for (const RecordedRequest& r : up_.requests()) {
      n += r.body.find(needle) != std::string::npos ? 1 : 0;
    }
    return n;
  }

 private:
  static constexpr char kAnnotatedList[] =
      R"({"jsonrpc":"2.0","id":3,"result":{"tools":[)"
      R"({"name":"look","inputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}},)"
      R"({"name":"put","inputSchema":{"type":"object"},"annotations":{"idempotentHint":true}},)"
      R"({"name":"act","inputSchema":{"type":"object"}}]}})";
  std::mutex mu_;
  std::set<std::string> seen_;
  RawUpstream up_;
};

Response callTool(const Gateway& gw, const std::string& tool, int id) {
  // The envelope a federated route checks: params._meta's protocol version.
  const std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                           R"(,"method":"tools/call","params":{"name":")" + tool +
                           R"(","arguments":{},)" + kMeta + "}}";
  return fetch(gw.port(), mcpPost(body, "", tool));
}

TEST_CASE("upstream retry: tools: read_only retries a tools/call of a readOnlyHint tool only",
          "[upstream_health][retry]") {
  AnnotatedTools up;
  Gateway gw(config(up.address(),
                    "    outlier_detection: { consecutive_failures: 0 }\n"
                    "    retry: { attempts: 2, tools: read_only, backoff: 1ms, budget: 100% }\n"));
  // Before the gateway has seen the server's tools/list, nothing is known of `look`: no retry.
  CHECK(callTool(gw, "look", 10).status == 502);
  CHECK(up.attemptsOf(10) == 1);
  REQUIRE(fetch(gw.port(), listRequest()).status == 200);
  // Read-only: the reset attempt is sent again and answered.
  const Response ok = callTool(gw, "look", 11);
  INFO(ok.body);
  CHECK(ok.status == 200);
  CHECK(up.attemptsOf(11) == 2);
  CHECK(waitLogLine(gw, "\"upstream_attempts\":2").size() > 0);
  // Unannotated, idempotent only (read_only asks for readOnlyHint), and unlisted: one attempt,
  // the 502 stands.
  struct Case {
    const char* tool;
    int id;
  };
  for (const Case& c : {Case{"act", 12}, Case{"put", 13}, Case{"hidden", 14}}) {
    INFO(c.tool);
    CHECK(callTool(gw, c.tool, c.id).status == 502);
    CHECK(up.attemptsOf(c.id) == 1);
  }
}

TEST_CASE("upstream retry: a list that changed is learned again, the same one is not re-read",
          "[upstream_health][retry]") {
  // `act` gains readOnlyHint in the second version of the list.
  std::atomic<bool> annotated{false};
  std::mutex mu;
  std::set<std::string> seen;
  RawUpstream up([&](UpstreamConn& c) {
    while (auto req = c.readRequest(Ms(3000))) {
      if (req->body.find("\"tools/list\"") != std::string::npos) {
        const std::string hints = annotated ? R"(,"annotations":{"readOnlyHint":true})" : "";
        const std::string id = req->body.substr(req->body.find("\"id\":") + 5, 1);
        if (!c.send(answer(200, R"({"jsonrpc":"2.0","id":)" + id +
                                    R"(,"result":{"tools":[{"name":"act","inputSchema":)"
                                    R"({"type":"object"})" +
                                    hints + "}]}}"))) {
          return;
        }
        continue;
      }
      bool first = false;
      {
        std::lock_guard lock(mu);
        first = seen.insert(req->body).second;
      }
      if (first) {
        c.reset();
        return;
      }
      if (!c.send(answer(200, kOkBody))) {
        return;
      }
    }
  });
  Gateway gw(config(up.address(),
                    "    outlier_detection: { consecutive_failures: 0 }\n"
                    "    retry: { attempts: 2, tools: read_only, backoff: 1ms, budget: 100% }\n"));
  REQUIRE(fetch(gw.port(), listRequest()).status == 200);
  REQUIRE(fetch(gw.port(), listRequest()).status == 200);  // the same list again
  CHECK(callTool(gw, "act", 50).status == 502);
  annotated = true;
  REQUIRE(fetch(gw.port(), listRequest()).status == 200);
  CHECK(callTool(gw, "act", 51).status == 200);
  annotated = false;
  REQUIRE(fetch(gw.port(), listRequest()).status == 200);
  CHECK(callTool(gw, "act", 52).status == 502);
}

TEST_CASE("upstream retry: tools: idempotent retries readOnlyHint and idempotentHint tools",
          "[upstream_health][retry]") {
  AnnotatedTools up;
  Gateway gw(config(up.address(),
                    "    outlier_detection: { consecutive_failures: 0 }\n"
                    "    retry: { attempts: 2, tools: idempotent, backoff: 1ms, budget: 100% }\n"));
  REQUIRE(fetch(gw.port(), listRequest()).status == 200);
  CHECK(callTool(gw, "put", 20).status == 200);
  CHECK(up.attemptsOf(20) == 2);
  CHECK(callTool(gw, "look", 21).status == 200);
  CHECK(up.attemptsOf(21) == 2);
  CHECK(callTool(gw, "act", 22).status == 502);
  CHECK(up.attemptsOf(22) == 1);
}

TEST_CASE(
    "upstream retry: tools: read_only on a names: prefix route retries the owner's "
    "read-only tool by its prefixed name",
    "[upstream_health][retry][federation]") {
  AnnotatedTools a;
  AnnotatedTools b;
  const std::string retry =
      "    outlier_detection: { consecutive_failures: 0 }\n"
      "    retry: { attempts: 2, tools: read_only, backoff: 1ms, budget: 100% }\n";
  Gateway gw(
      "listen: 127.0.0.1:${PORT}\nworkers: 1\nadmin: 127.0.0.1:0\n"
      "access_log:\n  path: ${ACCESS_LOG}\n"
      "upstreams:\n  - name: a\n    endpoints: [" +
      a.address() + "]\n" + retry + "  - name: b\n    endpoints: [" + b.address() + "]\n" + retry +
      "routes:\n  - name: all\n    upstreams: [a, b]\n    names: prefix\n");
  const Response list = fetch(gw.port(), listRequest());
  INFO(list.body);
  REQUIRE(list.status == 200);
  REQUIRE(list.body.find("b__look") != std::string::npos);
  const Response look = callTool(gw, "b__look", 30);
  INFO(look.body);
  CHECK(look.status == 200);
  CHECK(b.attemptsOf(30) == 2);
  CHECK(a.attemptsOf(30) == 0);
  CHECK(callTool(gw, "a__act", 31).status == 502);
  CHECK(a.attemptsOf(31) == 1);
}

TEST_CASE("upstream health: /federation shows each federated upstream's health",
          "[upstream_health][federation]") {
  RawUpstream good{RawUpstream::respond(200, kList)};
  // Accepts and never answers: without its health check every fan-out would wait list_timeout.
  RawUpstream hung([](UpstreamConn& c) {
    if (c.readRequest()) {
      c.stall();
    }
  });
  Gateway gw(
      "listen: 127.0.0.1:${PORT}\nworkers: 2\nadmin: 127.0.0.1:0\n"
      "upstreams:\n  - name: good\n    endpoints: [" +
      good.address() + "]\n  - name: \"gone\"\n    endpoints: [" + hung.address() +
      "]\n    health_check: { probe: http, path: /healthz, interval: 1s, timeout: 200ms,"
      " unhealthy_threshold: 1 }\n"
      "routes:\n  - name: all\n    upstreams: [good, gone]\n");
  REQUIRE(waitFor(
      [&] {
        return adminGet(gw.adminPort(), "/federation").body.find(R"("gone":"unavailable")") !=
               std::string::npos;
      },
      Ms(4000)));
  const std::string body = adminGet(gw.adminPort(), "/federation").body;
  INFO(body);
  CHECK(body.find(R"("health":{"good":"healthy","gone":"unavailable"})") != std::string::npos);
  // A fan-out does not wait for the unavailable upstream (list_timeout is 5 s): it is left
  // out at once.
  const size_t asked = hung.requestCount();
  const auto t0 = std::chrono::steady_clock::now();
  fetch(gw.port(), listRequest(), Ms(10000));
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1000));
  CHECK(hung.requestCount() - asked <= 1);  // at most a probe, never the list
}

}  // namespace

namespace {

constexpr char kListenAck[] =
    R"({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",)"
    R"("params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true}}})";

// An upstream that acknowledges a listen request and holds the stream, and answers GET
// /healthz with 200 while `healthy` (503 otherwise).
UpstreamScript listenAndHealth(const std::atomic<bool>& healthy) {
  return [&healthy](UpstreamConn& c) {
    while (auto req = c.readRequest(Ms(10000))) {
      if (req->requestLine().find("/healthz") != std::string::npos) {
        if (!c.send(answer(healthy ? 200 : 503, "{}"))) {
          return;
        }
        continue;
      }
      c.send(sseHead() + chunk(std::string("event: message\ndata: ") + kListenAck + "\n\n"));
      c.waitPeerClose(Ms(30000));
      return;
    }
  };
}

}  // namespace

TEST_CASE(
    "upstream health: merged listen streams hear list_changed when an upstream leaves "
    "and when it comes back",
    "[upstream_health][federation][slow]") {
  std::atomic<bool> flaky_healthy{true};
  std::atomic<bool> steady_healthy{true};
  RawUpstream flaky(listenAndHealth(flaky_healthy));
  RawUpstream steady(listenAndHealth(steady_healthy));
  Gateway gw(
      "listen: 127.0.0.1:${PORT}\nworkers: 1\nadmin: 127.0.0.1:0\nmcp:\n  sse_keepalive: 0s\n"
      "upstreams:\n  - name: flaky\n    endpoints: [" +
      flaky.address() +
      "]\n    health_check: { probe: http, path: /healthz, interval: 1s, timeout: 300ms,"
      " unhealthy_threshold: 1, healthy_threshold: 1 }\n"
      "  - name: steady\n    endpoints: [" +
      steady.address() +
      "]\nroutes:\n  - name: all\n    upstreams: [flaky, steady]\n"
      "federation:\n  list_timeout: 2s\n");
  // Asks for tools only: prompts and resources changes are not sent to it.
  Client client(gw.port());
  REQUIRE(client.send(toolsListenRequest()));
  auto head = client.readHead(Ms(5000));
  INFO("gateway stderr:\n" << gw.process().stderrText());
  REQUIRE(head);
  REQUIRE(head->status == 200);
  REQUIRE(client.readBodyUntil("notifications/subscriptions/acknowledged", Ms(5000)));
  constexpr std::string_view kToolsChanged = "notifications/tools/list_changed";
  // Nothing changes while both stay healthy.
  CHECK_FALSE(client.readBodyUntil(kToolsChanged, Ms(1500)));

  // flaky's health check fails: it leaves (within its 1 s interval and the stream's 1 s look).
  flaky_healthy = false;
  const size_t before_leave = client.body().size();
  REQUIRE(client.readBodyUntil(kToolsChanged, Ms(5000), before_leave));
  const size_t after_leave = client.body().size();
  // It comes back: a second list_changed.
  flaky_healthy = true;
  REQUIRE(client.readBodyUntil(kToolsChanged, Ms(5000), after_leave));
  CHECK(client.body().find("prompts/list_changed") == std::string::npos);
  CHECK(client.body().find("resources/list_changed") == std::string::npos);
  // One notification per transition, not one per look.
  const std::string& b = client.body();
  size_t count = 0;
  for (size_t at = b.find(kToolsChanged); at != std::string::npos;
       at = b.find(kToolsChanged, at + 1)) {
    ++count;
  }
  CHECK(count == 2);
}

namespace {

// tests/fixtures/fed-server.mjs (the v2 TypeScript SDK) named `name` with one tool
// `<name>_tool`, on `port` (0: any).
std::unique_ptr<Process> sdkServer(const TempDir& dir, const std::string& name, uint16_t port) {
  return std::make_unique<Process>(
      std::vector<std::string>{"node",
                               std::string(GW_SOURCE_DIR) + "/tests/fixtures/fed-server.mjs",
                               std::to_string(port)},
      dir.path(), "health-" + name + "-" + std::to_string(port),
      std::vector<std::string>{"FED_NAME=" + name, "FED_TOOLS=" + name + "_tool"});
}

}  // namespace

TEST_CASE(
    "upstream health: a real SDK server stopped leaves a federated route at once and "
    "rejoins it when started again",
    "[upstream_health][federation][sdk][slow]") {
  TempDir dir;
  auto alpha = sdkServer(dir, "alpha", 0);
  auto beta = sdkServer(dir, "beta", 0);
  const uint16_t alpha_port = fixturePort(*alpha, "fed-server.mjs");
  const uint16_t beta_port = fixturePort(*beta, "fed-server.mjs");
  const std::string check =
      "    health_check: { probe: mcp, interval: 1s, timeout: 500ms, unhealthy_threshold: 1,"
      " healthy_threshold: 1 }\n";
  Gateway gw(
      "listen: 127.0.0.1:${PORT}\nworkers: 2\nadmin: 127.0.0.1:0\n"
      "upstreams:\n  - name: alpha\n    endpoints: [127.0.0.1:" +
      std::to_string(alpha_port) + "]\n" + check +
      "  - name: beta\n    endpoints: [127.0.0.1:" + std::to_string(beta_port) + "]\n" + check +
      "routes:\n  - name: all\n    upstreams: [alpha, beta]\n"
      "federation:\n  list_timeout: 5s\n");
  auto health = [&] { return adminGet(gw.adminPort(), "/federation").body; };
  REQUIRE(
      waitFor([&] { return health().find(R"("beta":"healthy")") != std::string::npos; }, Ms(5000)));
  Response list = fetch(gw.port(), listRequest());
  INFO(list.body);
  REQUIRE(list.status == 200);
  CHECK(list.body.find("alpha_tool") != std::string::npos);
  CHECK(list.body.find("beta_tool") != std::string::npos);
  CHECK(callTool(gw, "beta_tool", 40).status == 200);

  // Stopped: its health check takes it down within a probe interval.
  beta->terminate();
  REQUIRE(waitFor([&] { return health().find(R"("beta":"unavailable")") != std::string::npos; },
                  Ms(5000)));
  INFO("after the stop: " << health() << "\ngateway stderr:\n" << gw.process().stderrText());
  // Lists leave it out without waiting for it; the other upstream serves on.
  const auto t0 = std::chrono::steady_clock::now();
  list = fetch(gw.port(), listRequest());
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(1000));
  CHECK(list.status == 200);
  CHECK(list.body.find("alpha_tool") != std::string::npos);
  CHECK(list.body.find("beta_tool") == std::string::npos);
  CHECK(callTool(gw, "alpha_tool", 41).status == 200);

  // Started again on its port: the health check brings it back, and lists have its tool again.
  beta = sdkServer(dir, "beta", beta_port);
  REQUIRE(fixturePort(*beta, "fed-server.mjs") == beta_port);
  REQUIRE(
      waitFor([&] { return health().find(R"("beta":"healthy")") != std::string::npos; }, Ms(5000)));
  list = fetch(gw.port(), listRequest());
  CHECK(list.status == 200);
  CHECK(list.body.find("beta_tool") != std::string::npos);
  CHECK(callTool(gw, "beta_tool", 43).status == 200);
  beta->terminate();
  alpha->terminate();
}

TEST_CASE(
    "upstream health: probe: mcp counts a ping result or a 2026 server's -32601 as up, "
    "anything else as down",
    "[upstream_health][slow]") {
  // What the upstream answers the probe's ping.
  enum Mode : int { kResult, kNotFoundJsonRpc, kNotFoundPlain, kOkNotJsonRpc, kUnauthorized };
  std::atomic<int> mode{kResult};
  std::atomic<int> probes{0};
  std::mutex mu;
  std::string probe_seen;
  RawUpstream up([&](UpstreamConn& c) {
    while (auto req = c.readRequest(Ms(3000))) {
      if (req->header("mcp-method").value_or("") != "ping") {
        if (!c.send(answer(200, kOkBody))) {
          return;
        }
        continue;
      }
      ++probes;
      {
        std::lock_guard lock(mu);
        probe_seen = req->head + req->body;
      }
      std::string a;
      switch (mode.load()) {
        case kResult:
          a = answer(200, R"({"jsonrpc":"2.0","id":"gw-health","result":{}})");
          break;
        case kNotFoundJsonRpc:
          a = answer(404, R"({"jsonrpc":"2.0","id":"gw-health","error":{"code":-32601,)"
                          R"("message":"Method not found"}})");
          break;
        case kNotFoundPlain:
          a = "HTTP/1.1 404 Not Found\r\nContent-Type: text/html\r\nContent-Length: 9\r\n\r\nNot "
              "Found";
          break;
        case kOkNotJsonRpc:
          a = answer(200, R"({"status":"ok"})");
          break;
        default:
          a = answer(401, R"({"error":"unauthorized"})");
          break;
      }
      if (!c.send(a)) {
        return;
      }
    }
  });
  Gateway gw(config(up.address(),
                    "    health_check: { probe: mcp, interval: 1s, timeout: 300ms,"
                    " unhealthy_threshold: 1, healthy_threshold: 1 }\n"));
  auto state = [&] { return adminGet(gw.adminPort(), "/upstreams").body; };
  auto isDown = [&] { return state().find(R"("state":"down")") != std::string::npos; };
  REQUIRE(waitFor([&] { return probes >= 1; }, Ms(3000)));
  {
    std::lock_guard lock(mu);
    INFO(probe_seen);
    CHECK(probe_seen.find("POST /mcp ") == 0);
    CHECK(probe_seen.find("MCP-Protocol-Version: 2026-07-28") != std::string::npos);
    CHECK(probe_seen.find(R"("method":"ping")") != std::string::npos);
    CHECK(probe_seen.find("io.modelcontextprotocol/clientInfo") != std::string::npos);
    CHECK(probe_seen.find("io.modelcontextprotocol/clientCapabilities") != std::string::npos);
  }
  CHECK_FALSE(isDown());
  for (int down_mode : {kNotFoundPlain, kOkNotJsonRpc, kUnauthorized}) {
    INFO("mode " << down_mode);
    mode = down_mode;
    CHECK(waitFor(isDown, Ms(4000)));
    // A 2026-07-28 server that answers ping with -32601: up again.
    mode = kNotFoundJsonRpc;
    CHECK(waitFor([&] { return !isDown(); }, Ms(4000)));
  }
  CHECK(call(gw).status == 200);
  // Each transition counted once.
  const std::string metrics = adminGet(gw.adminPort(), "/metrics").body;
  INFO(metrics);
  const std::string labels = "upstream=\"flaky\",endpoint=\"" + up.address() + "\",to=";
  CHECK(sample(metrics, "mcp_gateway_upstream_health_transitions_total{" + labels + "\"down\"}") ==
        3);
  CHECK(sample(metrics, "mcp_gateway_upstream_health_transitions_total{" + labels + "\"up\"}") ==
        3);
}
