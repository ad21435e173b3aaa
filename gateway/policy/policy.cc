// policy/: the request-path half — authentication and rule evaluation (see policy.h).

#include "gateway/policy/policy.h"

#include <algorithm>
#include <cstring>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "gateway/core/ascii.h"
#include "gateway/policy/jwt.h"

namespace gw::policy {

const std::string* Identity::claim(std::string_view name) const noexcept {
  for (const auto& [k, v] : claims) {
    if (k == name) {
      return &v;
    }
  }
  return nullptr;
}

void PolicySet::expandScopes(std::vector<std::string>& scopes) const {
  if (scope_implies_.empty()) {
    return;
  }
  const size_t held = scopes.size();
  for (size_t i = 0; i < held; ++i) {
    const auto it =
        std::lower_bound(scope_implies_.begin(), scope_implies_.end(), scopes[i],
                         [](const auto& entry, const std::string& s) { return entry.first < s; });
    if (it == scope_implies_.end() || it->first != scopes[i]) {
      continue;
    }
    for (const std::string& implied : it->second) {
      if (std::find(scopes.begin(), scopes.end(), implied) == scopes.end()) {
        scopes.push_back(implied);
      }
    }
  }
}

bool Identity::hasScope(std::string_view scope) const noexcept {
  return std::find(scopes.begin(), scopes.end(), scope) != scopes.end();
}

void Identity::clear() noexcept {
  authenticated = false;
  subject.clear();
  groups.clear();
  claims.clear();
  scopes.clear();
  token_digest.clear();
}

bool Match::matches(const RequestView& req, const Identity& id) const noexcept {
  if (method && (req.method.empty() || !method->match(req.method))) {
    return false;
  }
  if (name && (req.mcp == nullptr || !req.mcp->has_name || !name->match(req.mcp->name.value))) {
    return false;
  }
  for (const auto& [pname, glob] : params) {
    const mcp::McpParam* p = req.mcp != nullptr ? req.mcp->findParam(pname) : nullptr;
    if (p == nullptr || !glob.match(p->v.value)) {
      return false;
    }
  }
  if (subject && (!id.authenticated || !subject->match(id.subject))) {
    return false;
  }
  if (!groups.empty()) {
    bool any = std::any_of(groups.begin(), groups.end(), [&](const std::string& g) {
      return std::find(id.groups.begin(), id.groups.end(), g) != id.groups.end();
    });
    if (!any) {
      return false;
    }
  }
  for (const auto& [cname, glob] : claims) {
    const std::string* v = id.claim(cname);
    if (v == nullptr || !glob.match(*v)) {
      return false;
    }
  }
  return true;
}

PolicySet::PolicySet() = default;
PolicySet::~PolicySet() = default;

namespace {

AuthResult fail(const char** reason, AuthResult r, const char* why) noexcept {
  if (reason != nullptr) {
    *reason = why;
  }
  return r;
}

// The dots in `token`, counted up to 3 (memchr: a JWT header is hundreds of bytes).
int dotCount(std::string_view token) noexcept {
  int n = 0;
  const char* p = token.data();
  const char* end = p + token.size();
  while (n < 3 && p < end) {
    const void* dot = std::memchr(p, '.', static_cast<size_t>(end - p));
    if (dot == nullptr) {
      break;
    }
    ++n;
    p = static_cast<const char*>(dot) + 1;
  }
  return n;
}

// With jwks_url and no key set yet, or a kid the set lacks: the source is asked to refetch
// (the fetcher rate-limits that), and when a fetch is coming `pending` says which.
// `ended_before`: source.fetchesEnded() read before the key set was: a fetch that ended since
// brought a set this request has not tried, so it is worth a wait too (it ends at once).
void askRefetch(JwksSource& source, uint64_t ended_before, KeysPending* pending) noexcept {
  const JwksSource::Ask a = source.askRefetch();
  if ((a.coming || a.ended != ended_before) && pending != nullptr) {
    pending->source = &source;
    pending->ended = ended_before;
  }
}

// A JWT: from the verified-token cache when this key-set generation verified it before,
// else verified (and remembered when good). A token the key set cannot verify for want of
// its key is refused after asking for a refetch (askRefetch): the caller may wait for it.
AuthResult authenticateJwt(const PolicySet::Jwt& jwt, std::string_view token, int64_t now_unix,
                           Identity& out, const char** reason, KeysPending* pending) noexcept {
  std::shared_ptr<const KeySet> fetched;
  uint64_t generation = 0;
  uint64_t ended_before = 0;
  if (jwt.source != nullptr) {
    ended_before = jwt.source->fetchesEnded();
    fetched = jwt.source->keys();
    if (fetched == nullptr) {
      askRefetch(*jwt.source, ended_before, pending);
      return fail(reason, AuthResult::kInvalid, "the JWKS has not been fetched yet");
    }
    generation = fetched->generation;
  }
  const TokenCache::Digest digest = TokenCache::digest(token);
  if (jwt.cache->find(digest, generation, now_unix - jwt.skew_s, out)) {
    out.token_digest.assign(reinterpret_cast<const char*>(digest.data()), digest.size());
    return AuthResult::kAuthenticated;
  }
  JwtFacts facts;
  const std::vector<Jwk>& keys = fetched != nullptr ? fetched->keys : jwt.keys;
  AuthResult r = verifyJwtWith(jwt, keys, token, now_unix, out, reason, &facts);
  if (r == AuthResult::kAuthenticated) {
    // Valid while exp > now - skew (verifyJwt's rule), so in the cache's terms until exp,
    // compared with now - skew.
    jwt.cache->insert(digest, generation, facts.exp, now_unix - jwt.skew_s, out);
    out.token_digest.assign(reinterpret_cast<const char*>(digest.data()), digest.size());
  } else if (facts.unknown_key && jwt.source != nullptr) {
    askRefetch(*jwt.source, ended_before, pending);
  }
  return r;
}

}  // namespace

AuthResult PolicySet::authenticate(const std::vector<http::HeaderField>& fields, int64_t now_unix,
                                   Identity& out, const char** reason,
                                   KeysPending* pending) const noexcept {
  out.clear();
  if (reason != nullptr) {
    *reason = "";
  }
  bool configured = checksCredentials();
  size_t count = configured ? http::countFields(fields, "authorization") : 0;
  if (count == 0) {
    return anonymous_ ? AuthResult::kAnonymous
                      : fail(reason, AuthResult::kMissing, "credentials required");
  }
  if (count > 1) {
    return fail(reason, AuthResult::kMalformed, "more than one Authorization header");
  }
  std::string_view value = http::findField(fields, "authorization")->value;
  constexpr std::string_view kBearer = "bearer ";
  if (core::iequals(value, kBearer.substr(0, kBearer.size() - 1))) {
    return fail(reason, AuthResult::kMalformed, "empty Bearer credential");
  }
  if (!core::istartsWith(value, kBearer)) {
    return fail(reason, AuthResult::kUnsupported, "Authorization is not a Bearer credential");
  }
  std::string_view token = value.substr(kBearer.size());
  while (!token.empty() && token.front() == ' ') {
    token.remove_prefix(1);
  }
  if (token.empty()) {
    return fail(reason, AuthResult::kMalformed, "empty Bearer credential");
  }
  if (dotCount(token) == 2) {
    if (jwt_ == nullptr) {
      return fail(reason, AuthResult::kInvalid, "JWTs are not accepted");
    }
    return authenticateJwt(*jwt_, token, now_unix, out, reason, pending);
  }
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), digest);
  // Every configured key is compared, whatever matches, so timing says nothing about which.
  const ApiKey* found = nullptr;
  for (const ApiKey& k : api_keys_) {
    bool eq = CRYPTO_memcmp(k.digest, digest, sizeof digest) == 0;
    found = eq && found == nullptr ? &k : found;
  }
  OPENSSL_cleanse(digest, sizeof digest);
  if (found == nullptr) {
    return fail(reason, AuthResult::kInvalid, "unknown API key");
  }
  out.authenticated = true;
  out.subject = found->subject;
  out.groups = found->groups;
  out.claims = found->claims;
  out.scopes = found->scopes;
  return AuthResult::kAuthenticated;
}

