// libFuzzer target: the JWT/JWKS parser (policy/jwt.cc, jwks.cc). Every input is tried as
//  1. a JWKS document (parseJwks): must succeed with keys or fail with a message, never crash;
//     a set that parses is then used to verify a fixed token;
//  2. a compact JWS (verifyJwt) against fixed HS256/RS256/ES256 keys (the seed tokens in
//     corpus/jwt_fuzz are signed with their private halves);
//  3. the same header.payload re-signed here with the HS256 key, so the claim checks behind
//     the signature see mutated payloads too (a mutated token's own signature never holds);
//  4. strict base64url (core::base64Decode, url alphabet, no padding): what decodes must
//     re-encode to the same text.
// Invariants: reasons are non-empty static text, an authenticated identity has the fixed
// issuer's audience checks behind it, nothing throws.

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/base64.h"
#include "gateway/policy/jwt.h"
#include "gateway/policy/policy.h"
#include "tests/unit/policy/test_util.h"

namespace {

using gw::policy::AuthResult;
using gw::policy::Identity;
using gw::policy::PolicySet;
using gw::policy::test::b64url;

constexpr int64_t kNow = 1800000000;
constexpr char kSecret[] = "01234567890123456789012345678901";  // the "hs" key below
constexpr char kJwks[] =
    R"({"keys":[{"kty":"oct","kid":"hs","k":"MDEyMzQ1Njc4OTAxMjM0NTY3ODkwMTIzNDU2Nzg5MDE"},{"kt)"
    R"(y":"RSA","kid":"rs","n":"wn56mEZGpMy9jWqxxkt_AUqat8cHJ8kJj7mB2laPPjIFYr_de5BvYZNfwmu_kzn)"
    R"(loWJqOvBxj3x_Hi9svsCb9pjyXwOzlnnrbGSjLoB8Q5tcNdRUfpvQ93IaXJNgi0HGmy7EBKjL5whEAmQvJZ7_omz)"
    R"(SPC-ZJmZZ-UstEQ1BP-HwbXXvFRLTCPTBv3KY6DNKXR4fjJa4WXEIcvVyzxAjLKJ5bYZYUmqyG3bs9_K_-vzrXpC)"
    R"(4r4OHhMboAzqGo-_dk8YqZwwJSjvDZpO4IuadC528UwNsT3C3tdPLaQBRmN0aRsDgyOhhx_RIeqaZfU6CgyP6eEo)"
    R"(bsethDTwmFE3P4w","e":"AQAB"},{"kty":"EC","kid":"ec","crv":"P-256","x":"kfS5YfhEkefsmQDNi)"
    R"(GhBe-FCQfOeOi5uAxfHEvN4Zzc","y":"1Zsdbnys9d7-Zsg670mecSvlXbuj2wd8xnDIiRaJ-SA"}]})";

// HS256 with kSecret, no kid; valid at kNow for the fixed issuer and audience.
constexpr char kHsToken[] =
    "eyJhbGciOiJIUzI1NiJ9.eyJpc3MiOiJodHRwczovL2lzc3Vlci5leGFtcGxlIiwiYXVkIjoibWNwLWdhdGV3YXki"
    "LCJleHAiOjE4MDAwMDAzMDAsInN1YiI6IngifQ.GJ-KXdzX1-c-r3FWPVpRsrGnQuIc7eeEzma0WMfD0ME";

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

PolicySet::Jwt makeJwt() {
  PolicySet::Jwt jwt;
  jwt.issuer = "https://issuer.example";
  jwt.audiences = {"mcp-gateway"};
  std::string error;
  check(gw::policy::parseJwks(kJwks, jwt.keys, error));
  check(jwt.keys.size() == 3);
  return jwt;
}

const PolicySet::Jwt& fixedJwt() {
  static const PolicySet::Jwt jwt = makeJwt();
  return jwt;
}

void verify(const PolicySet::Jwt& jwt, std::string_view token) {
  Identity id;
  const char* reason = nullptr;
  const AuthResult r = gw::policy::verifyJwt(jwt, token, kNow, id, &reason);
  if (r == AuthResult::kAuthenticated) {
    check(id.authenticated);
  } else {
    check(r == AuthResult::kInvalid);
    check(reason != nullptr && std::strlen(reason) > 0 && std::strlen(reason) < 128);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);

  // 1. JWKS.
  {
    PolicySet::Jwt jwt;
    jwt.issuer = "https://issuer.example";
    jwt.audiences = {"mcp-gateway"};
    std::string error;
    if (gw::policy::parseJwks(input, jwt.keys, error)) {
      check(error.empty());
      verify(jwt, kHsToken);
    } else {
      check(!error.empty() && error.size() < 1024);
    }
  }

  // 2. The input as a token.
  verify(fixedJwt(), input);

  // 3. Its header.payload re-signed with the HS256 key.
  const size_t d1 = input.find('.');
  if (d1 != std::string_view::npos) {
    const size_t d2 = input.find('.', d1 + 1);
    const std::string_view signing_input = input.substr(0, d2);
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    HMAC(EVP_sha256(), kSecret, static_cast<int>(sizeof(kSecret) - 1),
         reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), mac,
         &mac_len);
    std::string token(signing_input);
    if (d2 == std::string_view::npos) {
      token.push_back('.');  // "header.payload" alone: give it a signature
    }
    token.push_back('.');
    token += b64url(std::string(reinterpret_cast<const char*>(mac), mac_len));
    verify(fixedJwt(), token);
  }

  // 4. Strict base64url round trip.
  std::string decoded;
  if (gw::core::base64Decode(input, gw::core::Base64Alphabet::kUrl, gw::core::Base64Padding::kNone,
                             decoded)) {
    check(b64url(decoded) == input);
  }
  return 0;
}
