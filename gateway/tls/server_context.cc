// The client port's SSL_CTX, its ticket keys and the client-certificate identity (see
// server_context.h).

#include "gateway/tls/server_context.h"

#include <openssl/core_names.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/sha.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>
#include <mutex>
#include <optional>
#include <sstream>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/core/ascii.h"
#include "gateway/core/clock.h"
#include "gateway/core/hex.h"

namespace gw::tls {

namespace {

// TLS 1.2: ECDHE key exchange with AEAD ciphers only (Mozilla's "intermediate" list). TLS 1.3
// keeps OpenSSL's default suites (all AEAD).
constexpr const char* kTls12Ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
constexpr int kVerifyDepth = 8;

int sslSniIndex();  // below: the SSL ex_data slot that points to its context's SniTable

struct BioFree {
  void operator()(BIO* b) const noexcept { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const noexcept { X509_free(x); }
};
struct PkeyFree {
  void operator()(EVP_PKEY* k) const noexcept { EVP_PKEY_free(k); }
};
struct CtxFree {
  void operator()(SSL_CTX* c) const noexcept { SSL_CTX_free(c); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;
using X509Ptr = std::unique_ptr<X509, X509Free>;
using PkeyPtr = std::unique_ptr<EVP_PKEY, PkeyFree>;
using CtxPtr = std::unique_ptr<SSL_CTX, CtxFree>;

// OpenSSL's first queued error as text (the queue is cleared), or `fallback`.
std::string sslError(const char* fallback) {
  unsigned long e = ERR_peek_error();
  std::string out = fallback;
  if (e != 0) {
    char buf[256];
    ERR_error_string_n(e, buf, sizeof buf);
    out = buf;
  }
  ERR_clear_error();
  return out;
}

bool readFile(const std::string& path, std::string& out, std::string& why) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    why = "cannot read " + path + ": " + std::strerror(errno);
    return false;
  }
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

// Encrypted keys are refused (no prompt on a server's terminal).
int noPassword(char*, int, int, void*) {
  return 0;
}

// Every PEM certificate in `pem`, in order.
std::vector<X509Ptr> readCerts(const std::string& pem) {
  std::vector<X509Ptr> out;
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  while (bio) {
    X509Ptr x(PEM_read_bio_X509(bio.get(), nullptr, noPassword, nullptr));
    if (!x) {
      break;
    }
    out.push_back(std::move(x));
  }
  ERR_clear_error();  // the end of the input reads as "no start line"
  return out;
}

// An ASN.1 time as ISO 8601 UTC ("" when OpenSSL cannot read it); `unix` gets it in seconds.
std::string isoTime(const ASN1_TIME* t, int64_t* unix = nullptr) {
  struct tm tm {};
  if (t == nullptr || ASN1_TIME_to_tm(t, &tm) != 1) {
    return "";
  }
  if (unix != nullptr) {
    *unix = static_cast<int64_t>(timegm(&tm));
  }
  char buf[32];
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(buf, n);
}

int selectAlpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
               unsigned int inlen, void*) {
  unsigned char* chosen = nullptr;
  if (SSL_select_next_proto(&chosen, outlen, kAlpn, sizeof kAlpn, in, inlen) !=
      OPENSSL_NPN_NEGOTIATED) {
    // The client offers no http/1.1 (h2 only): the handshake goes on without ALPN, and a
    // client that cannot speak HTTP/1.1 then gives up on its own.
    return SSL_TLSEXT_ERR_NOACK;
  }
  *out = chosen;
  return SSL_TLSEXT_ERR_OK;
}

// ---- session-ticket keys --------------------------------------------------------------------

struct TicketKey {
  std::array<unsigned char, 16> name{};
  std::array<unsigned char, 32> aes{};
  std::array<unsigned char, 32> hmac{};
  int64_t born = 0;  // steady seconds
};

class TicketKeys {
 public:
  // The key new tickets are encrypted with (rotated when it has served its time).
  bool current(TicketKey& out) {
    std::lock_guard lock(mu_);
    rotateIfDue();
    if (!current_) {
      return false;
    }
    out = *current_;
    return true;
  }
  // The key named `name`: 1 = current, 2 = previous (the ticket is renewed), 0 = unknown.
  int find(const unsigned char* name, TicketKey& out) {
    std::lock_guard lock(mu_);
    rotateIfDue();
    if (current_ && std::memcmp(current_->name.data(), name, 16) == 0) {
      out = *current_;
      return 1;
    }
    if (previous_ && std::memcmp(previous_->name.data(), name, 16) == 0) {
      out = *previous_;
      return 2;
    }
    return 0;
  }
  void rotateNow() {
    std::lock_guard lock(mu_);
    rotate(now());
  }

