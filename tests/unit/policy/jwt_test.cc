// JWT identity: HS256 / RS256 / ES256 with keys generated here, claim checks, and the
// refusals (alg none, algorithm confusion, unknown kid, tampering).

#include <catch.hpp>

#include <memory>
#include <string>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/x509.h>

#include "gateway/core/base64.h"
#include "gateway/policy/jwt.h"
#include "gateway/policy/policy.h"
#include "tests/unit/policy/test_util.h"

namespace gw::policy {
namespace {

using test::AuthHeader;
using test::b64url;
using test::hmac;
using test::TempDir;

constexpr int64_t kNow = 1800000000;

struct PkeyFree {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
};
using Pkey = std::unique_ptr<EVP_PKEY, PkeyFree>;

std::string bnParam(EVP_PKEY* k, const char* name) {
  BIGNUM* bn = nullptr;
  REQUIRE(EVP_PKEY_get_bn_param(k, name, &bn) == 1);
  std::string out(static_cast<size_t>(BN_num_bytes(bn)), '\0');
  BN_bn2bin(bn, reinterpret_cast<unsigned char*>(out.data()));
  BN_free(bn);
  return out;
}

std::string sign(EVP_PKEY* k, const std::string& input) {
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  size_t len = 0;
  REQUIRE(EVP_DigestSignInit(ctx, nullptr, EVP_sha256(), nullptr, k) == 1);
  REQUIRE(EVP_DigestSign(ctx, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()),
                         input.size()) == 1);
  std::string sig(len, '\0');
  REQUIRE(EVP_DigestSign(ctx, reinterpret_cast<unsigned char*>(sig.data()), &len,
                         reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1);
  sig.resize(len);
  EVP_MD_CTX_free(ctx);
  return sig;
}

// DER ECDSA signature → the raw r||s JWS uses.
std::string derToRaw(const std::string& der) {
  const auto* p = reinterpret_cast<const unsigned char*>(der.data());
  ECDSA_SIG* s = d2i_ECDSA_SIG(nullptr, &p, static_cast<long>(der.size()));
  REQUIRE(s != nullptr);
  std::string out(64, '\0');
  BN_bn2binpad(ECDSA_SIG_get0_r(s), reinterpret_cast<unsigned char*>(out.data()), 32);
  BN_bn2binpad(ECDSA_SIG_get0_s(s), reinterpret_cast<unsigned char*>(out.data()) + 32, 32);
  ECDSA_SIG_free(s);
  return out;
}

struct Keys {
  std::string hs_secret;
  Pkey rsa;
  Pkey ec;
  Keys() {
    hs_secret.resize(32);
    RAND_bytes(reinterpret_cast<unsigned char*>(hs_secret.data()), 32);
    rsa.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "RSA", static_cast<size_t>(2048)));
    ec.reset(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256"));
  }
  std::string jwks() const {
    unsigned char pub[65];
    size_t len = 0;
    EVP_PKEY_get_octet_string_param(ec.get(), OSSL_PKEY_PARAM_ENCODED_PUBLIC_KEY, pub, sizeof pub,
                                    &len);
    std::string point(reinterpret_cast<char*>(pub), len);
    return R"({"keys":[)"
           R"({"kty":"oct","kid":"hs","k":")" +
           b64url(hs_secret) +
           R"("},)"
           R"({"kty":"RSA","kid":"rs","n":")" +
           b64url(bnParam(rsa.get(), OSSL_PKEY_PARAM_RSA_N)) + R"(","e":")" +
           b64url(bnParam(rsa.get(), OSSL_PKEY_PARAM_RSA_E)) +
           R"("},)"
           R"({"kty":"EC","kid":"ec","crv":"P-256","x":")" +
           b64url(point.substr(1, 32)) + R"(","y":")" + b64url(point.substr(33, 32)) + R"("}]})";
  }
};

const Keys& keys() {
  static Keys k;
  return k;
}

std::string claims(const std::string& extra = "") {
  return R"({"iss":"https://issuer.example","aud":["other","mcp-gateway"],"sub":"carol",)"
         R"("exp":)" +
         std::to_string(kNow + 300) + R"(,"nbf":)" + std::to_string(kNow - 10) +
         R"(,"groups":["dev","admin"],"tenant":"acme","level":3,"beta":true,"obj":{"a":1})" +
         extra + "}";
}

