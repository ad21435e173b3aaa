// The forwarding target's era bridge (issue #26): a 2026-07-28 request to an upstream that
// speaks only 2025 goes in the worker's session with that upstream (legacy_sessions.h; a
// 2025-era client's call on a federated route: in that client's own session with it), as a
// 2025 request — the session's MCP-Protocol-Version and Mcp-Session-Id in place of the
// client's, the body as sent (mcp/bridge.h says why) — and server/discover is answered from
// the session's initialize result. A modern upstream (era: modern, or found by the probe)
// costs nothing here but one lookup.

#include "gateway/core/ascii.h"
#include "gateway/filters/pipeline.h"
#include "gateway/filters/stages.h"
#include "gateway/http/serialize.h"
#include "gateway/mcp/bridge.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/methods.h"
#include "gateway/mcp/verifier.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/forward_target.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

bool ForwardTarget::mayBridge() const {
  const filters::RequestContext& ctx = x_.ctx();
  if (ctx.route == nullptr || x_.head.method != "POST" || !(ctx.trusted || frontRequest())) {
    return false;
  }
  // On a federated route, a call whose owner was chosen (its body is read whole there).
  if (ctx.route->federated() && !x_.federated().routed()) {
    return false;
  }
  const settings::Upstream& up =
      x_.settings().upstreams[ctx.route->federated() ? up_index_ : ctx.route->upstream_index];
  return up.era != settings::UpstreamEra::kModern &&
         x_.worker().legacySessions().era(up) != LegacySessions::Era::kModern;
}

// The era, then the session, are known: the request goes in the session (true), or was
// answered here — server/discover, or a 502 when the upstream could not be had (false), or
// waits for them (false; onBridgeReady takes it up).
bool ForwardTarget::bridgeReady() {
  LegacySessions& ls = x_.worker().legacySessions();
  const settings::Upstream& up = x_.settings().upstreams[up_index_];
  const LegacySessions::Era era = ls.era(up);
  if (era == LegacySessions::Era::kUnknown && bridge_ == Bridge::kOff) {
    bridge_ = Bridge::kTrying;  // as it is; the answer tells (bridgeTried)
    return pinSession();
  }
  if (bridge_ == Bridge::kOff || bridge_ == Bridge::kTrying || !frontClient().empty()) {
    bridge_endpoint_ = ls.pickEndpoint(up, frontClient());  // a client's: its session's
  }
  if (ls.wait(up, bridge_endpoint_, *this, frontClient())) {
    bridge_ = Bridge::kWaiting;
    return false;
  }
  if (ls.era(up) == LegacySessions::Era::kModern) {
    bridge_ = Bridge::kOff;  // found modern: as any request
    return pinSession();
  }
  const LegacySessions::Session* s = ls.session(up, bridge_endpoint_, frontClient());
  if (s == nullptr) {
    bridgeFailed(false);
    return false;
  }
  bridge_ = Bridge::kOn;
  bridge_session_ = s->id;
  bridge_version_ = s->init.version;
  bridge_generation_ = s->generation;
  session_endpoint_ = static_cast<int>(bridge_endpoint_);
  session_server_id_ = bridge_session_;
  if (x_.ctx().trusted && x_.ctx().mcp.has_method &&
      (mcp::bridge::removedIn2026(x_.ctx().mcp.method) ||
       mcp::knownMethod(x_.ctx().mcp.method).empty())) {
    // Not a 2026-07-28 method (a 2025 one it removed, or one MCP does not define): answered
    // as a 2026-07-28 server answers it (404, where a 2025 server says 200 -32601), never
    // sent into the gateway's session (an initialize there would start another).
    bridge_ = Bridge::kOff;
    rememberSentId();
    filters::setReply(
        x_.ctx(), 404, -32601,
        "Method not found: " + std::string(x_.ctx().mcp.method) + " is not a 2026-07-28 method",
        "method_not_found", false);
    x_.ctx().reply.id = sent_id_;
    x_.sendLocalReply();
    return false;
  }
  if (x_.ctx().trusted && !bridgeChecked()) {
    return false;  // answered: 400, as a 2026-07-28 server answers it
  }
  if (x_.ctx().mcp.has_method && x_.ctx().mcp.method == "server/discover") {
    // No such method in 2025: the answer is made from the session's initialize result.
    rememberSentId();
    const std::string answer =
        mcp::bridge::discoverAnswer(s->init, x_.settings().mcp.protocol_versions, sent_id_);
    std::vector<http::Field>& fields = x_.responseFields();
    fields.clear();
    fields.push_back(http::Field{"Content-Type", "application/json"});
    bridge_ = Bridge::kOff;
    x_.respond(200, "OK", answer);
    return false;
  }
  return true;
}

