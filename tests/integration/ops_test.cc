// Operations through the real mcp-gateway binary (issue 6, items 3, 4, 6): SIGHUP reload under
// load, across an open SSE stream and with an invalid file; SIGTERM drain with an open stream
// (completes, /readyz 503, no new connections served, exit 0), with a stream outliving
// drain_timeout (cut, exit 0 on time), and with idle keep-alive connections (closed at once).

#include <signal.h>
#include <sys/types.h>

#include <catch.hpp>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <initializer_list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const std::string kBodyA = R"({"jsonrpc":"2.0","id":1,"result":{"from":"A"}})";
const std::string kBodyB = R"({"jsonrpc":"2.0","id":1,"result":{"from":"B"}})";

// One gateway configuration: every request is routed to the one upstream `upstream_addr`
// (a tools/call route and a default route, both named after `tag` so two configs differ in
// route set, upstream name and timeouts). ${PORT} and ${ACCESS_LOG} stay placeholders.
struct OpsConfig {
  std::string tag = "a";
  std::string upstream_addr;
  std::string response_timeout = "10s";
  std::string drain_timeout = "10s";
  int workers = 1;
  bool admin = false;  // an admin listener on a port the gateway chooses (Gateway::adminPort)
};

std::string opsYaml(const OpsConfig& c) {
  std::string y = "listen: 127.0.0.1:${PORT}\n";
  y += "endpoint: /mcp\n";
  y += "workers: " + std::to_string(c.workers) + "\n";
  if (c.admin) {
    y += "admin: 127.0.0.1:0\n";
  }
  y += "drain_timeout: " + c.drain_timeout + "\n";
  y += "limits:\n  keepalive_timeout: 60s\n";
  y += "upstreams:\n";
  y += "  - name: up-" + c.tag + "\n";
  y += "    endpoints: [" + c.upstream_addr + "]\n";
  y += "    connect_timeout: 2s\n";
  y += "    response_timeout: " + c.response_timeout + "\n";
  y += "routes:\n";
  y += "  - name: tools-" + c.tag + "\n";
  y += "    match:\n      method: tools/call\n";
  y += "    upstream: up-" + c.tag + "\n";
  y += "  - name: default-" + c.tag + "\n";
  y += "    upstream: up-" + c.tag + "\n";
  y += "access_log:\n  path: ${ACCESS_LOG}\n";
  return y;
}

// Writes the next config for gw (placeholders filled) atomically: temp file, then rename.
void rewriteConfig(Gateway& gw, const std::string& yaml_template) {
  std::string text = expand(
      yaml_template, {{"PORT", std::to_string(gw.port())}, {"ACCESS_LOG", gw.accessLogPath()}});
  std::string tmp = gw.configPath() + ".next";
  REQUIRE(writeFile(tmp, text));
  REQUIRE(std::rename(tmp.c_str(), gw.configPath().c_str()) == 0);
}

size_t countOf(const std::string& text, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

// Whether `pid` has a handler installed for every signal in sigs (SigCgt in /proc/<pid>/status).
// The gateway binds its listeners before it installs its signal handlers, so a signal sent as
// soon as the port accepts could still hit the default action.
bool waitSignalsCaught(pid_t pid, std::initializer_list<int> sigs, Ms timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    std::string status = readFile("/proc/" + std::to_string(pid) + "/status");
    size_t pos = status.find("SigCgt:");
    if (pos != std::string::npos) {
      unsigned long long mask = std::strtoull(status.c_str() + pos + 7, nullptr, 16);
      bool all = true;
      for (int s : sigs) {
        all = all && (mask & (1ull << (s - 1))) != 0;
      }
      if (all) {
        return true;
      }
    }
    if (Clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(Ms(10));
  }
}

std::string reloadedLine(Gateway& gw) {
  return "reloaded " + gw.configPath();
}

// SIGHUP, then waits until the log shows one more successful reload than `before`.
bool reloadAndWait(Gateway& gw, size_t before, Ms timeout = Ms(5000)) {
  if (::kill(gw.pid(), SIGHUP) != 0) {
    return false;
  }
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (countOf(gw.process().stderrText(), reloadedLine(gw)) > before) {
      return true;
    }
    std::this_thread::sleep_for(Ms(5));
  }
  return false;
}

