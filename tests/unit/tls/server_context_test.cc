// Unit tests for tls/: the identity a client certificate gives (peerSubject), and session
// tickets across key rotations and reloads (in-memory handshakes over a BIO pair).

#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <stdlib.h>
#include <unistd.h>

#include <catch.hpp>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "gateway/tls/server_context.h"

namespace gw::tls {
namespace {

// A self-signed certificate with `subj` and, when not empty, these subjectAltName entries.
std::string subjectOf(const std::string& subj, const std::string& san) {
  char tmpl[] = "/tmp/gw-tls-subj-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  REQUIRE(d != nullptr);
  const std::string dir = d;
  std::string cmd = "cd '" + dir +
                    "' && openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
                    "-days 1 -keyout k.pem -out c.pem -subj '" +
                    subj + "'";
  if (!san.empty()) {
    cmd += " -addext 'subjectAltName=" + san + "'";
  }
  cmd += " >/dev/null 2>&1";
  REQUIRE(std::system(cmd.c_str()) == 0);
  FILE* f = std::fopen((dir + "/c.pem").c_str(), "r");
  REQUIRE(f != nullptr);
  X509* x = PEM_read_X509(f, nullptr, nullptr, nullptr);
  std::fclose(f);
  REQUIRE(x != nullptr);
  std::string out = peerSubject(x);
  X509_free(x);
  std::filesystem::remove_all(dir);
  return out;
}

TEST_CASE("peerSubject: the first DNS or URI SAN, else the CN", "[tls]") {
  CHECK(subjectOf("/CN=ignored", "DNS:agent.example.com,DNS:second.example.com") ==
        "agent.example.com");
  CHECK(subjectOf("/CN=ignored", "URI:spiffe://example.org/ns/a/sa/agent") ==
        "spiffe://example.org/ns/a/sa/agent");
  // An email or IP SAN is no identity: the first DNS/URI after it is.
  CHECK(subjectOf("/CN=ignored", "email:a@example.com,IP:10.0.0.1,URI:urn:agent:7") ==
        "urn:agent:7");
  CHECK(subjectOf("/CN=ignored", "IP:10.0.0.1") == "ignored");
  CHECK(subjectOf("/O=Org/CN=alice", "") == "alice");
  CHECK(subjectOf("/O=Org only", "") == "");
  CHECK(peerSubject(nullptr).empty());
}

}  // namespace
}  // namespace gw::tls

