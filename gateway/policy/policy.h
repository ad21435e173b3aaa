#pragma once
// policy/: who the caller is and what it may do — API-key and JWT identity, the ordered
// per-tool rules and the rate limits the policy files declare, for the stages after routing.
// Policy files (YAML) are parsed, validated and compiled once into an immutable PolicySet;
// on the request path authenticate() turns the Authorization header into an Identity (API key
// or JWT) and decide() walks the ordered rules (first match wins, then `default`). Both are
// noexcept, read no files and never log or return credential contents. Matching uses the
// DECODED Mcp-* values (sentinels already decoded by mcp/contract.h).

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/http/message.h"
#include "gateway/mcp/contract.h"
#include "gateway/pins/pins.h"
#include "gateway/router/glob.h"
#include "gateway/settings/settings.h"

namespace gw::policy {

struct Identity {
  bool authenticated = false;
  std::string subject;  // "" when anonymous
  std::vector<std::string> groups;
  // Top-level string / number / bool claims flattened to text (numbers in their shortest
  // decimal form, booleans as "true" / "false"); nested objects, arrays and null are skipped.
  // For API keys: the `claims` configured with the key.
  std::vector<std::pair<std::string, std::string>> claims;
  // OAuth scopes the credential carries: a JWT's `scope` (space-separated, RFC 9068) or `scp`
  // (array or string); an API key's `scopes`.
  std::vector<std::string> scopes;
  // The SHA-256 of the bearer token that authenticated the caller (a JWT, or an introspected
  // token; empty otherwise): what cached credentials for it are keyed by, never the token.
  std::string token_digest;

  const std::string* claim(std::string_view name) const noexcept;
  bool hasScope(std::string_view scope) const noexcept;
  void clear() noexcept;
};

enum class AuthResult : uint8_t {
  kAnonymous,      // no credentials and anonymous: allow
  kAuthenticated,  // a valid API key or JWT
  kMissing,        // no credentials and anonymous: deny (→ 401)
  kInvalid,        // credentials present but wrong: bad key, bad / expired token (→ 401)
  kUnsupported,    // an Authorization scheme other than Bearer (→ 401, no error code)
  kMalformed,      // two Authorization fields, an empty Bearer credential (→ 400)
};

struct RequestView {
  std::string_view method;               // Mcp-Method ("" when absent)
  const mcp::McpHeaders* mcp = nullptr;  // decoded Mcp-Name / Mcp-Param-*; may be null
};

// One `match:` (or `unless:`) block; every present key must match (AND). An absent header
// never matches a present key, not even `*`; likewise `subject` never matches an anonymous
// caller and `claims` never match a claim the caller lacks.
struct Match {
  std::optional<router::Glob> method;                        // glob on Mcp-Method
  std::optional<router::Glob> name;                          // glob on decoded Mcp-Name
  std::vector<std::pair<std::string, router::Glob>> params;  // {Name} (case-insensitive) → glob
  std::optional<router::Glob> subject;                       // glob on Identity::subject
  std::vector<std::string> groups;                           // caller is in any of these
  std::vector<std::pair<std::string, router::Glob>> claims;  // claim present and matches glob

