// TLS termination on the client port of the real mcp-gateway binary (issue #17, item 1):
// HTTPS to a plain upstream, TLS 1.3 and 1.2, min_version, ALPN, session resumption, the
// plain-HTTP answer, garbage, silent and stalled handshakes, client certificates as the
// caller's identity, and certificate reloads with connections open. Certificates are made at
// test time with the openssl CLI; the client side is OpenSSL's API on blocking sockets.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <atomic>
#include <catch.hpp>
#include <csignal>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/era_fixtures.h"
#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

// A CA, a server pair it signed (localhost, 127.0.0.1), client pairs it signed, and one pair
// no configured CA signed; files in a TempDir.
class Pki {
 public:
  Pki() {
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
        "-subj /CN=itest-ca -keyout ca.key -out ca.pem");
    issue("gw", "/CN=localhost", "DNS:localhost,IP:127.0.0.1");
    issue("alice", "/CN=alice-cn", "URI:spiffe://test/alice");
    issue("bob", "/O=test/CN=bob", "");
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
        "-subj /CN=mallory -keyout mallory.key -out mallory.pem");
  }
  // <name>.pem / <name>.key signed by the CA; `san` "" for none.
  void issue(const std::string& name, const std::string& subj, const std::string& san) {
    run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj '" + subj +
        "' -keyout " + name + ".key -out " + name + ".csr");
    std::string ext = "basicConstraints=CA:FALSE\n";
    if (!san.empty()) {
      ext += "subjectAltName=" + san + "\n";
    }
    REQUIRE(writeFile(dir_.file(name + ".ext"), ext));
    run("openssl x509 -req -in " + name + ".csr -CA ca.pem -CAkey ca.key -CAcreateserial " +
        "-days 2 -extfile " + name + ".ext -out " + name + ".pem");
  }
  // Re-signs <name>.pem (with the CA's key) valid from now + `from_s` to now + `to_s`
  // seconds: an expired or a not-yet-valid certificate (the CLI's -days cannot go back).
  void redate(const std::string& name, long from_s, long to_s) {
    FILE* f = std::fopen(file(name + ".pem").c_str(), "r");
    REQUIRE(f != nullptr);
    std::unique_ptr<X509, decltype(&X509_free)> x(PEM_read_X509(f, nullptr, nullptr, nullptr),
                                                  X509_free);
    std::fclose(f);
    f = std::fopen(file("ca.key").c_str(), "r");
    REQUIRE(f != nullptr);
    std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> ca(
        PEM_read_PrivateKey(f, nullptr, nullptr, nullptr), EVP_PKEY_free);
    std::fclose(f);
    REQUIRE(x);
    REQUIRE(ca);
    REQUIRE(X509_gmtime_adj(X509_getm_notBefore(x.get()), from_s) != nullptr);
    REQUIRE(X509_gmtime_adj(X509_getm_notAfter(x.get()), to_s) != nullptr);
    REQUIRE(X509_sign(x.get(), ca.get(), EVP_sha256()) > 0);
    f = std::fopen(file(name + ".pem").c_str(), "w");
    REQUIRE(f != nullptr);
    const int written = PEM_write_X509(f, x.get());
    std::fclose(f);
    REQUIRE(written == 1);
  }
  void run(const std::string& cmd) {
    std::string full = "cd '" + dir_.path() + "' && " + cmd + " >/dev/null 2>&1";
    REQUIRE(std::system(full.c_str()) == 0);
  }
  std::string file(const std::string& name) const { return dir_.file(name); }
  const TempDir& dir() const { return dir_; }

 private:
  TempDir dir_;
};

struct TlsOptions {
  int min_version = 0;  // 0: library default
  int max_version = 0;
  std::vector<std::string> alpn{"http/1.1"};
  std::string cert;  // client certificate (PEM file), with key
  std::string key;
  std::string ca;       // verify the server against this CA ("" = no verification)
  std::string ciphers;  // TLS 1.2 cipher list ("" = the library's)
  SSL_SESSION* session = nullptr;
  std::string sni = "localhost";  // the server name asked for ("": none)
};

struct HttpResponse {
  int status = 0;
  std::string head;
  std::string body;
};

