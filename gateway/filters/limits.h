#pragma once
// The rate-limit stage's pure half: which of the policy's rate limits apply to a request and
// under which bucket key. The I/O half (local buckets now, Redis round trips later) is
// proxy/'s. Runs after identity and policy, and after body verification when the body is
// read anyway, so a request any earlier stage rejects consumes no quota.

#include <string>
#include <vector>

#include "gateway/filters/context.h"
#include "gateway/policy/policy.h"
#include "gateway/ratelimit/gcra.h"

namespace gw::filters {

struct LimitCheck {
  const policy::RateLimitSpec* spec = nullptr;  // points into the snapshot's PolicySet
  std::string key;                              // bucket key: limit name + key parts
  ratelimit::Rate rate;
  bool charged_local = false;  // admitted by the local limiter (refunded if a later one refuses)
};

// Appends every limit whose match the request meets. Untrusted requests only meet limits
// that do not look at Mcp-* headers. A legacy request inspected from its body is checked on
// its body view; a batch, message by message in order (the same limit appears once per
// message it applies to, so a batch of three calls is charged three times). Responses
// (legacy clients POST answers to server requests) are not charged.
void collectLimits(const RequestContext& ctx, std::vector<LimitCheck>& out);

// Fills ctx.reply with the 429 for `check` denied by `d` (Retry-After, RateLimit-Policy,
// RateLimit; JSON-RPC error with data.retryAfter).
void setRateLimitedReply(RequestContext& ctx, const LimitCheck& check,
                         const ratelimit::Decision& d);

}  // namespace gw::filters
