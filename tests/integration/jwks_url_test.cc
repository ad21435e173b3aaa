// identity.jwt.jwks_url (issue #17 item 4) against a local HTTPS JWKS server
// (tests/fixtures/jwks-server.mjs, certificates made here): the key set is fetched at start,
// a token with a kid the set lacks makes the gateway fetch again (rotation) and waits for that
// fetch instead of a 401, an unknown kid does not fetch more than once per 30 s, every fetch shows
// in /metrics, and a JWKS server that went away leaves the last keys working. Tokens are HS256 (kty
// oct keys).

#include <catch.hpp>

#include <signal.h>

#include <chrono>
#include <ctime>
#include <string>
#include <thread>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const std::string kFixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";
constexpr char kS1[] = "0123456789abcdef0123456789abcdef";
constexpr char kS2[] = "fedcba9876543210fedcba9876543210";
constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

std::string keySet(const std::string& kid, const std::string& secret) {
  return R"({"keys":[{"kty":"oct","kid":")" + kid + R"(","k":")" + base64Url(secret) + R"("}]})";
}

std::string token(const std::string& secret, const std::string& kid) {
  const long long now = static_cast<long long>(std::time(nullptr));
  return hs256Token(secret, kid,
                    R"({"iss":"https://idp.example.com","aud":"https://gw.example.com/mcp",)"
                    R"("sub":"user-1","exp":)" +
                        std::to_string(now + 600) + "}");
}

// The JWKS server on an ephemeral port, serving `keys_file`.
class JwksServer {
 public:
  JwksServer(const TempDir& dir, const TestCert& cert, const std::string& keys_file) {
    process_ =
        std::make_unique<Process>(std::vector<std::string>{"node", kFixtures + "/jwks-server.mjs",
                                                           "0", cert.cert, cert.key, keys_file},
                                  dir.path(), "jwks-server");
    REQUIRE(process_->waitForOutput("LISTENING ", Ms(10000), true, false));
    REQUIRE(waitFor(
        [&] {
          const std::string out = process_->stdoutText();
          const size_t at = out.find("LISTENING ");
          if (out.find('\n', at) == std::string::npos) {
            return false;
          }
          port_ = static_cast<uint16_t>(std::stoi(out.substr(at + 10)));
          return true;
        },
        Ms(2000)));
  }
  ~JwksServer() { stop(); }
  void stop() {
    if (process_->running()) {
      process_->terminate();
    }
  }
  uint16_t port() const { return port_; }
  pid_t pid() const { return process_->pid(); }
  // GETs answered so far.
  size_t requests() const {
    const std::string out = process_->stdoutText();
    size_t n = 0;
    for (size_t at = out.find("REQUEST "); at != std::string::npos;
         at = out.find("REQUEST ", at + 1)) {
      ++n;
    }
    return n;
  }

 private:
  std::unique_ptr<Process> process_;
  uint16_t port_ = 0;
};

struct Setup {
  TempDir dir;
  TestCert ca = makeTestCa(dir.path(), "ca", "jwks test CA");
  TestCert server = makeTestCert(dir.path(), "idp", ca, "localhost", "DNS:localhost,IP:127.0.0.1");
  std::string keys_file = dir.file("served-jwks.json");
  bool written = writeFile(keys_file, keySet("k1", kS1));
  JwksServer jwks{dir, server, keys_file};
  RawUpstream up{RawUpstream::respond(200, kOkBody)};
  uint16_t admin = 0;  // the port the gateway chose
  std::unique_ptr<Gateway> gw;

  Setup() {
    REQUIRE(written);
    REQUIRE(writeFile(dir.file("policy.yaml"),
                      "identity:\n  jwt:\n    issuer: https://idp.example.com\n"
                      "    audiences: [https://gw.example.com/mcp]\n"
                      "    jwks_url: https://127.0.0.1:" +
                          std::to_string(jwks.port()) +
                          "/.well-known/jwks.json\n"
                          "    jwks_refresh: 15m\n"
                          "    jwks_ca: " +
                          ca.cert + "\n  anonymous: deny\n"));
    gw = std::make_unique<Gateway>(
        "listen: 127.0.0.1:${PORT}\nworkers: 2\n"
        "admin: 127.0.0.1:0\naccess_log:\n  path: ${ACCESS_LOG}\n"
        "upstreams:\n  - name: main\n    endpoints: [" +
        up.address() +
        "]\nroutes:\n  - name: default\n    upstream: main\n"
        "policies: [" +
        dir.file("policy.yaml") + "]\n");
    admin = gw->adminPort();
  }

  int call(const std::string& bearer) {
    return fetch(gw->port(),
                 mcpPost(toolsCallBody("echo", 1), "Authorization: Bearer " + bearer + "\r\n"))
        .status;
  }
  // Retries (bounded) until the call answers 200; how many 401s came first, or -1.
  int untilAccepted(const std::string& bearer) {
    for (int refused = 0; refused < 40; ++refused) {
      int status = call(bearer);
      if (status == 200) {
        return refused;
      }
      REQUIRE(status == 401);
      std::this_thread::sleep_for(Ms(250));
    }
    return -1;
  }
  // The value of one sample line in /metrics (-1 when absent).
  double metric(const std::string& series) {
    return sample(adminGet(admin, "/metrics").body, series);
  }
};

}  // namespace

