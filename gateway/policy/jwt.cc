// policy/: JWT verification (see jwt.h; the key sets it verifies with are parsed in
// jwks.cc). OpenSSL 3 EVP APIs only; simdjson through its error-code API. The signature is
// checked before any claim is looked at.

#include "gateway/policy/jwt.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstring>
#include <string>

#include <openssl/bn.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/ec.h>
#include <openssl/hmac.h>
#include <openssl/param_build.h>
#include <simdjson.h>

#include "gateway/core/ascii.h"
#include "gateway/core/base64.h"

namespace gw::policy {

namespace {

constexpr size_t kMaxTokenBytes = 16 * 1024;

// An absolute URI split into "scheme://authority" and the rest ("" for no path or "/").
bool splitResource(std::string_view u, std::string_view& origin, std::string_view& rest) {
  const size_t sep = u.find("://");
  if (sep == std::string_view::npos || sep == 0) {
    return false;
  }
  const size_t end = u.find_first_of("/?#", sep + 3);
  origin = u.substr(0, end == std::string_view::npos ? u.size() : end);
  rest = end == std::string_view::npos ? std::string_view{} : u.substr(end);
  if (rest == "/") {
    rest = {};
  }
  return true;
}

// JWS segments are base64url without padding (RFC 7515 §2), decoded strictly: one encoding
// per byte string.
bool base64UrlDecode(std::string_view in, std::string& out) {
  return core::base64Decode(in, core::Base64Alphabet::kUrl, core::Base64Padding::kNone, out);
}

struct MdCtxDeleter {
  void operator()(EVP_MD_CTX* p) const noexcept { EVP_MD_CTX_free(p); }
};
struct EcdsaSigDeleter {
  void operator()(ECDSA_SIG* p) const noexcept { ECDSA_SIG_free(p); }
};

// Adds each space-separated scope of `list` not already in `out`.
void appendScopes(std::string_view list, std::vector<std::string>& out) {
  while (!list.empty()) {
    size_t sp = list.find(' ');
    std::string_view one = list.substr(0, sp);
    if (!one.empty() && std::find(out.begin(), out.end(), one) == out.end()) {
      out.emplace_back(one);
    }
    list = sp == std::string_view::npos ? std::string_view{} : list.substr(sp + 1);
  }
}

std::string numberText(simdjson::dom::element e) {
  int64_t i = 0;
  uint64_t u = 0;
  double d = 0;
  if (e.type() == simdjson::dom::element_type::INT64 && e.get_int64().get(i) == simdjson::SUCCESS) {
    return std::to_string(i);
  }
  if (e.type() == simdjson::dom::element_type::UINT64 &&
      e.get_uint64().get(u) == simdjson::SUCCESS) {
    return std::to_string(u);
  }
  if (e.get_double().get(d) != simdjson::SUCCESS) {
    return {};
  }
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, d);
  return std::string(buf, r.ptr);
}

enum class Alg : uint8_t { kHs256, kRs256, kEs256 };

bool verifySignature(const Jwk& key, Alg alg, std::string_view signing_input,
                     const std::string& sig) noexcept {
  const auto* data = reinterpret_cast<const unsigned char*>(signing_input.data());
  if (alg == Alg::kHs256) {
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int mac_len = 0;
    if (HMAC(EVP_sha256(), key.secret.data(), static_cast<int>(key.secret.size()), data,
             signing_input.size(), mac, &mac_len) == nullptr) {
      return false;
    }
    return sig.size() == mac_len && CRYPTO_memcmp(mac, sig.data(), mac_len) == 0;
  }
  std::string der_holder;
  const unsigned char* sig_bytes = reinterpret_cast<const unsigned char*>(sig.data());
  size_t sig_len = sig.size();
  unsigned char* der = nullptr;
  if (alg == Alg::kEs256) {
    // JWS carries ECDSA as raw r||s (RFC 7518 §3.4); EVP wants DER.
    if (sig.size() != 64) {
      return false;
    }
    std::unique_ptr<ECDSA_SIG, EcdsaSigDeleter> es(ECDSA_SIG_new());
    BIGNUM* r = BN_bin2bn(sig_bytes, 32, nullptr);
    BIGNUM* s = BN_bin2bn(sig_bytes + 32, 32, nullptr);
    if (!es || r == nullptr || s == nullptr || ECDSA_SIG_set0(es.get(), r, s) != 1) {
      BN_free(r);
      BN_free(s);
      return false;
    }
    int len = i2d_ECDSA_SIG(es.get(), &der);
    if (len <= 0) {
      return false;
    }
    sig_bytes = der;
    sig_len = static_cast<size_t>(len);
  }
  std::unique_ptr<EVP_MD_CTX, MdCtxDeleter> ctx(EVP_MD_CTX_new());
  bool ok = ctx &&
            EVP_DigestVerifyInit(ctx.get(), nullptr, EVP_sha256(), nullptr, key.pkey.get()) == 1 &&
            EVP_DigestVerify(ctx.get(), sig_bytes, sig_len, data, signing_input.size()) == 1;
  OPENSSL_free(der);
  return ok;
}

bool kindFits(Jwk::Kty kty, Alg alg) noexcept {
  return (kty == Jwk::Kty::kOct && alg == Alg::kHs256) ||
         (kty == Jwk::Kty::kRsa && alg == Alg::kRs256) ||
         (kty == Jwk::Kty::kEc && alg == Alg::kEs256);
}

// A top-level string, number or boolean claim, as text, into out.claims (objects, arrays and
// null are not flattened).
void flattenClaim(const simdjson::dom::key_value_pair& kv, Identity& out) {
  std::string_view s;
  switch (kv.value.type()) {
    case simdjson::dom::element_type::STRING:
      if (kv.value.get_string().get(s) == simdjson::SUCCESS) {
        out.claims.emplace_back(std::string(kv.key), std::string(s));
      }
      break;
    case simdjson::dom::element_type::INT64:
    case simdjson::dom::element_type::UINT64:
    case simdjson::dom::element_type::DOUBLE:
      out.claims.emplace_back(std::string(kv.key), numberText(kv.value));
      break;
    case simdjson::dom::element_type::BOOL: {
      bool b = false;
      if (kv.value.get_bool().get(b) == simdjson::SUCCESS) {
        out.claims.emplace_back(std::string(kv.key), b ? "true" : "false");
      }
      break;
    }
    default:
      break;
  }
}

AuthResult invalid(const char** reason, const char* why) noexcept {
  if (reason != nullptr) {
    *reason = why;
  }
  return AuthResult::kInvalid;
}

}  // namespace