 private:
  static int64_t now() {
    return std::chrono::duration_cast<std::chrono::seconds>(core::steadyNow().time_since_epoch())
        .count();
  }
  void rotateIfDue() {
    const int64_t t = now();
    if (!current_ || t - current_->born >= kTicketKeyLifetimeSeconds) {
      rotate(t);
    }
  }
  void rotate(int64_t t) {
    TicketKey k;
    if (RAND_bytes(k.name.data(), 16) != 1 || RAND_bytes(k.aes.data(), 32) != 1 ||
        RAND_bytes(k.hmac.data(), 32) != 1) {
      return;  // keep what there is; no ticket is better than a weak one
    }
    k.born = t;
    // A key that stopped encrypting more than a period ago decrypts nothing any more.
    if (current_ && t - current_->born < 2 * kTicketKeyLifetimeSeconds) {
      previous_ = current_;
    } else {
      previous_.reset();
    }
    current_ = k;
  }

  std::mutex mu_;
  std::optional<TicketKey> current_;
  std::optional<TicketKey> previous_;
};

TicketKeys& ticketKeys() {
  static TicketKeys keys;
  return keys;
}

void cleanse(TicketKey& k) {
  OPENSSL_cleanse(k.aes.data(), k.aes.size());
  OPENSSL_cleanse(k.hmac.data(), k.hmac.size());
}

int ticketKeyCallback(SSL* ssl, unsigned char* key_name, unsigned char* iv, EVP_CIPHER_CTX* cctx,
                      EVP_MAC_CTX* hctx, int enc) {
  TicketKey k;
  int result = 1;
  if (enc == 1) {
    if (!ticketKeys().current(k) || RAND_bytes(iv, 16) != 1) {
      return -1;  // no ticket this time
    }
    std::memcpy(key_name, k.name.data(), 16);
  } else {
    result = ticketKeys().find(key_name, k);
    if (result == 0) {
      return 0;  // unknown or expired key: a full handshake
    }
    // TLS 1.3 clients use a ticket once (RFC 8446 C.4): a resumed connection gets a fresh one
    // (OpenSSL sends one only when told to renew), or every other connection would be full.
    // Not with client certificates: a renewed ticket carries the certificate on, so a chain
    // of resumptions could outlive it; their sessions end with the first ticket's lifetime.
    if (SSL_version(ssl) == TLS1_3_VERSION && (SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) == 0) {
      result = 2;
    }
  }
  char digest[] = "SHA256";
  OSSL_PARAM params[] = {
      OSSL_PARAM_construct_octet_string(OSSL_MAC_PARAM_KEY, k.hmac.data(), k.hmac.size()),
      OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
      OSSL_PARAM_construct_end()};
  const bool ok =
      EVP_MAC_CTX_set_params(hctx, params) == 1 &&
      (enc == 1 ? EVP_EncryptInit_ex(cctx, EVP_aes_256_cbc(), nullptr, k.aes.data(), iv)
                : EVP_DecryptInit_ex(cctx, EVP_aes_256_cbc(), nullptr, k.aes.data(), iv)) == 1;
  cleanse(k);
  return ok ? result : -1;
}

bool printable(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return false;
    }
  }
  return !s.empty();
}

}  // namespace

ServerContext::~ServerContext() {
  SSL_CTX_free(ctx_);
}

SSL* ServerContext::newSession() const noexcept {
  SSL* ssl = SSL_new(ctx_);
  if (ssl != nullptr) {
    SSL_set_accept_state(ssl);
    if (sni_ != nullptr) {
      SSL_set_ex_data(ssl, sslSniIndex(), const_cast<SniTable*>(sni_));
    }
  }
  return ssl;
}