std::string token(const std::string& alg, const std::string& kid, const std::string& payload) {
  std::string header = R"({"alg":")" + alg + R"(","typ":"JWT")" +
                       (kid.empty() ? "" : R"(,"kid":")" + kid + R"(")") + "}";
  std::string input = b64url(header) + "." + b64url(payload);
  std::string sig;
  if (alg == "HS256") {
    sig = hmac(keys().hs_secret, input);
  } else if (alg == "RS256") {
    sig = sign(keys().rsa.get(), input);
  } else if (alg == "ES256") {
    sig = derToRaw(sign(keys().ec.get(), input));
  }
  return input + "." + b64url(sig);
}

std::shared_ptr<const PolicySet> loadPolicy(TempDir& dir, const std::string& extra_jwt = "") {
  dir.write("jwks.json", keys().jwks());
  std::string policy = dir.write("p.yaml",
                                 "identity:\n"
                                 "  jwt:\n"
                                 "    issuer: https://issuer.example\n"
                                 "    audiences: [mcp-gateway]\n"
                                 "    keys_file: jwks.json\n" +
                                     extra_jwt + "  anonymous: deny\n");
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::load({policy}, errors);
  for (const auto& e : errors) {
    UNSCOPED_INFO(e.str());
  }
  REQUIRE(errors.empty());
  REQUIRE(set != nullptr);
  return set;
}

AuthResult auth(const PolicySet& set, const std::string& tok, Identity& id, const char** reason,
                int64_t now = kNow) {
  AuthHeader h("Bearer " + tok);
  return set.authenticate(h.fields, now, id, reason);
}

TEST_CASE("jwt: valid HS256, RS256 and ES256 tokens give subject, groups and claims") {
  TempDir dir;
  auto set = loadPolicy(dir);
  for (const char* alg : {"HS256", "RS256", "ES256"}) {
    INFO(alg);
    std::string kid = std::string(alg) == "HS256"   ? "hs"
                      : std::string(alg) == "RS256" ? "rs"
                                                    : "ec";
    Identity id;
    const char* reason = "";
    REQUIRE(auth(*set, token(alg, kid, claims()), id, &reason) == AuthResult::kAuthenticated);
    CHECK(id.authenticated);
    CHECK(id.subject == "carol");
    CHECK(id.groups == std::vector<std::string>{"dev", "admin"});
    REQUIRE(id.claim("tenant") != nullptr);
    CHECK(*id.claim("tenant") == "acme");
    CHECK(*id.claim("level") == "3");
    CHECK(*id.claim("beta") == "true");
    CHECK(*id.claim("iss") == "https://issuer.example");
    CHECK(id.claim("obj") == nullptr);
    CHECK(id.claim("aud") == nullptr);
    // Without kid the one key of the right type is used.
    CHECK(auth(*set, token(alg, "", claims()), id, &reason) == AuthResult::kAuthenticated);
  }
}

