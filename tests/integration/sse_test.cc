// Streamed (text/event-stream) responses through the real mcp-gateway binary (issue 2):
// events relayed as they arrive, X-Accel-Buffering, comments, keep-alive injection at event
// boundaries only, backpressure, cancellation by client disconnect, idle and total timeouts.

#include <catch.hpp>

#include <atomic>
#include <string>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

GatewayConfig configFor(const RawUpstream& up) {
  GatewayConfig cfg;
  cfg.upstream_endpoints = {up.address()};
  return cfg;
}

// Whether every line of `text` is empty or an SSE comment (starts with ':'), and at least one
// comment is present.
bool onlyComments(std::string_view text) {
  bool any = false;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) {
      return false;  // an unterminated line
    }
    std::string_view line = text.substr(pos, end - pos);
    if (!line.empty() && line != "\r") {
      if (line.front() != ':') {
        return false;
      }
      any = true;
    }
    pos = end + 1;
  }
  return any;
}

// Reads until the streamed response ends: last chunk / end of framing, or the connection
// closing. True if it ended within timeout.
bool streamEnds(Client& c, Ms timeout) {
  if (c.readBodyToEnd(timeout)) {
    return true;
  }
  return c.peerClosed();
}

// One tools/call on `c`: a 200 whose streamed body, read to its end, is exactly `events`.
void expectStream(Client& c, const std::string& events) {
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  auto head = c.readHead();
  REQUIRE(head);
  CHECK(head->status == 200);
  REQUIRE(c.readBodyToEnd(Ms(5000)));
  CHECK(c.body() == events);
}

}  // namespace

TEST_CASE("sse: events are relayed as they arrive, chunked, with X-Accel-Buffering once",
          "[sse][slow]") {
  bool upstream_sends_xab = GENERATE(false, true);
  INFO("upstream sends X-Accel-Buffering: " << upstream_sends_xab);
  const std::string e1 = "event: message\ndata: {\"n\":1}\n\n";
  const std::string e2 = ": ping\n\ndata: {\"n\":2}\n\n";
  RawUpstream up([&](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    c.send(sseHead(upstream_sends_xab ? "X-Accel-Buffering: no\r\n" : "") + chunk(e1));
    c.sleep(Ms(300));
    c.mark("second");
    c.send(chunk(e2));
    c.sleep(Ms(300));
    c.send(chunk(""));
  });
  Gateway gw(configFor(up));
  Client c(gw.port());
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  auto head = c.readHead();
  REQUIRE(head);
  INFO("response head:\n" << head->head);
  CHECK(head->status == 200);
  CHECK(head->header("Content-Type") == "text/event-stream");
  CHECK(head->headerCount("X-Accel-Buffering") == 1);
  CHECK(head->header("X-Accel-Buffering") == "no");
  CHECK(head->chunked);
  auto first = c.readBodyUntil(e1, Ms(2000));
  REQUIRE(first);
  REQUIRE(c.readBodyToEnd(Ms(3000)));
  CHECK(c.body() == e1 + e2);
  auto second = up.markAt("second");
  REQUIRE(second);
  CHECK(*first < *second);
}

TEST_CASE("sse: keep-alive comment injected after upstream silence, at an event boundary",
          "[sse]") {
  RawUpstream up([](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    c.send(sseHead() + chunk("data: 1\n\n"));
    c.sleep(Ms(700));
    c.send(chunk("data: 2\n\n"));
    c.send(chunk(""));
  });
  GatewayConfig cfg = configFor(up);
  cfg.sse_keepalive = "200ms";
  Gateway gw(cfg);
  Client c(gw.port());
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  REQUIRE(c.readHead());
  REQUIRE(c.readBodyToEnd(Ms(3000)));
  const std::string& body = c.body();
  INFO("body: " << body);
  size_t after1 = body.find("data: 1\n\n");
  size_t at2 = body.find("data: 2\n\n");
  REQUIRE(after1 != std::string::npos);
  REQUIRE(at2 != std::string::npos);
  after1 += 9;
  REQUIRE(after1 <= at2);
  CHECK(onlyComments(std::string_view(body).substr(after1, at2 - after1)));
}