namespace {

// Inside [notBefore, notAfter]; a date that could not be read counts as no bound.
bool withinValidity(const CertificateInfo& c, int64_t now) noexcept {
  return (c.not_before_unix == 0 || c.not_before_unix <= now) &&
         (c.not_after_unix == 0 || now <= c.not_after_unix);
}

}  // namespace

std::string refusedReplacement(const CertificateInfo& running, const CertificateInfo& next,
                               int64_t now) {
  if (withinValidity(next, now) || !withinValidity(running, now)) {
    return "";
  }
  if (next.not_after_unix != 0 && now > next.not_after_unix) {
    return "certificate " + next.fingerprint + " expired at " + next.not_after;
  }
  return "certificate " + next.fingerprint + " is not valid before " + next.not_before;
}

namespace {

// A context for one certificate pair, with every setting of `cfg` but its files. False with
// `field` and `why` on error.
bool makeContext(const std::string& cert, const std::string& key_file, const ServerConfig& cfg,
                 CtxPtr& out, CertificateInfo& info, Field& field, std::string& why) {
  field = Field::kCert;
  CtxPtr ctx(SSL_CTX_new(TLS_server_method()));
  if (!ctx) {
    why = sslError("cannot create a TLS context");
    return false;
  }
  SSL_CTX_set_min_proto_version(
      ctx.get(), cfg.min_version == MinVersion::kTls13 ? TLS1_3_VERSION : TLS1_2_VERSION);
  SSL_CTX_set_options(
      ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_COMPRESSION);
  SSL_CTX_set_mode(ctx.get(), SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER |
                                  SSL_MODE_RELEASE_BUFFERS);
  if (SSL_CTX_set_cipher_list(ctx.get(), kTls12Ciphers) != 1) {
    why = sslError("cannot set the TLS 1.2 ciphers");
    return false;
  }
  SSL_CTX_set_default_passwd_cb(ctx.get(), noPassword);
  SSL_CTX_set_alpn_select_cb(ctx.get(), selectAlpn, nullptr);
  // Stateless tickets only (no per-context session cache to grow); ticket lifetime = the
  // time a key encrypts, so a client never holds a ticket no key can read.
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  SSL_CTX_set_timeout(ctx.get(), kTicketKeyLifetimeSeconds);
  SSL_CTX_set_tlsext_ticket_key_evp_cb(ctx.get(), ticketKeyCallback);

  // The certificate and its chain.
  std::string pem;
  if (!readFile(cert, pem, why)) {
    return false;
  }
  std::vector<X509Ptr> chain = readCerts(pem);
  if (chain.empty()) {
    why = "no PEM certificate in " + cert;
    return false;
  }
  if (SSL_CTX_use_certificate(ctx.get(), chain.front().get()) != 1) {
    why = cert + ": " + sslError("certificate refused");
    return false;
  }
  for (size_t i = 1; i < chain.size(); ++i) {
    if (SSL_CTX_add1_chain_cert(ctx.get(), chain[i].get()) != 1) {
      why = cert + ": " + sslError("chain certificate refused");
      return false;
    }
  }
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int md_len = 0;
  if (X509_digest(chain.front().get(), EVP_sha256(), md, &md_len) != 1) {
    why = sslError("cannot hash the certificate");
    return false;
  }

  // The key, which must match.
  field = Field::kKey;
  std::string key_pem;
  if (!readFile(key_file, key_pem, why)) {
    return false;
  }
  BioPtr kbio(BIO_new_mem_buf(key_pem.data(), static_cast<int>(key_pem.size())));
  PkeyPtr key(kbio ? PEM_read_bio_PrivateKey(kbio.get(), nullptr, noPassword, nullptr) : nullptr);
  OPENSSL_cleanse(key_pem.data(), key_pem.size());
  if (!key) {
    why = "no usable PEM private key in " + key_file + " (encrypted keys are not supported)";
    return false;
  }
  if (SSL_CTX_use_PrivateKey(ctx.get(), key.get()) != 1 ||
      SSL_CTX_check_private_key(ctx.get()) != 1) {
    ERR_clear_error();
    why = "the private key in " + key_file + " does not match the certificate in " + cert;
    return false;
  }

  // Client certificates. The session id context (which a resumed session must carry) is a
  // hash of the CA file: a ticket issued under other client CAs is not resumed.
  field = Field::kClientCa;
  std::string ca_pem;
  if (!cfg.client_ca.empty()) {
    if (!readFile(cfg.client_ca, ca_pem, why)) {
      return false;
    }
    std::vector<X509Ptr> cas = readCerts(ca_pem);
    if (cas.empty()) {
      why = "no PEM certificate in " + cfg.client_ca;
      return false;
    }
    X509_STORE* store = SSL_CTX_get_cert_store(ctx.get());
    for (const X509Ptr& ca : cas) {
      if (X509_STORE_add_cert(store, ca.get()) != 1 ||
          SSL_CTX_add_client_CA(ctx.get(), ca.get()) != 1) {
        why = cfg.client_ca + ": " + sslError("CA certificate refused");
        return false;
      }
    }
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
    SSL_CTX_set_verify_depth(ctx.get(), kVerifyDepth);
  }
  std::string sid = "mcp-gateway/tls-listen";
  sid += '\0';
  sid += ca_pem;
  unsigned char sid_md[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(sid.data()), sid.size(), sid_md);
  SSL_CTX_set_session_id_context(ctx.get(), sid_md, sizeof sid_md);

  info = CertificateInfo{};
  info.fingerprint = core::hexEncode(std::string_view(reinterpret_cast<const char*>(md), md_len));
  info.subject = peerSubject(chain.front().get());
  info.not_before = isoTime(X509_get0_notBefore(chain.front().get()), &info.not_before_unix);
  info.not_after = isoTime(X509_get0_notAfter(chain.front().get()), &info.not_after_unix);
  out = std::move(ctx);
  return true;
}

// The SNI table is the main SSL_CTX's ex_data (deleted with it); each SSL made from the
// context carries a pointer to it (sniTableOf).
void freeSniTable(void*, void* ptr, CRYPTO_EX_DATA*, int, long, void*) {
  delete static_cast<SniTable*>(ptr);
}

int ctxSniIndex() {
  static const int index = SSL_CTX_get_ex_new_index(0, nullptr, nullptr, nullptr, freeSniTable);
  return index;
}

int sslSniIndex() {
  static const int index = SSL_get_ex_new_index(0, nullptr, nullptr, nullptr, nullptr);
  return index;
}

// SNI: the certificate that names the host the client asked for (else the default).
int onServerName(SSL* ssl, int*, void* arg) {
  const auto* table = static_cast<const SniTable*>(arg);
  const char* name = SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name);
  if (name == nullptr || table == nullptr) {
    return SSL_TLSEXT_ERR_OK;
  }
  const size_t i = table->certFor(name);
  if (i > 0) {
    SSL_set_SSL_CTX(ssl, table->entries()[i - 1].ctx);
  }
  return SSL_TLSEXT_ERR_OK;
}

}  // namespace

