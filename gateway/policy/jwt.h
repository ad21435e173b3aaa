#pragma once
// policy/: JSON Web Tokens (RFC 7519) and JSON Web Key Sets (RFC 7517), internal to the
// policy module. Only HS256 (kty oct), RS256 (kty RSA, ≥ 2048 bits) and ES256 (kty EC,
// crv P-256) are accepted; the token's `alg` must agree with the type of the key chosen, so
// `none` and algorithm confusion (an RSA public key used as an HMAC secret) are refused.
// Verification is noexcept and reports static reasons only — never token contents.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <openssl/evp.h>

#include "gateway/policy/jwks_source.h"
#include "gateway/policy/policy.h"
#include "gateway/policy/token_cache.h"

namespace gw::policy {

struct PkeyDeleter {
  void operator()(EVP_PKEY* p) const noexcept { EVP_PKEY_free(p); }
};

struct Jwk {
  enum class Kty : uint8_t { kOct, kRsa, kEc };
  std::string kid;  // "" when the JWK has none
  Kty kty = Kty::kOct;
  std::string secret;                           // kOct: the raw HMAC key
  std::unique_ptr<EVP_PKEY, PkeyDeleter> pkey;  // kRsa / kEc: the public key
};

struct PolicySet::Jwt {
  std::string issuer;
  std::vector<std::string> audiences;
  std::string groups_claim = "groups";
  int64_t skew_s = 30;
  std::vector<Jwk> keys;  // from keys_file (empty with jwks_url)
  std::string keys_file;  // absolute path, for messages ("" with jwks_url)
  // jwks_url: the shared source the fetcher fills (null with keys_file).
  std::shared_ptr<JwksSource> source;
  std::string jwks_url;
  std::string jwks_ca;  // absolute path; "" = the system store
  std::chrono::seconds jwks_refresh{900};
  // Verified tokens of this PolicySet (never null once loaded).
  std::unique_ptr<TokenCache> cache = std::make_unique<TokenCache>();
};

// Whether a token's `aud` entry names the configured audience `want`: the same string, or,
// for absolute URIs, the same with scheme and host compared case-insensitively and "no path"
// equal to "/" (the 2026-07-28 authorization spec: canonical resource URIs are lower case but
// servers SHOULD accept upper-case scheme and host; with or without the trailing slash).
// Paths, ports and queries compare exactly.
bool sameAudience(std::string_view aud, std::string_view want) noexcept;

// Parses a JWKS document ({"keys":[...]}) into keys; false with a message naming the
// offending key's index on any problem (unsupported kty, bad encoding, weak RSA key, ...).
bool parseJwks(std::string_view json, std::vector<Jwk>& out, std::string& error);

// Verifies a compact JWS and its claims against `jwt` at time `now_unix`; fills `out` on
// kAuthenticated, else returns kInvalid with a static `*reason`.
AuthResult verifyJwt(const PolicySet::Jwt& jwt, std::string_view token, int64_t now_unix,
                     Identity& out, const char** reason) noexcept;

// What verifyJwtWith learnt besides the verdict.
struct JwtFacts {
  int64_t exp = 0;           // the token's exp (kAuthenticated only), whole seconds
  bool unknown_key = false;  // refused because no key of `keys` fits the token's kid / alg
};

// verifyJwt against `keys` instead of jwt.keys (a fetched key set).
AuthResult verifyJwtWith(const PolicySet::Jwt& jwt, const std::vector<Jwk>& keys,
                         std::string_view token, int64_t now_unix, Identity& out,
                         const char** reason, JwtFacts* facts) noexcept;

}  // namespace gw::policy