namespace gw::tls {
namespace {

// A self-signed pair (openssl CLI) in a new temp dir, removed with it.
class Pair {
 public:
  Pair() {
    char tmpl[] = "/tmp/gw-tls-ctx-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    REQUIRE(d != nullptr);
    dir_ = d;
    const std::string cmd = "cd '" + dir_ +
                            "' && openssl req -x509 -newkey ec -pkeyopt "
                            "ec_paramgen_curve:P-256 -nodes -days 1 -keyout k.pem -out c.pem "
                            "-subj /CN=localhost >/dev/null 2>&1";
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  ~Pair() { std::filesystem::remove_all(dir_); }
  std::string file(const char* name) const { return dir_ + "/" + name; }
  Pair(const Pair&) = delete;
  Pair& operator=(const Pair&) = delete;

  // A server context on this pair (each call builds a new one, as a reload does).
  // `client_certs`: clients must present a certificate chaining to this pair's own
  // (self-signed, so it is its own CA; the client presents the same pair).
  std::shared_ptr<const ServerContext> context(bool client_certs = false) const {
    ServerConfig cfg;
    cfg.cert = dir_ + "/c.pem";
    cfg.key = dir_ + "/k.pem";
    if (client_certs) {
      cfg.client_ca = cfg.cert;
    }
    BuildResult r = buildServerContext(cfg);
    REQUIRE(r.context != nullptr);
    return r.context;
  }

 private:
  std::string dir_;
};

// One client connection to `server` over a BIO pair: the handshake, then a little application
// data both ways so a TLS 1.3 ticket (sent after the handshake) reaches the client. Offers
// `resume` when not null. Returns the client's session (caller frees) and whether it resumed.
struct Handshake {
  bool ok = false;
  bool resumed = false;
  SSL_SESSION* session = nullptr;
};
Handshake connectOnce(const ServerContext& server, int max_version, SSL_SESSION* resume,
                      const Pair* client_cert = nullptr) {
  Handshake h;
  SSL_CTX* cctx = SSL_CTX_new(TLS_client_method());
  REQUIRE(cctx != nullptr);
  SSL_CTX_set_session_cache_mode(cctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL);
  if (max_version != 0) {
    SSL_CTX_set_max_proto_version(cctx, max_version);
  }
  if (client_cert != nullptr) {
    REQUIRE(SSL_CTX_use_certificate_file(cctx, client_cert->file("c.pem").c_str(),
                                         SSL_FILETYPE_PEM) == 1);
    REQUIRE(SSL_CTX_use_PrivateKey_file(cctx, client_cert->file("k.pem").c_str(),
                                        SSL_FILETYPE_PEM) == 1);
  }
  SSL* c = SSL_new(cctx);
  SSL* s = server.newSession();
  REQUIRE((c != nullptr && s != nullptr));
  BIO* cb = nullptr;
  BIO* sb = nullptr;
  REQUIRE(BIO_new_bio_pair(&cb, 0, &sb, 0) == 1);
  SSL_set_bio(c, cb, cb);
  SSL_set_bio(s, sb, sb);
  SSL_set_connect_state(c);
  SSL_set_accept_state(s);
  if (resume != nullptr) {
    REQUIRE(SSL_set_session(c, resume) == 1);
  }
  bool c_done = false;
  bool s_done = false;
  for (int turn = 0; turn < 50 && !(c_done && s_done); ++turn) {
    if (!c_done) {
      int rc = SSL_do_handshake(c);
      c_done = rc == 1;
      if (rc <= 0) {
        int e = SSL_get_error(c, rc);
        REQUIRE((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE));
      }
    }
    if (!s_done) {
      int rc = SSL_do_handshake(s);
      s_done = rc == 1;
      if (rc <= 0) {
        int e = SSL_get_error(s, rc);
        REQUIRE((e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE));
      }
    }
  }
  h.ok = c_done && s_done;
  if (h.ok) {
    // Server writes (its tickets go first), the client reads: the session now has its ticket.
    size_t n = 0;
    REQUIRE(SSL_write_ex(s, "x", 1, &n) == 1);
    char buf[16];
    REQUIRE(SSL_read_ex(c, buf, sizeof buf, &n) == 1);
    h.resumed = SSL_session_reused(c) == 1;
    h.session = SSL_get1_session(c);
    SSL_shutdown(c);  // (freed without it, OpenSSL marks the session not resumable)
    SSL_shutdown(s);
  }
  SSL_free(c);
  SSL_free(s);
  SSL_CTX_free(cctx);
  return h;
}

}  // namespace

TEST_CASE("ticket keys: a rotated key still resumes for one period, then not", "[tls]") {
  Pair pair;
  auto ctx = pair.context();
  for (int max : {0, TLS1_2_VERSION}) {
    CAPTURE(max);
    // Three tickets under the key of the moment (each offered once: TLS 1.3 clients use a
    // ticket once, RFC 8446 C.4).
    std::vector<Handshake> full;
    for (int i = 0; i < 3; ++i) {
      full.push_back(connectOnce(*ctx, max, nullptr));
      REQUIRE(full.back().ok);
      CHECK_FALSE(full.back().resumed);
      REQUIRE(full.back().session != nullptr);
      REQUIRE(SSL_SESSION_has_ticket(full.back().session) == 1);
    }
    std::vector<SSL_SESSION*> owned;
    for (const Handshake& h : full) {
      owned.push_back(h.session);
    }

    // Same key: resumed.
    Handshake again = connectOnce(*ctx, max, full[0].session);
    owned.push_back(again.session);
    REQUIRE(again.ok);
    CHECK(again.resumed);

    // One rotation: the old key only decrypts now. Its ticket still resumes, and the server
    // renews it under the new key.
    rotateTicketKeysForTesting();
    Handshake after_one = connectOnce(*ctx, max, full[1].session);
    owned.push_back(after_one.session);
    REQUIRE(after_one.ok);
    CHECK(after_one.resumed);
    REQUIRE(after_one.session != nullptr);

    // A second rotation: the first key is gone (a full handshake); the renewed ticket, under
    // what is now the previous key, still resumes.
    rotateTicketKeysForTesting();
    Handshake after_two = connectOnce(*ctx, max, full[2].session);
    owned.push_back(after_two.session);
    REQUIRE(after_two.ok);
    CHECK_FALSE(after_two.resumed);
    Handshake renewed = connectOnce(*ctx, max, after_one.session);
    owned.push_back(renewed.session);
    REQUIRE(renewed.ok);
    CHECK(renewed.resumed);

    for (SSL_SESSION* s : owned) {
      SSL_SESSION_free(s);
    }
  }
}

TEST_CASE("ticket keys: a resumed TLS 1.3 connection gets a fresh ticket to resume with", "[tls]") {
  Pair pair;
  auto ctx = pair.context();
  Handshake h = connectOnce(*ctx, 0, nullptr);
  REQUIRE(h.ok);
  // A chain of single-use tickets: each resumption hands out the next one.
  for (int i = 0; i < 4; ++i) {
    CAPTURE(i);
    REQUIRE(h.session != nullptr);
    Handshake next = connectOnce(*ctx, 0, h.session);
    SSL_SESSION_free(h.session);
    REQUIRE(next.ok);
    CHECK(next.resumed);
    h = next;
  }
  SSL_SESSION_free(h.session);
}

TEST_CASE("ticket keys: with client certificates a TLS 1.3 ticket is not renewed", "[tls]") {
  // A renewed ticket would carry the client certificate on past its own lifetime: under mTLS
  // the chain ends with the first ticket (its one use), and the next connection is full.
  Pair pair;
  auto ctx = pair.context(true);
  Handshake first = connectOnce(*ctx, 0, nullptr, &pair);
  REQUIRE(first.ok);
  REQUIRE(first.session != nullptr);
  Handshake resumed = connectOnce(*ctx, 0, first.session, &pair);
  REQUIRE(resumed.ok);
  CHECK(resumed.resumed);
  REQUIRE(resumed.session != nullptr);
  Handshake again = connectOnce(*ctx, 0, resumed.session, &pair);
  REQUIRE(again.ok);
  CHECK_FALSE(again.resumed);
  for (SSL_SESSION* x : {first.session, resumed.session, again.session}) {
    SSL_SESSION_free(x);
  }
}

TEST_CASE("ticket keys: a context built later (a reload) resumes the earlier one's tickets",
          "[tls]") {
  Pair pair;
  auto before = pair.context();
  auto after = pair.context();
  for (int max : {0, TLS1_2_VERSION}) {
    CAPTURE(max);
    Handshake first = connectOnce(*before, max, nullptr);
    REQUIRE(first.ok);
    REQUIRE(first.session != nullptr);
    Handshake again = connectOnce(*after, max, first.session);
    REQUIRE(again.ok);
    CHECK(again.resumed);
    SSL_SESSION_free(first.session);
    SSL_SESSION_free(again.session);
  }
}

// Issue 24 item 7: a reload does not swap a valid certificate for one clients refuse.
TEST_CASE("refusedReplacement: a dead certificate does not replace a live one", "[tls]") {
  constexpr int64_t kNow = 1'800'000'000;
  const auto cert = [](int64_t from, int64_t to) {
    CertificateInfo c;
    c.fingerprint = "ab12";
    c.not_before = "from";
    c.not_after = "to";
    c.not_before_unix = from;
    c.not_after_unix = to;
    return c;
  };
  const CertificateInfo live = cert(kNow - 100, kNow + 100);
  const CertificateInfo expired = cert(kNow - 200, kNow - 1);
  const CertificateInfo early = cert(kNow + 1, kNow + 200);
  const CertificateInfo unreadable = cert(0, 0);
  struct Case {
    const char* what;
    const CertificateInfo& running;
    const CertificateInfo& next;
    std::string_view refused;  // "" = accepted, else a word the reason holds
  };
  const Case cases[] = {
      {"live by live", live, live, ""},
      {"live by expired", live, expired, "expired at to"},
      {"live by not yet valid", live, early, "not valid before from"},
      {"expired by expired", expired, expired, ""},
      {"expired by not yet valid", expired, early, ""},
      {"not yet valid by expired", early, expired, ""},
      {"live by unreadable dates", live, unreadable, ""},
      {"unreadable by expired", unreadable, expired, "expired"},
      {"live by one expiring this very second", live, cert(kNow - 1, kNow), ""},
      {"live by one valid from this very second", live, cert(kNow, kNow + 1), ""},
  };
  for (const Case& c : cases) {
    CAPTURE(c.what);
    const std::string why = refusedReplacement(c.running, c.next, kNow);
    if (c.refused.empty()) {
      CHECK(why.empty());
    } else {
      CHECK(why.find(c.refused) != std::string::npos);
      CHECK(why.find("ab12") != std::string::npos);
    }
  }
}

TEST_CASE("buildServerContext: reads both ends of the validity period", "[tls]") {
  Pair pair;
  const auto context = pair.context();  // the certificate info lives as long as the context
  const CertificateInfo& c = context->certificate();
  const int64_t now = static_cast<int64_t>(std::time(nullptr));
  CHECK(c.not_before_unix != 0);
  CHECK(c.not_before_unix <= now);
  CHECK(c.not_after_unix > now);
  CHECK(c.not_after_unix - c.not_before_unix == 24 * 3600);  // -days 1
}

}  // namespace gw::tls