bool PolicySet::introspects(std::string_view token) const noexcept {
  return introspection_.has_value() && !(jwt_ != nullptr && dotCount(token) == 2);
}

namespace {

// What rule `r` (already known to match) says about this request.
Decision ruleDecision(const Rule& r, const RequestView& req, const Identity& id) noexcept {
  Decision d;
  d.rule = r.name;
  for (const std::string& s : r.require_scopes) {
    if (!id.hasScope(s)) {
      d.allow = false;
      d.reason = "the credential lacks a required scope";
      d.missing_scopes = &r.require_scopes;
      return d;
    }
  }
  if (r.require) {
    const mcp::McpParam* p = req.mcp != nullptr ? req.mcp->findParam(r.require->first) : nullptr;
    const std::string* c = id.claim(r.require->second);
    if (p == nullptr) {
      d.allow = false;
      d.reason = "required param is absent";
      return d;
    }
    if (c == nullptr) {
      d.allow = false;
      d.reason = "caller lacks the required claim";
      return d;
    }
    if (p->v.value != std::string_view(*c)) {
      d.allow = false;
      d.reason = "param does not equal the caller's claim";
      return d;
    }
  }
  d.allow = r.action == Rule::Action::kAllow;
  d.reason = d.allow ? "allowed by rule" : "denied by rule";
  return d;
}

}  // namespace

