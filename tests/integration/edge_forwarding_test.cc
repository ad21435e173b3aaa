// Issue #12 item 10 through the real binary: client address fields (`trusted_proxies`). From
// a peer outside the list every X-Forwarded-*, Forwarded and X-Real-IP field a client sends
// is dropped and the gateway writes X-Forwarded-For: <peer> and X-Forwarded-Proto: http; from
// a trusted peer the chain is kept and the peer appended, and the client address used by the
// access log and by `client_ip` rate-limit keys is the rightmost untrusted one. The tests
// connect from 127.0.0.1, so `trusted_proxies: [127.0.0.1]` makes the test client a proxy.

#include <catch.hpp>

#include <cctype>
#include <chrono>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

// Every field through which a client claims an address, scheme or host, in several
// spellings and repetitions.
constexpr char kClaims[] =
    "X-Forwarded-For: 6.6.6.6\r\n"
    "x-forwarded-for: 6.6.6.7, 6.6.6.8\r\n"
    "Forwarded: for=6.6.6.6;proto=https;host=evil.example\r\n"
    "FORWARDED: for=\"[2001:db8::6]\"\r\n"
    "X-Real-IP: 6.6.6.6\r\n"
    "x-real-ip: 6.6.6.7\r\n"
    "X-Forwarded-Proto: https\r\n"
    "X-FORWARDED-PROTO: wss\r\n"
    "X-Forwarded-Host: evil.example\r\n"
    "x-forwarded-host: evil2.example\r\n"
    "X-Forwarded-Port: 443\r\n";

std::string config(const std::string& upstream, const std::string& trusted,
                   const std::string& policy_path = "") {
  std::string y =
      "listen: 127.0.0.1:${PORT}\n"
      "workers: 1\n"
      "access_log:\n"
      "  path: ${ACCESS_LOG}\n"
      "mcp:\n"
      "  protocol_versions: [2026-07-28]\n"
      "upstreams:\n  - name: main\n    endpoints: [" +
      upstream +
      "]\n"
      "routes:\n  - name: default\n    upstream: main\n"
      "trusted_proxies: [" +
      trusted + "]\n";
  if (!policy_path.empty()) {
    y += "policies: [" + policy_path + "]\n";
  }
  return y;
}