TEST_CASE("sse: no keep-alive comment is injected inside a half-sent event", "[sse]") {
  RawUpstream up([](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    c.send(sseHead() + chunk("data: 1\n\n") + chunk("data: hel"));
    c.sleep(Ms(700));
    c.send(chunk("lo\n\n"));
    c.send(chunk(""));
  });
  GatewayConfig cfg = configFor(up);
  cfg.sse_keepalive = "200ms";
  Gateway gw(cfg);
  Client c(gw.port());
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  REQUIRE(c.readHead());
  REQUIRE(c.readBodyToEnd(Ms(3000)));
  CHECK(c.body().starts_with("data: 1\n\ndata: hello\n\n"));
}

TEST_CASE("sse: a client that stops reading does not make the gateway buffer the stream",
          "[sse][backpressure][slow]") {
  constexpr size_t kTotal = 200u << 20;
  std::atomic<size_t> sent{0};
  RawUpstream up([&](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    if (!c.send(sseHead())) {
      return;
    }
    std::string event = "data: " + std::string(64 * 1024 - 8, 'x') + "\n\n";
    std::string framed = chunk(event);
    while (sent.load() < kTotal) {
      if (!c.send(framed, Ms(8000))) {
        return;
      }
      sent += event.size();
    }
    c.send(chunk(""));
  });
  Gateway gw(configFor(up));
  Client c(gw.port(), Ms(2000), 64 * 1024);
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  REQUIRE(c.readHead());
  long base = rssKb(gw.pid());
  REQUIRE(base > 0);
  // Stays: 3 s in which the client reads nothing while the upstream pushes is the behaviour.
  std::this_thread::sleep_for(Ms(3000));
  long grown = rssKb(gw.pid()) - base;
  INFO("gateway RSS growth " << grown << " KiB; upstream sent " << (sent.load() >> 20) << " MiB");
  CHECK(grown < 64 * 1024);
  CHECK(sent.load() < kTotal);
  // Reading resumes the flow: another 16 MiB arrive promptly.
  size_t before = sent.load();
  CHECK(c.drainBody(16u << 20, Ms(8000)) >= (16u << 20));
  CHECK(sent.load() > before);
  c.close();
}

TEST_CASE("sse: client disconnect mid-stream closes the upstream connection within 1 s",
          "[sse][cancel]") {
  RawUpstream up([](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    c.send(sseHead() + chunk("data: started\n\n"));
    c.waitPeerClose(Ms(5000));
  });
  Gateway gw(configFor(up));
  Client c(gw.port());
  REQUIRE(c.send(mcpPost(toolsCallBody("slow"), "", "slow")));
  REQUIRE(c.readHead());
  REQUIRE(c.readBodyUntil("data: started\n\n", Ms(2000)));
  auto t0 = Clock::now();
  c.close();
  auto deadline = Clock::now() + Ms(2000);
  while (up.peerCloses().empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(Ms(10));
  }
  REQUIRE(up.peerCloses().size() == 1);
  CHECK(msBetween(t0, up.peerCloses()[0]) < 1000);
}

TEST_CASE("sse: stream_idle_timeout ends a silent stream", "[sse][timeout]") {
  RawUpstream up([](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    c.send(sseHead() + chunk("data: 1\n\n"));
    c.waitPeerClose(Ms(8000));
  });
  GatewayConfig cfg = configFor(up);
  cfg.stream_idle_timeout = "500ms";
  Gateway gw(cfg);
  Client c(gw.port());
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  REQUIRE(c.readHead());
  REQUIRE(c.readBodyUntil("data: 1\n\n", Ms(2000)));
  auto t0 = Clock::now();
  CHECK(streamEnds(c, Ms(2500)));
  auto took = msBetween(t0, Clock::now());
  CHECK(took >= 400);
  CHECK(took < 2000);
  // The upstream connection is let go too.
  auto deadline = Clock::now() + Ms(1000);
  while (up.peerCloses().empty() && Clock::now() < deadline) {
    std::this_thread::sleep_for(Ms(10));
  }
  CHECK(up.peerCloses().size() == 1);
}

