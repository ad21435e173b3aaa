#pragma once
// How a request ended: one enum, one table. The name is the access log's "outcome" and the
// value of the metric labels error.type / reason (so label values are a fixed, declared set,
// never free text); the status is the HTTP status the gateway answers with for it (0: the
// status is the upstream's, or the answer was cut after its head).

#include <cstdint>
#include <string_view>

namespace gw::core {

#define GW_OUTCOMES(X)                                                                        \
  X(kNone, "", 0)                                                                             \
  X(kComplete, "complete", 0)                                                                 \
  X(kClientClosed, "client_closed", 499)                                                      \
  X(kSendTimeout, "send_timeout", 0)                                                          \
  /* request heads the parser refused (no access-log line) */                                 \
  X(kMalformedRequest, "malformed_request", 400)                                              \
  X(kRequestLineTooLong, "request_line_too_long", 414)                                        \
  X(kHeaderTooLarge, "header_too_large", 431)                                                 \
  X(kUnsupportedTransferCoding, "unsupported_transfer_coding", 501)                           \
  X(kHeaderTimeout, "header_timeout", 408)                                                    \
  /* request body */                                                                          \
  X(kBadChunk, "bad_chunk", 400)                                                              \
  X(kBodyTimeout, "body_timeout", 408)                                                        \
  X(kBodyTooLarge, "body_too_large", 413)                                                     \
  X(kBodyBufferFull, "body_buffer_full", 503)                                                 \
  X(kExpectationFailed, "expectation_failed", 417)                                            \
  /* pipeline stages (filters/) */                                                            \
  X(kNotFound, "not_found", 404)                                                              \
  /* a Host another SNI certificate of the listener covers (issue #27) */                     \
  X(kMisdirected, "misdirected", 421)                                                         \
  /* /.well-known/oauth-protected-resource answered here (a 200) */                           \
  X(kResourceMetadata, "resource_metadata", 0)                                                \
  X(kMethodNotAllowed, "method_not_allowed", 405)                                             \
  X(kHostForbidden, "host_forbidden", 403)                                                    \
  X(kOriginForbidden, "origin_forbidden", 403)                                                \
  X(kTooManyParamHeaders, "too_many_param_headers", 431)                                      \
  X(kHeaderInvalid, "header_invalid", 400)                                                    \
  X(kHeaderMissing, "header_missing", 400)                                                    \
  X(kHeaderMismatch, "header_mismatch", 400)                                                  \
  X(kNameUnexpected, "name_unexpected", 400)                                                  \
  X(kVersionMissing, "version_missing", 400)                                                  \
  X(kVersionUnsupported, "version_unsupported", 400)                                          \
  X(kUnsupportedMediaType, "unsupported_media_type", 415)                                     \
  X(kCharsetUnsupported, "charset_unsupported", 415)                                          \
  X(kContentEncodingUnsupported, "content_encoding_unsupported", 415)                         \
  X(kBodyInvalid, "body_invalid", 400)                                                        \
  X(kIdInvalid, "id_invalid", 400)                                                            \
  X(kRequestWithoutId, "request_without_id", 400)                                             \
  X(kResponsePosted, "response_posted", 400)                                                  \
  X(kBatchSplit, "batch_split", 400)                                                          \
  X(kAuthMissing, "auth_missing", 401)                                                        \
  X(kAuthInvalid, "auth_invalid", 401)                                                        \
  X(kPolicyDenied, "policy_denied", 403)                                                      \
  X(kInsufficientScope, "insufficient_scope", 403)                                            \
  X(kNoRoute, "no_route", 502)                                                                \
  X(kRateLimited, "rate_limited", 429)                                                        \
  X(kRateLimitUnavailable, "ratelimit_unavailable", 503)                                      \
  /* upstreams[].auth: the token endpoint refused, or could not be asked (issue #28) */       \
  X(kUpstreamAuthRefused, "upstream_auth_refused", 403)                                       \
  X(kUpstreamAuthUnavailable, "upstream_auth_unavailable", 503)                               \
  /* identity.introspection could not be asked */                                             \
  X(kIntrospectionUnavailable, "introspection_unavailable", 503)                              \
  /* upstream */                                                                              \
  X(kConnectFailed, "connect_failed", 502)                                                    \
  X(kConnectTimeout, "connect_timeout", 504)                                                  \
  X(kResponseTimeout, "response_timeout", 504)                                                \
  X(kUpstreamReset, "upstream_reset", 502)                                                    \
  X(kUpstreamMalformed, "upstream_malformed", 502)                                            \
  /* a list read whole (visibility, pinning, a legacy prefixed view) it cannot read: 502 */   \
  X(kListUnreadable, "list_unreadable", 502)                                                  \
  /* limits.max_buffered_answer_bytes reached while reading a list whole */                   \
  X(kAnswerBufferFull, "answer_buffer_full", 503)                                             \
  X(kUpstreamTls, "upstream_tls", 502)                                                        \
  /* no usable endpoint (down, ejected), or the circuit breaker full (issue #29) */           \
  X(kUpstreamUnavailable, "upstream_unavailable", 503)                                        \
  X(kUpstreamOverflow, "upstream_overflow", 503)                                              \
  X(kUpstreamBadChunk, "upstream_bad_chunk", 0)                                               \
  X(kMaxDuration, "max_duration", 0)                                                          \
  X(kStreamIdleTimeout, "stream_idle_timeout", 0)                                             \
  X(kSessionNotFound, "session_not_found", 404)                                               \
  /* a 2025 method a 2026-07-28 client sent to a bridged upstream (-32601) */                 \
  X(kMethodNotFound, "method_not_found", 404)                                                 \
  /* a 2025-era client on a federated route: a request other than initialize without one */   \
  X(kSessionRequired, "session_required", 400)                                                \
  X(kSessionEndpointDown, "session_endpoint_down", 404)                                       \
  /* federation, names: prefix: a name with no upstream prefix (-32602, in band: HTTP 200) */ \
  X(kUnknownName, "unknown_name", 0)                                                          \
  /* federation: no upstream answered a list (or they share no protocol version) */           \
  X(kFederationFailed, "federation_failed", 502)                                              \
  /* federation: a client notification no upstream accepted */                                \
  X(kNotificationRefused, "notification_refused", 502)                                        \
  /* tool_pinning: block — the tool's definition awaits approval (-31004) */                \
  X(kToolPinBlocked, "tool_pin_blocked", 403)                                                 \
  /* a reason name no entry declares (a bug: asserted in debug builds) */                     \
  X(kOther, "other", 0)

enum class Outcome : uint8_t {
#define GW_OUTCOME_ENUM(id, name, status) id,
  GW_OUTCOMES(GW_OUTCOME_ENUM)
#undef GW_OUTCOME_ENUM
};

struct OutcomeInfo {
  std::string_view name;  // log field and metric label value
  int status;             // the gateway's answer for it (0: varies / upstream's)
};

const OutcomeInfo& outcomeInfo(Outcome o) noexcept;
inline std::string_view outcomeName(Outcome o) noexcept {
  return outcomeInfo(o).name;
}
// A request that did not end with its answer complete (kNone and kComplete are not).
inline bool outcomeFailed(Outcome o) noexcept {
  return o != Outcome::kNone && o != Outcome::kComplete && o != Outcome::kResourceMetadata;
}
// The outcome of a reason name a pipeline stage or a parser gave (filters::LocalReply::reason,
// mcp verifier/legacy reasons). An undeclared name is kOther (and asserts in debug builds).
Outcome outcomeFromName(std::string_view name) noexcept;
// Every declared outcome, in enum order (tests, README tables).
size_t outcomeCount() noexcept;

}  // namespace gw::core
