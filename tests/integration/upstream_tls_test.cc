// HTTPS towards an upstream (issue #17 item 2): the certificate verified against `ca`, the
// name checked (DNS name or IP address), SNI sent, an optional client certificate, pooled TLS
// connections reused; a certificate that does not verify is a 502 with a JSON-RPC error, the
// outcome upstream_tls and a log line naming the reason. The upstream is a Node HTTPS server
// (tests/fixtures/tls-upstream.mjs); every certificate is made here with the openssl CLI.

#include <catch.hpp>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const std::string kFixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";

// The HTTPS upstream on an ephemeral port.
class TlsUpstream {
 public:
  TlsUpstream(const TempDir& dir, const TestCert& cert, const std::string& client_ca = "") {
    std::vector<std::string> argv{"node", kFixtures + "/tls-upstream.mjs", "0", cert.cert,
                                  cert.key};
    if (!client_ca.empty()) {
      argv.push_back(client_ca);
    }
    process_ = std::make_unique<Process>(argv, dir.path(), "tls-upstream");
    REQUIRE(process_->waitForOutput("LISTENING ", Ms(10000), true, false));
    auto deadline = Clock::now() + Ms(2000);
    while (Clock::now() < deadline) {
      const std::string out = process_->stdoutText();
      const size_t at = out.find("LISTENING ");
      if (out.find('\n', at) != std::string::npos) {
        port_ = static_cast<uint16_t>(std::stoi(out.substr(at + 10)));
        return;
      }
      std::this_thread::sleep_for(Ms(10));
    }
    throw std::runtime_error("tls-upstream.mjs printed no port: " + process_->stderrText());
  }
  ~TlsUpstream() { process_->terminate(); }
  uint16_t port() const { return port_; }

 private:
  std::unique_ptr<Process> process_;
  uint16_t port_ = 0;
};

// The gateway in front of one upstream at `endpoint` with the `tls:` block given.
std::string config(const std::string& endpoint, const std::string& tls_block) {
  return "listen: 127.0.0.1:${PORT}\n"
         "workers: 1\n"
         "access_log:\n"
         "  path: ${ACCESS_LOG}\n"
         "upstreams:\n"
         "  - name: remote\n"
         "    endpoints: [" +
         endpoint + "]\n    tls:\n" + tls_block +
         "routes:\n  - name: default\n    upstream: remote\n";
}

std::string call(int id) {
  return mcpPost(toolsCallBody("echo", id));
}

std::string field(const Response& r, const char* key) {
  return jsonToken(r.body, key).value_or("<absent>");
}

struct Pki {
  TempDir dir;
  TestCert ca = makeTestCa(dir.path(), "ca", "upstream test CA");
  TestCert other_ca = makeTestCa(dir.path(), "other-ca", "someone else's CA");
  TestCert server =
      makeTestCert(dir.path(), "server", ca, "localhost", "DNS:localhost,IP:127.0.0.1");
  TestCert client_ca = makeTestCa(dir.path(), "client-ca", "client CA");
  TestCert client = makeTestCert(dir.path(), "client", client_ca, "gateway-client", "");
};

}  // namespace

TEST_CASE("upstream tls: verified by name or address, SNI sent, pooled connections reused",
          "[tls][upstream]") {
  Pki pki;
  TlsUpstream up(pki.dir, pki.server);
  const std::string port = std::to_string(up.port());
  SECTION("a host name: verified against the DNS name, sent as SNI") {
    Gateway gw(config("localhost:" + port, "      ca: " + pki.ca.cert + "\n"));
    Response a = fetch(gw.port(), call(1));
    REQUIRE(a.status == 200);
    CHECK(field(a, "sni") == "\"localhost\"");
    CHECK(field(a, "id") == "1");
    Response b = fetch(gw.port(), call(2));
    REQUIRE(b.status == 200);
    CHECK(field(b, "connections") == "1");  // the second call rode the pooled connection
  }
  SECTION("an IP address: verified against the IP SAN, no SNI (RFC 6066 §3)") {
    Gateway gw(config("127.0.0.1:" + port, "      ca: " + pki.ca.cert + "\n"));
    Response a = fetch(gw.port(), call(3));
    REQUIRE(a.status == 200);
    CHECK(field(a, "sni") == "null");
  }
  SECTION("server_name overrides the endpoint's host for SNI and verification") {
    Gateway gw(config("127.0.0.1:" + port,
                      "      ca: " + pki.ca.cert + "\n      server_name: localhost\n"));
    Response a = fetch(gw.port(), call(4));
    REQUIRE(a.status == 200);
    CHECK(field(a, "sni") == "\"localhost\"");
  }
}

