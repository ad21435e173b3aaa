// Admin endpoint authorization (see auth.h).

#include "gateway/admin/auth.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "gateway/core/ascii.h"

namespace gw::admin {

bool isOpenAdminPath(std::string_view path) noexcept {
  // The JWKS of signed_identity upstreams is public: upstreams fetch it without a token.
  return path == "/healthz" || path == "/readyz" || path == "/.well-known/jwks.json";
}

AdminAuthResult checkAdminAuth(const std::optional<settings::AdminAuth>& auth,
                               std::string_view path, size_t count,
                               std::string_view first) noexcept {
  if (!auth || isOpenAdminPath(path)) {
    return AdminAuthResult::kOpen;
  }
  if (count == 0) {
    return AdminAuthResult::kMissing;
  }
  if (count > 1) {
    return AdminAuthResult::kInvalid;  // which one counts is ambiguous: neither
  }
  // credentials = auth-scheme [ 1*SP token68 ] (RFC 9110 §11.4, RFC 6750 §2.1).
  constexpr std::string_view kScheme = "bearer";
  if (!core::istartsWith(first, kScheme) || first.size() == kScheme.size() ||
      first[kScheme.size()] != ' ') {
    return AdminAuthResult::kMissing;
  }
  std::string_view token = first.substr(kScheme.size());
  while (!token.empty() && token.front() == ' ') {
    token.remove_prefix(1);
  }
  while (!token.empty() && (token.back() == ' ' || token.back() == '\t')) {
    token.remove_suffix(1);
  }
  if (token.empty()) {
    return AdminAuthResult::kMissing;
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  static_assert(sizeof digest == sizeof auth->token_sha256);
  const bool same = CRYPTO_memcmp(digest, auth->token_sha256.data(), sizeof digest) == 0;
  OPENSSL_cleanse(digest, sizeof digest);
  return same ? AdminAuthResult::kAccepted : AdminAuthResult::kInvalid;
}

}  // namespace gw::admin
