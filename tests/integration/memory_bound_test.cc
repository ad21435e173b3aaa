// Memory stays bounded under slow readers (issue #30 item 5): the gateway holds at most its
// high-water mark per side plus one read for an answer its client does not take, however large
// the answer, and many such answers together grow its resident memory by no more than their
// watermarks. Not timed: the bound is on the gateway's resident set (VmRSS of its process),
// read while the clients hold back, then every answer is read whole and checked.

#include <catch.hpp>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr size_t kKiB = 1024;
constexpr size_t kMiB = 1024 * kKiB;
// downstream::Stream::kHighWatermark plus the largest single upstream read.
constexpr size_t kHighWatermark = 256 * kKiB;
constexpr size_t kOneRead = 256 * kKiB;

// Under AddressSanitizer freed memory sits in its quarantine and every allocation carries
// redzones: resident sizes say nothing about the gateway's buffers, so only the behaviour
// (every byte arrives, nothing lost) is checked there.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kResidentMeaningful = false;
#else
constexpr bool kResidentMeaningful = true;
#endif

// Resident bytes of process `pid` (VmRSS), 0 when unreadable.
size_t residentBytes(pid_t pid) {
  std::ifstream f("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) {
      return std::stoull(line.substr(6)) * kKiB;  // "VmRSS:   1234 kB"
    }
  }
  return 0;
}

std::string answerHead(size_t content_length) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(content_length) + "\r\n\r\n";
}

// A JSON-RPC result of exactly `n` bytes: {"jsonrpc":"2.0","id":1,"result":{"text":"xxx…"}}.
std::string resultOfSize(size_t n) {
  const std::string open = R"({"jsonrpc":"2.0","id":1,"result":{"text":")";
  const std::string close = R"("}})";
  std::string s = open;
  s.append(n - open.size() - close.size(), 'x');
  s += close;
  return s;
}

// Waits (≤ timeout) until the gateway's resident size has stopped growing for 300 ms: the
// upstream and the gateway have filled every buffer the held-back clients leave them.
size_t settledResident(pid_t pid, Ms timeout) {
  const auto deadline = Clock::now() + timeout;
  size_t last = residentBytes(pid);
  auto stable_since = Clock::now();
  while (Clock::now() < deadline) {
    std::this_thread::sleep_for(Ms(50));  // stays: sampling the resident size
    const size_t now = residentBytes(pid);
    if (now > last) {
      last = now;
      stable_since = Clock::now();
    } else if (Clock::now() - stable_since >= Ms(300)) {
      break;
    }
  }
  return last;
}

}  // namespace

TEST_CASE("memory: an 8 MiB answer to a client that does not read holds at most the watermark",
          "[writepath][memory][slow]") {
  const std::string big = resultOfSize(8 * kMiB);
  std::atomic<int> sent_whole{0};
  RawUpstream up([&](UpstreamConn& c) {
    while (c.readRequest(Ms(15000))) {
      if (!c.send(answerHead(big.size()) + big, Ms(30000))) {
        return;
      }
      ++sent_whole;
    }
  });
  GatewayConfig cfg;
  cfg.upstream_endpoints = {up.address()};
  Gateway gw(cfg);
  const size_t before = residentBytes(gw.pid());
  REQUIRE(before > 0);

  Client c(gw.port(), Ms(2000), 16 * static_cast<int>(kKiB));
  REQUIRE(c.connected());
  REQUIRE(c.send(mcpPost(toolsCallBody())));
  // The client takes the head (and what came with it), then holds back.
  auto head = c.readHead(Ms(10000));
  REQUIRE(head);
  REQUIRE(head->status == 200);
  const size_t held = settledResident(gw.pid(), Ms(5000));
  const size_t growth = held > before ? held - before : 0;
  INFO("gateway VmRSS " << before / kKiB << " KiB before, " << held / kKiB
                        << " KiB while the client holds back (growth " << growth / kKiB << " KiB)");
  if (kResidentMeaningful) {
    CHECK(growth <= kHighWatermark + kOneRead + 1 * kMiB);
  }

  // Then every byte arrives.
  CHECK(c.drainBody(big.size(), Ms(60000)) == big.size());
  CHECK(waitFor([&] { return sent_whole.load() == 1; }, Ms(5000)));
}

TEST_CASE("memory: 100 concurrent 1 MiB answers to clients that hold back stay within watermarks",
          "[writepath][memory][slow]") {
  constexpr int kClients = 100;
  const std::string body = resultOfSize(1 * kMiB);
  RawUpstream up([&](UpstreamConn& c) {
    while (c.readRequest(Ms(20000))) {
      if (!c.send(answerHead(body.size()) + body, Ms(60000))) {
        return;
      }
    }
  });
  GatewayConfig cfg;
  cfg.upstream_endpoints = {up.address()};
  cfg.response_timeout = "60s";
  Gateway gw(cfg);
  const size_t before = residentBytes(gw.pid());
  REQUIRE(before > 0);

  std::vector<std::unique_ptr<Client>> clients;
  for (int i = 0; i < kClients; ++i) {
    clients.push_back(std::make_unique<Client>(gw.port(), Ms(2000), 8 * static_cast<int>(kKiB)));
    REQUIRE(clients.back()->connected());
    REQUIRE(clients.back()->send(mcpPost(toolsCallBody("echo", i + 1))));
  }
  REQUIRE(up.waitForRequests(kClients, Ms(20000)));
  const size_t held = settledResident(gw.pid(), Ms(8000));
  const size_t growth = held > before ? held - before : 0;
  INFO("gateway VmRSS " << before / kKiB << " KiB before, " << held / kKiB << " KiB with "
                        << kClients << " answers held back (growth " << growth / kKiB << " KiB)");
  // Each answer may hold its watermark plus one read; the rest waits in the kernel or upstream.
  if (kResidentMeaningful) {
    CHECK(growth <= kClients * (kHighWatermark + kOneRead) + 8 * kMiB);
    CHECK(growth < kClients * body.size() * 3 / 4);
  }

  // Then every client gets its whole answer, nothing lost.
  int whole = 0;
  for (auto& c : clients) {
    auto r = c->readResponse(Ms(30000));
    whole += r && r->status == 200 && r->body == body ? 1 : 0;
  }
  CHECK(whole == kClients);
}