Decision PolicySet::decide(const RequestView& req, const Identity& id,
                           std::vector<Verdict>* audit) const noexcept {
  for (const Rule& r : rules_) {
    if (!r.match.matches(req, id)) {
      continue;
    }
    if (r.unless && r.unless->matches(req, id)) {
      continue;
    }
    if (r.audit) {
      // Had this rule been enforced, it would have decided here (the enforced rules before
      // it did not match); recorded, then read past as if absent.
      if (audit != nullptr) {
        const Decision d = ruleDecision(r, req, id);
        audit->push_back(Verdict{d.rule, d.reason, d.allow, false, true});
      }
      continue;
    }
    return ruleDecision(r, req, id);
  }
  Decision d;
  d.allow = default_allow_;
  d.rule = "default";
  d.reason = d.allow ? "allowed by default" : "denied by default";
  return d;
}

namespace {

enum class Tri : uint8_t { kNo, kMaybe, kYes };

// Match::matches for a call not yet made: method and name are known, the caller too, the
// Mcp-Param values are not (any condition on them may hold).
Tri mayMatch(const Match& m, std::string_view method, std::string_view name,
             const Identity& id) noexcept {
  if (m.method && !m.method->match(method)) {
    return Tri::kNo;
  }
  if (m.name && !m.name->match(name)) {
    return Tri::kNo;
  }
  if (m.subject && (!id.authenticated || !m.subject->match(id.subject))) {
    return Tri::kNo;
  }
  if (!m.groups.empty()) {
    bool any = std::any_of(m.groups.begin(), m.groups.end(), [&](const std::string& g) {
      return std::find(id.groups.begin(), id.groups.end(), g) != id.groups.end();
    });
    if (!any) {
      return Tri::kNo;
    }
  }
  for (const auto& [cname, glob] : m.claims) {
    const std::string* v = id.claim(cname);
    if (v == nullptr || !glob.match(*v)) {
      return Tri::kNo;
    }
  }
  return m.params.empty() ? Tri::kYes : Tri::kMaybe;
}

}  // namespace

bool PolicySet::mayUse(std::string_view method, std::string_view name,
                       const Identity& id) const noexcept {
  for (const Rule& r : rules_) {
    if (r.audit) {
      continue;  // lists show what enforcement lets through
    }
    const Tri m = mayMatch(r.match, method, name, id);
    if (m == Tri::kNo) {
      continue;
    }
    const Tri u = r.unless ? mayMatch(*r.unless, method, name, id) : Tri::kNo;
    if (u == Tri::kYes) {
      continue;  // the rule never applies to this call
    }
    const bool certain = m == Tri::kYes && u == Tri::kNo;
    bool allows = r.action == Rule::Action::kAllow;
    if (allows && r.require) {
      allows = id.claim(r.require->second) != nullptr;  // the param may equal it
    }
    for (const std::string& s : r.require_scopes) {
      allows = allows && id.hasScope(s);
    }
    if (allows) {
      return true;  // some call reaches this allow (the maybe-denies before it avoided)
    }
    if (certain) {
      return false;  // every such call stops here
    }
  }
  return default_allow_;
}

}  // namespace gw::policy