  bool matches(const RequestView& req, const Identity& id) const noexcept;
};

struct Rule {
  enum class Action : uint8_t { kAllow, kDeny };
  std::string name;
  Match match;                  // empty = matches everything
  std::optional<Match> unless;  // when it matches, the rule does not apply
  Action action = Action::kAllow;
  // `require: { param: P, equals_claim: C }`: the decoded Mcp-Param-P must be present and
  // byte-equal to the caller's claim C, else the request is denied by this rule.
  std::optional<std::pair<std::string, std::string>> require;
  // `require: { scopes: [...] }`: the caller's credential must carry every one of these
  // scopes, else the request is denied by this rule as insufficient_scope (403 with an
  // RFC 6750 challenge; 401 for a caller with no credential).
  std::vector<std::string> require_scopes;
  // `mode: audit`: decided and recorded (Decision::audit), never enforced — decide() reads
  // the rules as if this one were absent, and so does mayUse().
  bool audit = false;
  std::string file;
  int line = 0;
};

struct RateLimitSpec {
  enum class Backend : uint8_t { kLocal, kRedis };
  std::string name;
  Match match;
  // Parts of the bucket key, in order: "subject", "group", "method", "name", "param:<Name>",
  // "header:<Name>", "client_ip".
  std::vector<std::string> key;
  double rate_per_sec = 0;
  std::string rate_text;   // as written, e.g. "10/s"
  uint64_t window_ms = 0;  // the period of the rate: 1000 (/s), 60000 (/min), 3600000 (/h)
  uint64_t count = 0;      // N of "N/period"
  uint32_t burst = 0;      // default = count
  Backend backend = Backend::kLocal;
  // `mode: audit`: its own bucket is charged and a refusal recorded, but the request goes on.
  bool audit = false;
  int line = 0;
  std::string file;
};

struct RedisSettings {
  enum class OnError : uint8_t { kLocal, kAllow, kDeny };
  bool present = false;
  std::string host;  // numeric: `address`'s host, resolved when the file was loaded
  uint16_t port = 6379;
  std::string address;  // as written ("redis:6379"), for display
  OnError on_error = OnError::kLocal;
  std::chrono::milliseconds timeout{50};
};

struct Decision {
  bool allow = true;
  std::string_view rule = "default";  // the deciding rule's name; "default" when none matched
  const char* reason = "";            // static text, e.g. "denied by rule"
  // Denied because the credential lacks a scope of the rule's require.scopes (they point
  // into the PolicySet): the reply is an insufficient_scope challenge, not a plain 403.
  const std::vector<std::string>* missing_scopes = nullptr;
};

// `identity.resource_metadata` (RFC 9728): the OAuth protected resource metadata the gateway
// publishes for its MCP endpoint, and the challenge that points to it.
struct ResourceMetadata {
  std::string resource;  // the gateway's canonical resource URI (https, no fragment)
  std::vector<std::string> authorization_servers;
  std::vector<std::string> scopes_supported;
  // The `scope` of a 401 challenge (what a client asks the authorization server for);
  // empty: scopes_supported.
  std::vector<std::string> challenge_scopes;
  std::string resource_name;    // optional
  std::string document;         // the JSON document, rendered at load
  std::string url;              // where the document is: the well-known URI of `resource`
  std::string well_known_path;  // its path: /.well-known/oauth-protected-resource{/path}
  std::string file;
  int line = 0;
};

// One rule's or rate limit's decision kept for the access log and /metrics
// (mcp_gateway_policy_decisions_total): the enforced rule that decided, each audit-mode rule
// that matched before it, each rate limit that applied.
struct Verdict {
  std::string_view name;  // rule or limit name ("default" when no rule matched)
  const char* reason = "";
  bool allow = true;
  bool limit = false;  // a rate limit, not a rule
  bool audit = false;  // mode: audit — recorded, not enforced
};

// `tool_pinning` (issue #16): the SHA-256 of every tool definition an upstream lists is kept
// in `store`; a definition that differs from its pin is reported (log) or also hidden and its
// calls refused (block) until approved. The store itself is read by the snapshot loader.
// Mode, store and new_tools are the pin book's settings (pins::Config); this adds where they
// were set.
struct ToolPinning : pins::Config {
  std::string file;  // the policy file that set it
  int line = 0;
};

class JwksSource;

// identity.introspection (RFC 7662): how opaque access tokens are checked.
struct Introspection {
  std::string endpoint;  // an http(s) URL
  std::string client_id;
  std::string client_secret_file;   // absolute
  std::string client_secret;        // a secret: never logged or shown
  bool client_auth_post = false;    // client_secret_post (default client_secret_basic)
  std::string ca;                   // absolute; "" = the system store
  std::chrono::seconds cache{120};  // an active answer is reused at most this long (≤ its exp)
  std::chrono::milliseconds timeout{5000};  // per call
};

// A JWT refused because the key set lacks its key (or there is none yet) while a JWKS fetch
// is running or about to start: the request may wait until `source->fetchesEnded()` moves
// past `ended`, then be authenticated once more (proxy/exchange.cc does).
struct KeysPending {
  JwksSource* source = nullptr;  // held by the PolicySet the request runs on
  uint64_t ended = 0;
};

class PolicySet {
 public:
  // Parses and validates every file; all problems are appended to `errors` with
  // file:line:column (unknown keys are errors). Files are merged in order: rules,
  // rate_limits and api_keys concatenated; jwt at most once; `default`, `anonymous`,
  // `forward_credentials` and `redis` from the last file that sets them. JWKS files are
  // resolved relative to the policy file and read here. Returns null when any error was
  // found. No files = allow everything, anonymous.
  static std::shared_ptr<const PolicySet> load(const std::vector<std::string>& files,
                                               std::vector<settings::Diagnostic>& errors);
  // Same for one document held in memory (`file` names it and anchors relative paths).
  static std::shared_ptr<const PolicySet> loadString(std::string_view yaml, const std::string& file,
                                                     std::vector<settings::Diagnostic>& errors);

  // Reads `Authorization: Bearer <token>`: a token with two dots is a JWT, anything else an
  // API key. `out` is cleared first and filled on kAuthenticated. `*reason` (if non-null)
  // gets static text saying why on kMissing / kInvalid; it never contains the credential.
  // `pending` (if non-null) is set on a kInvalid that a coming JWKS fetch may turn around.
  AuthResult authenticate(const std::vector<http::HeaderField>& fields, int64_t now_unix,
                          Identity& out, const char** reason,
                          KeysPending* pending = nullptr) const noexcept;
  // First matching enforced rule decides; `Decision::rule` points into this PolicySet.
  // Audit-mode rules are read past; each one that matches before the deciding rule is
  // appended to `audit` (when non-null) with the decision it would have made.
  Decision decide(const RequestView& req, const Identity& id,
                  std::vector<Verdict>* audit = nullptr) const noexcept;
  // Some rule or rate limit is in `mode: audit`.
  bool hasAudit() const noexcept { return has_audit_; }

