// tls/: the gateway's signing key (signing.h).

#include "gateway/tls/signing.h"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/sha.h>

#include <cstring>
#include <vector>

#include "gateway/config/values.h"
#include "gateway/core/base64.h"

namespace gw::tls {

struct SigningKey::Pkey {
  EVP_PKEY* p = nullptr;
  ~Pkey() { EVP_PKEY_free(p); }
};

SigningKey::~SigningKey() = default;

namespace {

constexpr int kMinRsaBits = 2048;

std::string b64url(std::string_view bytes) {
  std::string out;
  core::appendBase64(out, bytes, core::Base64Alphabet::kUrl, core::Base64Padding::kNone);
  return out;
}

// A big-endian parameter of `p` as bytes, left-padded with zeros to `width` (0: as short as
// the number allows). Empty on failure.
std::string bnParam(EVP_PKEY* p, const char* name, int width) {
  BIGNUM* bn = nullptr;
  if (EVP_PKEY_get_bn_param(p, name, &bn) != 1) {
    return {};
  }
  const int n = width > 0 ? width : BN_num_bytes(bn);
  std::string out(static_cast<size_t>(n), '\0');
  const int wrote = BN_bn2binpad(bn, reinterpret_cast<unsigned char*>(out.data()), n);
  BN_free(bn);
  return wrote == n ? out : std::string();
}

}  // namespace

std::shared_ptr<const SigningKey> SigningKey::load(const std::string& path, std::string& error) {
  std::string pem;
  std::string reason;
  if (!config::readWholeFile(path, pem, reason)) {
    error = "cannot read key file '" + path + "': " + reason;
    return nullptr;
  }
  std::shared_ptr<const SigningKey> k = fromPem(pem, error);
  if (k == nullptr) {
    error = "key file '" + path + "': " + error;
  }
  return k;
}

std::shared_ptr<const SigningKey> SigningKey::fromPem(std::string_view pem, std::string& error) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  if (bio == nullptr) {
    error = "out of memory";
    return nullptr;
  }
  // No passphrase callback: an encrypted key fails here instead of prompting.
  EVP_PKEY* p = PEM_read_bio_PrivateKey(
      bio, nullptr, [](char*, int, int, void*) { return 0; }, nullptr);
  BIO_free(bio);
  ERR_clear_error();
  if (p == nullptr) {
    error = "not an unencrypted PEM private key";
    return nullptr;
  }
  return make(p, error);
}

std::shared_ptr<const SigningKey> SigningKey::make(void* raw, std::string& error) {
  std::shared_ptr<SigningKey> k(new SigningKey());
  k->key_ = std::make_unique<Pkey>();
  k->key_->p = static_cast<EVP_PKEY*>(raw);
  EVP_PKEY* p = k->key_->p;
  std::string thumb_input;
  if (EVP_PKEY_is_a(p, "RSA")) {
    if (EVP_PKEY_get_bits(p) < kMinRsaBits) {
      error = "an RSA key of " + std::to_string(EVP_PKEY_get_bits(p)) +
              " bits; RS256 needs at least 2048";
      return nullptr;
    }
    const std::string n = b64url(bnParam(p, OSSL_PKEY_PARAM_RSA_N, 0));
    const std::string e = b64url(bnParam(p, OSSL_PKEY_PARAM_RSA_E, 0));
    k->alg_ = "RS256";
    thumb_input = R"({"e":")" + e + R"(","kty":"RSA","n":")" + n + "\"}";
    k->jwk_ = R"({"kty":"RSA","n":")" + n + R"(","e":")" + e + "\"";
  } else if (EVP_PKEY_is_a(p, "EC")) {
    char group[64] = {};
    size_t len = 0;
    if (EVP_PKEY_get_utf8_string_param(p, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof group, &len) !=
            1 ||
        (std::strcmp(group, "prime256v1") != 0 && std::strcmp(group, "P-256") != 0)) {
      error = "an EC key on a curve other than P-256; ES256 needs P-256";
      return nullptr;
    }
    const std::string x = b64url(bnParam(p, OSSL_PKEY_PARAM_EC_PUB_X, 32));
    const std::string y = b64url(bnParam(p, OSSL_PKEY_PARAM_EC_PUB_Y, 32));
    k->alg_ = "ES256";
    thumb_input = R"({"crv":"P-256","kty":"EC","x":")" + x + R"(","y":")" + y + "\"}";
    k->jwk_ = R"({"kty":"EC","crv":"P-256","x":")" + x + R"(","y":")" + y + "\"";
  } else {
    error = "neither an RSA nor an EC (P-256) private key";
    return nullptr;
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(thumb_input.data()), thumb_input.size(), digest);
  k->kid_ = b64url(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
  k->jwk_ += R"(,"kid":")" + k->kid_ + R"(","alg":")" + k->alg_ + R"(","use":"sig"})";
  return k;
}

bool SigningKey::sign(std::string_view input, std::string& signature) const {
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  if (md == nullptr) {
    return false;
  }
  size_t len = 0;
  std::vector<unsigned char> der;
  bool ok = EVP_DigestSignInit(md, nullptr, EVP_sha256(), nullptr, key_->p) == 1 &&
            EVP_DigestSign(md, nullptr, &len, reinterpret_cast<const unsigned char*>(input.data()),
                           input.size()) == 1;
  if (ok) {
    der.resize(len);
    ok = EVP_DigestSign(md, der.data(), &len, reinterpret_cast<const unsigned char*>(input.data()),
                        input.size()) == 1;
    der.resize(len);
  }
  EVP_MD_CTX_free(md);
  if (!ok) {
    ERR_clear_error();
    return false;
  }
  if (alg_ == "RS256") {
    signature.assign(der.begin(), der.end());
    return true;
  }
  // ES256: OpenSSL gives DER (SEQUENCE of r and s); JWS wants r||s, 32 bytes each.
  const unsigned char* q = der.data();
  ECDSA_SIG* sig = d2i_ECDSA_SIG(nullptr, &q, static_cast<long>(der.size()));
  if (sig == nullptr) {
    ERR_clear_error();
    return false;
  }
  signature.assign(64, '\0');
  auto* out = reinterpret_cast<unsigned char*>(signature.data());
  ok = BN_bn2binpad(ECDSA_SIG_get0_r(sig), out, 32) == 32 &&
       BN_bn2binpad(ECDSA_SIG_get0_s(sig), out + 32, 32) == 32;
  ECDSA_SIG_free(sig);
  return ok;
}

}  // namespace gw::tls
