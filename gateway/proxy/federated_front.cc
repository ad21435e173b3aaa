// FederatedTarget for a 2025-era client (issue #26): on a federated route the gateway is the
// legacy client's server. It answers initialize itself — the merged server/discover result's
// capabilities, its own self-certifying session id (mcp/front.h) — and ping,
// notifications/initialized, the client's other notifications and responses, and DELETE;
// it serves the merged, prefixed lists the route's modern clients see, and sends each call
// to the owner of its name as a 2026-07-28 request (the `_meta` envelope added, the
// Mcp-Method / Mcp-Name / Mcp-Param-* fields written from the body: forward_target.cc), or,
// to a 2025-era owner, in a session with it made for this client (forward_bridge.cc,
// legacy_sessions.h: created when first needed, ended with the client's). Both eras see
// the same tools, prompts and resources under the same names, and the policy decides on
// those names.

#include <openssl/rand.h>

#include <array>

#include "gateway/core/ascii.h"
#include "gateway/federation/federation.h"
#include "gateway/filters/pipeline.h"
#include "gateway/mcp/bridge.h"
#include "gateway/mcp/front.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/federated_target.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

namespace {

// The key of the route's front session ids: its first upstream's session_secret (the key of
// wrapped session ids; "" is the built-in key).
std::string_view frontSecret(const settings::Settings& s, const settings::Route& r) {
  return r.upstream_indexes.empty()
             ? std::string_view{}
             : std::string_view(s.upstreams[r.upstream_indexes[0]].session_secret);
}

bool plainToken(std::string_view v) {
  if (v.empty()) {
    return false;
  }
  for (const char c : v) {
    if (c <= 0x20 || c >= 0x7F) {
      return false;
    }
  }
  return true;
}

}  // namespace

void FederatedTarget::localAnswer(int status, std::string_view body) {
  fed_body_.assign(body);
  x_.releaseBody();
  x_.responseFields().clear();
  if (!fed_body_.empty()) {
    x_.responseFields().push_back(http::Field{"Content-Type", "application/json"});
  }
  x_.respond(status, http::reasonPhrase(status), fed_body_);
}

// The gateway's own answer (the reply is set; the caller sends it, or returns kLocalReply).
void FederatedTarget::frontRefusal(int status, int code, std::string message, const char* why) {
  filters::setReply(x_.ctx(), status, code, std::move(message), why, false);
  x_.ctx().reply.id = requestId();
}

// A 2025-era client: its MCP-Protocol-Version (when it sends one) is a 2025 version. Any
// other version the gateway does not speak is refused as on a modern route (-32022 with the
// versions it does), never taken for a session-less legacy request. False: refused.
bool FederatedTarget::frontVersionOk() {
  const mcp::McpHeaders& m = x_.ctx().mcp;
  if (!m.has_version || mcp::bridge::speaksLegacy(m.version)) {
    return true;
  }
  filters::unsupportedVersion(x_.ctx());
  x_.ctx().reply.id = requestId();
  return false;
}

// The client's Mcp-Session-Id must be one this route's front minted. False: refused (400
// without one, 404 for one it did not mint — a 2025 client then initializes again).
bool FederatedTarget::frontSessionOk() {
  const http::HeaderField* f = nullptr;
  size_t count = 0;
  for (const http::HeaderField& h : x_.head.fields) {
    if (core::iequals(h.name, "mcp-session-id")) {
      f = &h;
      ++count;
    }
  }
  if (count == 0) {
    frontRefusal(400, mcp::code::kInvalidRequest,
                 "Bad Request: Mcp-Session-Id is required (send initialize first)",
                 "session_required");
    return false;
  }
  if (count > 1 ||
      !mcp::front::checkFrontSession(frontSecret(x_.settings(), *x_.ctx().route), f->value)) {
    frontRefusal(404, mcp::code::kSessionNotFound, "Session not found", "session_not_found");
    return false;
  }
  return true;
}

// What a 2025-era request on a federated route becomes.
void FederatedTarget::federateLegacy() {
  const std::string_view verb = x_.head.method;
  const filters::RequestContext& ctx = x_.ctx();
  const std::string_view method = ctx.mcp.has_method ? ctx.mcp.method : std::string_view{};
  const bool init = verb == "POST" && method == "initialize";
  if (!frontVersionOk() || (!init && !frontSessionOk())) {
    x_.sendLocalReply();
    return;
  }
  if (verb == "GET") {
    startFrontListen();
    return;
  }
  if (verb == "DELETE") {
    // The session ends, and with it every upstream session the gateway made for it.
    x_.worker().legacySessions().closeClient(x_.forward().frontClient());
    localAnswer(200, {});
    return;
  }
  if (ctx.body_kind == mcp::BodyKind::kResponse || ctx.body_kind == mcp::BodyKind::kNotification ||
      method.starts_with("notifications/")) {
    // notifications/initialized, cancelled, roots/list_changed, and answers to requests the
    // gateway never made: taken here.
    x_.releaseBody();
    x_.responseFields().clear();
    x_.respond(202, "Accepted", {});
    return;
  }
  if (!plainToken(method)) {
    frontRefusal(400, mcp::code::kInvalidRequest, "Invalid Request: the method cannot be routed",
                 "body_invalid");
    x_.sendLocalReply();
    return;
  }
  if (method == "ping" || method == "logging/setLevel") {
    // logging/setLevel: 2026-07-28 has no session to set a level on (the servers log what
    // each request's own _meta asks), so it is taken here: {} as a 2025 server answers it.
    localAnswer(200, "{\"jsonrpc\":\"2.0\",\"id\":" + requestIdJson() + ",\"result\":{}}");
    return;
  }
  if (init) {
    startInitialize();
    return;
  }
  if (!modernizeBody()) {
    x_.sendLocalReply();
    return;
  }
  // Lists merged (server/discover is no 2025 method), task calls to their owner, the rest
  // (completion/complete, resources/subscribe, …) to the route's first upstream.
  listOrForward(method, false);
}

