#pragma once
// The per-request context every pipeline stage reads and writes, with the LocalReply
// (mcp/reply.h) a stage fills in when the gateway answers the request itself. No sockets here:
// proxy/ owns the I/O and only hands the stages views of the head and, when a stage asks for it,
// the body.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/filters/snapshot.h"
#include "gateway/http/message.h"
#include "gateway/mcp/contract.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/reply.h"
#include "gateway/mcp/verifier.h"

namespace gw::filters {

// How the request's Mcp-Param headers were checked (for the access log).
enum class ParamCheck : uint8_t {
  kNotChecked,    // verify mode off, or not a tools/call
  kVerified,      // tool schema known, every annotated argument matched its header
  kUnverifiable,  // verify mode on but the tool's schema is not known (yet)
};
const char* paramCheckName(ParamCheck c) noexcept;

using LocalReply = mcp::LocalReply;

struct RequestContext {
  const Snapshot* snapshot = nullptr;
  const http::RequestHead* head = nullptr;
  std::string_view client_ip;
  // The identity of the connection's verified TLS client certificate ("" without one),
  // set by the connection for every request on it; the identity stage uses it when the
  // request carries no credential of its own (mTLS, see README "TLS").
  std::string_view peer_subject;

  mcp::McpHeaders mcp;   // reused across requests on a connection
  bool trusted = false;  // MCP-Protocol-Version is in mcp.protocol_versions
  bool legacy = false;   // untrusted traffic admitted by legacy: passthrough
  // Legacy inspection (issue #13): a legacy POST's body is read and ctx.mcp (and, for a
  // batch, `batch`) is filled from it. The body is the source of truth, so the view is
  // trusted for routing, rules, limits, logs and metrics like a trusted request's headers.
  bool legacy_inspect = false;         // legacy POST with a body: route/policy wait for onBody
  bool body_view = false;              // ctx.mcp was read from the body
  std::vector<mcp::McpHeaders> batch;  // a batch's elements after the first (reused)
  mcp::ValueArena* arena = nullptr;    // the request's arena (set by onHeaders)
  const settings::Route* route = nullptr;
  // A legacy GET/DELETE whose wrapped session names the route's upstream (route stage): the
  // default rule does not decide it (policy stage).
  bool session_route = false;

  bool need_body = false;      // a stage wants the whole body before the upstream
  bool classify_body = false;  // Mcp-Method absent: body must be a notification
  bool verify_body = false;    // verify mode for this request
  // The 2026-07-28 `_meta` envelope is checked too (mcp::VerifyOptions::check_envelope): the
  // gateway stands for the server (a federated route, a request bridged to a 2025 server).
  bool verify_envelope = false;
  bool learn_tools = false;  // a trusted tools/list: learn schemas from the response
  ParamCheck param_check = ParamCheck::kNotChecked;
  mcp::BodyKind body_kind = mcp::BodyKind::kUnknown;

  policy::Identity identity;  // who is calling (identity stage)
  policy::AuthResult auth = policy::AuthResult::kAnonymous;
  // Set with a 401 that a coming JWKS fetch may turn around (the exchange may wait for it).
  policy::KeysPending keys_pending;
  std::string_view policy_rule;  // the rule that decided (access log); "" before
  // The enforced rule's decision, audit-mode rules that matched, rate limits that applied
  // (in that order per message; policy_decisions_total and the access log's "audit").
  std::vector<policy::Verdict> verdicts;  // reused
  bool forward_credentials = false;       // Authorization goes upstream
  // The caller's bearer access token (a JWT, or an introspected opaque token) when that is
  // what authenticated it (views the head): what token_exchange exchanges. Empty otherwise.
  std::string_view bearer_token;
  // identity.introspection: the token's answer is being fetched (the reply says 503 until it
  // is in; the exchange waits for it and runs the head again).
  bool introspection_pending = false;

  LocalReply reply;

  void reset() noexcept {
    identity.clear();
    auth = policy::AuthResult::kAnonymous;
    keys_pending = {};
    policy_rule = {};
    verdicts.clear();
    forward_credentials = false;
    bearer_token = {};
    introspection_pending = false;
    head = nullptr;
    client_ip = {};  // may view the previous request's head bytes
    peer_subject = {};
    mcp.clear();
    legacy_inspect = body_view = false;
    batch.clear();
    trusted = legacy = need_body = classify_body = verify_body = verify_envelope = learn_tools =
        false;
    route = nullptr;
    session_route = false;
    param_check = ParamCheck::kNotChecked;
    body_kind = mcp::BodyKind::kUnknown;
    reply = LocalReply{};
  }
};

// The view of one message: its method (when it has one) and its name/params.
inline policy::RequestView viewOf(const mcp::McpHeaders& m) noexcept {
  policy::RequestView view;
  view.method = m.has_method ? m.method : std::string_view{};
  view.mcp = &m;
  return view;
}

// What policy rules and rate limits may look at: the decoded Mcp-* values of a trusted
// request, or the view read from a legacy request's body; nothing of an untrusted one.
inline policy::RequestView policyView(const RequestContext& ctx) noexcept {
  return ctx.trusted || ctx.body_view ? viewOf(ctx.mcp) : policy::RequestView{};
}

}  // namespace gw::filters
