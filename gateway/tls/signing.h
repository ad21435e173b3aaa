#pragma once
// tls/: a private key the gateway signs with — upstreams[].auth.key_file of a signed_identity
// upstream (RS256 with an RSA key of at least 2048 bits, ES256 with a P-256 key), loaded once
// at load from PEM (PKCS#8 or the traditional RSA/EC forms, unencrypted), and its public half
// as a JWK (RFC 7517) with the RFC 7638 thumbprint as `kid`. Immutable once loaded; signing is
// thread-safe (each call makes its own digest context).

#include <memory>
#include <string>
#include <string_view>

namespace gw::tls {

class SigningKey {
 public:
  // Null with `error` (naming the file, never a byte of it) when the file cannot be read,
  // is not an unencrypted PEM private key, or holds a key of another type or size.
  static std::shared_ptr<const SigningKey> load(const std::string& path, std::string& error);
  // From PEM text (tests).
  static std::shared_ptr<const SigningKey> fromPem(std::string_view pem, std::string& error);
  ~SigningKey();
  SigningKey(const SigningKey&) = delete;
  SigningKey& operator=(const SigningKey&) = delete;

  std::string_view alg() const noexcept { return alg_; }  // "RS256" or "ES256"
  const std::string& kid() const noexcept { return kid_; }
  // The public key as one JWK object: kty, the key's members, kid, alg, use "sig".
  const std::string& publicJwk() const noexcept { return jwk_; }
  // The JWS signature of `input` (for ES256 the raw r||s form of RFC 7518 §3.4, 64 bytes).
  // False only when OpenSSL fails.
  bool sign(std::string_view input, std::string& signature) const;

 private:
  struct Pkey;
  SigningKey() = default;
  static std::shared_ptr<const SigningKey> make(void* pkey, std::string& error);

  std::unique_ptr<Pkey> key_;
  std::string alg_;
  std::string kid_;
  std::string jwk_;
};

}  // namespace gw::tls
