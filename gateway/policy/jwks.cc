// policy/: JSON Web Key Sets (RFC 7517), parseJwks of jwt.h: each key checked and turned
// into an OpenSSL public key (RSA ≥ 2048 bits, EC P-256) or an HMAC secret once, when the
// policy is loaded or a jwks_url is refetched, so verification only uses them.

#include <memory>
#include <string>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/param_build.h>
#include <simdjson.h>

#include "gateway/core/base64.h"
#include "gateway/policy/jwt.h"

namespace gw::policy {

namespace {

// JWK members (k, n, e, x, y) are base64url without padding (RFC 7518 §6), decoded
// strictly: one encoding per byte string.
bool decodeMember(std::string_view in, std::string& out) {
  return core::base64Decode(in, core::Base64Alphabet::kUrl, core::Base64Padding::kNone, out);
}

struct BnDeleter {
  void operator()(BIGNUM* p) const noexcept { BN_free(p); }
};
using BnPtr = std::unique_ptr<BIGNUM, BnDeleter>;
struct BldDeleter {
  void operator()(OSSL_PARAM_BLD* p) const noexcept { OSSL_PARAM_BLD_free(p); }
};
struct ParamDeleter {
  void operator()(OSSL_PARAM* p) const noexcept { OSSL_PARAM_free(p); }
};
struct PkeyCtxDeleter {
  void operator()(EVP_PKEY_CTX* p) const noexcept { EVP_PKEY_CTX_free(p); }
};
using PkeyCtxPtr = std::unique_ptr<EVP_PKEY_CTX, PkeyCtxDeleter>;

// Builds a public key of `type` ("RSA" or "EC") from OSSL_PARAMs; null on failure.
std::unique_ptr<EVP_PKEY, PkeyDeleter> fromData(const char* type, OSSL_PARAM_BLD* bld) {
  std::unique_ptr<OSSL_PARAM, ParamDeleter> params(OSSL_PARAM_BLD_to_param(bld));
  PkeyCtxPtr ctx(EVP_PKEY_CTX_new_from_name(nullptr, type, nullptr));
  if (!params || !ctx || EVP_PKEY_fromdata_init(ctx.get()) != 1) {
    return nullptr;
  }
  EVP_PKEY* raw = nullptr;
  if (EVP_PKEY_fromdata(ctx.get(), &raw, EVP_PKEY_PUBLIC_KEY, params.get()) != 1) {
    return nullptr;
  }
  return std::unique_ptr<EVP_PKEY, PkeyDeleter>(raw);
}

bool field(simdjson::dom::object obj, std::string_view key, std::string_view& out) {
  simdjson::dom::element e;
  if (obj.at_key(key).get(e) != simdjson::SUCCESS) {
    return false;
  }
  return e.get_string().get(out) == simdjson::SUCCESS;
}

bool jwkToKey(simdjson::dom::object obj, Jwk& key, std::string& why) {
  std::string_view kty;
  if (!field(obj, "kty", kty)) {
    why = "missing 'kty'";
    return false;
  }
  std::string_view sv;
  if (field(obj, "kid", sv)) {
    key.kid = std::string(sv);
  }
  if (field(obj, "use", sv) && sv != "sig") {
    why = "'use' is not 'sig'";
    return false;
  }
  std::string_view alg;
  bool has_alg = field(obj, "alg", alg);
  if (kty == "oct") {
    std::string_view k;
    if (!field(obj, "k", k) || !decodeMember(k, key.secret)) {
      why = "'k' missing or not base64url";
      return false;
    }
    if (key.secret.size() < 32) {
      why = "HS256 key shorter than 256 bits";
      return false;
    }
    if (has_alg && alg != "HS256") {
      why = "'alg' must be HS256 for kty oct";
      return false;
    }
    key.kty = Jwk::Kty::kOct;
    return true;
  }
  if (kty == "RSA") {
    std::string_view n64;
    std::string_view e64;
    std::string n;
    std::string e;
    if (!field(obj, "n", n64) || !field(obj, "e", e64) || !decodeMember(n64, n) ||
        !decodeMember(e64, e) || n.empty() || e.empty()) {
      why = "'n' / 'e' missing or not base64url";
      return false;
    }
    if (has_alg && alg != "RS256") {
      why = "'alg' must be RS256 for kty RSA";
      return false;
    }
    BnPtr bn_n(BN_bin2bn(reinterpret_cast<const unsigned char*>(n.data()),
                         static_cast<int>(n.size()), nullptr));
    BnPtr bn_e(BN_bin2bn(reinterpret_cast<const unsigned char*>(e.data()),
                         static_cast<int>(e.size()), nullptr));
    std::unique_ptr<OSSL_PARAM_BLD, BldDeleter> bld(OSSL_PARAM_BLD_new());
    if (!bn_n || !bn_e || !bld ||
        OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_N, bn_n.get()) != 1 ||
        OSSL_PARAM_BLD_push_BN(bld.get(), OSSL_PKEY_PARAM_RSA_E, bn_e.get()) != 1) {
      why = "cannot build RSA key";
      return false;
    }
    key.pkey = fromData("RSA", bld.get());
    if (!key.pkey) {
      why = "invalid RSA key";
      return false;
    }
    if (EVP_PKEY_get_bits(key.pkey.get()) < 2048) {
      why = "RSA key shorter than 2048 bits";
      return false;
    }
    key.kty = Jwk::Kty::kRsa;
    return true;
  }
  if (kty == "EC") {
    std::string_view crv;
    std::string_view x64;
    std::string_view y64;
    std::string x;
    std::string y;
    if (!field(obj, "crv", crv) || crv != "P-256") {
      why = "only crv P-256 is supported";
      return false;
    }
    if (!field(obj, "x", x64) || !field(obj, "y", y64) || !decodeMember(x64, x) ||
        !decodeMember(y64, y) || x.size() != 32 || y.size() != 32) {
      why = "'x' / 'y' missing or not 32 bytes of base64url";
      return false;
    }
    if (has_alg && alg != "ES256") {
      why = "'alg' must be ES256 for kty EC";
      return false;
    }
    unsigned char point[65];
    point[0] = 0x04;
    std::memcpy(point + 1, x.data(), 32);
    std::memcpy(point + 33, y.data(), 32);
    std::unique_ptr<OSSL_PARAM_BLD, BldDeleter> bld(OSSL_PARAM_BLD_new());
    char group[] = "P-256";
    if (!bld ||
        OSSL_PARAM_BLD_push_utf8_string(bld.get(), OSSL_PKEY_PARAM_GROUP_NAME, group, 0) != 1 ||
        OSSL_PARAM_BLD_push_octet_string(bld.get(), OSSL_PKEY_PARAM_PUB_KEY, point, sizeof point) !=
            1) {
      why = "cannot build EC key";
      return false;
    }
    key.pkey = fromData("EC", bld.get());
    if (!key.pkey) {
      why = "invalid EC key";
      return false;
    }
    PkeyCtxPtr check(EVP_PKEY_CTX_new_from_pkey(nullptr, key.pkey.get(), nullptr));
    if (!check || EVP_PKEY_public_check(check.get()) != 1) {
      why = "EC point is not on the curve";
      return false;
    }
    key.kty = Jwk::Kty::kEc;
    return true;
  }
  why = "unsupported kty (want oct, RSA or EC)";
  return false;
}
}  // namespace

bool parseJwks(std::string_view json, std::vector<Jwk>& out, std::string& error) {
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(json.data(), json.size(), true).get(doc) != simdjson::SUCCESS) {
    error = "not valid JSON";
    return false;
  }
  simdjson::dom::array keys;
  if (doc.at_key("keys").get_array().get(keys) != simdjson::SUCCESS) {
    error = "expected an object with a \"keys\" array";
    return false;
  }
  size_t i = 0;
  for (simdjson::dom::element k : keys) {
    simdjson::dom::object obj;
    std::string why;
    Jwk key;
    if (k.get_object().get(obj) != simdjson::SUCCESS) {
      why = "not an object";
    } else {
      jwkToKey(obj, key, why);
    }
    if (!why.empty()) {
      error = "keys[" + std::to_string(i) + "]: " + why;
      return false;
    }
    for (const Jwk& other : out) {
      if (!key.kid.empty() && other.kid == key.kid) {
        error = "keys[" + std::to_string(i) + "]: duplicate kid";
        return false;
      }
    }
    out.push_back(std::move(key));
    ++i;
  }
  if (out.empty()) {
    error = "the key set is empty";
    return false;
  }
  return true;
}

}  // namespace gw::policy
