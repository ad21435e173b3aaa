// identity.jwt.jwks_url (issue #17 item 4): the policy keys and their errors, the URL rules,
// the shared source across loads, the request path against a published key set (refused
// until the first fetch, an unknown kid asks for a refetch), and the verified-token cache.

#include <catch.hpp>
#include <chrono>

#include <openssl/hmac.h>

#include <string>
#include <vector>

#include "gateway/policy/jwks_source.h"
#include "gateway/policy/jwt.h"
#include "gateway/policy/policy.h"
#include "gateway/policy/token_cache.h"
#include "tests/unit/policy/test_util.h"

namespace gw::policy {
namespace {

using test::AuthHeader;
using test::b64url;
using test::hmac;
using test::TempDir;

constexpr int64_t kNow = 1800000000;

std::string hs256(const std::string& secret, const std::string& kid, const std::string& payload) {
  std::string input = b64url(R"({"alg":"HS256","kid":")" + kid + R"("})") + "." + b64url(payload);
  return input + "." + b64url(hmac(secret, input));
}

std::string claims(int64_t exp, const std::string& sub = "alice") {
  return R"({"iss":"https://idp.example.com","aud":"gw","sub":")" + sub + R"(","exp":)" +
         std::to_string(exp) + "}";
}

std::string jwks(const std::string& kid, const std::string& secret) {
  return R"({"keys":[{"kty":"oct","kid":")" + kid + R"(","k":")" + b64url(secret) + R"("}]})";
}

const std::string kS1 = "0123456789abcdef0123456789abcdef";
const std::string kS2 = "fedcba9876543210fedcba9876543210";

std::shared_ptr<const PolicySet> load(const std::string& yaml,
                                      std::vector<settings::Diagnostic>& errors,
                                      const std::string& file = "/tmp/jwks-test.yaml") {
  return PolicySet::loadString(yaml, file, errors);
}

std::string urlPolicy(const std::string& url, const std::string& extra = "") {
  return "identity:\n  jwt:\n    issuer: https://idp.example.com\n    audiences: [gw]\n"
         "    jwks_url: " +
         url + "\n" + extra + "  anonymous: deny\n";
}

AuthResult auth(const PolicySet& set, const std::string& token, Identity& id, const char** reason,
                int64_t now = kNow) {
  AuthHeader h("Bearer " + token);
  return set.authenticate(h.fields, now, id, reason);
}

std::vector<Jwk> keysOf(const std::string& doc) {
  std::vector<Jwk> keys;
  std::string why;
  REQUIRE(parseJwks(doc, keys, why));
  return keys;
}

}  // namespace

TEST_CASE("jwks_url: the URL must be https (http for loopback only), with a host and port") {
  struct Case {
    const char* url;
    bool ok;
    const char* host;
    uint16_t port;
    const char* target;
  };
  const Case cases[] = {
      {"https://idp.example.com/.well-known/jwks.json", true, "idp.example.com", 443,
       "/.well-known/jwks.json"},
      {"https://idp.example.com", true, "idp.example.com", 443, "/"},
      {"https://idp.example.com:8443/k?tenant=a", true, "idp.example.com", 8443, "/k?tenant=a"},
      {"https://[::1]:9000/jwks", true, "::1", 9000, "/jwks"},
      {"http://127.0.0.1:8080/jwks", true, "127.0.0.1", 8080, "/jwks"},
      {"http://localhost/jwks", true, "localhost", 80, "/jwks"},
      {"http://idp.example.com/jwks", false, "", 0, ""},
      {"ftp://idp.example.com/jwks", false, "", 0, ""},
      {"https://user:pw@idp.example.com/jwks", false, "", 0, ""},
      {"https://idp.example.com/jwks#frag", false, "", 0, ""},
      {"https://idp.example.com:0/jwks", false, "", 0, ""},
      {"https://idp.example.com:99999/jwks", false, "", 0, ""},
      {"https://idp.example.com:/jwks", false, "", 0, ""},
      {"https:///jwks", false, "", 0, ""},
      {"https://idp example.com/jwks", false, "", 0, ""},
  };
  for (const Case& c : cases) {
    INFO(c.url);
    JwksUrl u;
    std::string error;
    REQUIRE(parseJwksUrl(c.url, u, error) == c.ok);
    if (c.ok) {
      CHECK(u.host == c.host);
      CHECK(u.port == c.port);
      CHECK(u.target == c.target);
    } else {
      CHECK(!error.empty());
    }
  }
}

TEST_CASE("jwks_url: policy keys and their errors carry file:line:column") {
  struct Case {
    std::string yaml;
    int line;
    int column;
    const char* fragment;
  };
  const std::string head =
      "identity:\n  jwt:\n    issuer: https://idp.example.com\n"
      "    audiences: [gw]\n";
  const Case cases[] = {
      {head + "    jwks_url: http://idp.example.com/jwks\n", 5, 15, "must be https"},
      {head + "    jwks_url: https://idp.example.com/jwks\n    keys_file: k.json\n", 2, 3,
       "exactly one of 'keys_file' and 'jwks_url'"},
      {head, 2, 3, "exactly one of 'keys_file' and 'jwks_url'"},
      {head + "    jwks_url: https://idp.example.com/jwks\n    jwks_refresh: 10s\n", 6, 19,
       "from 30s to 24h"},
      {head + "    jwks_url: https://idp.example.com/jwks\n    jwks_refresh: 2d\n", 6, 19,
       "invalid jwks_refresh"},
      {head + "    keys_file: k.json\n    jwks_ca: ca.pem\n", 6, 5, "applies only with 'jwks_url'"},
      {head + "    jwks_url: https://idp.example.com/jwks\n    jwks_ca: /nonexistent/ca.pem\n", 6,
       14, "cannot read CA file"},
      {head + "    jwks_url: https://idp.example.com/jwks\n    jwks_refreh: 1m\n", 6, 5,
       "jwks_refreh"},
  };
  for (const Case& c : cases) {
    INFO(c.yaml);
    std::vector<settings::Diagnostic> errors;
    CHECK(load(c.yaml, errors) == nullptr);
    REQUIRE(!errors.empty());
    INFO(errors[0].str());
    CHECK(errors[0].file == "/tmp/jwks-test.yaml");
    CHECK(errors[0].line == c.line);
    CHECK(errors[0].column == c.column);
    CHECK(errors[0].message.find(c.fragment) != std::string::npos);
  }
}

TEST_CASE("jwks_url: defaults, jwks_ca relative to the policy file, one source per URL") {
  TempDir dir;
  std::string ca = dir.write("idp-ca.pem", "-----BEGIN CERTIFICATE-----\n");
  std::vector<settings::Diagnostic> errors;
  auto a = load(urlPolicy("https://idp.example.com/jwks"), errors);
  REQUIRE(a != nullptr);
  REQUIRE(a->jwt()->source != nullptr);
  CHECK(a->jwt()->jwks_refresh == std::chrono::minutes(15));
  CHECK(a->jwt()->jwks_ca.empty());
  CHECK(a->jwt()->keys_file.empty());
  // A second load naming the same URL (a reload) shares the source, and so its keys.
  auto b = load(urlPolicy("https://idp.example.com/jwks", "    jwks_refresh: 1m\n"), errors);
  REQUIRE(b != nullptr);
  CHECK(b->jwt()->source == a->jwt()->source);
  CHECK(b->jwt()->source->refresh() == std::chrono::minutes(1));
  // Another CA is another source (another trust decision).
  auto c = load(urlPolicy("https://idp.example.com/jwks", "    jwks_ca: idp-ca.pem\n"), errors,
                dir.path() + "/policy.yaml");
  REQUIRE(c != nullptr);
  CHECK(c->jwt()->jwks_ca == ca);
  CHECK(c->jwt()->source != a->jwt()->source);
  CHECK(c->jwt()->source->caFile() == ca);
  // A URL no longer named by any policy is dropped from the registry.
  auto d = load(urlPolicy("https://other.example.com/jwks"), errors);
  REQUIRE(d != nullptr);
  const JwksSource* raw = d->jwt()->source.get();
  d.reset();
  for (const auto& s : JwksSource::live()) {
    CHECK(s.get() != raw);
  }
  CHECK(errors.empty());
}

TEST_CASE("jwks_url: refused until the first fetch, an unknown kid asks for a refetch") {
  std::vector<settings::Diagnostic> errors;
  auto set = load(urlPolicy("https://refetch.example.com/jwks"), errors);
  REQUIRE(set != nullptr);
  JwksSource& src = *set->jwt()->source;
  Identity id;
  const char* reason = "";
  const std::string t1 = hs256(kS1, "k1", claims(kNow + 300));
  CHECK(auth(*set, t1, id, &reason) == AuthResult::kInvalid);
  CHECK(std::string(reason) == "the JWKS has not been fetched yet");
  CHECK(src.takeAsk());
  CHECK_FALSE(src.takeAsk());

  CHECK(src.publish(jwks("k1", kS1), keysOf(jwks("k1", kS1))) == 1);
  REQUIRE(auth(*set, t1, id, &reason) == AuthResult::kAuthenticated);
  CHECK(id.subject == "alice");
  CHECK_FALSE(src.takeAsk());
  const uint64_t gen1 = src.keys()->generation;
  // The same document again keeps the set (and the cached verdicts) as they are.
  src.publish(jwks("k1", kS1), keysOf(jwks("k1", kS1)));
  CHECK(src.keys()->generation == gen1);

  // Rotation: k2 is unknown until the set holds it.
  const std::string t2 = hs256(kS2, "k2", claims(kNow + 300, "bob"));
  CHECK(auth(*set, t2, id, &reason) == AuthResult::kInvalid);
  CHECK(std::string(reason) == "unknown key id");
  CHECK(src.takeAsk());
  src.publish(jwks("k2", kS2), keysOf(jwks("k2", kS2)));
  CHECK(src.keys()->generation == gen1 + 1);
  REQUIRE(auth(*set, t2, id, &reason) == AuthResult::kAuthenticated);
  CHECK(id.subject == "bob");
  // k1 left the set: its token, though cached before, is no longer accepted.
  CHECK(auth(*set, t1, id, &reason) == AuthResult::kInvalid);
  CHECK(src.takeAsk());  // k1 is an unknown key now
  // A bad signature is not an unknown key: no refetch.
  std::string forged = t2;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  CHECK(auth(*set, forged, id, &reason) == AuthResult::kInvalid);
  CHECK_FALSE(src.takeAsk());
}

TEST_CASE("jwks_url: a refusal says which fetch the request may wait for") {
  std::vector<settings::Diagnostic> errors;
  auto set = load(urlPolicy("https://pending.example.com/jwks"), errors);
  REQUIRE(set != nullptr);
  JwksSource& src = *set->jwt()->source;
  Identity id;
  const char* reason = "";
  const std::string t1 = hs256(kS1, "k1", claims(kNow + 300));
  AuthHeader h("Bearer " + t1);
  using Clock = std::chrono::steady_clock;

  // No set yet, no fetch asked for before: a fetch is coming.
  KeysPending p;
  CHECK(set->authenticate(h.fields, kNow, id, &reason, &p) == AuthResult::kInvalid);
  CHECK(p.source == &src);
  CHECK(p.ended == 0);

  // The fetcher takes it and begins; while it runs, every refusal may wait for it.
  REQUIRE(src.takeAsk());
  src.fetchBegins(Clock::now(), true);
  p = {};
  CHECK(set->authenticate(h.fields, kNow, id, &reason, &p) == AuthResult::kInvalid);
  CHECK(p.source == &src);
  src.publish(jwks("k2", kS2), keysOf(jwks("k2", kS2)));
  src.fetchEnded();
  CHECK(src.fetchesEnded() == 1);

  // k1 is not in the set, and the last asked-for fetch began under 30 s ago: nothing is
  // coming, so the refusal is final (the ask is still recorded for later).
  p = {};
  CHECK(set->authenticate(h.fields, kNow, id, &reason, &p) == AuthResult::kInvalid);
  CHECK(std::string(reason) == "unknown key id");
  CHECK(p.source == nullptr);
  CHECK(src.takeAsk());
  CHECK_FALSE(src.askAllowed(Clock::now()));
  CHECK(src.askAllowed(Clock::now() + JwksSource::kMinAskedInterval));

  // A refresh (not asked for) running: a refusal waits for it, from the count before it.
  src.fetchBegins(Clock::now(), false);
  p = {};
  CHECK(set->authenticate(h.fields, kNow, id, &reason, &p) == AuthResult::kInvalid);
  CHECK(p.source == &src);
  CHECK(p.ended == 1);
  src.fetchEnded();

  // A good token or a bad signature: nothing to wait for.
  const std::string t2 = hs256(kS2, "k2", claims(kNow + 300, "bob"));
  AuthHeader h2("Bearer " + t2);
  p = {};
  CHECK(set->authenticate(h2.fields, kNow, id, &reason, &p) == AuthResult::kAuthenticated);
  CHECK(p.source == nullptr);
  std::string forged = t2;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  AuthHeader h3("Bearer " + forged);
  CHECK(set->authenticate(h3.fields, kNow, id, &reason, &p) == AuthResult::kInvalid);
  CHECK(p.source == nullptr);
}

TEST_CASE("token cache: verified tokens answer from the cache until exp, per PolicySet") {
  TempDir dir;
  std::string keys = dir.write("jwks.json", jwks("k1", kS1));
  const std::string yaml =
      "identity:\n  jwt:\n    issuer: https://idp.example.com\n"
      "    audiences: [gw]\n    keys_file: " +
      keys + "\n    skew: 30s\n";
  std::vector<settings::Diagnostic> errors;
  auto set = load(yaml, errors);
  REQUIRE(set != nullptr);
  TokenCache& cache = *set->jwt()->cache;
  Identity id;
  const char* reason = "";
  const std::string t = hs256(kS1, "k1", claims(kNow + 100));
  REQUIRE(auth(*set, t, id, &reason) == AuthResult::kAuthenticated);
  CHECK(cache.size() == 1);
  // Found again: the same identity, a copy the caller may change.
  Identity again;
  REQUIRE(auth(*set, t, again, &reason) == AuthResult::kAuthenticated);
  CHECK(again.subject == "alice");
  CHECK(again.claim("sub") != nullptr);
  again.subject = "mallory";
  REQUIRE(auth(*set, t, id, &reason) == AuthResult::kAuthenticated);
  CHECK(id.subject == "alice");
  // Still in the cache, yet refused once expired (exp + skew, as verification allows).
  CHECK(auth(*set, t, id, &reason, kNow + 129) == AuthResult::kAuthenticated);
  CHECK(auth(*set, t, id, &reason, kNow + 130) == AuthResult::kInvalid);
  CHECK(std::string(reason) == "token expired");
  // Failures are not cached.
  CHECK(auth(*set, hs256(kS2, "k1", claims(kNow + 100)), id, &reason) == AuthResult::kInvalid);
  CHECK(cache.size() == 1);
  // A reload (another PolicySet) starts with its own, empty cache.
  auto reloaded = load(yaml, errors);
  REQUIRE(reloaded != nullptr);
  CHECK(reloaded->jwt()->cache->size() == 0);
  CHECK(reloaded->jwt()->cache.get() != set->jwt()->cache.get());
}

TEST_CASE("token cache: keyed by digest and generation, capped in age and in size") {
  TokenCache cache(64);
  Identity id;
  id.authenticated = true;
  id.subject = "alice";
  const auto d = TokenCache::digest("token-a");
  CHECK(d != TokenCache::digest("token-b"));
  cache.insert(d, 1, kNow + 3600, kNow, id);
  Identity out;
  CHECK(cache.find(d, 1, kNow, out));
  CHECK(out.subject == "alice");
  CHECK_FALSE(cache.find(d, 2, kNow, out));  // another key-set generation
  // At most kMaxAge, whatever the token's exp.
  CHECK(cache.find(d, 1, kNow + TokenCache::kMaxAge - 1, out));
  CHECK_FALSE(cache.find(d, 1, kNow + TokenCache::kMaxAge, out));
  // Already expired: not kept.
  cache.insert(TokenCache::digest("old"), 1, kNow, kNow, id);
  CHECK_FALSE(cache.find(TokenCache::digest("old"), 1, kNow, out));
  // Bounded: many more tokens than the capacity keep at most the capacity (per stripe
  // rounding up), the newest ones found, the oldest gone.
  for (int i = 0; i < 1000; ++i) {
    cache.insert(TokenCache::digest("t" + std::to_string(i)), 1, kNow + 300, kNow, id);
  }
  CHECK(cache.size() <= 64);
  CHECK(cache.find(TokenCache::digest("t999"), 1, kNow, out));
  CHECK_FALSE(cache.find(TokenCache::digest("t0"), 1, kNow, out));
}

}  // namespace gw::policy