// One request on c; the response if it came back complete.
std::optional<Response> roundTrip(Client& c, Ms timeout = Ms(5000)) {
  if (!c.send(mcpPost(toolsCallBody()))) {
    return std::nullopt;
  }
  return c.readResponse(timeout);
}

// Body of a 200 answer to one request on a fresh connection; "" on any failure.
std::string bodyOfNewRequest(uint16_t port) {
  Client c(port);
  auto r = roundTrip(c);
  if (!r || r->status != 200) {
    return "";
  }
  return r->body;
}

// Status of GET path on the admin listener; 0 if there was no answer.
int adminStatus(uint16_t admin_port, std::string_view path) {
  Client c(admin_port, Ms(1000));
  if (!c.connected()) {
    return 0;
  }
  std::string req =
      "GET " + std::string(path) + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (!c.send(req)) {
    return 0;
  }
  auto r = c.readResponse(Ms(2000));
  return r ? r->status : 0;
}

std::string sseEvent(int n) {
  return "event: message\ndata: {\"n\":" + std::to_string(n) + "}\n\n";
}

// An upstream answering each request with an SSE stream of `events` events, `gap` apart
// (marks "first" after event 0 and "last" after the last chunk), then closing. A failed send
// (gateway gone) marks "cut".
UpstreamScript sseScript(int events, Ms gap) {
  return [=](UpstreamConn& c) {
    if (!c.readRequest()) {
      return;
    }
    if (!c.send(sseHead() + chunk(sseEvent(0)))) {
      c.mark("cut");
      return;
    }
    c.mark("first");
    for (int i = 1; i < events; ++i) {
      c.sleep(gap);
      if (!c.send(chunk(sseEvent(i)), Ms(2000))) {
        c.mark("cut");
        return;
      }
    }
    if (!c.send(chunk(""))) {
      c.mark("cut");
      return;
    }
    c.mark("last");
    c.waitPeerClose(Ms(5000));
  };
}

std::string allEvents(int events) {
  std::string s;
  for (int i = 0; i < events; ++i) {
    s += sseEvent(i);
  }
  return s;
}

}  // namespace

