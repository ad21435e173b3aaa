#pragma once
// tls/: OpenSSL contexts built once, at load, for the sockets in upstream/ (and the JWKS
// fetch): a client context that verifies the peer against a CA file or the system store, and
// the per-connection setup (SNI, the name to verify). No sockets here; the contexts are
// shared, immutable, by every worker that holds the settings snapshot they belong to.

#include <memory>
#include <string>
#include <string_view>

#include <openssl/ssl.h>

namespace gw::tls {

using ContextPtr = std::shared_ptr<SSL_CTX>;

// A client context: TLS 1.2 or newer, the peer verified against `ca_file` (PEM; "" = the
// system store), an optional client certificate chain and key (both or neither). Null with
// `error` set (naming the file and OpenSSL's reason) on any problem.
ContextPtr makeClientContext(const std::string& ca_file, const std::string& cert_file,
                             const std::string& key_file, std::string& error);

// Sets up `ssl` to connect to `name`: SNI (unless `name` is an IP literal, RFC 6066 §3) and
// the DNS name or IP address the certificate must carry. False when OpenSSL refuses.
bool prepareClient(SSL* ssl, std::string_view name) noexcept;

// The first of `errors` that is an OpenSSL library error other than a system one, or 0.
// libevent's per-bufferevent OpenSSL error list mixes SSL_get_error() codes (a refused or
// reset TCP connect shows up as SSL_ERROR_SYSCALL alone) with ERR codes.
unsigned long protocolError(const unsigned long* errors, size_t n) noexcept;

// Whether a connection that failed before it was established failed in TLS itself (the
// certificate did not verify, or a protocol error: `protocol_error` from protocolError)
// rather than in TCP.
bool handshakeFailed(const SSL* ssl, unsigned long protocol_error) noexcept;

// Why a handshake on `ssl` failed, in a few words: the certificate verification
// result when that failed ("certificate verify failed: hostname mismatch"), else OpenSSL's
// first queued reason, else "handshake failed". `ssl` may be null.
std::string handshakeError(const SSL* ssl, unsigned long queued_error);

}  // namespace gw::tls