  // Visibility (issue #16): whether some request `method` (tools/call, prompts/get,
  // resources/read) naming `name` by this caller could be allowed — false only when every
  // such call would be denied. The rules are read in order as decide() reads them; a
  // condition on an Mcp-Param value "may match" (a tool allowed for some parameter values
  // stays visible), and so does a `require` the caller holds the claim for.
  bool mayUse(std::string_view method, std::string_view name, const Identity& id) const noexcept;
  // `visibility: filter` (the default) and some rule or the default can deny: list answers
  // are filtered per caller. False: lists are relayed untouched.
  bool filtersLists() const noexcept { return visibility_filter_ && can_deny_; }
  bool visibilityFilter() const noexcept { return visibility_filter_; }

  const std::vector<Rule>& rules() const noexcept { return rules_; }
  const std::vector<RateLimitSpec>& rateLimits() const noexcept { return rate_limits_; }
  const RedisSettings& redis() const noexcept { return redis_; }
  const ToolPinning& toolPinning() const noexcept { return pinning_; }
  // identity.resource_metadata, or null.
  const ResourceMetadata* resourceMetadata() const noexcept {
    return resource_metadata_ ? &*resource_metadata_ : nullptr;
  }
  bool requiresAuth() const noexcept { return !anonymous_; }  // anonymous: deny
  // identity.scope_implies, closed transitively at load: each scope with every scope it
  // grants (sorted by scope).
  const std::vector<std::pair<std::string, std::vector<std::string>>>& scopeImplies()
      const noexcept {
    return scope_implies_;
  }
  // Adds to `scopes` every scope one of them implies (none are added twice); a no-op
  // without scope_implies.
  void expandScopes(std::vector<std::string>& scopes) const;
  // identity.introspection, or null.
  const Introspection* introspection() const noexcept {
    return introspection_ ? &*introspection_ : nullptr;
  }
  // Whether a bearer `token` the credential check refused is one to introspect: there is
  // identity.introspection, and the token is not a JWT the jwt section was for (a JWT, when
  // no jwt is configured, is introspected too).
  bool introspects(std::string_view token) const noexcept;
  // The caller an active introspection answer (`answer`, JSON) describes: `sub` (else
  // `client_id`), `scope`, the groups claim (jwt.groups_claim, else "groups"), and its
  // top-level string, number and boolean members as claims. kInvalid with `*reason` when its
  // `aud` does not name resource_metadata.resource (checked only with resource_metadata) or
  // it has expired at `now_unix`.
  AuthResult fromIntrospection(std::string_view answer, int64_t now_unix, Identity& out,
                               const char** reason) const;
  bool forwardCredentials() const noexcept { return forward_credentials_; }
  bool defaultAllow() const noexcept { return default_allow_; }

  struct ApiKey;
  struct Jwt;  // jwt.h
  const std::vector<ApiKey>& apiKeys() const noexcept { return api_keys_; }
  const Jwt* jwt() const noexcept { return jwt_.get(); }
  // API keys or JWTs are configured: the gateway is the resource server that checks tokens.
  bool checksCredentials() const noexcept {
    return !api_keys_.empty() || jwt_ != nullptr || introspection_.has_value();
  }

  ~PolicySet();
  PolicySet(const PolicySet&) = delete;
  PolicySet& operator=(const PolicySet&) = delete;

  struct ApiKey {
    std::string subject;
    unsigned char digest[32];  // SHA-256 of the key
    std::vector<std::string> groups;
    std::vector<std::pair<std::string, std::string>> claims;
    std::vector<std::string> scopes;
  };

 private:
  friend class Loader;
  PolicySet();

  std::vector<ApiKey> api_keys_;
  std::unique_ptr<Jwt> jwt_;
  bool anonymous_ = true;
  bool forward_credentials_ = false;
  bool default_allow_ = true;
  bool visibility_filter_ = true;  // visibility: filter | all
  bool can_deny_ = false;          // an enforced deny rule or require, or default: deny
  bool has_audit_ = false;         // set at load
  std::vector<Rule> rules_;
  std::vector<RateLimitSpec> rate_limits_;
  RedisSettings redis_;
  ToolPinning pinning_;  // from the last file that sets it
  std::optional<ResourceMetadata> resource_metadata_;
  std::vector<std::pair<std::string, std::vector<std::string>>> scope_implies_;
  std::optional<Introspection> introspection_;
};

}  // namespace gw::policy