AuthResult verifyJwt(const PolicySet::Jwt& jwt, std::string_view token, int64_t now_unix,
                     Identity& out, const char** reason) noexcept {
  return verifyJwtWith(jwt, jwt.keys, token, now_unix, out, reason, nullptr);
}

AuthResult verifyJwtWith(const PolicySet::Jwt& jwt, const std::vector<Jwk>& keys,
                         std::string_view token, int64_t now_unix, Identity& out,
                         const char** reason, JwtFacts* facts) noexcept {
  if (token.size() > kMaxTokenBytes) {
    return invalid(reason, "token too large");
  }
  size_t d1 = token.find('.');
  size_t d2 = token.find('.', d1 + 1);
  std::string_view h64 = token.substr(0, d1);
  std::string_view p64 = token.substr(d1 + 1, d2 - d1 - 1);
  std::string_view s64 = token.substr(d2 + 1);
  thread_local std::string header;
  thread_local std::string payload;
  thread_local std::string sig;
  if (!base64UrlDecode(h64, header) || !base64UrlDecode(p64, payload) ||
      !base64UrlDecode(s64, sig)) {
    return invalid(reason, "malformed token");
  }
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element hdoc;
  simdjson::dom::object hobj;
  if (parser.parse(header.data(), header.size(), true).get(hdoc) != simdjson::SUCCESS ||
      hdoc.get_object().get(hobj) != simdjson::SUCCESS) {
    return invalid(reason, "malformed token header");
  }
  std::string_view alg_text;
  std::string_view kid;
  bool has_alg = false;
  bool has_kid = false;
  for (simdjson::dom::key_value_pair kv : hobj) {
    if (kv.key == "alg" || kv.key == "kid") {
      bool& seen = kv.key == "alg" ? has_alg : has_kid;
      std::string_view& dst = kv.key == "alg" ? alg_text : kid;
      if (seen || kv.value.get_string().get(dst) != simdjson::SUCCESS) {
        return invalid(reason, "malformed token header");
      }
      seen = true;
    } else if (kv.key == "crit") {
      return invalid(reason, "unsupported critical header");
    }
  }
  Alg alg;
  if (!has_alg) {
    return invalid(reason, "token has no alg");
  }
  if (alg_text == "HS256") {
    alg = Alg::kHs256;
  } else if (alg_text == "RS256") {
    alg = Alg::kRs256;
  } else if (alg_text == "ES256") {
    alg = Alg::kEs256;
  } else {
    return invalid(reason, "token alg not accepted");
  }
  const Jwk* key = nullptr;
  if (has_kid) {
    for (const Jwk& k : keys) {
      if (!k.kid.empty() && k.kid == kid) {
        key = &k;
        break;
      }
    }
    if (key == nullptr) {
      if (facts != nullptr) {
        facts->unknown_key = true;
      }
      return invalid(reason, "unknown key id");
    }
    if (!kindFits(key->kty, alg)) {
      return invalid(reason, "token alg does not match the key type");
    }
  } else {
    size_t fits = 0;
    for (const Jwk& k : keys) {
      if (kindFits(k.kty, alg)) {
        key = &k;
        ++fits;
      }
    }
    if (fits == 0 && facts != nullptr) {
      facts->unknown_key = true;
    }
    if (fits != 1) {
      return invalid(reason, "no unique key for a token without kid");
    }
  }
  if (!verifySignature(*key, alg, token.substr(0, d2), sig)) {
    return invalid(reason, "bad token signature");
  }

  // The signature holds: now the claims.
  simdjson::dom::element pdoc;
  simdjson::dom::object pobj;
  if (parser.parse(payload.data(), payload.size(), true).get(pdoc) != simdjson::SUCCESS ||
      pdoc.get_object().get(pobj) != simdjson::SUCCESS) {
    return invalid(reason, "malformed token payload");
  }
  bool iss_ok = false;
  bool aud_ok = false;
  bool has_exp = false;
  bool seen_iss = false;
  bool seen_aud = false;
  bool seen_nbf = false;
  bool seen_sub = false;
  bool seen_groups = false;
  double exp = 0;
  double nbf = 0;
  out.clear();
  for (simdjson::dom::key_value_pair kv : pobj) {
    std::string_view s;
    if (kv.key == "iss") {
      if (seen_iss || kv.value.get_string().get(s) != simdjson::SUCCESS) {
        return invalid(reason, "malformed iss");
      }
      seen_iss = true;
      iss_ok = s == jwt.issuer;
    } else if (kv.key == "aud") {
      if (seen_aud) {
        return invalid(reason, "malformed aud");
      }
      seen_aud = true;
      auto accepted = [&](std::string_view a) {
        for (const std::string& want : jwt.audiences) {
          if (sameAudience(a, want)) {
            return true;
          }
        }
        return false;
      };
      simdjson::dom::array arr;
      if (kv.value.get_string().get(s) == simdjson::SUCCESS) {
        aud_ok = accepted(s);
      } else if (kv.value.get_array().get(arr) == simdjson::SUCCESS) {
        for (simdjson::dom::element a : arr) {
          if (a.get_string().get(s) != simdjson::SUCCESS) {
            return invalid(reason, "malformed aud");
          }
          aud_ok = aud_ok || accepted(s);
        }
      } else {
        return invalid(reason, "malformed aud");
      }
    } else if (kv.key == "exp" || kv.key == "nbf") {
      bool& seen = kv.key == "exp" ? has_exp : seen_nbf;
      double& dst = kv.key == "exp" ? exp : nbf;
      if (seen || !kv.value.is_number() || kv.value.get_double().get(dst) != simdjson::SUCCESS ||
          !std::isfinite(dst)) {
        return invalid(reason, "malformed exp or nbf");
      }
      seen = true;
    } else if (kv.key == "sub") {
      if (seen_sub || kv.value.get_string().get(s) != simdjson::SUCCESS) {
        return invalid(reason, "malformed sub");
      }
      seen_sub = true;
      out.subject = std::string(s);
    }
    if (kv.key == "scope" || kv.key == "scp") {
      // `scope`: one space-separated string (RFC 9068 §2.2.3); `scp`: the same, or an array
      // of scope strings (as some identity providers issue it).
      simdjson::dom::array arr;
      if (kv.value.get_string().get(s) == simdjson::SUCCESS) {
        appendScopes(s, out.scopes);
      } else if (kv.key == "scp" && kv.value.get_array().get(arr) == simdjson::SUCCESS) {
        for (simdjson::dom::element a : arr) {
          if (a.get_string().get(s) != simdjson::SUCCESS) {
            return invalid(reason, "malformed scp claim");
          }
          appendScopes(s, out.scopes);
        }
      } else {
        return invalid(reason, "malformed scope claim");
      }
    }
    if (kv.key == jwt.groups_claim) {
      simdjson::dom::array arr;
      if (seen_groups || kv.value.get_array().get(arr) != simdjson::SUCCESS) {
        return invalid(reason, "malformed groups claim");
      }
      seen_groups = true;
      for (simdjson::dom::element g : arr) {
        if (g.get_string().get(s) != simdjson::SUCCESS) {
          return invalid(reason, "malformed groups claim");
        }
        out.groups.emplace_back(s);
      }
    }
    flattenClaim(kv, out);
  }
  auto fail = [&](const char* why) {
    out.clear();
    return invalid(reason, why);
  };
  if (!iss_ok) {
    return fail("wrong issuer");
  }
  if (!aud_ok) {
    return fail("wrong audience");
  }
  if (!has_exp) {
    return fail("token has no exp");
  }
  auto now = static_cast<double>(now_unix);
  auto skew = static_cast<double>(jwt.skew_s);
  if (exp <= now - skew) {
    return fail("token expired");
  }
  if (seen_nbf && nbf > now + skew) {
    return fail("token not yet valid");
  }
  if (out.subject.empty()) {
    return fail("token has no sub");
  }
  out.authenticated = true;
  if (facts != nullptr) {
    facts->exp = exp >= 9.0e15 ? int64_t{9000000000000000} : static_cast<int64_t>(exp);
  }
  return AuthResult::kAuthenticated;
}