TEST_CASE("jwt: claim checks refuse bad tokens") {
  TempDir dir;
  auto set = loadPolicy(dir);
  std::string exp_past = R"({"iss":"https://issuer.example","aud":"mcp-gateway","sub":"x","exp":)" +
                         std::to_string(kNow - 31) + "}";
  std::string exp_in_skew = R"({"iss":"https://issuer.example","aud":"mcp-gateway","sub":"x",)"
                            R"("exp":)" +
                            std::to_string(kNow - 29) + "}";
  std::string nbf_future = R"({"iss":"https://issuer.example","aud":"mcp-gateway","sub":"x",)"
                           R"("exp":)" +
                           std::to_string(kNow + 600) + R"(,"nbf":)" + std::to_string(kNow + 31) +
                           "}";
  std::string wrong_aud = R"({"iss":"https://issuer.example","aud":["a","b"],"sub":"x","exp":)" +
                          std::to_string(kNow + 60) + "}";
  std::string wrong_iss = R"({"iss":"https://evil.example","aud":"mcp-gateway","sub":"x","exp":)" +
                          std::to_string(kNow + 60) + "}";
  std::string no_exp = R"({"iss":"https://issuer.example","aud":"mcp-gateway","sub":"x"})";
  struct Case {
    const char* what;
    std::string payload;
    AuthResult want;
    const char* reason;
  };
  const Case cases[] = {
      {"expired beyond skew", exp_past, AuthResult::kInvalid, "token expired"},
      {"expired within skew", exp_in_skew, AuthResult::kAuthenticated, ""},
      {"not yet valid", nbf_future, AuthResult::kInvalid, "token not yet valid"},
      {"wrong audience", wrong_aud, AuthResult::kInvalid, "wrong audience"},
      {"wrong issuer", wrong_iss, AuthResult::kInvalid, "wrong issuer"},
      {"no exp", no_exp, AuthResult::kInvalid, "token has no exp"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Identity id;
    const char* reason = "";
    CHECK(auth(*set, token("ES256", "ec", c.payload), id, &reason) == c.want);
    CHECK(std::string(reason) == c.reason);
    CHECK(id.authenticated == (c.want == AuthResult::kAuthenticated));
  }
}

TEST_CASE("jwt: skew is configurable") {
  TempDir dir;
  auto set = loadPolicy(dir, "    skew: 0s\n");
  std::string p = R"({"iss":"https://issuer.example","aud":"mcp-gateway","sub":"x","exp":)" +
                  std::to_string(kNow - 1) + "}";
  Identity id;
  const char* reason = "";
  CHECK(auth(*set, token("HS256", "hs", p), id, &reason) == AuthResult::kInvalid);
  CHECK(auth(*set, token("HS256", "hs", p), id, &reason, kNow - 2) == AuthResult::kAuthenticated);
}

TEST_CASE("jwt: forged and confused tokens are refused") {
  TempDir dir;
  auto set = loadPolicy(dir);
  Identity id;
  const char* reason = "";

  SECTION("tampered payload") {
    std::string good = token("RS256", "rs", claims());
    size_t d1 = good.find('.');
    size_t d2 = good.find('.', d1 + 1);
    std::string forged =
        good.substr(0, d1 + 1) + b64url(claims(R"(,"role":"admin")")) + good.substr(d2);
    CHECK(auth(*set, forged, id, &reason) == AuthResult::kInvalid);
    CHECK(std::string(reason) == "bad token signature");
    CHECK_FALSE(id.authenticated);
  }
  SECTION("tampered signature") {
    for (const char* alg : {"HS256", "RS256", "ES256"}) {
      std::string t = token(alg, "", claims());
      t.back() = t.back() == 'A' ? 'Q' : 'A';
      CHECK(auth(*set, t, id, &reason) == AuthResult::kInvalid);
    }
  }
  SECTION("alg none") {
    std::string t = b64url(R"({"alg":"none"})") + "." + b64url(claims()) + ".";
    CHECK(auth(*set, t, id, &reason) == AuthResult::kInvalid);
    CHECK(std::string(reason) == "token alg not accepted");
    std::string t2 = b64url(R"({"alg":"none","kid":"hs"})") + "." + b64url(claims()) + ".";
    CHECK(auth(*set, t2, id, &reason) == AuthResult::kInvalid);
  }
  SECTION("RS256 public key used as an HS256 secret") {
    unsigned char* der = nullptr;
    int len = i2d_PUBKEY(keys().rsa.get(), &der);
    REQUIRE(len > 0);
    std::string pub(reinterpret_cast<char*>(der), static_cast<size_t>(len));
    OPENSSL_free(der);
    std::string input = b64url(R"({"alg":"HS256","kid":"rs"})") + "." + b64url(claims());
    std::string t = input + "." + b64url(hmac(pub, input));
    CHECK(auth(*set, t, id, &reason) == AuthResult::kInvalid);
    CHECK(std::string(reason) == "token alg does not match the key type");
    // Without kid the HS256 key is the oct one, and the signature does not hold.
    std::string input2 = b64url(R"({"alg":"HS256"})") + "." + b64url(claims());
    CHECK(auth(*set, input2 + "." + b64url(hmac(pub, input2)), id, &reason) ==
          AuthResult::kInvalid);
    // ES256 token claiming the RSA key.
    std::string t3 = token("ES256", "rs", claims());
    CHECK(auth(*set, t3, id, &reason) == AuthResult::kInvalid);
  }
  SECTION("unknown kid") {
    CHECK(auth(*set, token("HS256", "nope", claims()), id, &reason) == AuthResult::kInvalid);
    CHECK(std::string(reason) == "unknown key id");
  }
  SECTION("malformed") {
    for (const char* t :
         {"a.b.c", "..", "e30.e30.", "e30=.e30.AAAA", "eyJhbGciOiJIUzI1NiJ9.%%.x"}) {
      INFO(t);
      CHECK(auth(*set, t, id, &reason) == AuthResult::kInvalid);
    }
  }
  SECTION("reasons never echo the token") {
    std::string t = token("HS256", "nope", claims());
    auth(*set, t, id, &reason);
    CHECK(std::string(reason).find("carol") == std::string::npos);
  }
}

// JWS segments go through core::base64Decode with the url alphabet and no padding.
bool decodeB64Url(std::string_view in, std::string& out) {
  return gw::core::base64Decode(in, gw::core::Base64Alphabet::kUrl, gw::core::Base64Padding::kNone,
                                out);
}

TEST_CASE("jwt: base64url is strict") {
  std::string out;
  CHECK(decodeB64Url("", out));
  CHECK(out.empty());
  CHECK(decodeB64Url("Zm9v", out));
  CHECK(out == "foo");
  CHECK(decodeB64Url("Zm8", out));
  CHECK(out == "fo");
  CHECK_FALSE(decodeB64Url("Zm9=", out));   // padding
  CHECK_FALSE(decodeB64Url("Zm+v", out));   // standard alphabet
  CHECK_FALSE(decodeB64Url("Zm9vY", out));  // impossible length
  CHECK_FALSE(decodeB64Url("Zm9", out));    // non-zero trailing bits
  CHECK(decodeB64Url("_-8", out));
  CHECK(out == "\xff\xef");
}

TEST_CASE("jwks: bad key sets are load errors at the keys_file value") {
  TempDir dir;
  struct Case {
    const char* jwks;
    const char* fragment;
  };
  const Case cases[] = {
      {"not json", "not valid JSON"},
      {R"({"keys":[]})", "empty"},
      {R"({"keys":[{"kty":"oct","k":"c2hvcnQ"}]})", "shorter than 256 bits"},
      {R"({"keys":[{"kty":"OKP","crv":"Ed25519","x":"AA"}]})", "unsupported kty"},
      {R"({"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]})", "keys[0]"},
      {R"({"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]})", "32 bytes"},
  };
  for (const Case& c : cases) {
    INFO(c.jwks);
    dir.write("jwks.json", c.jwks);
    std::string p = dir.write("p.yaml",
                              "identity:\n  jwt:\n    issuer: i\n    audiences: [a]\n"
                              "    keys_file: jwks.json\n");
    std::vector<settings::Diagnostic> errors;
    CHECK(PolicySet::load({p}, errors) == nullptr);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].line == 5);
    CHECK(errors[0].column == 16);
    CHECK(errors[0].message.find(c.fragment) != std::string::npos);
  }
}