// The 2025 standalone stream (GET): the route's merged subscription stream, asked for every
// list change; its events are the servers' notifications (no acknowledgement: a 2025 client
// knows none). When no upstream takes the subscription the GET gets 405, as a 2025 server
// without a stream answers.
void FederatedTarget::startFrontListen() {
  std::string listen =
      R"({"jsonrpc":"2.0","id":"mcp-gateway-listen","method":"subscriptions/listen",)"
      R"("params":{"notifications":{"toolsListChanged":true,"promptsListChanged":true,)"
      R"("resourcesListChanged":true}}})";
  if (!mcp::front::modernizeRequest(listen, {}, {}, front_body_)) {
    front_body_ = std::move(listen);
  }
  front_listen_ = true;
  startListen();
}

void FederatedTarget::refuseFrontListen() {
  filters::setReply(x_.ctx(), 405, mcp::code::kMethodNotAllowed,
                    "Method not allowed: no server of this federated route offers a stream",
                    "method_not_allowed", false);
  x_.ctx().reply.id = mcp::RequestId::null();
  x_.ctx().reply.addField("Allow", "POST, DELETE");
  x_.sendLocalReply();
}

// initialize: the merged server/discover (cached, or fanned out now), answered by
// answerInitialize.
void FederatedTarget::startInitialize() {
  std::string why;
  mcp::front::InitRequest req;
  if (!mcp::front::parseInitializeRequest(x_.body.view(), req, why)) {
    frontRefusal(400, -32602, "Invalid params: " + why, "body_invalid");
    x_.sendLocalReply();
    return;
  }
  front_version_.assign(mcp::front::negotiateLegacy(req.version));
  front_init_ = true;
  uint64_t ttl_left = 0;
  if (auto cached = catalog_->cachedOrRefresh(federation::ListKind::kDiscover, x_.now(),
                                              refreshBound(), ttl_left)) {
    fed_log_ = "cached";
    answerInitialize(*cached);
    return;
  }
  std::string discover =
      R"({"jsonrpc":"2.0","id":"mcp-gateway-initialize","method":"server/discover"})";
  if (!mcp::front::modernizeRequest(discover, req.client_info, req.capabilities, front_body_)) {
    front_body_ = std::move(discover);
  }
  fanOut(FanOut::Mode::kList, federation::ListKind::kDiscover);
}

void FederatedTarget::answerInitialize(std::string_view members) {
  std::array<uint8_t, 16> random{};
  if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1) {
    frontRefusal(503, mcp::code::kOverloaded, "Service Unavailable: no session id could be made",
                 "other");
    x_.sendLocalReply();
    return;
  }
  front_session_ =
      mcp::front::mintFrontSession(frontSecret(x_.settings(), *x_.ctx().route), random);
  fed_body_ = mcp::front::initializeAnswer(members, front_version_, "mcp-gateway", GW_VERSION,
                                           mcp::extractId(x_.body.view()));
  x_.releaseBody();
  x_.responseFields().clear();
  x_.responseFields().push_back(http::Field{"Content-Type", "application/json"});
  x_.responseFields().push_back(http::Field{"Mcp-Session-Id", front_session_});
  x_.respond(200, "OK", fed_body_);
}

// The legacy request with the 2026-07-28 `_meta` envelope: what the fan-out sends, or (a
// call) the body forwarded to its owner (useFrontBody). False: refused (the reply is set).
bool FederatedTarget::modernizeBody() {
  if (!mcp::front::modernizeRequest(x_.body.view(), {}, {}, front_body_)) {
    frontRefusal(400, -32602,
                 "Invalid params: params must be an object (one JSON-RPC request per body)",
                 "body_invalid");
    return false;
  }
  return true;
}

// A call goes to its owner with the modernized body in place of the client's.
void FederatedTarget::useFrontBody() {
  if (front_body_.empty() || x_.body.mode != Exchange::BodyMode::kBuffer || !x_.body.buf) {
    return;
  }
  evbuffer_drain(x_.body.buf.get(), evbuffer_get_length(x_.body.buf.get()));
  evbuffer_add(x_.body.buf.get(), front_body_.data(), front_body_.size());
  front_body_.clear();
}

}  // namespace gw::proxy