// A request bridged to a 2025-era server is checked as a 2026-07-28 server checks it, since
// that server cannot: headers against body (unless verify mode did so already) and the
// `_meta` envelope. False: refused (400 -32020 or -32602, answered here).
bool ForwardTarget::bridgeChecked() {
  if (x_.body.mode != Exchange::BodyMode::kBuffer || x_.body.size() == 0) {
    return true;
  }
  const std::string_view body = x_.body.view();
  mcp::VerifyOptions opts;
  opts.check_headers = !x_.ctx().verify_body;
  opts.check_envelope = true;
  thread_local std::string padded;  // the worker's, reused: no allocation per request
  padded.assign(body);
  padded.resize(body.size() + mcp::bodyPadding(), '\0');
  mcp::VerifyResult vr =
      mcp::verifyBody(std::string_view(padded.data(), body.size()), x_.ctx().mcp, nullptr, opts);
  if (vr.ok) {
    return true;
  }
  bridge_ = Bridge::kOff;
  filters::setReply(x_.ctx(), 400, vr.code, std::move(vr.message), vr.reason, false);
  x_.ctx().reply.id = std::move(vr.id);
  x_.sendLocalReply();
  return false;
}

void ForwardTarget::onBridgeReady(bool ok, const char* why) {
  if (bridge_ != Bridge::kWaiting) {
    return;
  }
  if (!ok) {
    bridge_ = Bridge::kOff;
    rememberSentId();
    x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable, why, Outcome::kConnectFailed);
    return;
  }
  connect();
}

// A bridged request's answer: a 404 means the server lost the session (restarted, expired);
// once per request the session is dropped, a new one made and the request sent again in it.
// True: the answer was dropped (its request released) for that.
bool ForwardTarget::bridgeRetry(const http::ResponseHead& resp) {
  if (resp.status != 404 || bridge_retried_ || x_.body.mode != Exchange::BodyMode::kBuffer) {
    return false;
  }
  bridge_retried_ = true;
  const settings::Upstream& up = x_.settings().upstreams[up_index_];
  x_.worker().legacySessions().expire(up, bridge_endpoint_, bridge_generation_, frontClient());
  x_.releaseUpstream(false);
  bridge_ = Bridge::kWaiting;
  connect();
  return true;
}

// era: auto, era unknown: the answer to a request sent as it is. A 2xx (or any other answer
// but the three below) is relayed, a 2xx also marking the upstream modern; a 400, 404 or 405
// is what a 2025 server answers a 2026-07-28 request (its "Server not initialized", no
// session, no such method), and nothing was done for it: the answer is dropped, the era
// asked with server/discover, and the request sent again (bridged when legacy). True: dropped.
bool ForwardTarget::bridgeTried(const http::ResponseHead& resp) {
  const settings::Upstream& up = x_.settings().upstreams[up_index_];
  if (resp.status >= 200 && resp.status < 300) {
    x_.worker().legacySessions().noteModern(up);
    bridge_ = Bridge::kOff;
    return false;
  }
  if ((resp.status != 400 && resp.status != 404 && resp.status != 405) ||
      x_.body.mode != Exchange::BodyMode::kBuffer) {
    bridge_ = Bridge::kOff;
    return false;
  }
  x_.releaseUpstream(false);
  bridge_ = Bridge::kTrying;
  session_endpoint_ = -1;
  connect();
  return true;
}

