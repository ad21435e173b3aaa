// policy/: OAuth request forms and answers (token_answer.h).

#include "gateway/policy/token_answer.h"

#include <simdjson.h>

#include <algorithm>

#include "gateway/core/ascii.h"
#include "gateway/core/base64.h"
#include "gateway/policy/token_cache.h"

namespace gw::policy {

namespace {

constexpr std::chrono::seconds kDefaultLifetime{3600};
constexpr size_t kMaxToken = 8192;
constexpr size_t kMaxErrorCode = 64;

// RFC 6749 appendix B: application/x-www-form-urlencoded for the Basic credentials.
std::string formEscape(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if ((b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') || (b >= '0' && b <= '9') || c == '*' ||
        c == '-' || c == '.' || c == '_') {
      out += c;
    } else if (c == ' ') {
      out += '+';
    } else {
      out += '%';
      out += kHex[b >> 4];
      out += kHex[b & 15];
    }
  }
  return out;
}

// A token a header can carry: visible ASCII, no space (RFC 6750 b64token and more).
bool headerSafe(std::string_view t) {
  return !t.empty() && t.size() <= kMaxToken && std::all_of(t.begin(), t.end(), [](char c) {
    const auto b = static_cast<unsigned char>(c);
    return b > 0x20 && b < 0x7f;
  });
}

// An OAuth error code as the answer gave it, if it is one (RFC 6749 §5.2: %x20-21 / %x23-5B /
// %x5D-7E); else "invalid_error". Shown in JSON-RPC errors and logs.
std::string errorCode(std::string_view e) {
  if (e.empty() || e.size() > kMaxErrorCode || !std::all_of(e.begin(), e.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '_' || c == '-' || c == '.' || c == ':';
      })) {
    return "invalid_error";
  }
  return std::string(e);
}

bool parse(std::string_view body, simdjson::dom::parser& p, simdjson::dom::object& obj) {
  simdjson::padded_string padded(body);
  simdjson::dom::element root;
  if (p.parse(padded).get(root) != simdjson::SUCCESS) {
    return false;
  }
  return root.get_object().get(obj) == simdjson::SUCCESS;
}

}  // namespace

TokenJob upstreamTokenJob(const settings::Upstream& up, std::string_view subject_token) {
  const settings::UpstreamAuth& a = *up.auth;
  TokenJob j;
  j.kind = a.type == settings::UpstreamAuthType::kTokenExchange
               ? TokenJob::Kind::kTokenExchange
               : TokenJob::Kind::kClientCredentials;
  j.endpoint = a.token_endpoint;
  j.client_id = a.client_id;
  j.client_secret = a.client_secret;
  j.client_auth_post = a.client_auth_post;
  j.audience = a.audience;
  j.resource = a.resource;
  for (const std::string& s : a.scopes) {
    j.scope += j.scope.empty() ? "" : " ";
    j.scope += s;
  }
  j.ca = a.ca;
  j.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(a.timeout);
  if (j.kind == TokenJob::Kind::kTokenExchange) {
    j.subject_token.assign(subject_token);
  }
  j.label = up.name;
  std::string digest;
  if (j.kind == TokenJob::Kind::kTokenExchange) {
    const TokenCache::Digest d = TokenCache::digest(subject_token);
    digest.assign(reinterpret_cast<const char*>(d.data()), d.size());
  }
  j.key = settings::credentialKey(a, digest);
  return j;
}

TokenJob introspectionJob(const Introspection& in, std::string_view token) {
  TokenJob j;
  j.kind = TokenJob::Kind::kIntrospection;
  j.endpoint = in.endpoint;
  j.client_id = in.client_id;
  j.client_secret = in.client_secret;
  j.client_auth_post = in.client_auth_post;
  j.ca = in.ca;
  j.timeout = in.timeout;
  j.cache = in.cache;
  j.subject_token.assign(token);
  j.label = "introspection";
  j.key = CredentialStore::hashKey(j);
  return j;
}

std::vector<TokenJob> clientCredentialJobs(const std::vector<settings::Upstream>& upstreams) {
  std::vector<TokenJob> out;
  for (const settings::Upstream& up : upstreams) {
    if (up.auth && up.auth->type == settings::UpstreamAuthType::kClientCredentials) {
      out.push_back(upstreamTokenJob(up, {}));
    }
  }
  return out;
}

std::string clientCredentialsAuthorization(const settings::Upstream& up, core::Nanos now) {
  CredentialStore::Found f = CredentialStore::instance().find(up.auth->cc_key, now);
  return f.state == CredentialStore::State::kReady ? std::move(f.value) : std::string();
}