SniTable::~SniTable() {
  for (Entry& e : entries_) {
    SSL_CTX_free(e.ctx);
  }
}

size_t SniTable::certFor(std::string_view host) const noexcept {
  size_t wildcard = 0;
  size_t wildcard_len = 0;
  for (size_t i = 0; i < entries_.size(); ++i) {
    for (const std::string& h : entries_[i].hosts) {
      const core::HostMatch m = core::matchHost(h, host);
      if (m == core::HostMatch::kExact) {
        return i + 1;
      }
      if (m == core::HostMatch::kWildcard && h.size() > wildcard_len) {
        wildcard = i + 1;  // the longest wildcard that takes it
        wildcard_len = h.size();
      }
    }
  }
  return wildcard;
}

size_t SniTable::servedBy(const SSL* ssl) const noexcept {
  const SSL_CTX* ctx = SSL_get_SSL_CTX(ssl);
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (entries_[i].ctx == ctx) {
      return i + 1;
    }
  }
  return 0;
}

const SniTable* sniTableOf(const SSL* ssl) noexcept {
  return ssl == nullptr ? nullptr
                        : static_cast<const SniTable*>(SSL_get_ex_data(ssl, sslSniIndex()));
}

BuildResult buildServerContext(const ServerConfig& cfg) noexcept {
  BuildResult r;
  auto fail = [&](Field f, std::string why, int certificate) {
    r.field = f;
    r.error = std::move(why);
    r.certificate = certificate;
    r.context.reset();
    ERR_clear_error();
    return r;
  };
  try {
    CtxPtr ctx;
    CertificateInfo info;
    Field field = Field::kCert;
    std::string why;
    if (!makeContext(cfg.cert, cfg.key, cfg, ctx, info, field, why)) {
      return fail(field, why, -1);
    }
    SniTable* table = nullptr;
    if (!cfg.certificates.empty()) {
      std::vector<SniTable::Entry> entries;
      auto release = [&] {
        for (SniTable::Entry& e : entries) {
          SSL_CTX_free(e.ctx);
        }
      };
      for (size_t i = 0; i < cfg.certificates.size(); ++i) {
        const SniCertificate& c = cfg.certificates[i];
        CtxPtr extra;
        CertificateInfo extra_info;
        if (!makeContext(c.cert, c.key, cfg, extra, extra_info, field, why)) {
          release();
          return fail(field, why, static_cast<int>(i));
        }
        entries.push_back(SniTable::Entry{c.hosts, extra.release()});
      }
      table = new SniTable(std::move(entries));
      if (SSL_CTX_set_ex_data(ctx.get(), ctxSniIndex(), table) != 1) {
        delete table;
        return fail(Field::kCert, sslError("cannot attach the SNI certificates"), -1);
      }
      SSL_CTX_set_tlsext_servername_callback(ctx.get(), onServerName);
      SSL_CTX_set_tlsext_servername_arg(ctx.get(), table);
    }
    r.context = std::make_shared<const ServerContext>(ctx.release(), !cfg.client_ca.empty(),
                                                      std::move(info), table);
    return r;
  } catch (...) {
    return fail(Field::kCert, "out of memory while building the TLS context", -1);
  }
}

