#pragma once
// filters/: the request pipeline — the per-request context, the stages in their fixed order
// (transport, MCP contract, route, identity, policy, body verification), which rate limits
// apply, the compiled snapshot they run against, and the /config and /explain answers.
// The request pipeline: a fixed sequence of stages over one RequestContext. The order is
// the core's, not the stages': transport rules → MCP contract (version gate, headers,
// method rules) → route → [identity → policy → rate limit: later] → body verification.
// Stages never touch sockets; each returns Continue, NeedBody (proxy/ reads the bounded body
// and calls onBody) or LocalReply (ctx.reply says what to answer). The proxy's own stages
// that must wait (a Redis-backed limit, a JWKS fetch, a federation refresh) return Stop and
// are resumed by what they wait for (proxy/stage.h).
// A legacy POST (no trusted version, mcp.legacy: passthrough, a body) runs transport,
// contract and identity on the head, then NeedBody: onBody parses the body into the MCP
// view and runs route (with params from the candidate upstream's learned annotations) and
// policy on it; proxy/ runs the rate limits after onBody, on the same view (issue #13).

#include <string_view>

#include "gateway/filters/context.h"
#include "gateway/mcp/arena.h"

namespace gw::filters {

enum class FilterStatus : uint8_t {
  kContinue,    // go on with the next stage
  kNeedBody,    // read the body, then go on (onBody)
  kLocalReply,  // answer with ctx.reply
  kStop,        // waiting: whatever the stage waits for resumes it (proxy/stage.h)
};

class Pipeline {
 public:
  // Runs every head-only stage. kNeedBody: call onBody() with the whole body when it is in.
  static FilterStatus onHeaders(RequestContext& ctx, mcp::ValueArena& arena) noexcept;

  // `body` must have mcp::bodyPadding() readable bytes after it. kContinue: forward.
  static FilterStatus onBody(RequestContext& ctx, std::string_view body) noexcept;
};

// Fills ctx.reply with a JSON-RPC error (helpers shared by the stages and proxy/).
void setReply(RequestContext& ctx, int status, int code, std::string message, const char* reason,
              bool echo_id = true);

using mcp::renderReplyBody;

// 404 -32600 "Not Found: no MCP server at this path": a path no server answers (with
// `servers:`, for the request's Host), never forwarded.
void notFound(RequestContext& ctx);

// 401 with the Bearer challenge (identity.resource_metadata, the scopes this request needs):
// a request that needs a bearer token it did not bring (an upstream with auth type
// token_exchange, for a caller authenticated otherwise).
void bearerRequired(RequestContext& ctx, const char* why);

// The answer to a request whose MCP-Protocol-Version the gateway does not speak (or that has
// none): 400, -32022 (-32020 when absent), data {"supported":[…mcp.protocol_versions],
// "requested":…}, so the client can retry with one it has.
FilterStatus unsupportedVersion(RequestContext& ctx);

// Whether a request's `Authorization` goes upstream on `route`, and why. The one rule the
// proxy, /config and /explain all use: the route's or the policy's `forward_credentials: true`
// forwards; with no policy files the gateway checks no credentials, so it does not take them
// away either (it is then a plain proxy for them); otherwise they stop at the gateway.
struct CredentialForwarding {
  bool forward = false;
  // Why, as /config and /explain show it: "route", "policy", "no_policies", or "default"
  // (stripped: the gateway checks credentials and nothing asks to pass them on).
  const char* source = "default";
};
CredentialForwarding credentialForwarding(const settings::Route& route,
                                          const policy::PolicySet& policy,
                                          const settings::Settings& s) noexcept;

}  // namespace gw::filters