TEST_CASE("ops: 20 SIGHUP reloads under continuous load fail no request", "[ops][reload]") {
  RawUpstream up_a(RawUpstream::respond(200, kBodyA));
  RawUpstream up_b(RawUpstream::respond(200, kBodyB));
  OpsConfig cfg_a{
      .tag = "a", .upstream_addr = up_a.address(), .response_timeout = "10s", .workers = 2};
  OpsConfig cfg_b{
      .tag = "b", .upstream_addr = up_b.address(), .response_timeout = "7s", .workers = 2};
  Gateway gw(opsYaml(cfg_a));
  REQUIRE(waitSignalsCaught(gw.pid(), {SIGHUP, SIGTERM}, Ms(3000)));

  std::atomic<bool> stop{false};
  std::atomic<int> done{0};
  std::atomic<int> seen_a{0};
  std::atomic<int> seen_b{0};
  std::mutex mu;
  std::vector<std::string> failures;
  auto client = [&](int id) {
    auto deadline = Clock::now() + Ms(30000);
    for (int conn = 0; !stop.load() && Clock::now() < deadline && done.load() < 20000; ++conn) {
      Client c(gw.port());
      // 1..4 requests per connection: new connections and keep-alive reuse interleave.
      int per_conn = (conn + id) % 4 + 1;
      for (int k = 0; k < per_conn && !stop.load(); ++k) {
        auto r = roundTrip(c);
        std::string what;
        if (!r) {
          what = "no complete response";
        } else if (r->status != 200) {
          what = "status " + std::to_string(r->status) + " body " + r->body;
        } else if (r->body == kBodyA) {
          ++seen_a;
        } else if (r->body == kBodyB) {
          ++seen_b;
        } else {
          what = "unexpected body " + r->body;
        }
        if (!what.empty()) {
          std::lock_guard<std::mutex> lock(mu);
          failures.push_back("client " + std::to_string(id) + " conn " + std::to_string(conn) +
                             " request " + std::to_string(k) + ": " + what);
          break;
        }
        ++done;
      }
    }
  };
  std::vector<std::thread> clients;
  for (int i = 0; i < 3; ++i) {
    clients.emplace_back(client, i);
  }
  auto wait_done = [&](int n) {
    auto deadline = Clock::now() + Ms(5000);
    while (done.load() < n && Clock::now() < deadline) {
      std::this_thread::sleep_for(Ms(5));
    }
    return done.load() >= n;
  };
  bool warmed = wait_done(20);

  bool all_applied = true;
  int applied = 0;
  for (int i = 0; i < 20 && warmed; ++i) {
    rewriteConfig(gw, opsYaml(i % 2 == 0 ? cfg_b : cfg_a));
    size_t before = countOf(gw.process().stderrText(), reloadedLine(gw));
    if (!reloadAndWait(gw, before)) {
      all_applied = false;
      break;
    }
    ++applied;
    // Some requests run on each configuration before the next reload.
    int now = done.load();
    wait_done(now + 10);
  }
  wait_done(done.load() + 20);
  stop = true;
  for (auto& t : clients) {
    t.join();
  }

  std::string log = gw.process().stderrText();
  INFO("gateway stderr:\n" << log.substr(log.size() > 4000 ? log.size() - 4000 : 0));
  {
    std::lock_guard<std::mutex> lock(mu);
    INFO("first failure: " << (failures.empty() ? std::string("none") : failures.front()));
    CHECK(failures.empty());
  }
  REQUIRE(warmed);
  CHECK(all_applied);
  CHECK(applied == 20);
  CHECK(countOf(log, reloadedLine(gw)) >= 20);
  CHECK(countOf(log, "reload failed") == 0);
  INFO("requests: " << done.load() << " (A " << seen_a.load() << ", B " << seen_b.load() << ")");
  CHECK(done.load() >= 200);
  CHECK(seen_a.load() > 0);
  CHECK(seen_b.load() > 0);
  CHECK(gw.process().running());
  // The last config written (i = 19) routes to A.
  CHECK(bodyOfNewRequest(gw.port()) == kBodyA);
}

TEST_CASE("ops: an SSE stream open across a reload completes on its old config",
          "[ops][reload][sse][slow]") {
  constexpr int kEvents = 10;
  RawUpstream up_a(sseScript(kEvents, Ms(120)));
  RawUpstream up_b(RawUpstream::respond(200, kBodyB));
  OpsConfig cfg_a{.tag = "a", .upstream_addr = up_a.address()};
  // Config B no longer names upstream A at all: the open stream must keep its snapshot.
  OpsConfig cfg_b{.tag = "b", .upstream_addr = up_b.address(), .response_timeout = "3s"};
  Gateway gw(opsYaml(cfg_a));
  REQUIRE(waitSignalsCaught(gw.pid(), {SIGHUP}, Ms(3000)));

  Client c(gw.port());
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  auto head = c.readHead();
  REQUIRE(head);
  CHECK(head->status == 200);
  CHECK(head->chunked);
  REQUIRE(c.readBodyUntil(sseEvent(2), Ms(3000)));

  rewriteConfig(gw, opsYaml(cfg_b));
  REQUIRE(reloadAndWait(gw, 0));
  auto reloaded_at = Clock::now();
  // The reload really happened mid-stream: the upstream had not finished yet.
  CHECK_FALSE(up_a.markAt("last").has_value());

  REQUIRE(c.readBodyToEnd(Ms(5000)));
  CHECK(c.current().complete);
  CHECK(c.body() == allEvents(kEvents));
  CHECK(c.received().ends_with("0\r\n\r\n"));
  // The upstream records "last" just after its send returns: the client may be faster.
  REQUIRE(up_a.waitForMark("last", Ms(1000)));
  auto last = up_a.markAt("last");
  REQUIRE(last);
  CHECK(*last > reloaded_at);
  CHECK_FALSE(up_a.markAt("cut").has_value());

  // After the reload: the same keep-alive connection and a new one see config B.
  auto again = roundTrip(c);
  REQUIRE(again);
  CHECK(again->status == 200);
  CHECK(again->body == kBodyB);
  CHECK(bodyOfNewRequest(gw.port()) == kBodyB);
  CHECK(up_a.requestCount() == 1);
  CHECK(gw.process().running());
}