TEST_CASE("jwt: scope and scp become the caller's scopes", "[policy][oauth]") {
  TempDir dir;
  auto set = loadPolicy(dir);
  struct Case {
    const char* what;
    std::string extra;
    std::vector<std::string> scopes;
  };
  const Case cases[] = {
      {"none", "", {}},
      {"scope, space-separated", R"(,"scope":"mcp:tools  mcp:admin ")", {"mcp:tools", "mcp:admin"}},
      {"scp array", R"(,"scp":["a","b c"])", {"a", "b", "c"}},
      {"scp string", R"(,"scp":"a b")", {"a", "b"}},
      {"both, once each", R"(,"scope":"a b","scp":["b","c"])", {"a", "b", "c"}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    Identity id;
    const char* reason = "";
    REQUIRE(auth(*set, token("HS256", "hs", claims(c.extra)), id, &reason) ==
            AuthResult::kAuthenticated);
    CHECK(id.scopes == c.scopes);
  }
  for (const char* bad :
       {R"(,"scope":["a"])", R"(,"scope":3)", R"(,"scp":[1])", R"(,"scp":null)"}) {
    INFO(bad);
    Identity id;
    const char* reason = "";
    CHECK(auth(*set, token("HS256", "hs", claims(bad)), id, &reason) == AuthResult::kInvalid);
    CHECK_FALSE(id.authenticated);
    CHECK(std::string(reason).find("malformed sc") == 0);
  }
}

TEST_CASE("jwt: with resource_metadata the resource is the audience tokens must carry",
          "[policy][oauth]") {
  TempDir dir;
  dir.write("jwks.json", keys().jwks());
  const std::string rm =
      "  resource_metadata:\n"
      "    resource: https://gw.example.com/mcp\n"
      "    authorization_servers: [https://idp.example.com]\n";
  const std::string jwt_head =
      "identity:\n"
      "  jwt:\n"
      "    issuer: https://issuer.example\n"
      "    keys_file: jwks.json\n";
  std::vector<settings::Diagnostic> errors;
  // No audiences: the resource is the one audience.
  auto set = PolicySet::load({dir.write("a.yaml", jwt_head + rm)}, errors);
  REQUIRE(set != nullptr);
  CHECK(set->jwt()->audiences == std::vector<std::string>{"https://gw.example.com/mcp"});
  auto payload = [](const std::string& aud) {
    return R"({"iss":"https://issuer.example","aud":)" + aud + R"(,"sub":"x","exp":)" +
           std::to_string(kNow + 60) + "}";
  };
  Identity id;
  const char* reason = "";
  CHECK(auth(*set, token("HS256", "hs", payload(R"("https://gw.example.com/mcp")")), id, &reason) ==
        AuthResult::kAuthenticated);
  CHECK(auth(*set, token("HS256", "hs", payload(R"(["x","https://gw.example.com/mcp"])")), id,
             &reason) == AuthResult::kAuthenticated);
  for (const char* aud : {R"("https://upstream.example.com/mcp")", R"("https://gw.example.com")",
                          R"("https://gw.example.com/mcp/")", R"("mcp-gateway")", "[]"}) {
    INFO(aud);
    CHECK(auth(*set, token("HS256", "hs", payload(aud)), id, &reason) == AuthResult::kInvalid);
    CHECK(std::string(reason) == "wrong audience");
  }
  // Audiences that leave the resource out: the gateway would accept tokens not meant for it.
  errors.clear();
  CHECK(PolicySet::load({dir.write("b.yaml", jwt_head + "    audiences: [mcp-gateway]\n" + rm)},
                        errors) == nullptr);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message.find("is not one of identity.jwt.audiences") != std::string::npos);
  CHECK(errors[0].line == 6);
  // Neither audiences nor a resource.
  errors.clear();
  CHECK(PolicySet::load({dir.write("c.yaml", jwt_head)}, errors) == nullptr);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message.find("needs 'audiences'") != std::string::npos);
  CHECK(errors[0].line == 2);
}

}  // namespace
}  // namespace gw::policy

TEST_CASE("jwt: audiences compare scheme and host case-insensitively, the rest exactly") {
  using gw::policy::sameAudience;
  const std::string_view want = "https://gw.example.com/mcp";
  for (std::string_view same : {"https://gw.example.com/mcp", "HTTPS://GW.EXAMPLE.COM/mcp",
                                "https://Gw.Example.Com/mcp", "Https://gw.example.com/mcp"}) {
    CAPTURE(same);
    CHECK(sameAudience(same, want));
  }
  for (std::string_view other :
       {"https://gw.example.com/MCP", "https://gw.example.com/mcp/", "https://gw.example.com",
        "https://gw.example.com:8443/mcp", "http://gw.example.com/mcp",
        "https://gw.example.org/mcp", "https://gw.example.com/mcp?x=1", "gw.example.com/mcp", "",
        "https://"}) {
    CAPTURE(other);
    CHECK_FALSE(sameAudience(other, want));
  }
  // With and without the trailing slash of an origin-only resource are one.
  CHECK(sameAudience("https://gw.example.com/", "https://gw.example.com"));
  CHECK(sameAudience("HTTPS://GW.EXAMPLE.COM", "https://gw.example.com/"));
  // Audiences that are not URIs compare exactly.
  CHECK(sameAudience("my-api", "my-api"));
  CHECK_FALSE(sameAudience("MY-API", "my-api"));
}