// A 2026-07-28 tools/call POST with `extra` header lines.
std::string call(std::string_view id, std::string_view extra) {
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::string(id) +
                     R"(,"method":"tools/call","params":{"name":"echo","arguments":{}}})";
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
         "Content-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\n"
         "MCP-Protocol-Version: 2026-07-28\r\n"
         "Mcp-Method: tools/call\r\n"
         "Mcp-Name: echo\r\n" +
         std::string(extra) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

// A 2026-07-28 tools/list POST: not under a tools/call rate limit, so always forwarded.
std::string listCall() {
  const std::string body = R"({"jsonrpc":"2.0","id":99,"method":"tools/list","params":{}})";
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
         "Content-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\n"
         "MCP-Protocol-Version: 2026-07-28\r\n"
         "Mcp-Method: tools/list\r\n"
         "Content-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

// The access-log lines once there are at least n (waits up to 3 s).
std::vector<std::string> waitLogLines(const Gateway& gw, size_t n) {
  auto deadline = Clock::now() + Ms(3000);
  std::vector<std::string> lines;
  while (Clock::now() < deadline) {
    lines = fileLines(gw.accessLogPath());
    if (lines.size() >= n) {
      break;
    }
    std::this_thread::sleep_for(Ms(10));
  }
  return lines;
}

std::string clientOf(const std::string& log_line) {
  std::string v = jsonToken(log_line, "client").value_or("<absent>");
  if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
    v = v.substr(1, v.size() - 2);
  }
  return v;
}

// Every header name in a recorded head that is a client address field (any spelling).
std::vector<std::string> addressFieldLines(const RecordedRequest& r) {
  std::vector<std::string> out;
  size_t pos = r.head.find("\r\n");
  while (pos != std::string::npos && pos + 2 < r.head.size()) {
    size_t end = r.head.find("\r\n", pos + 2);
    if (end == std::string::npos) {
      break;
    }
    std::string line = r.head.substr(pos + 2, end - pos - 2);
    std::string lower;
    for (char c : line.substr(0, line.find(':'))) {
      lower += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    if (lower.rfind("x-forwarded", 0) == 0 || lower.rfind("x_forwarded", 0) == 0 ||
        lower == "forwarded" || lower == "x-real-ip" || lower == "x_real_ip") {
      out.push_back(line);
    }
    pos = end;
  }
  return out;
}

}  // namespace

TEST_CASE("edge: untrusted peer - every client address field replaced by the peer",
          "[edge][edge-fwd]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  // Default (no trusted_proxies) and a list the peer is not in.
  for (const std::string trusted : {"", "10.0.0.0/8, \"::1\""}) {
    INFO("trusted_proxies: [" << trusted << "]");
    const size_t before = up.requestCount();
    Gateway gw(config(up.address(), trusted));
    Response r = fetch(gw.port(), call("1", kClaims));
    CHECK(r.status == 200);
    REQUIRE(up.waitForRequests(before + 1, Ms(2000)));
    const RecordedRequest req = up.requests().back();
    INFO(req.head);
    CHECK(addressFieldLines(req) ==
          std::vector<std::string>{"X-Forwarded-For: 127.0.0.1", "X-Forwarded-Proto: http"});
    auto lines = waitLogLines(gw, 1);
    REQUIRE(lines.size() == 1);
    CHECK(clientOf(lines[0]) == "127.0.0.1");
    // A `_` spelling of a client address field never gets this far: the parser refuses it
    // (a CGI-style server would read it as the real field), and the upstream sees nothing.
    const size_t seen = up.requestCount();
    CHECK(fetch(gw.port(), call("3", "X_Forwarded_For: 6.6.6.9\r\n")).status == 400);
    // What the gateway would have forwarded is at the upstream once a marker is.
    REQUIRE(forwardMarker(gw.port(), up, call("4", "")));
    CHECK(up.requestCount() == seen + 1);
  }
}

TEST_CASE("edge: trusted peer - X-Forwarded-For chain kept and appended, client from it",
          "[edge][edge-fwd]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  Gateway gw(config(up.address(), "127.0.0.1"));

  SECTION("every field kept as sent, the chain merged with the peer appended") {
    Response r = fetch(gw.port(), call("1", kClaims));
    CHECK(r.status == 200);
    REQUIRE(up.waitForRequests(1, Ms(2000)));
    const RecordedRequest req = up.requests().back();
    INFO(req.head);
    CHECK(addressFieldLines(req) ==
          std::vector<std::string>{"Forwarded: for=6.6.6.6;proto=https;host=evil.example",
                                   "FORWARDED: for=\"[2001:db8::6]\"", "X-Real-IP: 6.6.6.6",
                                   "x-real-ip: 6.6.6.7", "X-Forwarded-Proto: https",
                                   "X-FORWARDED-PROTO: wss", "X-Forwarded-Host: evil.example",
                                   "x-forwarded-host: evil2.example", "X-Forwarded-Port: 443",
                                   "X-Forwarded-For: 6.6.6.6, 6.6.6.7, 6.6.6.8, 127.0.0.1"});
    auto lines = waitLogLines(gw, 1);
    REQUIRE(lines.size() == 1);
    CHECK(clientOf(lines[0]) == "6.6.6.8");  // rightmost untrusted
  }

  SECTION("no chain: the peer, and X-Forwarded-Proto set") {
    Response r = fetch(gw.port(), call("2", ""));
    CHECK(r.status == 200);
    REQUIRE(up.waitForRequests(1, Ms(2000)));
    CHECK(addressFieldLines(up.requests().back()) ==
          std::vector<std::string>{"X-Forwarded-For: 127.0.0.1", "X-Forwarded-Proto: http"});
    auto lines = waitLogLines(gw, 1);
    REQUIRE(lines.size() == 1);
    CHECK(clientOf(lines[0]) == "127.0.0.1");
  }

  SECTION("a malformed element ends the walk at the last trusted address") {
    Response r = fetch(gw.port(), call("3", "X-Forwarded-For: 6.6.6.6, <script>\r\n"));
    CHECK(r.status == 200);
    auto lines = waitLogLines(gw, 1);
    REQUIRE(lines.size() == 1);
    CHECK(clientOf(lines[0]) == "127.0.0.1");
  }

  SECTION("ports and brackets in elements") {
    Response r = fetch(gw.port(), call("4", "X-Forwarded-For: 6.6.6.6, [2001:db8::7]:4711\r\n"));
    CHECK(r.status == 200);
    auto lines = waitLogLines(gw, 1);
    REQUIRE(lines.size() == 1);
    CHECK(clientOf(lines[0]) == "2001:db8::7");
  }
}

TEST_CASE("edge: client_ip rate-limit keys see the forwarded address only from a trusted peer",
          "[edge][edge-fwd]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  TempDir dir;
  const std::string pol = dir.file("policy.yaml");
  REQUIRE(writeFile(pol,
                    "default: allow\n"
                    "rate_limits:\n"
                    "  - name: per-client\n"
                    "    match: { method: tools/call }\n"
                    "    key: [client_ip]\n"
                    "    rate: 2/min\n"
                    "    burst: 2\n"));
  const std::string a = "X-Forwarded-For: 203.0.113.7\r\n";
  const std::string b = "X-Forwarded-For: 203.0.113.8\r\n";

  SECTION("trusted: each forwarded client has its own bucket") {
    Gateway gw(config(up.address(), "127.0.0.1", pol));
    CHECK(fetch(gw.port(), call("1", a)).status == 200);
    CHECK(fetch(gw.port(), call("2", a)).status == 200);
    CHECK(fetch(gw.port(), call("3", a)).status == 429);
    CHECK(fetch(gw.port(), call("4", b)).status == 200);
    CHECK(fetch(gw.port(), call("5", b)).status == 200);
    CHECK(fetch(gw.port(), call("6", b)).status == 429);
    REQUIRE(up.waitForRequests(4, Ms(2000)));
    // No 429'd call went upstream: a marker (not rate-limited) is the next request there.
    REQUIRE(forwardMarker(gw.port(), up, listCall()));
    CHECK(up.requestCount() == 5);
    auto lines = waitLogLines(gw, 7);  // the six calls', then the marker's
    REQUIRE(lines.size() == 7);
    CHECK(clientOf(lines[2]) == "203.0.113.7");
    CHECK(jsonToken(lines[2], "status").value_or("") == "429");
    CHECK(clientOf(lines[5]) == "203.0.113.8");
  }

  SECTION("untrusted: a spoofed X-Forwarded-For does not buy a fresh bucket") {
    Gateway gw(config(up.address(), "", pol));
    CHECK(fetch(gw.port(), call("1", a)).status == 200);
    CHECK(fetch(gw.port(), call("2", a)).status == 200);
    CHECK(fetch(gw.port(), call("3", b)).status == 429);
    CHECK(fetch(gw.port(), call("4", "X-Real-IP: 203.0.113.9\r\n")).status == 429);
    REQUIRE(up.waitForRequests(2, Ms(2000)));
    // No 429'd call went upstream: a marker (not rate-limited) is the next request there.
    REQUIRE(forwardMarker(gw.port(), up, listCall()));
    CHECK(up.requestCount() == 3);
    auto lines = waitLogLines(gw, 5);  // the four calls', then the marker's
    REQUIRE(lines.size() == 5);
    for (const std::string& l : lines) {
      CHECK(clientOf(l) == "127.0.0.1");
    }
  }
}