TEST_CASE("upstream tls: a certificate that does not verify is a 502 naming the reason",
          "[tls][upstream]") {
  Pki pki;
  TlsUpstream up(pki.dir, pki.server);
  const std::string port = std::to_string(up.port());
  struct Case {
    const char* what;
    std::string endpoint;
    std::string tls;
    const char* reason;
  };
  const Case cases[] = {
      {"wrong name", "127.0.0.1:" + port,
       "      ca: " + pki.ca.cert + "\n      server_name: mcp.example.com\n",
       "certificate verify failed: hostname mismatch"},
      {"wrong address", "127.0.0.1:" + port,
       "      ca: " + pki.ca.cert + "\n      server_name: 127.0.0.9\n",
       "certificate verify failed: IP address mismatch"},
      {"untrusted issuer", "localhost:" + port, "      ca: " + pki.other_ca.cert + "\n",
       "certificate verify failed: unable to get local issuer certificate"},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      Gateway gw(config(c.endpoint, c.tls));
      Response r = fetch(gw.port(), call(7));
      CHECK(r.status == 502);
      CHECK(field(r, "code") == "-31010");
      CHECK(field(r, "id") == "7");
      CHECK(waitLogLine(gw, "\"outcome\":\"upstream_tls\"").find("\"status\":502") !=
            std::string::npos);
      CHECK(gw.process().waitForOutput(c.reason, Ms(3000)));
    }
  }
}

TEST_CASE("upstream tls: a refused connect is not a TLS failure, the next endpoint is tried",
          "[tls][upstream]") {
  Pki pki;
  TlsUpstream up(pki.dir, pki.server);
  const ClosedPort closed_port;
  const std::string closed = closed_port.address();
  {
    Gateway gw(config(closed, "      ca: " + pki.ca.cert + "\n      server_name: localhost\n"));
    Response r = fetch(gw.port(), call(10));
    CHECK(r.status == 502);
    CHECK(waitLogLine(gw, "\"outcome\":\"connect_failed\"").find("\"status\":502") !=
          std::string::npos);
  }
  Gateway gw(config(closed + ", 127.0.0.1:" + std::to_string(up.port()),
                    "      ca: " + pki.ca.cert + "\n      server_name: localhost\n"));
  for (int id = 11; id < 14; ++id) {  // whichever endpoint round robin starts at
    CHECK(fetch(gw.port(), call(id)).status == 200);
  }
}

TEST_CASE("upstream tls: a client certificate for an upstream that asks for one",
          "[tls][upstream]") {
  Pki pki;
  TlsUpstream up(pki.dir, pki.server, pki.client_ca.cert);
  const std::string endpoint = "localhost:" + std::to_string(up.port());
  {
    Gateway gw(config(endpoint, "      ca: " + pki.ca.cert + "\n      cert: " + pki.client.cert +
                                    "\n      key: " + pki.client.key + "\n"));
    Response r = fetch(gw.port(), call(8));
    REQUIRE(r.status == 200);
    CHECK(field(r, "client") == "\"gateway-client\"");
  }
  {
    Gateway gw(config(endpoint, "      ca: " + pki.ca.cert + "\n"));
    CHECK(fetch(gw.port(), call(9)).status == 502);  // refused by the upstream
  }
}

TEST_CASE("upstream tls: bad tls settings are load errors", "[tls][upstream][config]") {
  Pki pki;
  const std::string bin = std::string(GW_BINARY);
  struct Case {
    const char* what;
    std::string tls;
    const char* message;
  };
  const Case cases[] = {
      {"missing CA file", "      ca: " + pki.dir.file("absent.pem") + "\n", "cannot load CA file"},
      {"not a CA file", "      ca: " + pki.server.key + "\n", "cannot load CA file"},
      {"cert without key", "      cert: " + pki.client.cert + "\n", "needs both 'cert' and 'key'"},
      {"key of another cert",
       "      cert: " + pki.client.cert + "\n      key: " + pki.server.key + "\n",
       "does not match certificate"},
      {"server_name with a port", "      server_name: localhost:443\n", "is not a host name"},
      {"unknown key", "      verify: false\n", "unknown key"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const std::string path = pki.dir.file("gateway.yaml");
    REQUIRE(writeFile(path, expand(config("127.0.0.1:9", c.tls),
                                   {{"PORT", "0"}, {"ACCESS_LOG", pki.dir.file("a.log")}})));
    Process check({bin, "check", "-c", path}, pki.dir.path(), "check");
    auto code = check.wait(Ms(10000));
    REQUIRE(code);
    CHECK(*code != 0);
    CHECK(check.stderrText().find(c.message) != std::string::npos);
  }
}