TEST_CASE("ops: an invalid config on SIGHUP is logged with file:line:col and not applied",
          "[ops][reload]") {
  RawUpstream up_a(RawUpstream::respond(200, kBodyA));
  RawUpstream up_b(RawUpstream::respond(200, kBodyB));
  OpsConfig cfg_a{.tag = "a", .upstream_addr = up_a.address()};
  OpsConfig cfg_b{.tag = "b", .upstream_addr = up_b.address()};
  std::string valid_b = opsYaml(cfg_b);

  // Each invalid variant is config B with one defect; `line` is its 1-based line (0: any).
  struct Bad {
    const char* what;
    std::string yaml;
    int line;
  };
  auto line_of = [](const std::string& text, std::string_view needle) {
    size_t pos = text.find(needle);
    REQUIRE(pos != std::string::npos);
    return static_cast<int>(countOf(text.substr(0, pos), "\n")) + 1;
  };
  auto replaced = [](std::string text, std::string_view from, std::string_view to) {
    size_t pos = text.find(from);
    REQUIRE(pos != std::string::npos);
    return text.replace(pos, from.size(), to);
  };
  std::vector<Bad> bads;
  {
    std::string y = replaced(valid_b, "    connect_timeout: 2s\n",
                             "    connect_timeout: 2s\n    respons_timeout: 5s\n");
    bads.push_back({"unknown key", y, line_of(y, "respons_timeout")});
  }
  {
    std::string y = replaced(valid_b, "    upstream: up-b\n  - name: default-b",
                             "    upstream: nowhere\n  - name: default-b");
    bads.push_back({"unknown upstream", y, line_of(y, "nowhere")});
  }
  {
    std::string y =
        replaced(valid_b, "    response_timeout: 10s\n", "    response_timeout: [10s\n");
    bads.push_back({"YAML syntax error", y, 0});
  }
  auto pick = GENERATE(0, 1, 2);
  const Bad& bad = bads[static_cast<size_t>(pick)];
  INFO("variant: " << bad.what);

  Gateway gw(opsYaml(cfg_a));
  REQUIRE(waitSignalsCaught(gw.pid(), {SIGHUP}, Ms(3000)));
  Client kept(gw.port());
  auto first = roundTrip(kept);
  REQUIRE(first);
  CHECK(first->body == kBodyA);

  rewriteConfig(gw, bad.yaml);
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  REQUIRE(gw.process().waitForOutput("reload failed; keeping the running configuration", Ms(5000),
                                     false, true));
  std::string log = gw.process().stderrText();
  INFO("gateway stderr:\n" << log);
  CHECK(countOf(log, reloadedLine(gw)) == 0);
  // "reload: FILE:LINE:COL: message"
  std::string prefix = "reload: " + gw.configPath() + ":";
  size_t at = log.find(prefix);
  REQUIRE(at != std::string::npos);
  const char* p = log.c_str() + at + prefix.size();
  char* end = nullptr;
  long line = std::strtol(p, &end, 10);
  REQUIRE(end != p);
  REQUIRE(*end == ':');
  const char* col_start = end + 1;
  long col = std::strtol(col_start, &end, 10);
  CHECK(end != col_start);
  CHECK(*end == ':');
  CHECK(line >= 1);
  CHECK(col >= 1);
  if (bad.line != 0) {
    CHECK(line == bad.line);
  }

  // Still the old config, on the open keep-alive connection and on new ones.
  auto on_kept = roundTrip(kept);
  REQUIRE(on_kept);
  CHECK(on_kept->status == 200);
  CHECK(on_kept->body == kBodyA);
  CHECK(bodyOfNewRequest(gw.port()) == kBodyA);
  CHECK(up_b.requestCount() == 0);
  CHECK(gw.process().running());

  // A valid file then applies.
  rewriteConfig(gw, valid_b);
  REQUIRE(reloadAndWait(gw, 0));
  CHECK(bodyOfNewRequest(gw.port()) == kBodyB);
  auto after = roundTrip(kept);
  REQUIRE(after);
  CHECK(after->body == kBodyB);
}