// One TLS client connection to 127.0.0.1:port (blocking, 5 s socket timeouts).
class TlsConn {
 public:
  TlsConn(uint16_t port, const TlsOptions& o) {
    ctx_ = SSL_CTX_new(TLS_client_method());
    REQUIRE(ctx_ != nullptr);
    if (o.min_version != 0) {
      SSL_CTX_set_min_proto_version(ctx_, o.min_version);
    }
    if (o.max_version != 0) {
      SSL_CTX_set_max_proto_version(ctx_, o.max_version);
    }
    if (!o.ciphers.empty()) {
      REQUIRE(SSL_CTX_set_cipher_list(ctx_, o.ciphers.c_str()) == 1);
    }
    if (!o.ca.empty()) {
      REQUIRE(SSL_CTX_load_verify_locations(ctx_, o.ca.c_str(), nullptr) == 1);
      SSL_CTX_set_verify(ctx_, SSL_VERIFY_PEER, nullptr);
    }
    if (!o.cert.empty()) {
      REQUIRE(SSL_CTX_use_certificate_chain_file(ctx_, o.cert.c_str()) == 1);
      REQUIRE(SSL_CTX_use_PrivateKey_file(ctx_, o.key.c_str(), SSL_FILETYPE_PEM) == 1);
    }
    std::string wire;
    for (const std::string& p : o.alpn) {
      wire += static_cast<char>(p.size());
      wire += p;
    }
    if (!wire.empty()) {
      SSL_CTX_set_alpn_protos(ctx_, reinterpret_cast<const unsigned char*>(wire.data()),
                              static_cast<unsigned>(wire.size()));
    }
    fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    REQUIRE(fd_ >= 0);
    timeval tv{5, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    ::setsockopt(fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_port = htons(port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    ssl_ = SSL_new(ctx_);
    SSL_set_fd(ssl_, fd_);
    if (!o.sni.empty()) {
      SSL_set_tlsext_host_name(ssl_, o.sni.c_str());
    }
    if (o.session != nullptr) {
      SSL_set_session(ssl_, o.session);
    }
    ERR_clear_error();
    ok_ = SSL_connect(ssl_) == 1;
    if (!ok_) {
      char buf[256];
      ERR_error_string_n(ERR_get_error(), buf, sizeof buf);
      error_ = buf;
    }
    ERR_clear_error();
  }
  ~TlsConn() {
    if (ssl_ != nullptr) {
      if (ok_) {
        SSL_shutdown(ssl_);  // (else OpenSSL marks the session not resumable)
      }
      SSL_free(ssl_);
    }
    if (fd_ >= 0) {
      ::close(fd_);
    }
    SSL_CTX_free(ctx_);
  }
  TlsConn(const TlsConn&) = delete;
  TlsConn& operator=(const TlsConn&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  std::string version() const { return SSL_get_version(ssl_); }
  std::string cipher() const { return SSL_get_cipher_name(ssl_); }
  bool resumed() const { return SSL_session_reused(ssl_) == 1; }
  std::string alpn() const {
    const unsigned char* p = nullptr;
    unsigned n = 0;
    SSL_get0_alpn_selected(ssl_, &p, &n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  // SHA-256 of the server's certificate, hex.
  std::string fingerprint() const {
    X509* x = SSL_get1_peer_certificate(ssl_);
    if (x == nullptr) {
      return {};
    }
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    X509_digest(x, EVP_sha256(), md, &n);
    X509_free(x);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string s;
    for (unsigned i = 0; i < n; ++i) {
      s += kHex[md[i] >> 4];
      s += kHex[md[i] & 15];
    }
    return s;
  }
  // The server certificate's subject, one line ("CN = a.example").
  std::string subject() const {
    X509* x = SSL_get1_peer_certificate(ssl_);
    if (x == nullptr) {
      return {};
    }
    char line[256];
    X509_NAME_oneline(X509_get_subject_name(x), line, sizeof line);
    X509_free(x);
    return line;
  }
  // A resumable session (owned by the caller: SSL_SESSION_free), after a response was read.
  SSL_SESSION* session() const { return SSL_get1_session(ssl_); }

  bool send(std::string_view bytes) {
    size_t written = 0;
    return SSL_write_ex(ssl_, bytes.data(), bytes.size(), &written) == 1 && written == bytes.size();
  }
  // One response with a Content-Length body; nullopt on error, close or timeout.
  std::optional<HttpResponse> readResponse() {
    size_t end = std::string::npos;
    while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
      if (!fill()) {
        return std::nullopt;
      }
    }
    HttpResponse r;
    r.head = buf_.substr(0, end + 4);
    r.status = std::atoi(r.head.c_str() + 9);
    size_t length = 0;
    size_t cl = lower(r.head).find("\r\ncontent-length:");
    if (cl != std::string::npos) {
      length = static_cast<size_t>(std::atol(r.head.c_str() + cl + 17));
    }
    while (buf_.size() < end + 4 + length) {
      if (!fill()) {
        return std::nullopt;
      }
    }
    r.body = buf_.substr(end + 4, length);
    buf_.erase(0, end + 4 + length);
    return r;
  }
  // Whether the server ended the connection (close_notify, EOF or an alert) without sending
  // a response.
  bool closedWithoutAnswer() {
    while (fill()) {
    }
    return buf_.empty();
  }

 private:
  static std::string lower(std::string s) {
    for (char& c : s) {
      c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
    return s;
  }
  bool fill() {
    char tmp[16384];
    size_t got = 0;
    ERR_clear_error();
    if (SSL_read_ex(ssl_, tmp, sizeof tmp, &got) != 1) {
      ERR_clear_error();
      return false;
    }
    buf_.append(tmp, got);
    return true;
  }

  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  int fd_ = -1;
  bool ok_ = false;
  std::string error_;
  std::string buf_;
};

std::string call(std::string_view tool = "echo", std::string_view extra = "") {
  return mcpPost(toolsCallBody(tool), extra, tool);
}

// Gateway YAML with `tls` (the block's lines, indented under `tls:`) before one upstream.
std::string tlsConfig(const std::string& upstream, const std::string& tls_lines,
                      const std::string& extra = "") {
  return "listen: 127.0.0.1:${PORT}\n"
         "workers: 2\n"
         "access_log:\n"
         "  path: ${ACCESS_LOG}\n"
         "tls:\n" +
         tls_lines + "upstreams:\n  - name: main\n    endpoints: [" + upstream + "]\n" +
         "routes:\n  - name: default\n    upstream: main\n" + extra;
}

std::string pairLines(const Pki& pki, const std::string& name = "gw") {
  return "  cert: " + pki.file(name + ".pem") + "\n  key: " + pki.file(name + ".key") + "\n";
}

}  // namespace

TEST_CASE("tls: HTTPS to a plain upstream, TLS 1.3 and 1.2, ALPN, resumption", "[tls][slow]") {
  Pki pki;
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  Gateway gw(tlsConfig(up.address(), pairLines(pki), "admin: 127.0.0.1:0\n"));
  const uint16_t admin = gw.adminPort();
  TlsOptions verified;
  verified.ca = pki.file("ca.pem");

  SECTION("TLS 1.3, verified against the CA, ALPN http/1.1, keep-alive") {
    TlsConn c(gw.port(), verified);
    REQUIRE(c.ok());
    CHECK(c.version() == "TLSv1.3");
    CHECK(c.alpn() == "http/1.1");
    for (int i = 0; i < 3; ++i) {
      REQUIRE(c.send(call()));
      auto r = c.readResponse();
      REQUIRE(r);
      CHECK(r->status == 200);
      CHECK(r->body == kOkBody);
    }
    REQUIRE(up.waitForRequests(3, Ms(2000)));
    // The upstream got plain HTTP/1.1.
    CHECK(up.requests()[0].requestLine() == "POST /mcp HTTP/1.1");
  }

  SECTION("TLS 1.2 with an ECDHE AEAD cipher") {
    TlsOptions o = verified;
    o.max_version = TLS1_2_VERSION;
    TlsConn c(gw.port(), o);
    REQUIRE(c.ok());
    CHECK(c.version() == "TLSv1.2");
    CHECK(c.cipher().rfind("ECDHE-", 0) == 0);
    CHECK((c.cipher().find("GCM") != std::string::npos ||
           c.cipher().find("CHACHA20") != std::string::npos));
    REQUIRE(c.send(call()));
    auto r = c.readResponse();
    REQUIRE(r);
    CHECK(r->status == 200);
  }

  SECTION("TLS 1.2 offering only CBC ciphers is refused") {
    TlsOptions o;
    o.max_version = TLS1_2_VERSION;
    o.ciphers = "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:AES128-SHA";
    TlsConn c(gw.port(), o);
    CHECK_FALSE(c.ok());
    CHECK(waitFor(
        [&] {
          return sample(adminGet(admin, "/metrics").body,
                        "mcp_gateway_tls_handshake_failures_total{reason=\"cipher\"}") == 1;
        },
        Ms(2000)));
  }

  SECTION("a client offering only h2 gets no ALPN and still speaks HTTP/1.1") {
    TlsOptions o = verified;
    o.alpn = {"h2"};
    TlsConn c(gw.port(), o);
    REQUIRE(c.ok());
    CHECK(c.alpn().empty());
    REQUIRE(c.send(call()));
    auto r = c.readResponse();
    REQUIRE(r);
    CHECK(r->status == 200);
  }

  SECTION("sessions resume from tickets, 1.3 and 1.2") {
    for (int max : {0, TLS1_2_VERSION}) {
      TlsOptions o = verified;
      o.max_version = max;
      SSL_SESSION* s = nullptr;
      {
        TlsConn first(gw.port(), o);
        REQUIRE(first.ok());
        CHECK_FALSE(first.resumed());
        REQUIRE(first.send(call()));
        REQUIRE(first.readResponse());
        s = first.session();
      }
      REQUIRE(s != nullptr);
      o.session = s;
      TlsConn again(gw.port(), o);
      REQUIRE(again.ok());
      CHECK(again.resumed());
      REQUIRE(again.send(call()));
      auto r = again.readResponse();
      REQUIRE(r);
      CHECK(r->status == 200);
      SSL_SESSION_free(s);
    }
    std::string m = adminGet(admin, "/metrics").body;
    CHECK(sample(m, "mcp_gateway_tls_handshakes_total{session=\"resumed\"}") >= 2);
    CHECK(sample(m, "mcp_gateway_tls_handshakes_total{session=\"full\"}") >= 2);
  }
}

TEST_CASE("tls: min_version 1.3 refuses TLS 1.2", "[tls]") {
  Pki pki;
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  Gateway gw(
      tlsConfig(up.address(), pairLines(pki) + "  min_version: \"1.3\"\n", "admin: 127.0.0.1:0\n"));
  const uint16_t admin = gw.adminPort();
  TlsOptions o;
  o.max_version = TLS1_2_VERSION;
  TlsConn old(gw.port(), o);
  CHECK_FALSE(old.ok());
  TlsConn modern(gw.port(), TlsOptions{});
  REQUIRE(modern.ok());
  CHECK(modern.version() == "TLSv1.3");
  // The openssl CLI sees the same.
  std::string cmd =
      "echo | timeout 5 openssl s_client -connect 127.0.0.1:" + std::to_string(gw.port()) +
      " -tls1_2 >/dev/null 2>&1";
  CHECK(std::system(cmd.c_str()) != 0);
  CHECK(waitFor(
      [&] {
        return sample(adminGet(admin, "/metrics").body,
                      "mcp_gateway_tls_handshake_failures_total{reason=\"version\"}") >= 2;
      },
      Ms(2000)));
}

TEST_CASE("tls: plain HTTP gets a 400 and a close, garbage and silence are closed", "[tls][slow]") {
  Pki pki;
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  Gateway gw(tlsConfig(up.address(), pairLines(pki),
                       "admin: 127.0.0.1:0\nlimits:\n  header_timeout: 600ms\n"));
  const uint16_t admin = gw.adminPort();

  SECTION("plain HTTP") {
    Client c(gw.port());
    REQUIRE(c.connected());
    auto t0 = Clock::now();
    REQUIRE(c.send(call()));
    auto r = c.readResponse(Ms(2000));
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(r->body == "this port speaks HTTPS\n");
    CHECK(r->header("Connection").value_or("") == "close");
    CHECK(c.waitClosed(Ms(2000)));
    CHECK(msBetween(t0, Clock::now()) < 500);
    CHECK(up.requestCount() == 0);
  }

  SECTION("garbage is closed at once, with nothing sent") {
    Client c(gw.port());
    REQUIRE(c.connected());
    auto t0 = Clock::now();
    REQUIRE(c.send(std::string("\x01\x02\x03\x04garbage", 11)));
    CHECK(c.waitClosed(Ms(2000)));
    CHECK(msBetween(t0, Clock::now()) < 500);
    CHECK(c.received().empty());
  }

  SECTION("a silent client is closed after header_timeout") {
    Client c(gw.port());
    REQUIRE(c.connected());
    auto t0 = Clock::now();
    CHECK(c.waitClosed(Ms(3000)));
    long long ms = msBetween(t0, Clock::now());
    CHECK(ms >= 450);
    CHECK(ms < 2000);
  }

  SECTION("a handshake that stalls half-way is closed after header_timeout") {
    Client c(gw.port());
    REQUIRE(c.connected());
    auto t0 = Clock::now();
    // The start of a ClientHello record (512 bytes announced, 9 sent).
    REQUIRE(c.send(std::string("\x16\x03\x01\x02\x00\x01\x00\x01\xfc", 9)));
    CHECK(c.waitClosed(Ms(3000)));
    long long ms = msBetween(t0, Clock::now());
    CHECK(ms >= 450);
    CHECK(ms < 2000);
  }

  std::string m;
  waitFor(
      [&] {
        m = adminGet(admin, "/metrics").body;
        return sample(m, "mcp_gateway_tls_handshake_failures_total{reason=\"plain_http\"}") >= 1 ||
               sample(m, "mcp_gateway_tls_handshake_failures_total{reason=\"not_tls\"}") >= 1 ||
               sample(m, "mcp_gateway_tls_handshake_failures_total{reason=\"timeout\"}") >= 1;
      },
      Ms(2000));
  CHECK(m.find("mcp_gateway_tls_handshake_failures_total{reason=") != std::string::npos);
}

TEST_CASE("tls: client certificates are required and name the caller", "[tls][mtls]") {
  Pki pki;
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  const std::string key = "tls-test-api-key";
  std::string policy = pki.file("policy.yaml");
  REQUIRE(writeFile(policy,
                    "identity:\n"
                    "  api_keys:\n"
                    "    - subject: carol\n"
                    "      key_sha256: \"" +
                        sha256Hex(key) +
                        "\"\n"
                        "  anonymous: deny\n"
                        "rules:\n"
                        "  - name: no-bob\n"
                        "    match: { subject: bob }\n"
                        "    action: deny\n"
                        "default: allow\n"));
  Gateway gw(tlsConfig(up.address(), pairLines(pki) + "  client_ca: " + pki.file("ca.pem") + "\n",
                       "admin: 127.0.0.1:0\npolicies: [" + policy + "]\n"));
  const uint16_t admin = gw.adminPort();

  auto as = [&](const std::string& who) {
    TlsOptions o;
    if (!who.empty()) {
      o.cert = pki.file(who + ".pem");
      o.key = pki.file(who + ".key");
    }
    return o;
  };

  SECTION("no certificate: refused") {
    TlsConn c(gw.port(), as(""));
    // TLS 1.3: the client's handshake ends before the server checked its (absent)
    // certificate; the refusal is the alert that follows.
    if (c.ok()) {
      c.send(call());
      CHECK(c.closedWithoutAnswer());
    }
    CHECK(up.requestCount() == 0);
  }

  SECTION("a certificate from another CA: refused") {
    TlsConn c(gw.port(), as("mallory"));
    if (c.ok()) {
      c.send(call());
      CHECK(c.closedWithoutAnswer());
    }
    CHECK(up.requestCount() == 0);
  }

  SECTION("the SAN URI is the subject; a rule on the CN-only subject denies") {
    TlsConn alice(gw.port(), as("alice"));
    REQUIRE(alice.ok());
    REQUIRE(alice.send(call("alice_tool")));
    auto r = alice.readResponse();
    REQUIRE(r);
    CHECK(r->status == 200);
    std::string line = waitLogLine(gw, "alice_tool");
    CHECK(jsonToken(line, "subject").value_or("") == "\"spiffe://test/alice\"");

    TlsConn bob(gw.port(), as("bob"));
    REQUIRE(bob.ok());
    REQUIRE(bob.send(call("bob_tool")));
    r = bob.readResponse();
    REQUIRE(r);
    CHECK(r->status == 403);
    line = waitLogLine(gw, "bob_tool");
    CHECK(jsonToken(line, "subject").value_or("") == "\"bob\"");
    CHECK(jsonToken(line, "policy_rule").value_or("") == "\"no-bob\"");

    // A credential in the request wins over the certificate.
    REQUIRE(bob.send(call("carol_tool", "Authorization: Bearer " + key + "\r\n")));
    r = bob.readResponse();
    REQUIRE(r);
    CHECK(r->status == 200);
    line = waitLogLine(gw, "carol_tool");
    CHECK(jsonToken(line, "subject").value_or("") == "\"carol\"");
    CHECK(up.requestCount() == 2);
  }

  SECTION("failures are counted by reason") {
    {
      TlsConn c(gw.port(), as(""));
      if (c.ok()) {
        c.send(call());
        c.closedWithoutAnswer();
      }
    }
    {
      TlsConn c(gw.port(), as("mallory"));
      if (c.ok()) {
        c.send(call());
        c.closedWithoutAnswer();
      }
    }
    CHECK(waitFor(
        [&] {
          std::string m = adminGet(admin, "/metrics").body;
          return sample(m, "mcp_gateway_tls_handshake_failures_total{reason=\"no_client_cert\"}") ==
                     1 &&
                 sample(m,
                        "mcp_gateway_tls_handshake_failures_total{reason=\"bad_client_cert\"}") ==
                     1;
        },
        Ms(2000)));
  }
}

TEST_CASE("tls: a new certificate on SIGHUP, open connections keep theirs, no request fails",
          "[tls][reload]") {
  Pki pki;
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  // Served from copies, which the test rewrites.
  REQUIRE(writeFile(pki.file("live.pem"), readFile(pki.file("gw.pem"))));
  REQUIRE(writeFile(pki.file("live.key"), readFile(pki.file("gw.key"))));
  Gateway gw(
      tlsConfig(up.address(), pairLines(pki, "live"), "admin: 127.0.0.1:0\nwatch_files: false\n"));
  const uint16_t admin = gw.adminPort();
  TlsOptions verified;
  verified.ca = pki.file("ca.pem");

  TlsConn before(gw.port(), verified);
  REQUIRE(before.ok());
  const std::string fp1 = before.fingerprint();
  REQUIRE(before.send(call()));
  REQUIRE(before.readResponse());

  // Requests in a loop, each on a new connection, across the reload.
  std::atomic<bool> stop{false};
  std::atomic<int> done{0};
  std::atomic<int> failed{0};
  std::thread loop([&] {
    for (int i = 0; i < 2000 && !stop.load(); ++i) {
      TlsConn c(gw.port(), verified);
      auto r = c.ok() && c.send(call()) ? c.readResponse() : std::nullopt;
      if (r && r->status == 200) {
        ++done;
      } else {
        ++failed;
      }
    }
  });

  pki.issue("next", "/CN=localhost", "DNS:localhost,IP:127.0.0.1");
  REQUIRE(writeFile(pki.file("live.pem"), readFile(pki.file("next.pem"))));
  REQUIRE(writeFile(pki.file("live.key"), readFile(pki.file("next.key"))));
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  std::string fp2;
  CHECK(waitFor(
      [&] {
        TlsConn c(gw.port(), verified);
        fp2 = c.ok() ? c.fingerprint() : "";
        return !fp2.empty() && fp2 != fp1;
      },
      Ms(5000)));
  // The loop runs on the new certificate a while: a few more requests after the switch.
  const int at_switch = done.load();
  CHECK(waitFor([&] { return done.load() >= at_switch + 5 || failed.load() > 0; }, Ms(5000)));
  stop = true;
  loop.join();
  CHECK(failed.load() == 0);
  CHECK(done.load() > 5);

  // The connection opened before the reload still works (on its old session).
  REQUIRE(before.send(call()));
  auto r = before.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
  CHECK(before.fingerprint() == fp1);

  // A key that does not match: the reload fails, the running certificate stays.
  REQUIRE(writeFile(pki.file("live.key"), readFile(pki.file("alice.key"))));
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  CHECK(gw.process().waitForOutput("does not match the certificate", Ms(3000)));
  CHECK(waitFor(
      [&] {
        return sample(adminGet(admin, "/metrics").body,
                      "mcp_gateway_config_reloads_total{result=\"failure\"}") == 1;
      },
      Ms(2000)));
  TlsConn after(gw.port(), verified);
  REQUIRE(after.ok());
  CHECK(after.fingerprint() == fp2);
  REQUIRE(after.send(call()));
  r = after.readResponse();
  REQUIRE(r);
  CHECK(r->status == 200);
}

// Issue 24 item 7: a reload does not swap in a dead certificate.
TEST_CASE("tls: a reload refuses an expired or not yet valid certificate, the running one stays",
          "[tls][reload]") {
  Pki pki;
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  REQUIRE(writeFile(pki.file("live.pem"), readFile(pki.file("gw.pem"))));
  REQUIRE(writeFile(pki.file("live.key"), readFile(pki.file("gw.key"))));
  Gateway gw(
      tlsConfig(up.address(), pairLines(pki, "live"), "admin: 127.0.0.1:0\nwatch_files: false\n"));
  const uint16_t admin = gw.adminPort();
  TlsOptions verified;
  verified.ca = pki.file("ca.pem");
  const auto servedFingerprint = [&] {
    TlsConn c(gw.port(), verified);
    return c.ok() ? c.fingerprint() : std::string();
  };
  const std::string fp1 = servedFingerprint();
  REQUIRE_FALSE(fp1.empty());

  constexpr long kDay = 24 * 3600;
  struct Case {
    const char* name;
    long from_s;
    long to_s;
    const char* logged;
  };
  const Case cases[] = {
      {"expired", -3 * kDay, -kDay, "expired at"},
      {"early", kDay, 3 * kDay, "is not valid before"},
  };
  int failures = 0;
  for (const Case& c : cases) {
    CAPTURE(c.name);
    pki.issue(c.name, "/CN=localhost", "DNS:localhost,IP:127.0.0.1");
    pki.redate(c.name, c.from_s, c.to_s);
    REQUIRE(writeFile(pki.file("live.pem"), readFile(pki.file(std::string(c.name) + ".pem"))));
    REQUIRE(writeFile(pki.file("live.key"), readFile(pki.file(std::string(c.name) + ".key"))));
    REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
    ++failures;
    CHECK(gw.process().waitForOutput(c.logged, Ms(3000)));
    CHECK(waitFor(
        [&] {
          return sample(adminGet(admin, "/metrics").body,
                        "mcp_gateway_config_reloads_total{result=\"failure\"}") == failures;
        },
        Ms(2000)));
    // New connections still get the running certificate, and are served.
    TlsConn after(gw.port(), verified);
    REQUIRE(after.ok());
    CHECK(after.fingerprint() == fp1);
    REQUIRE(after.send(call()));
    auto r = after.readResponse();
    REQUIRE(r);
    CHECK(r->status == 200);
  }

  // A valid certificate is taken at the next reload.
  pki.issue("next", "/CN=localhost", "DNS:localhost,IP:127.0.0.1");
  REQUIRE(writeFile(pki.file("live.pem"), readFile(pki.file("next.pem"))));
  REQUIRE(writeFile(pki.file("live.key"), readFile(pki.file("next.key"))));
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  CHECK(waitFor(
      [&] {
        const std::string fp = servedFingerprint();
        return !fp.empty() && fp != fp1;
      },
      Ms(5000)));
}

TEST_CASE("tls: the file watcher reloads a renewed certificate", "[tls][reload]") {
  Pki pki;
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  REQUIRE(writeFile(pki.file("live.pem"), readFile(pki.file("gw.pem"))));
  REQUIRE(writeFile(pki.file("live.key"), readFile(pki.file("gw.key"))));
  Gateway gw(tlsConfig(up.address(), pairLines(pki, "live")));
  TlsOptions verified;
  verified.ca = pki.file("ca.pem");
  TlsConn first(gw.port(), verified);
  REQUIRE(first.ok());
  const std::string fp1 = first.fingerprint();
  pki.issue("next", "/CN=localhost", "DNS:localhost,IP:127.0.0.1");
  // Key first, then certificate: the watcher may see the mismatched pair in between (a
  // failed reload), then the whole one.
  REQUIRE(writeFile(pki.file("live.key"), readFile(pki.file("next.key"))));
  REQUIRE(writeFile(pki.file("live.pem"), readFile(pki.file("next.pem"))));
  CHECK(waitFor(
      [&] {
        TlsConn c(gw.port(), verified);
        return c.ok() && !c.fingerprint().empty() && c.fingerprint() != fp1;
      },
      Ms(5000)));
}

TEST_CASE("tls: /config, /metrics and the log describe the served certificate", "[tls][admin]") {
  Pki pki;
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  REQUIRE(writeFile(pki.file("live.pem"), readFile(pki.file("gw.pem"))));
  REQUIRE(writeFile(pki.file("live.key"), readFile(pki.file("gw.key"))));
  Gateway gw(tlsConfig(
      up.address(),
      pairLines(pki, "live") + "  client_ca: " + pki.file("ca.pem") + "\n  min_version: \"1.3\"\n",
      "admin: 127.0.0.1:0\nwatch_files: false\n"));
  const uint16_t admin = gw.adminPort();
  TlsOptions o;
  o.ca = pki.file("ca.pem");
  o.cert = pki.file("alice.pem");
  o.key = pki.file("alice.key");
  std::string fp;
  {
    TlsConn c(gw.port(), o);
    REQUIRE(c.ok());
    fp = c.fingerprint();
  }
  REQUIRE(fp.size() == 64);

  Response cfg = adminGet(admin, "/config");
  REQUIRE(cfg.status == 200);
  CHECK(cfg.body.find("\"tls\":{\"cert\":\"" + pki.file("live.pem") + "\",\"key\":\"" +
                      pki.file("live.key") + "\",\"client_ca\":\"" + pki.file("ca.pem") +
                      "\",\"min_version\":\"1.3\",\"certificate\":{\"sha256\":\"" + fp +
                      "\",\"subject\":\"localhost\",\"not_before\":\"") != std::string::npos);
  CHECK(cfg.body.find("restart_pending") == std::string::npos);

  // The expiry gauge: the test certificates are good for 2 days from now.
  const std::string metrics = adminGet(admin, "/metrics").body;
  const double expiry = sample(metrics, "mcp_gateway_tls_certificate_expiry_timestamp_seconds");
  const double now = static_cast<double>(::time(nullptr));
  CHECK(expiry > now + 2 * 86400 - 3600);
  CHECK(expiry < now + 2 * 86400 + 60);
  // /config's not_after is the same instant, ISO 8601 UTC.
  const time_t t = static_cast<time_t>(expiry);
  tm utc{};
  REQUIRE(::gmtime_r(&t, &utc) != nullptr);
  char iso[32];
  REQUIRE(std::strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &utc) > 0);
  CHECK(cfg.body.find(std::string("\"not_after\":\"") + iso + "\"}") != std::string::npos);
  // Two days is under the 14-day warning.
  CHECK(
      gw.process().waitForOutput("(subject 'localhost') expires at " + std::string(iso), Ms(2000)));
  CHECK(
      gw.process().waitForOutput("subject 'localhost', valid until " + std::string(iso), Ms(2000)));

  // A reload with a new pair: /config follows it.
  pki.issue("next", "/CN=next-cn", "");
  REQUIRE(writeFile(pki.file("live.pem"), readFile(pki.file("next.pem"))));
  REQUIRE(writeFile(pki.file("live.key"), readFile(pki.file("next.key"))));
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  CHECK(waitFor(
      [&] {
        return adminGet(admin, "/config").body.find("\"subject\":\"next-cn\"") != std::string::npos;
      },
      Ms(5000)));
  CHECK(adminGet(admin, "/config").body.find(fp) == std::string::npos);
}

TEST_CASE("tls: the SDK v2 client's tools/call over HTTPS through the gateway",
          "[tls][sdk][slow]") {
  const std::string fixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";
  if (!std::filesystem::exists(fixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  Pki pki;
  Process server({"node", fixtures + "/mcp-server.mjs", "0"}, pki.dir().path(), "mcp-server");
  uint16_t server_port = 0;
  REQUIRE(waitFor(
      [&] {
        std::string out = server.stdoutText();
        size_t pos = out.find("LISTENING ");
        if (pos == std::string::npos || out.find('\n', pos) == std::string::npos) {
          return false;
        }
        server_port = static_cast<uint16_t>(std::stoi(out.substr(pos + 10)));
        return true;
      },
      Ms(10000)));
  Gateway gw(tlsConfig("127.0.0.1:" + std::to_string(server_port), pairLines(pki)));
  // Through env(1): the variable may already be set in the test's environment, and a second
  // copy appended after it would not be the one node reads.
  Process client(
      {"env", "NODE_EXTRA_CA_CERTS=" + pki.file("ca.pem"), "node", fixtures + "/mcp-client.mjs",
       "https://127.0.0.1:" + std::to_string(gw.port()) + "/mcp", "basic"},
      pki.dir().path(), "mcp-client");
  auto code = client.wait(Ms(20000));
  std::string out = client.stdoutText() + client.stderrText();
  INFO("client output: " << out << "\ngateway stderr: " << gw.process().stderrText());
  CHECK(code.value_or(-1) == 0);
  CHECK(out.find("\"ok\":true") != std::string::npos);
  CHECK(out.find("\"echo\":\"hi there\"") != std::string::npos);
}

TEST_CASE("tls: listeners — an HTTPS one and a plain one, each serving its own servers",
          "[tls][servers]") {
  Pki pki;
  RawUpstream a(RawUpstream::respond(200, R"({"jsonrpc":"2.0","id":1,"result":{"from":"a"}})"));
  RawUpstream b(RawUpstream::respond(200, R"({"jsonrpc":"2.0","id":1,"result":{"from":"b"}})"));
  Gateway gw(
      "admin: 127.0.0.1:0\n"
      "workers: 2\n"
      "listeners:\n"
      "  - address: 127.0.0.1:0\n"
      "    tls:\n"
      "      cert: " +
      pki.file("gw.pem") + "\n      key: " + pki.file("gw.key") + "\n" +
      "    servers: [github]\n"
      "  - address: 127.0.0.1:0\n"
      "    servers: [jira, both]\n"
      "upstreams:\n"
      "  - { name: a, endpoints: [" +
      a.address() +
      "] }\n"
      "  - { name: b, endpoints: [" +
      b.address() +
      "] }\n"
      "servers:\n"
      "  - { name: github, endpoint: /github/mcp, routes: [ { name: r, upstream: a } ] }\n"
      "  - { name: jira, endpoint: /jira/mcp, routes: [ { name: r, upstream: b } ] }\n"
      "  - { name: both, endpoint: /both/mcp, routes: [ { name: r, upstream: b } ] }\n");
  REQUIRE(gw.listenerPort(0) == gw.port());
  REQUIRE(gw.listenerPort(1) != 0);
  REQUIRE(gw.listenerPort(1) != gw.port());
  auto post = [](const std::string& path) {
    std::string r = mcpPost(toolsCallBody("echo"), "", "echo");
    return r.replace(r.find("/mcp"), 4, path);
  };

  TlsOptions verified;
  verified.ca = pki.file("ca.pem");
  {
    TlsConn c(gw.listenerPort(0), verified);
    REQUIRE(c.ok());
    REQUIRE(c.send(post("/github/mcp")));
    auto r = c.readResponse();
    REQUIRE(r);
    CHECK(r->status == 200);
    CHECK(r->body.find(R"("from":"a")") != std::string::npos);
  }
  // A server this listener does not serve is not found here.
  for (const std::string path : {"/jira/mcp", "/both/mcp", "/mcp"}) {
    INFO(path);
    TlsConn c(gw.listenerPort(0), verified);
    REQUIRE(c.ok());
    REQUIRE(c.send(post(path)));
    auto miss = c.readResponse();
    REQUIRE(miss);
    CHECK(miss->status == 404);
    CHECK(miss->body.find("-32600") != std::string::npos);
  }
  // The plain listener speaks HTTP and serves its own.
  Response jira = fetch(gw.listenerPort(1), post("/jira/mcp"));
  CHECK(jira.status == 200);
  CHECK(jira.body.find(R"("from":"b")") != std::string::npos);
  CHECK(fetch(gw.listenerPort(1), post("/both/mcp")).status == 200);
  CHECK(fetch(gw.listenerPort(1), post("/github/mcp")).status == 404);
  CHECK(a.requestCount() == 1);
  CHECK(b.requestCount() == 2);

  Response config = adminGet(gw.adminPort(), "/config");
  CHECK(
      config.body.find(R"("listeners":[{"address":"127.0.0.1:0","tls":true,"servers":["github"]},)"
                       R"({"address":"127.0.0.1:0","tls":false,"servers":["jira","both"]}])") !=
      std::string::npos);
}

TEST_CASE("tls: certificates by SNI, and 421 for a Host another certificate covers",
          "[tls][servers]") {
  Pki pki;
  pki.issue("a", "/CN=a.example", "DNS:a.example");
  pki.issue("wild", "/CN=wild.b.example", "DNS:*.b.example");
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  Gateway gw(tlsConfig(up.address(),
                       pairLines(pki) + "  certificates:\n    - hosts: [a.example]\n      cert: " +
                           pki.file("a.pem") + "\n      key: " + pki.file("a.key") +
                           "\n    - hosts: [\"*.b.example\"]\n      cert: " + pki.file("wild.pem") +
                           "\n      key: " + pki.file("wild.key") + "\n"));
  auto callFor = [](const std::string& host) {
    std::string r = call();
    return r.replace(r.find("Host: 127.0.0.1"), 15, "Host: " + host);
  };
  struct Case {
    std::string sni;                                 // "" : none
    std::string subject;                             // the certificate served
    std::vector<std::pair<std::string, int>> hosts;  // Host → status
  };
  const Case cases[] = {
      {"a.example",
       "a.example",
       {{"a.example", 200},
        {"A.Example:443", 200},
        {"x.b.example", 421},
        {"localhost", 421},
        {"127.0.0.1", 421}}},
      {"x.b.example",
       "wild.b.example",
       {{"x.b.example", 200}, {"Y.B.EXAMPLE", 200}, {"a.example", 421}, {"b.example", 421}}},
      {"localhost",
       "localhost",
       {{"localhost", 200},
        {"127.0.0.1", 200},
        {"other.example", 200},
        {"a.example", 421},
        {"z.b.example", 421}}},
      {"", "localhost", {{"127.0.0.1", 200}, {"a.example", 421}}},
      {"unknown.example", "localhost", {{"unknown.example", 200}, {"a.example", 421}}},
  };
  TlsOptions o;
  o.ca = pki.file("ca.pem");
  size_t forwarded = 0;
  for (const Case& c : cases) {
    for (const auto& [host, status] : c.hosts) {
      INFO("SNI '" << c.sni << "', Host " << host);
      o.sni = c.sni;
      TlsConn conn(gw.port(), o);
      REQUIRE(conn.ok());
      CHECK(conn.subject() == "/CN=" + c.subject);
      REQUIRE(conn.send(callFor(host)));
      auto r = conn.readResponse();
      REQUIRE(r);
      CHECK(r->status == status);
      if (status == 421) {
        CHECK(r->head.find("421 Misdirected Request") != std::string::npos);
        CHECK(r->body.find("-32600") != std::string::npos);
      } else {
        ++forwarded;
      }
    }
  }
  CHECK(up.requestCount() == forwarded);  // a 421 is never forwarded
}

TEST_CASE("tls: three real SDK servers on two listeners, the SDK client at each URL",
          "[tls][servers][sdk][slow]") {
  requireFiles({kNode22});
  Pki pki;
  pki.issue("named", "/CN=localhost", "DNS:localhost");  // SNI localhost
  pki.issue("other", "/CN=mcp.test", "DNS:mcp.test");    // SNI mcp.test (no client uses it)
  TempDir dir;
  FixtureServer github(dir, "github", "sessions", "_gh");
  FixtureServer jira(dir, "jira", "sessions", "_jira");
  FixtureServer internal(dir, "internal", "sessions", "_int");
  Gateway gw(
      "workers: 2\n"
      "listeners:\n"
      "  - address: 127.0.0.1:0\n"
      "    tls:\n"
      "      cert: " +
      pki.file("gw.pem") + "\n      key: " + pki.file("gw.key") +
      "\n"
      "      certificates:\n"
      "        - { hosts: [localhost], cert: " +
      pki.file("named.pem") + ", key: " + pki.file("named.key") +
      " }\n"
      "        - { hosts: [mcp.test], cert: " +
      pki.file("other.pem") + ", key: " + pki.file("other.key") +
      " }\n"
      "    servers: [github, jira]\n"
      "  - address: 127.0.0.1:0\n"
      "    servers: [internal]\n"
      "upstreams:\n"
      "  - { name: gh, endpoints: [" +
      github.endpoint() + "] }\n  - { name: jira, endpoints: [" + jira.endpoint() +
      "] }\n  - { name: int, endpoints: [" + internal.endpoint() +
      "] }\n"
      "servers:\n"
      "  - { name: github, endpoint: /github/mcp, hosts: [localhost],\n"
      "      routes: [ { name: r, upstream: gh } ] }\n"
      "  - { name: jira, endpoint: /jira/mcp, routes: [ { name: r, upstream: jira } ] }\n"
      "  - { name: internal, endpoint: /internal/mcp,\n"
      "      routes: [ { name: r, upstream: int } ] }\n");
  const std::string tls_port = std::to_string(gw.listenerPort(0));
  const std::string plain_port = std::to_string(gw.listenerPort(1));
  struct Case {
    std::string url;
    std::string own;  // the suffix of the tools the client must see, "" for a failure
  };
  const Case cases[] = {
      {"https://localhost:" + tls_port + "/github/mcp", "_gh"},  // SNI localhost
      {"https://127.0.0.1:" + tls_port + "/jira/mcp", "_jira"},  // no SNI: the default
      {"http://127.0.0.1:" + plain_port + "/internal/mcp", "_int"},
      {"https://127.0.0.1:" + tls_port + "/github/mcp", ""},  // github: host localhost only
      {"http://127.0.0.1:" + plain_port + "/jira/mcp", ""},   // jira: not on this listener
      {"https://localhost:" + tls_port + "/internal/mcp", ""},
  };
  for (const Case& c : cases) {
    Ran r =
        run(dir,
            sdkArgv(dir, c.url, "pin", "matrix", "", {"NODE_EXTRA_CA_CERTS=" + pki.file("ca.pem")}),
            "client");
    INFO(c.url << "\nclient: " << r.out << r.err << "\ngateway stderr:\n"
               << gw.process().stderrText());
    if (c.own.empty()) {
      CHECK(r.code != 0);
      continue;
    }
    CHECK(r.code == 0);
    const std::string tools = unquote(jsonToken(r.out, "toolNames"));
    CHECK(tools.find(c.own) != std::string::npos);
    for (const std::string other : {"_gh", "_jira", "_int"}) {
      if (other != c.own) {
        CHECK(tools.find(other) == std::string::npos);
      }
    }
  }
}
