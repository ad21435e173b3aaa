// settings/: upstreams[].auth — every type with the keys it takes, the files it reads (client
// secret, signing key) and every way to get it wrong; policy/: the OAuth request forms, the
// answers' meaning, the shared credential store (single flight, expiry, bound) and the JWTs the
// gateway signs (checked here against OpenSSL directly; the integration test verifies them with
// jose).

#include <openssl/evp.h>
#include <openssl/pem.h>

#include <catch.hpp>
#include <string>
#include <string_view>

#include "gateway/core/base64.h"
#include "gateway/policy/credential_store.h"
#include "gateway/policy/identity_token.h"
#include "gateway/policy/token_answer.h"
#include "gateway/settings/settings.h"
#include "gateway/tls/signing.h"
#include "tests/unit/policy/test_util.h"
#include "tests/unit/settings/load_util.h"

namespace gw::settings {
namespace {

using test::dump;
using test::hasError;

constexpr char kEcKey[] = R"(-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgedOfpxQ//Eb9dT/1
d75tmKD/meuDtwx2rgbsq440tiChRANCAAQ9s9BE4qjnJIZ3HZDtbNFqwFfoOqik
YkyncFT/itF1zM0xFMVEJXeR2A4Dc79PczC+HlTCBPxtkGzHHoQeTFKU
-----END PRIVATE KEY-----
)";

struct Files {
  policy::test::TempDir dir;
  std::string secret = dir.write("secret", "s3cret\n");
  std::string empty = dir.write("empty", "\n\n");
  std::string key = dir.write("key.pem", kEcKey);
  std::string not_key = dir.write("not-key.pem", "hello\n");
};

std::string withAuth(std::string_view auth_lines, std::string_view extra = "") {
  std::string y =
      "upstreams:\n"                       // 1
      "  - name: gh\n"                     // 2
      "    endpoints: [127.0.0.1:9443]\n"  // 3
      "    auth:\n";                       // 4
  y += auth_lines;
  y += extra;
  y += "routes:\n  - name: default\n    upstream: gh\n";
  return y;
}

TEST_CASE("upstream auth: each type loads with its keys", "[settings][upstream_auth]") {
  Files f;
  LoadResult r = loadString(withAuth("      type: token_exchange\n"
                                     "      token_endpoint: https://idp.example.com/oauth2/token\n"
                                     "      client_id: mcp-gateway\n"
                                     "      client_secret_file: " +
                                     f.secret +
                                     "\n"
                                     "      client_auth: post\n"
                                     "      audience: https://github-mcp.internal\n"
                                     "      resource: https://github-mcp.internal/mcp\n"
                                     "      scopes: [repo:read, \"repo:write\"]\n"
                                     "      timeout: 3s\n"),
                            "gw.yaml");
  INFO(dump(r));
  REQUIRE(r.errors.empty());
  const Upstream& u = r.settings->upstreams[0];
  REQUIRE(u.auth);
  CHECK(u.auth->type == UpstreamAuthType::kTokenExchange);
  CHECK(u.auth->client_secret == "s3cret");  // trailing newline dropped
  CHECK(u.auth->client_auth_post);
  CHECK(u.auth->scopes == std::vector<std::string>{"repo:read", "repo:write"});
  CHECK(u.auth->timeout == std::chrono::seconds(3));
  CHECK(u.madeCredential());
  CHECK(r.settings->any_upstream_auth);

  r = loadString(withAuth("      type: signed_identity\n"
                          "      issuer: https://gateway.example.com\n"
                          "      key_file: " +
                          f.key +
                          "\n"
                          "      audience: https://app.internal\n"
                          "      ttl: 2m\n"),
                 "gw.yaml");
  INFO(dump(r));
  REQUIRE(r.errors.empty());
  REQUIRE(r.settings->upstreams[0].auth->key != nullptr);
  CHECK(r.settings->upstreams[0].auth->key->alg() == "ES256");

  r = loadString(withAuth("      type: forward\n"), "gw.yaml");
  REQUIRE(r.errors.empty());
  CHECK_FALSE(r.settings->upstreams[0].madeCredential());
  CHECK_FALSE(r.settings->any_upstream_auth);
}

TEST_CASE("upstream auth: every mistake is a load error at its place",
          "[settings][upstream_auth]") {
  Files f;
  struct Case {
    std::string lines;
    std::string extra;
    std::string text;
  };
  const std::string te =
      "      type: token_exchange\n"
      "      token_endpoint: https://idp.example.com/token\n"
      "      client_id: gw\n";
  const std::vector<Case> cases = {
      {"      token_endpoint: https://x/\n", "", "has no 'type'"},
      {"      type: magic\n", "",
       "must be forward, client_credentials, token_exchange or "
       "signed_identity"},
      {"      type: forward\n      client_id: x\n", "", "does not apply to auth type forward"},
      {te, "", "needs 'client_secret_file'"},
      {"      type: client_credentials\n      client_id: gw\n      client_secret_file: " +
           f.secret + "\n",
       "", "needs 'token_endpoint'"},
      {te + "      client_secret_file: " + f.secret + "\n      issuer: https://x\n", "",
       "does not apply to auth type token_exchange"},
      {te + "      client_secret_file: " + f.empty + "\n", "", "is empty"},
      {te + "      client_secret_file: " + f.dir.path() + "/missing\n", "", "does not exist"},
      {te + "      client_secret_file: " + f.secret + "\n      client_auth: jwt\n", "",
       "must be basic or post"},
      {te + "      client_secret_file: " + f.secret + "\n      timeout: 0s\n", "",
       "more than 0 and at most 60s"},
      {te + "      client_secret_file: " + f.secret + "\n      scopes: [\"a b\"]\n", "",
       "is not a scope"},
      {te + "      client_secret_file: " + f.secret + "\n      resource: not-a-url\n", "",
       "RFC 8707"},
      {"      type: token_exchange\n      token_endpoint: ftp://idp/token\n      client_id: gw\n"
       "      client_secret_file: " +
           f.secret + "\n",
       "", "auth.token_endpoint': 'ftp://idp/token' is not an http:// or https:// URL"},
      {"      type: client_credentials\n      token_endpoint: http://idp.example.com/token\n"
       "      client_id: gw\n      client_secret_file: " +
           f.secret + "\n",
       "", "http is allowed only for a loopback host"},
      {"      type: signed_identity\n      issuer: https://gw\n      audience: a\n", "",
       "needs 'key_file'"},
      {"      type: signed_identity\n      issuer: https://gw\n      audience: a\n"
       "      key_file: " +
           f.not_key + "\n",
       "", "not an unencrypted PEM private key"},
      {"      type: signed_identity\n      issuer: https://gw\n      audience: a\n"
       "      key_file: " +
           f.key + "\n      ttl: 11m\n",
       "", "at most 10m"},
      {"      type: forward\n", "    headers:\n      authorization: Bearer x\n",
       "both 'auth' and a 'headers' entry for Authorization"},
  };
  for (const Case& c : cases) {
    LoadResult r = loadString(withAuth(c.lines, c.extra), "gw.yaml");
    INFO(c.lines << c.extra << "\n--\n" << dump(r));
    CHECK(hasError(r, c.text));
    // Never a byte of the secret in a message.
    for (const Diagnostic& d : r.errors) {
      CHECK(d.message.find("s3cret") == std::string::npos);
    }
  }
}

TEST_CASE("upstream auth: request forms and client authentication", "[upstream_auth]") {
  policy::TokenJob j;
  j.kind = policy::TokenJob::Kind::kTokenExchange;
  j.subject_token = "eyJ.a b+c/d";
  j.audience = "https://github-mcp.internal";
  j.scope = "repo:read repo:write";
  j.client_id = "gw";
  j.client_secret = "p&ss word";
  const policy::FormFields basic = policy::tokenForm(j);
  CHECK(basic == policy::FormFields{
                     {"grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"},
                     {"subject_token", "eyJ.a b+c/d"},
                     {"subject_token_type", "urn:ietf:params:oauth:token-type:access_token"},
                     {"requested_token_type", "urn:ietf:params:oauth:token-type:access_token"},
                     {"audience", "https://github-mcp.internal"},
                     {"scope", "repo:read repo:write"}});
  j.client_auth_post = true;
  const policy::FormFields post = policy::tokenForm(j);
  CHECK(post.back() == std::pair<std::string, std::string>{"client_secret", "p&ss word"});
  // RFC 6749 §2.3.1: id and secret form-encoded, then base64.
  std::string decoded;
  const std::string basic_value = policy::basicCredentials("a:b", "p&ss word");
  REQUIRE(basic_value.rfind("Basic ", 0) == 0);
  REQUIRE(core::base64Decode(basic_value.substr(6), core::Base64Alphabet::kStandard,
                             core::Base64Padding::kRequired, decoded));
  CHECK(decoded == "a%3Ab:p%26ss+word");
  j.kind = policy::TokenJob::Kind::kIntrospection;
  const policy::FormFields intro = policy::tokenForm(j);
  CHECK(intro[0] == std::pair<std::string, std::string>{"token", "eyJ.a b+c/d"});
  // Keys never hold the token, and differ per token.
  policy::TokenJob k = j;
  k.subject_token = "other";
  CHECK(policy::CredentialStore::hashKey(j) != policy::CredentialStore::hashKey(k));
  CHECK(policy::CredentialStore::hashKey(j).find("eyJ") == std::string::npos);
  CHECK(policy::CredentialStore::hashKey(j).size() == 64);
}

TEST_CASE("upstream auth: what a token endpoint's answer means", "[upstream_auth]") {
  using State = policy::CredentialStore::State;
  auto a = policy::parseTokenAnswer(
      200, R"({"access_token":"abc.def","token_type":"Bearer","expires_in":120})");
  CHECK(a.state == State::kReady);
  CHECK(a.value == "abc.def");
  CHECK(a.lifetime == std::chrono::seconds(120));
  CHECK(policy::parseTokenAnswer(200, R"({"access_token":"x","token_type":"bearer"})").lifetime ==
        std::chrono::seconds(3600));
  CHECK(policy::parseTokenAnswer(200, R"({"access_token":"x","token_type":"N_A"})").state ==
        State::kFailed);
  CHECK(policy::parseTokenAnswer(200, R"({"access_token":"x","token_type":"DPoP"})").state ==
        State::kFailed);
  CHECK(policy::parseTokenAnswer(200, R"({"access_token":"a b"})").state == State::kFailed);
  CHECK(policy::parseTokenAnswer(200, "{\"access_token\":\"a\\r\\nX: y\"}").state ==
        State::kFailed);
  CHECK(policy::parseTokenAnswer(200, R"({"token_type":"Bearer"})").state == State::kFailed);
  CHECK(policy::parseTokenAnswer(200, "not json").state == State::kFailed);
  a = policy::parseTokenAnswer(400, R"({"error":"invalid_grant","error_description":"no"})");
  CHECK(a.state == State::kRefused);
  CHECK(a.error == "invalid_grant");
  CHECK(policy::parseTokenAnswer(400, R"({"error":"<script>"})").error == "invalid_error");
  CHECK(policy::parseTokenAnswer(401, "").state == State::kFailed);
  CHECK(policy::parseTokenAnswer(500, R"({"error":"server_error"})").state == State::kFailed);
  CHECK(policy::parseTokenAnswer(503, "").state == State::kFailed);

  const std::chrono::seconds cache(120);
  a = policy::parseIntrospection(200, R"({"active":true,"sub":"a","exp":1060})", 1000, cache);
  CHECK(a.state == State::kReady);
  CHECK(a.lifetime == std::chrono::seconds(60));  // never past exp
  CHECK(policy::parseIntrospection(200, R"({"active":true})", 1000, cache).lifetime == cache);
  CHECK(policy::parseIntrospection(200, R"({"active":false})", 1000, cache).state ==
        State::kRefused);
  CHECK(policy::parseIntrospection(200, R"({"active":true,"exp":999})", 1000, cache).state ==
        State::kRefused);
  CHECK(policy::parseIntrospection(200, R"({"active":"yes"})", 1000, cache).state ==
        State::kFailed);
  CHECK(policy::parseIntrospection(500, "", 1000, cache).state == State::kFailed);
}

TEST_CASE("upstream auth: the credential store asks once per key", "[upstream_auth]") {
  using State = policy::CredentialStore::State;
  policy::CredentialStore& store = policy::CredentialStore::instance();
  store.clear();
  int woken = 0;
  store.setWaker([&] { ++woken; });
  policy::TokenJob j;
  j.kind = policy::TokenJob::Kind::kTokenExchange;
  j.subject_token = "t";
  j.key = policy::CredentialStore::hashKey(j);
  const core::Nanos t0{1'000'000'000};
  CHECK(store.find(j.key, t0).state == State::kNone);
  CHECK(store.ask(j, t0) == State::kPending);
  CHECK(store.ask(j, t0) == State::kPending);  // single flight
  CHECK(store.takeJobs().size() == 1);
  CHECK(woken == 1);
  store.publish(j.key, State::kReady, "tok", "", t0 + std::chrono::seconds(10), t0);
  CHECK(store.find(j.key, t0 + std::chrono::seconds(9)).value == "tok");
  CHECK(store.ask(j, t0 + std::chrono::seconds(9)) == State::kReady);
  CHECK(store.takeJobs().empty());
  // Past its time: asked again.
  CHECK(store.find(j.key, t0 + std::chrono::seconds(10)).state == State::kNone);
  CHECK(store.ask(j, t0 + std::chrono::seconds(10)) == State::kPending);
  CHECK(store.takeJobs().size() == 1);
  // A refresh keeps the token in use.
  store.publish(j.key, State::kReady, "tok2", "", t0 + std::chrono::seconds(100), t0);
  CHECK(store.markPending(j.key, t0 + std::chrono::seconds(20)));
  CHECK_FALSE(store.markPending(j.key, t0 + std::chrono::seconds(20)));
  CHECK(store.find(j.key, t0 + std::chrono::seconds(20)).value == "tok2");
  // Bounded.
  for (size_t i = 0; i < policy::CredentialStore::kMaxEntries + 10; ++i) {
    policy::TokenJob k = j;
    k.subject_token = std::to_string(i);
    k.key = policy::CredentialStore::hashKey(k);
    store.publish(k.key, State::kReady, "x", "", t0 + std::chrono::seconds(1), t0);
  }
  CHECK(store.size() <= policy::CredentialStore::kMaxEntries);
  // Full of calls in flight: a new one is refused, not queued.
  for (size_t i = 0; i < policy::CredentialStore::kMaxEntries + 10; ++i) {
    policy::TokenJob k = j;
    k.subject_token = "p" + std::to_string(i);
    k.key = policy::CredentialStore::hashKey(k);
    store.ask(k, t0);
  }
  CHECK(store.size() <= policy::CredentialStore::kMaxEntries);
  policy::TokenJob last = j;
  last.subject_token = "last";
  last.key = policy::CredentialStore::hashKey(last);
  CHECK(store.ask(last, t0) == State::kFailed);
  store.setWaker(nullptr);
  store.clear();
}

TEST_CASE("upstream auth: signed identities verify with their public key", "[upstream_auth]") {
  std::string error;
  auto key = tls::SigningKey::fromPem(kEcKey, error);
  REQUIRE(key != nullptr);
  CHECK(key->publicJwk().find("\"kid\":\"" + key->kid() + "\"") != std::string::npos);
  CHECK(key->publicJwk().find("\"d\"") == std::string::npos);
  UpstreamAuth a;
  a.type = UpstreamAuthType::kSignedIdentity;
  a.issuer = "https://gw.example.com";
  a.audience = "https://app";
  a.key = key;
  policy::Identity id;
  id.authenticated = true;
  id.subject = "alice \"the\" admin";
  id.groups = {"eng"};
  id.scopes = {"mcp:tools"};
  const std::string jwt = policy::signIdentity(a, id, 1000, "j1");
  const size_t dot1 = jwt.find('.');
  const size_t dot2 = jwt.rfind('.');
  REQUIRE(dot1 != dot2);
  std::string claims;
  REQUIRE(core::base64Decode(jwt.substr(dot1 + 1, dot2 - dot1 - 1), core::Base64Alphabet::kUrl,
                             core::Base64Padding::kNone, claims));
  CHECK(claims ==
        R"({"iss":"https://gw.example.com","sub":"alice \"the\" admin","aud":"https://app",)"
        R"("iat":1000,"exp":1060,"jti":"j1","groups":["eng"],"scope":"mcp:tools"})");
  // The ES256 signature (r||s) checks out with OpenSSL's verifier over the public key.
  std::string sig;
  REQUIRE(core::base64Decode(jwt.substr(dot2 + 1), core::Base64Alphabet::kUrl,
                             core::Base64Padding::kNone, sig));
  REQUIRE(sig.size() == 64);
  BIO* bio = BIO_new_mem_buf(kEcKey, -1);
  EVP_PKEY* pk = PEM_read_bio_PrivateKey(bio, nullptr, nullptr, nullptr);
  BIO_free(bio);
  REQUIRE(pk != nullptr);
  ECDSA_SIG* es = ECDSA_SIG_new();
  ECDSA_SIG_set0(es, BN_bin2bn(reinterpret_cast<const unsigned char*>(sig.data()), 32, nullptr),
                 BN_bin2bn(reinterpret_cast<const unsigned char*>(sig.data()) + 32, 32, nullptr));
  unsigned char* der = nullptr;
  const int der_len = i2d_ECDSA_SIG(es, &der);
  EVP_MD_CTX* md = EVP_MD_CTX_new();
  REQUIRE(EVP_DigestVerifyInit(md, nullptr, EVP_sha256(), nullptr, pk) == 1);
  const std::string input = jwt.substr(0, dot2);
  CHECK(EVP_DigestVerify(md, der, static_cast<size_t>(der_len),
                         reinterpret_cast<const unsigned char*>(input.data()), input.size()) == 1);
  EVP_MD_CTX_free(md);
  OPENSSL_free(der);
  ECDSA_SIG_free(es);
  EVP_PKEY_free(pk);
}

}  // namespace
}  // namespace gw::settings