TEST_CASE("sse: max_duration ends a stream that keeps sending", "[sse][timeout][slow]") {
  RawUpstream up([](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    c.send(sseHead());
    for (int i = 0; i < 80; ++i) {
      if (!c.send(chunk("data: " + std::to_string(i) + "\n\n"))) {
        return;
      }
      c.sleep(Ms(100));
    }
    c.send(chunk(""));
  });
  GatewayConfig cfg = configFor(up);
  cfg.max_duration = "1s";
  Gateway gw(cfg);
  Client c(gw.port());
  auto t0 = Clock::now();
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  REQUIRE(c.readHead());
  CHECK(streamEnds(c, Ms(4000)));
  auto took = msBetween(t0, Clock::now());
  CHECK(took >= 800);
  CHECK(took < 2500);
  CHECK(c.body().find("data: 3\n\n") != std::string::npos);
}

TEST_CASE("sse: a burst of thousands of small events in one upstream write is relayed whole",
          "[sse]") {
  // Many chunks arrive in one read: they are re-framed as one client chunk per read, and the
  // SSE framer walks every piece of it (more pieces than one peek returns).
  constexpr int kEvents = 4000;
  std::string events;
  std::string burst = sseHead("");
  for (int i = 0; i < kEvents; ++i) {
    std::string e = "data: {\"n\":" + std::to_string(i) + "}\n\n";
    events += e;
    burst += chunk(e);
  }
  burst += chunk("");
  // The answer keeps the connection alive, so the upstream serves every request on it (an
  // upstream that closed after one answer would race the next request on the pooled
  // connection).
  RawUpstream up([&](UpstreamConn& c) {
    while (c.readRequest()) {
      if (!c.send(burst)) {
        return;
      }
    }
  });
  Gateway gw(configFor(up));
  Client c(gw.port());
  for (int round = 0; round < 3; ++round) {
    INFO("round " << round);
    expectStream(c, events);
  }
}

TEST_CASE("sse: chunk framing split anywhere across upstream reads is decoded exactly",
          "[sse][chunked]") {
  // Each piece is its own upstream write, apart in time, so the gateway sees it in its own
  // read: size lines, chunk extensions, the CRLF after data and the trailer section are all
  // cut in the middle. The answer ends exactly where the upstream's did: the pooled upstream
  // connection carries the next exchange.
  const std::string e1 = "data: 0123456789\ndata: x\n\n";
  const std::string e2 = ": keep\n\ndata: split\n\n";
  char ext_size[16];
  std::snprintf(ext_size, sizeof(ext_size), "%zx", e2.size());
  const std::string body =
      chunk(e1) + ext_size + ";ext=\"q\"\r\n" + e2 + "\r\n0\r\nX-Trailer: 1\r\n\r\n";
  const std::string events = e1 + e2;
  // Pieces of 1, 2, 3, 1, 2, 3 ... bytes: every kind of split comes up.
  std::vector<std::string> pieces;
  for (size_t at = 0, n = 1; at < body.size(); at += n, n = n % 3 + 1) {
    pieces.push_back(body.substr(at, n));
  }
  RawUpstream up([&](UpstreamConn& c) {
    while (c.readRequest()) {
      if (!c.send(sseHead())) {
        return;
      }
      for (const std::string& p : pieces) {
        c.sleep(Ms(5));
        if (!c.send(p)) {
          return;
        }
      }
    }
  });
  Gateway gw(configFor(up));
  Client c(gw.port());
  for (int round = 0; round < 2; ++round) {
    INFO("round " << round);
    expectStream(c, events);
  }
  CHECK(up.acceptCount() == 1);
}

TEST_CASE("sse: a malformed chunk mid-stream: what came before is relayed, then the answer is cut",
          "[sse][chunked]") {
  RawUpstream up([](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    c.send(sseHead() + chunk("data: 1\n\n"));
    c.sleep(Ms(50));
    c.send("zz\r\ndata: 2\n\n\r\n");
    c.sleep(Ms(2000));
  });
  Gateway gw(configFor(up));
  Client c(gw.port());
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  auto head = c.readHead();
  REQUIRE(head);
  CHECK(head->status == 200);
  auto t0 = Clock::now();
  CHECK_FALSE(c.readBodyToEnd(Ms(3000)));
  CHECK(c.peerClosed());
  CHECK(msBetween(t0, Clock::now()) < 1500);
  CHECK(c.body() == "data: 1\n\n");
  CHECK(waitFor(
      [&] { return readFile(gw.accessLogPath()).find("upstream_bad_chunk") != std::string::npos; },
      Ms(2000)));
}
