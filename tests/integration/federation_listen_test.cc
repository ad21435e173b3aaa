// Federation (issue #15), the merged subscriptions/listen stream against raw upstreams: an
// upstream whose stream acknowledges and then ends at once is reopened with a backoff that
// grows (1 s, 2 s, 4 s, … up to 30 s) — an acknowledgement alone does not make it healthy
// again, only a stream that stayed open for 30 s does.

#include <catch.hpp>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kAck[] = R"({"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged",)"
                        R"("params":{"notifications":{"toolsListChanged":true}}})";

constexpr char kYaml[] = R"(listen: "127.0.0.1:${PORT}"
workers: 1
mcp:
  sse_keepalive: 0s
upstreams:
  - name: flaky
    endpoints: ["${A}"]
  - name: steady
    endpoints: ["${B}"]
routes:
  - name: default
    upstreams: [flaky, steady]
federation:
  list_timeout: 2s
access_log: { path: "${ACCESS_LOG}" }
)";

// Reads one request, acknowledges it, then ends the stream (`hold`: keeps it open instead).
UpstreamScript acknowledging(bool hold) {
  return [hold](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    c.send(sseHead(hold ? "" : "Connection: close\r\n") +
           chunk(std::string("event: message\ndata: ") + kAck + "\n\n"));
    if (hold) {
      c.waitPeerClose(Ms(30000));
      return;
    }
    c.send(chunk(""));  // the last chunk: the stream ended
    c.close();
  };
}

}  // namespace

TEST_CASE("federation: an upstream listen stream that acks then ends is reopened with backoff",
          "[federation][slow]") {
  RawUpstream flaky(acknowledging(false));
  RawUpstream steady(acknowledging(true));
  Gateway gw(kYaml, {{"A", flaky.address()}, {"B", steady.address()}});

  Client client(gw.port());
  REQUIRE(client.send(toolsListenRequest()));
  auto head = client.readHead(Ms(5000));
  INFO("gateway stderr:\n" << gw.process().stderrText());
  REQUIRE(head);
  REQUIRE(head->status == 200);
  REQUIRE(client.readBodyUntil("notifications/subscriptions/acknowledged", Ms(5000)));

  // With the client listening, the flaky stream is reopened 1 s after it ended, then 2 s after
  // the reopened one ended (t = 1, 3 s) — not every second. The upstream records when each
  // listen request arrived; the stream ends at once, so the gaps are the backoffs.
  const bool reopened_twice = flaky.waitForRequests(3, Ms(6000));
  const std::vector<RecordedRequest> opens = flaky.requests();
  REQUIRE(opens.size() >= 2);
  const long long first_gap = msBetween(opens[0].at, opens[1].at);
  INFO("flaky upstream's listen requests: " << opens.size() << ", 1st reopen after " << first_gap
                                            << " ms");
  CHECK(first_gap >= 950);
  CHECK(first_gap < 1900);
  REQUIRE(reopened_twice);
  const long long second_gap = msBetween(opens[1].at, opens[2].at);
  INFO("2nd reopen after " << second_gap << " ms");
  CHECK(second_gap >= 1950);  // the backoff doubled
  CHECK(second_gap < 3500);
  CHECK(steady.requestCount() == 1);
  client.close();
}
