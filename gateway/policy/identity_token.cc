// policy/: signed identity JWTs (identity_token.h).

#include "gateway/policy/identity_token.h"

#include <set>
#include <string_view>

#include "gateway/core/base64.h"
#include "gateway/core/json_escape.h"
#include "gateway/tls/signing.h"

namespace gw::policy {

namespace {

void appendSegment(std::string& out, std::string_view json) {
  core::appendBase64(out, json, core::Base64Alphabet::kUrl, core::Base64Padding::kNone);
}

void member(std::string& j, std::string_view name, std::string_view value) {
  j += j.size() > 1 ? "," : "";
  core::appendJsonString(j, name);
  j += ':';
  core::appendJsonString(j, value);
}

void member(std::string& j, std::string_view name, int64_t value) {
  j += j.size() > 1 ? "," : "";
  core::appendJsonString(j, name);
  j += ':';
  j += std::to_string(value);
}

}  // namespace

std::string signIdentity(const settings::UpstreamAuth& auth, const Identity& id, int64_t now_unix,
                         const std::string& jti) {
  const tls::SigningKey& key = *auth.key;
  std::string header = "{";
  member(header, "alg", key.alg());
  member(header, "typ", "JWT");
  member(header, "kid", key.kid());
  header += '}';
  std::string claims = "{";
  member(claims, "iss", auth.issuer);
  member(claims, "sub", id.subject);
  member(claims, "aud", auth.audience);
  member(claims, "iat", now_unix);
  member(claims, "exp",
         now_unix + std::chrono::duration_cast<std::chrono::seconds>(auth.ttl).count());
  member(claims, "jti", jti);
  claims += R"(,"groups":[)";
  for (size_t i = 0; i < id.groups.size(); ++i) {
    claims += i > 0 ? "," : "";
    core::appendJsonString(claims, id.groups[i]);
  }
  claims += ']';
  if (!id.scopes.empty()) {
    std::string scope;
    for (const std::string& s : id.scopes) {
      scope += scope.empty() ? "" : " ";
      scope += s;
    }
    member(claims, "scope", scope);
  }
  const std::string* client = id.claim("client_id");
  if (client == nullptr) {
    client = id.claim("azp");
  }
  if (client != nullptr) {
    member(claims, "client_id", *client);
  }
  claims += '}';
  std::string jwt;
  appendSegment(jwt, header);
  jwt += '.';
  appendSegment(jwt, claims);
  std::string sig;
  if (!key.sign(jwt, sig)) {
    return {};
  }
  jwt += '.';
  appendSegment(jwt, sig);
  return jwt;
}

std::string identityJwks(const std::vector<const settings::Upstream*>& upstreams) {
  std::string out = R"({"keys":[)";
  std::set<std::string> seen;
  for (const settings::Upstream* up : upstreams) {
    if (!up->auth || up->auth->type != settings::UpstreamAuthType::kSignedIdentity ||
        up->auth->key == nullptr || !seen.insert(up->auth->key->kid()).second) {
      continue;
    }
    out += seen.size() > 1 ? "," : "";
    out += up->auth->key->publicJwk();
  }
  out += "]}";
  return out;
}

}  // namespace gw::policy