std::string peerSubject(const X509* cert) {
  if (cert == nullptr) {
    return {};
  }
  auto* names =
      static_cast<GENERAL_NAMES*>(X509_get_ext_d2i(cert, NID_subject_alt_name, nullptr, nullptr));
  std::string out;
  if (names != nullptr) {
    for (int i = 0; i < sk_GENERAL_NAME_num(names) && out.empty(); ++i) {
      const GENERAL_NAME* g = sk_GENERAL_NAME_value(names, i);
      if (g->type != GEN_DNS && g->type != GEN_URI) {
        continue;
      }
      const ASN1_IA5STRING* v = g->type == GEN_DNS ? g->d.dNSName : g->d.uniformResourceIdentifier;
      std::string_view text(reinterpret_cast<const char*>(ASN1_STRING_get0_data(v)),
                            static_cast<size_t>(ASN1_STRING_length(v)));
      if (printable(text)) {
        out.assign(text);
      }
    }
    GENERAL_NAMES_free(names);
  }
  if (!out.empty()) {
    return out;
  }
  const X509_NAME* subject = X509_get_subject_name(cert);
  int last = -1;
  for (int i = X509_NAME_get_index_by_NID(subject, NID_commonName, -1); i >= 0;
       i = X509_NAME_get_index_by_NID(subject, NID_commonName, i)) {
    last = i;
  }
  if (last < 0) {
    return {};
  }
  unsigned char* utf8 = nullptr;
  int n = ASN1_STRING_to_UTF8(&utf8, X509_NAME_ENTRY_get_data(X509_NAME_get_entry(subject, last)));
  if (n > 0) {
    std::string_view text(reinterpret_cast<const char*>(utf8), static_cast<size_t>(n));
    if (printable(text)) {
      out.assign(text);
    }
  }
  OPENSSL_free(utf8);
  ERR_clear_error();
  return out;
}

void rotateTicketKeysForTesting() noexcept {
  ticketKeys().rotateNow();
}

}  // namespace gw::tls
