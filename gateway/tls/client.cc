// tls/: the client side (see tls.h).

#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/x509err.h>
#include <openssl/x509v3.h>

#include <string>

#include "gateway/tls/tls.h"

namespace gw::tls {

namespace {

std::string opensslReason() {
  const unsigned long e = ERR_get_error();
  ERR_clear_error();
  if (e == 0) {
    return "unknown OpenSSL error";
  }
  const char* r = ERR_reason_error_string(e);
  return r != nullptr ? r : "OpenSSL error " + std::to_string(e);
}

bool isIpLiteral(const std::string& name) {
  unsigned char buf[16];
  return inet_pton(AF_INET, name.c_str(), buf) == 1 || inet_pton(AF_INET6, name.c_str(), buf) == 1;
}

}  // namespace

ContextPtr makeClientContext(const std::string& ca_file, const std::string& cert_file,
                             const std::string& key_file, std::string& error) {
  ERR_clear_error();
  ContextPtr ctx(SSL_CTX_new(TLS_client_method()), SSL_CTX_free);
  if (!ctx) {
    error = "cannot create a TLS context: " + opensslReason();
    return nullptr;
  }
  SSL_CTX_set_min_proto_version(ctx.get(), TLS1_2_VERSION);
  SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  // ECDHE with AEAD ciphers only for TLS 1.2 (TLS 1.3 suites are all AEAD).
  SSL_CTX_set_cipher_list(ctx.get(),
                          "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
                          "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
                          "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305");
  if (ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx.get()) != 1) {
      error = "cannot load the system certificate store: " + opensslReason();
      return nullptr;
    }
  } else if (SSL_CTX_load_verify_locations(ctx.get(), ca_file.c_str(), nullptr) != 1) {
    error = "cannot load CA file '" + ca_file + "': " + opensslReason();
    return nullptr;
  }
  if (cert_file.empty() != key_file.empty()) {
    error = "a client certificate needs both 'cert' and 'key'";
    return nullptr;
  }
  if (!cert_file.empty()) {
    if (SSL_CTX_use_certificate_chain_file(ctx.get(), cert_file.c_str()) != 1) {
      error = "cannot load certificate '" + cert_file + "': " + opensslReason();
      return nullptr;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx.get(), key_file.c_str(), SSL_FILETYPE_PEM) != 1) {
      if (ERR_GET_REASON(ERR_peek_error()) == X509_R_KEY_VALUES_MISMATCH) {
        ERR_clear_error();
        error = "key '" + key_file + "' does not match certificate '" + cert_file + "'";
      } else {
        error = "cannot load key '" + key_file + "': " + opensslReason();
      }
      return nullptr;
    }
    if (SSL_CTX_check_private_key(ctx.get()) != 1) {
      error = "key '" + key_file + "' does not match certificate '" + cert_file + "'";
      ERR_clear_error();
      return nullptr;
    }
  }
  // No client session cache: pooled connections are reused instead, at no handshake at all.
  SSL_CTX_set_session_cache_mode(ctx.get(), SSL_SESS_CACHE_OFF);
  return ctx;
}

bool prepareClient(SSL* ssl, std::string_view name) noexcept {
  const std::string n(name);
  if (isIpLiteral(n)) {
    X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
    return X509_VERIFY_PARAM_set1_ip_asc(param, n.c_str()) == 1;
  }
  if (SSL_set_tlsext_host_name(ssl, n.c_str()) != 1) {
    return false;
  }
  SSL_set_hostflags(ssl, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
  return SSL_set1_host(ssl, n.c_str()) == 1;
}

unsigned long protocolError(const unsigned long* errors, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i) {
    if (ERR_GET_LIB(errors[i]) != 0 && !ERR_SYSTEM_ERROR(errors[i])) {
      return errors[i];
    }
  }
  return 0;
}

bool handshakeFailed(const SSL* ssl, unsigned long protocol_error) noexcept {
  if (ssl != nullptr && SSL_get_verify_result(ssl) != X509_V_OK) {
    return true;
  }
  return protocol_error != 0;
}

std::string handshakeError(const SSL* ssl, unsigned long queued_error) {
  if (ssl != nullptr) {
    const long v = SSL_get_verify_result(ssl);
    if (v != X509_V_OK) {
      return std::string("certificate verify failed: ") + X509_verify_cert_error_string(v);
    }
  }
  if (queued_error != 0) {
    const char* r = ERR_reason_error_string(queued_error);
    if (r != nullptr) {
      return r;
    }
  }
  return "handshake failed";
}

}  // namespace gw::tls