// The bridged request could not reach its endpoint: the session is dropped (and for
// era: auto the era probed again), and the client gets a 502 (504 for a timeout).
void ForwardTarget::bridgeFailed(bool connect_failed) {
  LegacySessions& ls = x_.worker().legacySessions();
  const settings::Upstream& up = x_.settings().upstreams[up_index_];
  ls.expire(up, bridge_endpoint_, bridge_generation_, frontClient());
  ls.forgetEra(up);
  bridge_ = Bridge::kOff;
  session_endpoint_ = -1;
  rememberSentId();
  if (connect_failed) {
    x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                      "Bad Gateway: the 2025-era upstream cannot be reached",
                      Outcome::kConnectFailed);
  } else {
    x_.upstreamFailed(504, mcp::code::kUpstreamTimeout,
                      "Gateway Timeout: upstream connect timed out", Outcome::kConnectTimeout);
  }
}

// One event of a bridged SSE answer, as a 2026-07-28 client reads it: `event: message`, its
// data (a result with resultType), no `id:` line; the empty event that primes a 2025
// client's reconnection id is dropped, and a server-to-client request is answered here.
void ForwardTarget::bridgeEvent(std::string_view data) {
  if (data.empty()) {
    return;
  }
  std::string id;
  if (mcp::bridge::serverRequest(data, id)) {
    // Sampling, elicitation, roots, ping: never relayed (a 2026-07-28 client takes no
    // requests on a response stream); the server gets -32601 in the session, so its call
    // goes on instead of waiting for an answer that cannot come.
    x_.worker().legacySessions().answerServer(x_.settings().upstreams[up_index_], bridge_endpoint_,
                                              mcp::bridge::refusalFor(id), frontClient());
    return;
  }
  std::string completed;
  if (mcp::bridge::completeResult(data, bridgeCacheable(), completed)) {
    data = completed;
  }
  bridge_events_ += "event: message\n";
  size_t at = 0;
  while (at <= data.size()) {
    size_t end = data.find('\n', at);
    if (end == std::string_view::npos) {
      end = data.size();
    }
    bridge_events_ += "data: ";
    bridge_events_.append(data.substr(at, end - at));
    bridge_events_ += '\n';
    at = end + 1;
  }
  bridge_events_ += '\n';
}

// A bridged JSON answer, read whole: sent with its result's resultType (and its own length).
void ForwardTarget::sendBridgedAnswer() {
  bridge_hold_ = false;
  const int status = up_.response().status;
  if (x_.ctx().learn_tools) {
    learnTools(capture_);
  }
  std::string completed;
  const bool changed = mcp::bridge::completeResult(capture_, bridgeCacheable(), completed);
  std::erase_if(x_.responseFields(), [](const http::Field& f) {
    return core::iequals(f.name, "content-length") || core::iequals(f.name, "transfer-encoding");
  });
  // A 2025 server answers an unknown method 200 -32601; a 2026-07-28 client expects 404.
  const int sent = status == 200 && mcp::bridge::isMethodNotFound(capture_) ? 404 : status;
  x_.respond(sent, http::reasonPhrase(sent), changed ? completed : capture_);
}

bool ForwardTarget::bridgeCacheable() const noexcept {
  const mcp::McpHeaders& m = x_.ctx().mcp;
  return m.has_method && mcp::bridge::isCacheable(m.method);
}

void ForwardTarget::leaveBridge() noexcept {
  if (bridge_ == Bridge::kWaiting && w_ != nullptr) {
    w_->legacySessions().leave(*this);
  }
  bridge_ = Bridge::kOff;
}

}  // namespace gw::proxy
