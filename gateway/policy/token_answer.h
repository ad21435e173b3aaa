#pragma once
// policy/: the OAuth 2.0 calls the gateway makes, as bytes — the form of a client_credentials
// (RFC 6749 §4.4), token-exchange (RFC 8693 §2.1) or introspection (RFC 7662 §2.1) request,
// its client authentication (client_secret_basic or client_secret_post, RFC 6749 §2.3.1), and
// what an answer means (RFC 6749 §5.1/§5.2, RFC 8693 §2.2, RFC 7662 §2.2). Pure: no I/O.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/policy/credential_store.h"
#include "gateway/policy/policy.h"
#include "gateway/settings/settings.h"

namespace gw::policy {

inline constexpr std::string_view kTokenExchangeGrant =
    "urn:ietf:params:oauth:grant-type:token-exchange";
inline constexpr std::string_view kAccessTokenType =
    "urn:ietf:params:oauth:token-type:access_token";

// The job for upstream `up` (auth type client_credentials or token_exchange; the caller's
// `subject_token` for token_exchange), its key set.
TokenJob upstreamTokenJob(const settings::Upstream& up, std::string_view subject_token);
// The introspection of `token` (identity.introspection), its key set.
TokenJob introspectionJob(const Introspection& in, std::string_view token);
// The client_credentials jobs of `upstreams` (one per upstream with that auth type).
std::vector<TokenJob> clientCredentialJobs(const std::vector<settings::Upstream>& upstreams);

// "Bearer <token>": the gateway's current client_credentials token for `up`, or "" when the
// store has none valid at `now`.
std::string clientCredentialsAuthorization(const settings::Upstream& up, core::Nanos now);

using FormFields = std::vector<std::pair<std::string, std::string>>;

// The request body's fields for `job` (client_id and client_secret included with
// client_secret_post).
FormFields tokenForm(const TokenJob& job);
// `Basic base64(urlencode(id) ":" urlencode(secret))` (RFC 6749 §2.3.1).
std::string basicCredentials(std::string_view client_id, std::string_view secret);

struct TokenAnswer {
  CredentialStore::State state = CredentialStore::State::kFailed;
  std::string value;  // kReady: the access token; introspection: the answer's JSON
  // kRefused: the OAuth error code (or "inactive"); kFailed: why, in a few words. Never a
  // byte of a token.
  std::string error;
  std::chrono::seconds lifetime{0};  // kReady: how long the answer may be used
};

// A token endpoint's answer (status and body): 200 with a usable access_token (a Bearer
// token_type, or none; characters a header can carry) → kReady for its expires_in (3600 s
// when absent); 400/401/403 with an `error` → kRefused with that code; anything else →
// kFailed.
TokenAnswer parseTokenAnswer(int status, std::string_view body);

// An introspection answer: 200 with `active: true` → kReady (value: the body) until `exp`
// (seconds since the epoch; `now_unix` is the time now) and at most `cache`; `active: false`
// (or an `exp` already past) → kRefused "inactive"; anything else → kFailed.
TokenAnswer parseIntrospection(int status, std::string_view body, int64_t now_unix,
                               std::chrono::seconds cache);

}  // namespace gw::policy