bool sameAudience(std::string_view aud, std::string_view want) noexcept {
  if (aud == want) {
    return true;
  }
  std::string_view a_origin, a_rest, w_origin, w_rest;
  return splitResource(aud, a_origin, a_rest) && splitResource(want, w_origin, w_rest) &&
         core::iequals(a_origin, w_origin) && a_rest == w_rest;
}

// identity.introspection: an active RFC 7662 answer as the caller it describes (policy.h).
// The answer came from the configured endpoint over the gateway's own authenticated call, so
// it is trusted as the token's claims; the audience and expiry are still checked here.
AuthResult PolicySet::fromIntrospection(std::string_view answer, int64_t now_unix, Identity& out,
                                        const char** reason) const {
  out.clear();
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  simdjson::dom::object obj;
  if (parser.parse(answer.data(), answer.size(), true).get(doc) != simdjson::SUCCESS ||
      doc.get_object().get(obj) != simdjson::SUCCESS) {
    return invalid(reason, "malformed introspection answer");
  }
  const std::string_view groups_claim =
      jwt_ != nullptr ? std::string_view(jwt_->groups_claim) : std::string_view("groups");
  const ResourceMetadata* rm = resourceMetadata();
  bool aud_ok = rm == nullptr;
  std::string client_id;
  for (simdjson::dom::key_value_pair kv : obj) {
    std::string_view s;
    simdjson::dom::array arr;
    if (kv.key == "sub" && kv.value.get_string().get(s) == simdjson::SUCCESS) {
      out.subject = std::string(s);
    } else if (kv.key == "client_id" && kv.value.get_string().get(s) == simdjson::SUCCESS) {
      client_id = std::string(s);
    } else if (kv.key == "aud" && rm != nullptr) {
      if (kv.value.get_string().get(s) == simdjson::SUCCESS) {
        aud_ok = sameAudience(s, rm->resource);
      } else if (kv.value.get_array().get(arr) == simdjson::SUCCESS) {
        for (simdjson::dom::element a : arr) {
          aud_ok = aud_ok ||
                   (a.get_string().get(s) == simdjson::SUCCESS && sameAudience(s, rm->resource));
        }
      }
    } else if (kv.key == "exp") {
      int64_t exp = 0;
      if (kv.value.get_int64().get(exp) == simdjson::SUCCESS && exp <= now_unix) {
        out.clear();
        return invalid(reason, "token expired");
      }
    }
    if (kv.key == "scope" && kv.value.get_string().get(s) == simdjson::SUCCESS) {
      appendScopes(s, out.scopes);
    }
    if (kv.key == groups_claim && kv.value.get_array().get(arr) == simdjson::SUCCESS) {
      for (simdjson::dom::element g : arr) {
        if (g.get_string().get(s) == simdjson::SUCCESS) {
          out.groups.emplace_back(s);
        }
      }
    }
    flattenClaim(kv, out);
  }
  if (!aud_ok) {
    out.clear();
    return invalid(reason, "wrong audience");
  }
  if (out.subject.empty()) {
    out.subject = std::move(client_id);  // a client's own token (client_credentials)
  }
  if (out.subject.empty()) {
    out.clear();
    return invalid(reason, "token has no sub");
  }
  out.authenticated = true;
  return AuthResult::kAuthenticated;
}

}  // namespace gw::policy