TEST_CASE("jwks_url: fetched at start, a rotated key is fetched on its unknown kid",
          "[oauth][jwks][slow]") {
  Setup s;
  // The first request may come before the first fetch ended: it waits for it, no 401.
  CHECK(s.untilAccepted(token(kS1, "k1")) == 0);
  CHECK(s.jwks.requests() == 1);
  CHECK(s.metric(R"(mcp_gateway_jwks_fetches_total{result="ok"})") == 1);
  CHECK(s.metric("mcp_gateway_jwks_keys") == 1);
  // The many requests above verified k1's token once; the rest came from the cache.

  // Rotation: the IdP now publishes k2 only. The first k2 token asks for a refetch and
  // waits for it: it is accepted, not refused.
  REQUIRE(writeFile(s.keys_file, keySet("k2", kS2)));
  CHECK(s.untilAccepted(token(kS2, "k2")) == 0);
  CHECK(s.jwks.requests() == 2);
  CHECK(s.metric(R"(mcp_gateway_jwks_fetches_total{result="ok"})") == 2);
  // k1 left the set, cached verdict or not.
  CHECK(s.call(token(kS1, "k1")) == 401);

  // Unknown kids within 30 s of the last asked-for fetch fetch nothing, and are refused at
  // once (no fetch is coming to wait for).
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    CHECK(s.call(token(kS2, "k9-" + std::to_string(i))) == 401);
    CHECK(std::chrono::steady_clock::now() - t0 < Ms(1000));
    std::this_thread::sleep_for(Ms(100));  // stays: the kids come spread over time
  }
  // Stays: a window in which a background fetch, were one started, would reach the server.
  std::this_thread::sleep_for(Ms(800));
  CHECK(s.jwks.requests() == 2);
  CHECK(s.call(token(kS2, "k2")) == 200);
}

TEST_CASE("jwks_url: a JWKS server that went away leaves the last keys working", "[oauth][jwks]") {
  Setup s;
  CHECK(s.untilAccepted(token(kS1, "k1")) >= 0);
  s.jwks.stop();
  // An unknown kid asks for a fetch and waits for it; it fails (nothing listens), is counted,
  // and the token is refused.
  CHECK(s.call(token(kS1, "k7")) == 401);
  CHECK(s.metric(R"(mcp_gateway_jwks_fetches_total{result="connect_error"})") == 1);
  const bool counted = waitFor(
      [&] { return s.metric(R"(mcp_gateway_jwks_fetches_total{result="connect_error"})") == 1; },
      Ms(5000));
  INFO("gateway stderr: " << s.gw->process().stderrText());
  REQUIRE(counted);
  CHECK(s.call(token(kS1, "k1")) == 200);
  CHECK(s.metric("mcp_gateway_jwks_keys") == 1);
  CHECK(s.gw->process().waitForOutput("keeping the last key set (1 keys)", Ms(2000)));
}

TEST_CASE("jwks_url: a certificate that does not verify is a tls_error, JWTs stay refused",
          "[oauth][jwks]") {
  Setup s;
  // Another CA than the one that signed the server: the handshake fails.
  TestCert other = makeTestCa(s.dir.path(), "other", "someone else's CA");
  REQUIRE(writeFile(s.dir.file("policy.yaml"),
                    "identity:\n  jwt:\n    issuer: https://idp.example.com\n"
                    "    audiences: [https://gw.example.com/mcp]\n"
                    "    jwks_url: https://127.0.0.1:" +
                        std::to_string(s.jwks.port()) + "/jwks\n    jwks_ca: " + other.cert +
                        "\n  anonymous: deny\n"));
  kill(s.gw->pid(), SIGHUP);
  REQUIRE(waitFor(
      [&] { return s.metric(R"(mcp_gateway_jwks_fetches_total{result="tls_error"})") >= 1; },
      Ms(5000)));
  CHECK(s.call(token(kS1, "k1")) == 401);
}

TEST_CASE("jwks_url: a request waits for a slow fetch, a client that leaves is let go",
          "[oauth][jwks]") {
  Setup s;
  CHECK(s.untilAccepted(token(kS1, "k1")) == 0);
  REQUIRE(writeFile(s.keys_file, keySet("k2", kS2)));
  // The JWKS server stops answering (its connections hang) while two k2 requests wait.
  REQUIRE(::kill(s.jwks.pid(), SIGSTOP) == 0);
  const std::string call =
      mcpPost(toolsCallBody("echo", 7), "Authorization: Bearer " + token(kS2, "k2") + "\r\n");
  Client leaving(s.gw->port());
  REQUIRE(leaving.send(call));
  Client staying(s.gw->port());
  REQUIRE(staying.send(call));
  // Neither is answered while the fetch hangs.
  CHECK_FALSE(staying.readResponse(Ms(600)));
  leaving.close();
  // The gateway sees it leave while the fetch still hangs: it logs the cancellation.
  REQUIRE(waitFor(
      [&] { return readFile(s.gw->accessLogPath()).find("\"status\":499") != std::string::npos; },
      Ms(5000)));
  // The gateway serves a cached token meanwhile.
  CHECK(s.call(token(kS1, "k1")) == 200);
  REQUIRE(::kill(s.jwks.pid(), SIGCONT) == 0);
  auto r = staying.readResponse(Ms(12000));
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(s.jwks.requests() == 2);
  // The same keep-alive connection goes on (its exchange back from the pool, no wait left).
  REQUIRE(staying.send(call));
  r = staying.readResponse(Ms(3000));
  REQUIRE(r);
  CHECK(r->status == 200);
  // The one that left was logged as the client's cancellation, before any answer.
  CHECK(waitFor(
      [&] { return readFile(s.gw->accessLogPath()).find("\"status\":499") != std::string::npos; },
      Ms(3000)));
}