TEST_CASE("ops: SIGTERM drains an open SSE stream to its end, refuses new work, exits 0",
          "[ops][drain][sse][slow]") {
  constexpr int kEvents = 8;
  RawUpstream up(sseScript(kEvents, Ms(150)));
  OpsConfig cfg{.tag = "a", .upstream_addr = up.address(), .drain_timeout = "10s", .admin = true};
  Gateway gw(opsYaml(cfg));
  const uint16_t admin = gw.adminPort();
  REQUIRE(waitSignalsCaught(gw.pid(), {SIGTERM}, Ms(3000)));
  CHECK(adminStatus(admin, "/readyz") == 200);

  Client c(gw.port());
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  auto head = c.readHead();
  REQUIRE(head);
  REQUIRE(head->status == 200);
  REQUIRE(c.readBodyUntil(sseEvent(0), Ms(3000)));

  auto term_at = Clock::now();
  REQUIRE(::kill(gw.pid(), SIGTERM) == 0);
  REQUIRE(gw.process().waitForOutput("draining", Ms(2000), false, true));

  // /readyz turns 503 while the stream is still running.
  int ready = 0;
  auto ready_deadline = Clock::now() + Ms(2000);
  while (Clock::now() < ready_deadline) {
    ready = adminStatus(admin, "/readyz");
    if (ready == 503) {
      break;
    }
    std::this_thread::sleep_for(Ms(20));
  }
  CHECK(ready == 503);
  CHECK_FALSE(up.markAt("last").has_value());

  // A new connection while draining is refused: every worker closes its listener when the
  // drain begins (a connect racing that close may still land; it then gets no answer).
  bool refused = false;
  auto refuse_deadline = Clock::now() + Ms(1000);
  for (int i = 0; i < 50 && Clock::now() < refuse_deadline; ++i) {
    Client late(gw.port(), Ms(200));
    if (!late.connected()) {
      refused = true;
      break;
    }
    std::this_thread::sleep_for(Ms(20));
  }
  CHECK(refused);

  REQUIRE(c.readBodyToEnd(Ms(5000)));
  CHECK(c.current().complete);
  CHECK(c.body() == allEvents(kEvents));
  CHECK(c.received().ends_with("0\r\n\r\n"));
  CHECK_FALSE(up.markAt("cut").has_value());
  // The finished connection is not kept alive during a drain.
  CHECK(c.waitClosed(Ms(2000)));

  auto code = gw.process().wait(Ms(3000));
  auto exit_at = Clock::now();
  REQUIRE(code);
  CHECK(*code == 0);
  REQUIRE(up.waitForMark("last", Ms(1000)));
  auto last = up.markAt("last");
  REQUIRE(last);
  INFO("SIGTERM → last event " << msBetween(term_at, *last) << " ms, → exit "
                               << msBetween(term_at, exit_at) << " ms");
  // It waited for the stream, and not for drain_timeout (10 s) once the stream was done.
  CHECK(msBetween(term_at, *last) >= 800);
  CHECK(msBetween(*last, exit_at) < 2000);
  CHECK(up.requestCount() == 1);
  CHECK(gw.process().stderrText().find("drain timeout") == std::string::npos);
}