std::string basicCredentials(std::string_view client_id, std::string_view secret) {
  std::string out = "Basic ";
  core::appendBase64(out, formEscape(client_id) + ":" + formEscape(secret),
                     core::Base64Alphabet::kStandard, core::Base64Padding::kRequired);
  return out;
}

FormFields tokenForm(const TokenJob& job) {
  FormFields f;
  switch (job.kind) {
    case TokenJob::Kind::kClientCredentials:
      f.emplace_back("grant_type", "client_credentials");
      break;
    case TokenJob::Kind::kTokenExchange:
      f.emplace_back("grant_type", std::string(kTokenExchangeGrant));
      f.emplace_back("subject_token", job.subject_token);
      f.emplace_back("subject_token_type", std::string(kAccessTokenType));
      f.emplace_back("requested_token_type", std::string(kAccessTokenType));
      break;
    case TokenJob::Kind::kIntrospection:
      f.emplace_back("token", job.subject_token);
      f.emplace_back("token_type_hint", "access_token");
      break;
    case TokenJob::Kind::kSignedIdentity:
      break;  // never sent
  }
  if (job.kind != TokenJob::Kind::kIntrospection) {
    if (!job.audience.empty()) {
      f.emplace_back("audience", job.audience);
    }
    if (!job.resource.empty()) {
      f.emplace_back("resource", job.resource);
    }
    if (!job.scope.empty()) {
      f.emplace_back("scope", job.scope);
    }
  }
  if (job.client_auth_post) {
    f.emplace_back("client_id", job.client_id);
    f.emplace_back("client_secret", job.client_secret);
  }
  return f;
}

TokenAnswer parseTokenAnswer(int status, std::string_view body) {
  TokenAnswer a;
  simdjson::dom::parser p;
  simdjson::dom::object obj;
  const bool json = parse(body, p, obj);
  if (status == 400 || status == 401 || status == 403) {
    std::string_view err;
    if (json && obj["error"].get_string().get(err) == simdjson::SUCCESS) {
      a.state = CredentialStore::State::kRefused;
      a.error = errorCode(err);
      return a;
    }
    a.error = "HTTP " + std::to_string(status) + " without an OAuth error";
    return a;
  }
  if (status != 200) {
    a.error = "HTTP " + std::to_string(status);
    return a;
  }
  if (!json) {
    a.error = "an answer that is not a JSON object";
    return a;
  }
  std::string_view token;
  if (obj["access_token"].get_string().get(token) != simdjson::SUCCESS) {
    a.error = "an answer without access_token";
    return a;
  }
  if (!headerSafe(token)) {
    a.error = "an access_token a header cannot carry";
    return a;
  }
  std::string_view type;
  if (obj["token_type"].get_string().get(type) == simdjson::SUCCESS &&
      !core::iequals(type, "bearer")) {
    a.error = "a token_type other than Bearer";
    return a;
  }
  int64_t expires = 0;
  simdjson::dom::element ee;
  a.lifetime = kDefaultLifetime;
  if (obj["expires_in"].get(ee) == simdjson::SUCCESS) {
    double d = 0;
    if (ee.get_int64().get(expires) == simdjson::SUCCESS) {
      a.lifetime = std::chrono::seconds(std::max<int64_t>(expires, 0));
    } else if (ee.get_double().get(d) == simdjson::SUCCESS && d >= 0 && d < 1e9) {
      a.lifetime = std::chrono::seconds(static_cast<int64_t>(d));
    } else {
      a.error = "an expires_in that is not a number of seconds";
      return a;
    }
  }
  a.state = CredentialStore::State::kReady;
  a.value.assign(token);
  return a;
}

TokenAnswer parseIntrospection(int status, std::string_view body, int64_t now_unix,
                               std::chrono::seconds cache) {
  TokenAnswer a;
  if (status != 200) {
    a.error = "HTTP " + std::to_string(status);
    return a;
  }
  simdjson::dom::parser p;
  simdjson::dom::object obj;
  if (!parse(body, p, obj)) {
    a.error = "an answer that is not a JSON object";
    return a;
  }
  bool active = false;
  if (obj["active"].get_bool().get(active) != simdjson::SUCCESS) {
    a.error = "an answer without a boolean 'active'";
    return a;
  }
  int64_t exp = 0;
  const bool has_exp = obj["exp"].get_int64().get(exp) == simdjson::SUCCESS;
  if (!active || (has_exp && exp <= now_unix)) {
    a.state = CredentialStore::State::kRefused;
    a.error = "inactive";
    return a;
  }
  a.state = CredentialStore::State::kReady;
  a.value.assign(body);
  a.lifetime = has_exp ? std::min(cache, std::chrono::seconds(exp - now_unix)) : cache;
  return a;
}

}  // namespace gw::policy