namespace gw::policy {
namespace {

std::shared_ptr<const PolicySet> loadPolicy(const std::string& yaml,
                                            std::vector<settings::Diagnostic>& errors,
                                            const std::string& dir) {
  return PolicySet::loadString(yaml, dir + "/policy.yaml", errors);
}

std::string errorText(const std::vector<settings::Diagnostic>& errors) {
  std::string out;
  for (const settings::Diagnostic& d : errors) {
    out += d.str() + "\n";
  }
  return out;
}

TEST_CASE("introspection: config and what an answer makes of the caller", "[introspection]") {
  test::TempDir dir;
  dir.write("secret", "s3cret\n");
  std::vector<settings::Diagnostic> errors;
  auto pol = loadPolicy(
      "identity:\n  introspection:\n    endpoint: https://idp.example.com/introspect\n"
      "    client_id: gw\n    client_secret_file: secret\n    cache: 30s\n"
      "  resource_metadata:\n    resource: https://gw.example.com/mcp\n"
      "    authorization_servers: [https://idp.example.com]\n",
      errors, dir.path());
  INFO(errorText(errors));
  REQUIRE(pol != nullptr);
  REQUIRE(pol->introspection() != nullptr);
  CHECK(pol->introspection()->client_secret == "s3cret");
  CHECK(pol->introspection()->cache == std::chrono::seconds(30));
  CHECK(pol->checksCredentials());
  // Opaque tokens and (no jwt section) JWTs are introspected.
  CHECK(pol->introspects("opaque-abc"));
  CHECK(pol->introspects("a.b.c"));

  Identity id;
  const char* why = "";
  CHECK(
      pol->fromIntrospection(R"({"active":true,"sub":"alice","scope":"a b","client_id":"app",)"
                             R"("aud":["https://GW.example.com/mcp"],"groups":["eng"],"exp":2000})",
                             1000, id, &why) == AuthResult::kAuthenticated);
  CHECK(id.subject == "alice");
  CHECK(id.scopes == std::vector<std::string>{"a", "b"});
  CHECK(id.groups == std::vector<std::string>{"eng"});
  REQUIRE(id.claim("client_id") != nullptr);
  CHECK(*id.claim("client_id") == "app");
  // Another resource's token, an expired one, one without a subject.
  CHECK(pol->fromIntrospection(R"({"active":true,"sub":"a","aud":"https://other/mcp"})", 1000, id,
                               &why) == AuthResult::kInvalid);
  CHECK(std::string(why) == "wrong audience");
  CHECK(pol->fromIntrospection(R"({"active":true,"sub":"a","exp":999})", 1000, id, &why) ==
        AuthResult::kInvalid);
  CHECK(pol->fromIntrospection(R"({"active":true})", 1000, id, &why) == AuthResult::kInvalid);
  // A client's own token: its client_id is the subject.
  CHECK(pol->fromIntrospection(
            R"({"active":true,"client_id":"robot","aud":"https://gw.example.com/mcp"})", 1000, id,
            &why) == AuthResult::kAuthenticated);
  CHECK(id.subject == "robot");

  // Mistakes are load errors.
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"    endpoint: http://idp.example.com/i\n    client_id: gw\n"
       "    client_secret_file: secret\n",
       "http is allowed only for a loopback host"},
      {"    client_id: gw\n    client_secret_file: secret\n", "needs 'endpoint'"},
      {"    endpoint: https://idp/i\n    client_id: gw\n", "needs 'client_secret_file'"},
      {"    endpoint: https://idp/i\n    client_id: gw\n    client_secret_file: missing\n",
       "does not exist"},
      {"    endpoint: https://idp/i\n    client_id: gw\n    client_secret_file: secret\n"
       "    cache: 2h\n",
       "at most 1h"},
      {"    endpoint: https://idp/i\n    client_id: gw\n    client_secret_file: secret\n"
       "    lifetime: 1m\n",
       "unknown key"},
  };
  for (const auto& [lines, text] : bad) {
    std::vector<settings::Diagnostic> errs;
    auto p = loadPolicy("identity:\n  introspection:\n" + lines, errs, dir.path());
    INFO(lines << errorText(errs));
    CHECK(p == nullptr);
    CHECK(errorText(errs).find(text) != std::string::npos);
    CHECK(errorText(errs).find("s3cret") == std::string::npos);
  }
}

TEST_CASE("introspection: with a jwt section, JWTs stay JWTs", "[introspection]") {
  test::TempDir dir;
  dir.write("secret", "s3cret\n");
  dir.write(
      "jwks.json",
      R"({"keys":[{"kty":"oct","kid":"k","k":"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY"}]})");
  std::vector<settings::Diagnostic> errors;
  auto pol = loadPolicy(
      "identity:\n  jwt:\n    issuer: https://idp\n    audiences: [gw]\n    keys_file: jwks.json\n"
      "  introspection:\n    endpoint: https://idp.example.com/introspect\n"
      "    client_id: gw\n    client_secret_file: secret\n",
      errors, dir.path());
  INFO(errorText(errors));
  REQUIRE(pol != nullptr);
  CHECK_FALSE(pol->introspects("a.b.c"));
  CHECK(pol->introspects("opaque"));
}

}  // namespace
}  // namespace gw::policy