TEST_CASE("ops: a stream outliving drain_timeout is cut and the gateway exits 0 on time",
          "[ops][drain][sse]") {
  constexpr int kEvents = 60;  // 6 s of events: far beyond drain_timeout
  RawUpstream up(sseScript(kEvents, Ms(100)));
  OpsConfig cfg{.tag = "a", .upstream_addr = up.address(), .drain_timeout = "500ms"};
  Gateway gw(opsYaml(cfg));
  REQUIRE(waitSignalsCaught(gw.pid(), {SIGTERM}, Ms(3000)));

  Client c(gw.port());
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  auto head = c.readHead();
  REQUIRE(head);
  REQUIRE(head->status == 200);
  REQUIRE(c.readBodyUntil(sseEvent(1), Ms(3000)));

  auto term_at = Clock::now();
  REQUIRE(::kill(gw.pid(), SIGTERM) == 0);
  auto code = gw.process().wait(Ms(3000));
  auto exit_at = Clock::now();
  REQUIRE(code);
  CHECK(*code == 0);
  long long took = msBetween(term_at, exit_at);
  INFO("SIGTERM → exit " << took << " ms");
  CHECK(took >= 400);   // it did wait for the stream ...
  CHECK(took <= 1500);  // ... but no longer than drain_timeout + margin
  // Events kept flowing during the drain, then the stream was cut without its terminator.
  CHECK_FALSE(c.readBodyToEnd(Ms(2000)));
  CHECK(c.peerClosed());
  CHECK_FALSE(c.current().complete);
  CHECK(c.body().find(sseEvent(3)) != std::string::npos);
  CHECK(c.body().find(sseEvent(kEvents - 1)) == std::string::npos);
  CHECK_FALSE(c.received().ends_with("0\r\n\r\n"));
  CHECK(gw.process().stderrText().find("drain timeout") != std::string::npos);
  // The upstream side of the stream went away with the gateway.
  CHECK(up.waitForMark("cut", Ms(3000)));
}

TEST_CASE("ops: SIGTERM closes idle keep-alive connections at once and exits quickly",
          "[ops][drain]") {
  RawUpstream up(RawUpstream::respond(200, kBodyA));
  OpsConfig cfg{.tag = "a",
                .upstream_addr = up.address(),
                .drain_timeout = "10s",
                .workers = 2,
                .admin = true};
  Gateway gw(opsYaml(cfg));
  const uint16_t admin = gw.adminPort();
  REQUIRE(waitSignalsCaught(gw.pid(), {SIGTERM}, Ms(3000)));

  std::vector<std::unique_ptr<Client>> idle;
  for (int i = 0; i < 4; ++i) {
    auto c = std::make_unique<Client>(gw.port());
    auto r = roundTrip(*c);
    REQUIRE(r);
    REQUIRE(r->status == 200);
    REQUIRE(r->body == kBodyA);
    idle.push_back(std::move(c));
  }
  // And one connection that never sent a byte.
  auto silent = std::make_unique<Client>(gw.port());
  REQUIRE(silent->connected());
  // All five accepted (and idle) by the gateway.
  REQUIRE(waitFor(
      [&] {
        return sample(adminGet(admin, "/metrics").body, "mcp_gateway_active_connections") == 5;
      },
      Ms(3000)));
  std::vector<size_t> had;
  for (auto& c : idle) {
    had.push_back(c->received().size());
  }

  auto term_at = Clock::now();
  REQUIRE(::kill(gw.pid(), SIGTERM) == 0);
  for (size_t i = 0; i < idle.size(); ++i) {
    INFO("idle connection " << i);
    CHECK(idle[i]->waitClosed(Ms(1000)));
    CHECK(idle[i]->received().size() == had[i]);  // closed, nothing more said
  }
  CHECK(silent->waitClosed(Ms(1000)));
  CHECK(silent->received().empty());
  auto code = gw.process().wait(Ms(3000));
  auto exit_at = Clock::now();
  REQUIRE(code);
  CHECK(*code == 0);
  INFO("SIGTERM → exit " << msBetween(term_at, exit_at) << " ms");
  CHECK(msBetween(term_at, exit_at) < 1000);
  CHECK(gw.process().stderrText().find("drain timeout") == std::string::npos);
}

