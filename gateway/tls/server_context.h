#pragma once
// tls/: the server side of TLS on the client port (issue #17). An OpenSSL SSL_CTX built
// once per configuration load from the `tls:` block (settings/ calls buildServerContext and
// turns its error into a diagnostic), the process-wide session-ticket keys every context
// shares, and the identity read from a verified client certificate. No sockets here: the
// handshake and the record I/O are event::Socket's (event/socket_tls.cc).
//
// Lifetime: a context is immutable once built and held by shared_ptr (Settings, the
// listener's current context) and by OpenSSL's own count on every SSL made from it, so a
// connection keeps the context it started with across reloads.

#include <openssl/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gw::tls {

enum class MinVersion : uint8_t { kTls12, kTls13 };

// `tls.certificates[]` (issue #27): one more certificate, served to a client whose SNI
// names one of `hosts` (lowercase; exact, or "*.example.com" for any name under it).
struct SniCertificate {
  std::vector<std::string> hosts;
  std::string cert;
  std::string key;
};

// What the `tls:` block names (absolute paths; client_ca "" = no client certificates).
struct ServerConfig {
  std::string cert;       // PEM: the certificate, then its chain (the default one)
  std::string key;        // PEM private key matching `cert`
  std::string client_ca;  // PEM CA certificates that client certificates must chain to
  MinVersion min_version = MinVersion::kTls12;
  std::vector<SniCertificate> certificates;
};

// The certificates a context picks from by SNI. Owned by the context's SSL_CTX (freed with
// it), so it lives as long as any connection made from the context. Number 0 is the default
// certificate, i the i-th of ServerConfig::certificates.
class SniTable {
 public:
  struct Entry {
    std::vector<std::string> hosts;
    SSL_CTX* ctx = nullptr;  // one reference held
  };
  explicit SniTable(std::vector<Entry> entries) noexcept : entries_(std::move(entries)) {}
  ~SniTable();
  SniTable(const SniTable&) = delete;
  SniTable& operator=(const SniTable&) = delete;

  // The certificate that serves `host` (a DNS name, any case, no port): an exact name
  // before a wildcard; 0 when none names it.
  size_t certFor(std::string_view host) const noexcept;
  // The certificate the handshake of `ssl` chose.
  size_t servedBy(const SSL* ssl) const noexcept;
  const std::vector<Entry>& entries() const noexcept { return entries_; }

 private:
  std::vector<Entry> entries_;
};

// The SNI table of the context `ssl` was made from (null: it has no SNI certificates).
const SniTable* sniTableOf(const SSL* ssl) noexcept;

// What the served (leaf) certificate says, read once at build: logs and /config.
struct CertificateInfo {
  std::string fingerprint;  // SHA-256 of its DER, lower-case hex
  std::string subject;      // as peerSubject() reads it (first DNS/URI SAN, else CN)
  std::string not_before;   // ISO 8601 UTC, "2026-12-06T18:20:30Z"
  std::string not_after;
  int64_t not_before_unix = 0;  // seconds since the epoch (0 when unreadable)
  int64_t not_after_unix = 0;   // seconds since the epoch (0 when unreadable)
};

// Whether a reload may serve `next` in place of `running` at `now` (seconds since the epoch):
// "" when it may; else why not, e.g. "certificate <fp> expired at 2026-01-01T00:00:00Z" — a
// `next` outside its validity period (expired, or not valid yet) while `running` is inside
// its own. A reload that would swap a good certificate for one every client refuses is
// refused like a key that does not match (the running one stays). Unreadable dates (0) never
// refuse; neither does a `running` that is itself out of its period (any change may help).
std::string refusedReplacement(const CertificateInfo& running, const CertificateInfo& next,
                               int64_t now);

class ServerContext {
 public:
  explicit ServerContext(SSL_CTX* ctx, bool client_certs, CertificateInfo cert,
                         const SniTable* sni = nullptr) noexcept
      : ctx_(ctx), client_certs_(client_certs), cert_(std::move(cert)), sni_(sni) {}
  ~ServerContext();
  ServerContext(const ServerContext&) = delete;
  ServerContext& operator=(const ServerContext&) = delete;

  // A new server-side SSL on this context (OpenSSL counts the reference), or null when out
  // of memory. The caller owns it (SSL_free).
  SSL* newSession() const noexcept;
  // Client certificates are required and verified against client_ca.
  bool clientCerts() const noexcept { return client_certs_; }
  // SHA-256 of the leaf certificate's DER, lower-case hex (logs and /config).
  const std::string& fingerprint() const noexcept { return cert_.fingerprint; }
  const CertificateInfo& certificate() const noexcept { return cert_; }

 private:
  SSL_CTX* ctx_;
  bool client_certs_;
  CertificateInfo cert_;
  const SniTable* sni_;  // owned by ctx_ (null: no SNI certificates)
};

// Which configured file a build error is about (the loader points at that key).
enum class Field : uint8_t { kCert, kKey, kClientCa };

struct BuildResult {
  std::shared_ptr<const ServerContext> context;  // null on error
  Field field = Field::kCert;
  int certificate = -1;  // the certificates[] entry at fault (-1: the default pair)
  std::string error;     // what is wrong, naming the file
};

// Reads the files and builds the context: TLS 1.2 (unless kTls13) and 1.3, ECDHE with AEAD
// ciphers only for 1.2 and OpenSSL's TLS 1.3 suites, ALPN http/1.1, no renegotiation,
// stateless session tickets with the keys of ticketKeys(), client certificates required
// when client_ca is set. Never throws.
BuildResult buildServerContext(const ServerConfig& cfg) noexcept;

// The caller identity a verified client certificate gives: the first subjectAltName entry
// of type DNS or URI (in the order the certificate lists them), else the last commonName of
// the subject; "" when it has none of these (or one holds a NUL or a control character).
std::string peerSubject(const X509* cert);

// Session-ticket keys, shared by every context so tickets survive a reload. A key encrypts
// new tickets for kTicketKeyLifetime, then only decrypts (a ticket under it is renewed) for
// one more period; keys live in memory only (each process, and each restart, has its own).
inline constexpr int64_t kTicketKeyLifetimeSeconds = 3600;

// For tests: rotate the ticket keys now (as if an hour had passed).
void rotateTicketKeysForTesting() noexcept;

}  // namespace gw::tls
