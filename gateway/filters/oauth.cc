// The gateway as the OAuth resource server (issue #17): the identity stage, the RFC 9728
// protected resource metadata it answers itself, and the RFC 6750 challenges of its 401s and
// 403s.

#include <algorithm>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/ascii.h"
#include "gateway/core/clock.h"
#include "gateway/filters/stages.h"
#include "gateway/http/message.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/policy/credential_store.h"
#include "gateway/policy/token_answer.h"
#include "gateway/policy/token_cache.h"

namespace gw::filters::detail {

// identity.resource_metadata: GET (or HEAD) of its well-known URI, of the root form, or of
// the form for the MCP endpoint's path answers the RFC 9728 document. Null when `path` is
// none of them.
const policy::ResourceMetadata* metadataFor(const Snapshot& snap, std::string_view path) noexcept {
  const policy::ResourceMetadata* m = snap.policy->resourceMetadata();
  constexpr std::string_view kWellKnown = "/.well-known/oauth-protected-resource";
  if (m == nullptr || !path.starts_with(kWellKnown)) {
    return nullptr;
  }
  const std::string_view rest = path.substr(kWellKnown.size());
  if (rest.empty() || path == m->well_known_path || rest == snap.settings->endpoint) {
    return m;
  }
  return nullptr;
}

FilterStatus metadataReply(RequestContext& ctx, const policy::ResourceMetadata& m) {
  ctx.reply = LocalReply{};
  ctx.reply.json_rpc = false;
  ctx.reply.reason = "resource_metadata";
  if (ctx.head->method == "OPTIONS") {
    // A browser-based client's CORS preflight (SDKs send MCP-Protocol-Version with it).
    ctx.reply.status = 200;
    ctx.reply.addField("Allow", "GET, HEAD, OPTIONS");
    ctx.reply.addField("Access-Control-Allow-Origin", "*");
    ctx.reply.addField("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS");
    ctx.reply.addField("Access-Control-Allow-Headers", "*");
    ctx.reply.addField("Access-Control-Max-Age", "86400");
    return FilterStatus::kLocalReply;
  }
  if (ctx.head->method != "GET" && ctx.head->method != "HEAD") {
    ctx.reply.status = 405;
    ctx.reply.text = "method not allowed\n";
    ctx.reply.addField("Allow", "GET, HEAD, OPTIONS");
    ctx.reply.reason = "method_not_allowed";
    return FilterStatus::kLocalReply;
  }
  ctx.reply.status = 200;
  ctx.reply.text = m.document;
  ctx.reply.content_type = "application/json";
  // Public metadata a browser-based client reads across origins (RFC 9728 §3).
  ctx.reply.addField("Access-Control-Allow-Origin", "*");
  return FilterStatus::kLocalReply;
}

std::string bearerChallenge(const policy::PolicySet& pol, const char* error,
                            const std::vector<std::string>& scopes) {
  std::string h = "Bearer ";
  const policy::ResourceMetadata* m = pol.resourceMetadata();
  const size_t start = h.size();
  auto param = [&](std::string_view name, std::string_view value) {
    h += h.size() > start ? ", " : "";
    h += name;
    h += "=\"";
    h += value;  // scopes and the URL were checked at load: no quote, backslash or control
    h += '"';
  };
  if (m == nullptr) {
    param("realm", "mcp-gateway");
  }
  if (error != nullptr) {
    param("error", error);
  }
  if (!scopes.empty()) {
    std::string joined;
    for (const std::string& s : scopes) {
      joined += joined.empty() ? "" : " ";
      joined += s;
    }
    param("scope", joined);
  }
  if (m != nullptr) {
    param("resource_metadata", m->url);
  }
  return h;
}

namespace {

const std::vector<std::string> kNone;

// The scopes a 401 challenge names — what a client asks the authorization server for, so the
// least this request needs: the scopes of the rule that would decide it for a caller without
// any (its require.scopes), else resource_metadata.challenge_scopes, else scopes_supported.
const std::vector<std::string>& challengeScopes(const RequestContext& ctx,
                                                const policy::PolicySet& pol) {
  if (ctx.mcp.has_method) {
    const policy::Decision d =
        pol.decide(policy::RequestView{ctx.mcp.method, &ctx.mcp}, policy::Identity{});
    if (d.missing_scopes != nullptr) {
      return *d.missing_scopes;
    }
  }
  const policy::ResourceMetadata* m = pol.resourceMetadata();
  return m == nullptr                   ? kNone
         : !m->challenge_scopes.empty() ? m->challenge_scopes
                                        : m->scopes_supported;
}

// The answer to a refused credential (`auth` neither kAnonymous nor kAuthenticated): 400
// invalid_request for a malformed request, else a 401 challenge whose error="invalid_token"
// says a Bearer token came and was refused (no error code without one, or with another
// scheme: RFC 6750 §3.1).
FilterStatus refuse(RequestContext& ctx, const policy::PolicySet& pol, policy::AuthResult auth,
                    const char* why) {
  if (auth == policy::AuthResult::kMalformed) {
    setReply(ctx, 400, mcp::code::kUnauthorized, std::string("Bad Request: ") + why,
             "auth_invalid");
    ctx.reply.addField("WWW-Authenticate", bearerChallenge(pol, "invalid_request", kNone));
    return FilterStatus::kLocalReply;
  }
  setReply(ctx, 401, mcp::code::kUnauthorized,
           std::string("Unauthorized: ") + (*why ? why : "credentials required"),
           auth == policy::AuthResult::kMissing ? "auth_missing" : "auth_invalid");
  ctx.reply.addField(
      "WWW-Authenticate",
      bearerChallenge(pol, auth == policy::AuthResult::kInvalid ? "invalid_token" : nullptr,
                      challengeScopes(ctx, pol)));
  return FilterStatus::kLocalReply;
}

// The request's `Authorization: Bearer <token>` token; empty without one.
std::string_view bearerToken(const std::vector<http::HeaderField>& fields) {
  const http::HeaderField* f = http::findField(fields, "authorization");
  if (f == nullptr || f->value.size() < 7 || !core::iequals(f->value.substr(0, 7), "bearer ")) {
    return {};
  }
  std::string_view t = f->value.substr(7);
  while (!t.empty() && t.front() == ' ') {
    t.remove_prefix(1);
  }
  return t;
}

// The bearer token when it is a JWT (two dots: what PolicySet::authenticate took as one).
std::string_view jwtBearer(const std::vector<http::HeaderField>& fields) {
  const std::string_view t = bearerToken(fields);
  return std::count(t.begin(), t.end(), '.') == 2 ? t : std::string_view{};
}

// identity.introspection (RFC 7662) of a token the other checks refused: the shared store's
// answer (kContinue with ctx.auth set), or the call asked for and the request told to wait
// (kLocalReply with introspection_pending), or 503 when the endpoint cannot be asked.
FilterStatus introspect(RequestContext& ctx, const policy::PolicySet& pol, std::string_view token,
                        const char** why) {
  policy::TokenJob job = policy::introspectionJob(*pol.introspection(), token);
  policy::CredentialStore& store = policy::CredentialStore::instance();
  const auto now = std::chrono::duration_cast<core::Nanos>(core::steadyNow().time_since_epoch());
  const policy::CredentialStore::Found f = store.find(job.key, now);
  using State = policy::CredentialStore::State;
  State state = f.state;
  if (state == State::kReady) {
    const auto unix_now =
        std::chrono::duration_cast<std::chrono::seconds>(core::wallNow().time_since_epoch())
            .count();
    ctx.auth = pol.fromIntrospection(f.value, unix_now, ctx.identity, why);
    if (ctx.auth == policy::AuthResult::kAuthenticated) {
      ctx.bearer_token = token;
      const policy::TokenCache::Digest d = policy::TokenCache::digest(token);
      ctx.identity.token_digest.assign(reinterpret_cast<const char*>(d.data()), d.size());
    }
    return FilterStatus::kContinue;
  }
  if (state == State::kRefused) {
    ctx.auth = policy::AuthResult::kInvalid;
    *why = "the token is not active";
    return FilterStatus::kContinue;
  }
  if (state == State::kNone) {
    state = store.ask(std::move(job), now);
  }
  setReply(ctx, 503, mcp::code::kAuthUnavailable,
           state == State::kPending
               ? "Service Unavailable: the token introspection endpoint did not answer in time; "
                 "retry"
               : "Service Unavailable: the token introspection endpoint cannot be reached; retry",
           "introspection_unavailable");
  ctx.reply.addField("Retry-After", "1");
  ctx.introspection_pending = state == State::kPending;
  return FilterStatus::kLocalReply;
}

}  // namespace

FilterStatus identityStage(RequestContext& ctx) noexcept {
  const policy::PolicySet& pol = *ctx.snapshot->policy;
  if (pol.checksCredentials() && http::queryHasParam(ctx.head->target, "access_token")) {
    // A token in the URI (RFC 6750 §2.3) lands in logs and is forwarded with the target: the
    // MCP authorization spec forbids it, so the request is malformed (never forwarded).
    return refuse(ctx, pol, policy::AuthResult::kMalformed,
                  "access tokens are not accepted in the URI query (send them in "
                  "Authorization: Bearer)");
  }
  const char* why = "";
  auto now =
      std::chrono::duration_cast<std::chrono::seconds>(core::wallNow().time_since_epoch()).count();
  ctx.auth = pol.authenticate(ctx.head->fields, now, ctx.identity, &why, &ctx.keys_pending);
  if (ctx.auth == policy::AuthResult::kInvalid && pol.introspection() != nullptr &&
      ctx.keys_pending.source == nullptr) {
    // Not a JWT the jwt section takes, nor an API key: an opaque token to introspect.
    const std::string_view token = bearerToken(ctx.head->fields);
    if (!token.empty() && pol.introspects(token)) {
      if (FilterStatus st = introspect(ctx, pol, token, &why); st != FilterStatus::kContinue) {
        return st;
      }
    }
  }
  if (ctx.auth == policy::AuthResult::kAuthenticated) {
    pol.expandScopes(ctx.identity.scopes);  // identity.scope_implies
    if (ctx.bearer_token.empty()) {
      ctx.bearer_token = jwtBearer(ctx.head->fields);
    }
  }
  // No credential in the request (anonymous, or missing where one is needed), but a client
  // certificate verified on the connection: the certificate is the credential. A credential
  // in the request wins, and a bad one is refused as usual.
  if (!ctx.peer_subject.empty() &&
      (ctx.auth == policy::AuthResult::kAnonymous || ctx.auth == policy::AuthResult::kMissing)) {
    ctx.identity.clear();
    ctx.identity.authenticated = true;
    ctx.identity.subject.assign(ctx.peer_subject);
    ctx.auth = policy::AuthResult::kAuthenticated;
  }
  // Credentials stop at a gateway that checks them, unless the route or policy says so.
  // (A legacy request inspected from its body has no route yet: legacyBodyStage adds the
  // route's forward_credentials once it has one.)
  if (ctx.route != nullptr) {
    ctx.forward_credentials =
        credentialForwarding(*ctx.route, pol, *ctx.snapshot->settings).forward;
  } else {
    ctx.forward_credentials =
        pol.forwardCredentials() || ctx.snapshot->settings->policy_files.empty();
  }
  if (ctx.auth == policy::AuthResult::kAnonymous ||
      ctx.auth == policy::AuthResult::kAuthenticated) {
    return FilterStatus::kContinue;
  }
  return refuse(ctx, pol, ctx.auth, why);
}

}  // namespace gw::filters::detail

namespace gw::filters {

void bearerRequired(RequestContext& ctx, const char* why) {
  detail::refuse(ctx, *ctx.snapshot->policy, policy::AuthResult::kMissing, why);
}

}  // namespace gw::filters