TEST_CASE("ops: a reload reopens the access log, applies log_level, reports restart-only keys",
          "[ops][reload]") {
  RawUpstream up(RawUpstream::respond(200, kBodyA));
  OpsConfig cfg{.tag = "a", .upstream_addr = up.address()};
  std::string yaml = opsYaml(cfg) + "watch_files: false\n";
  Gateway gw(yaml);
  REQUIRE(waitSignalsCaught(gw.pid(), {SIGHUP}, Ms(3000)));
  REQUIRE(bodyOfNewRequest(gw.port()) == kBodyA);
  const std::string log = gw.accessLogPath();
  REQUIRE(waitFor([&] { return countOf(readFile(log), "\"status\":200") == 1; }, Ms(2000)));

  // Rotation: the file is moved away, a reload makes the gateway write a new one.
  const std::string rotated = log + ".1";
  REQUIRE(std::rename(log.c_str(), rotated.c_str()) == 0);
  REQUIRE(reloadAndWait(gw, 0));
  REQUIRE(bodyOfNewRequest(gw.port()) == kBodyA);
  CHECK(waitFor([&] { return countOf(readFile(log), "\"status\":200") == 1; }, Ms(2000)));
  CHECK(countOf(readFile(rotated), "\"status\":200") == 1);

  // A new path, a new level and a new listen address in one reload: the first two apply,
  // the third is reported and the gateway keeps its port.
  const std::string moved = log + ".moved";
  std::string next = yaml;
  next.replace(next.find("${ACCESS_LOG}"), 13, moved);
  next.replace(next.find("127.0.0.1:${PORT}"), 17, "127.0.0.1:1");
  next += "log_level: warn\n";
  rewriteConfig(gw, next);
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  // (At log_level warn the "reloaded" info line is no longer written.)
  REQUIRE(gw.process().waitForOutput("reload: `listen` changed", Ms(5000), false, true));
  REQUIRE(bodyOfNewRequest(gw.port()) == kBodyA);
  CHECK(waitFor([&] { return countOf(readFile(moved), "\"status\":200") == 1; }, Ms(2000)));
  CHECK(countOf(readFile(log), "\"status\":200") == 1);
  // At warn, the next reload's warning is written and its info line is not.
  size_t info_lines = countOf(gw.process().stderrText(), reloadedLine(gw));
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  CHECK(waitFor([&] { return countOf(gw.process().stderrText(), "reload: `listen` changed") == 2; },
                Ms(3000)));
  // A third reload's warning is written after the second reload is over (its info line, were
  // it written, comes last in a reload).
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  CHECK(waitFor([&] { return countOf(gw.process().stderrText(), "reload: `listen` changed") == 3; },
                Ms(3000)));
  CHECK(countOf(gw.process().stderrText(), reloadedLine(gw)) == info_lines);
}

TEST_CASE("ops: log_level warn at start quiets the error log, never the access log", "[ops]") {
  RawUpstream up(RawUpstream::respond(200, kBodyA));
  OpsConfig cfg{.tag = "a", .upstream_addr = up.address()};
  Gateway gw(opsYaml(cfg) + "log_level: warn\n");
  REQUIRE(bodyOfNewRequest(gw.port()) == kBodyA);
  REQUIRE(bodyOfNewRequest(gw.port()) == kBodyA);
  CHECK(waitFor([&] { return countOf(readFile(gw.accessLogPath()), "\"status\":200") == 2; },
                Ms(3000)));
}
