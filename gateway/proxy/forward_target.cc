// The forwarding target's upstream side: which upstream and endpoint (legacy session
// affinity), the upstream request's head as name/value pairs, the request body, and what the
// upstream request reports (see forward_target.h; the HTTP/1 side is upstream::Http1Upstream).

#include "gateway/proxy/forward_target.h"
#include "gateway/core/ascii.h"
#include "gateway/filters/pipeline.h"
#include "gateway/http/forwarding.h"
#include "gateway/mcp/front.h"
#include "gateway/mcp/id_scan.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/sentinel.h"
#include "gateway/mcp/session.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/proxy_context.h"

#include <spdlog/spdlog.h>

namespace gw::proxy {

namespace {

void trim(std::string& s, size_t keep_capacity) {
  if (s.capacity() > keep_capacity) {
    std::string().swap(s);
  } else {
    s.clear();
  }
}

}  // namespace

void ForwardTarget::begin(ProxyContext& w) {
  w_ = &w;
  endpoint_ = nullptr;
  up_.init(w.base, w.pools.get(), w.parser.get(), w.clock, this);
}

void ForwardTarget::reset() noexcept {
  leaveBridge();
  bridge_retried_ = false;
  attempts_ = 0;
  keep_body_ = false;
  if (retry_timer_) {
    evtimer_del(retry_timer_.get());
  }
  sent_id_ = mcp::RequestId{};
  filtering_ = filtered_ = false;
  hidden_ = 0;
  pin_observed_ = false;
  pin_log_.clear();
}

void ForwardTarget::recycle(size_t keep_capacity) noexcept {
  if (w_ != nullptr) {
    w_->flush_queue->remove(*this);
  }
  framer_.reset();
  leaveBridge();
  if (retry_timer_) {
    evtimer_del(retry_timer_.get());
  }
  up_.release(false);
  up_open_ = false;
  session_server_id_ = {};
  trim(capture_, keep_capacity);
  matching_ = false;
  match_text_.reset();
  dropListAnswer();
  filter_chain_.reset();  // a large answer's chunks go back now, not at the next list
}

// The request goes to Settings::upstreams[up_index_] (Exchange::toTarget, or the federated
// target once it chose the owner): a call of a blocked tool and an unknown session are
// answered here.
void ForwardTarget::connect() {
  if (const filters::LocalReply* refused = x_.upstreamAuth().failure(up_index_)) {
    // upstreams[].auth on a federated route: this call's owner has no credential.
    x_.ctx().reply = *refused;
    x_.refuseBeforeBody();
    return;
  }
  if (!pinAdmits()) {
    return;
  }
  if (mayBridge() || bridge_ != Bridge::kOff) {
    if (!bridgeReady()) {
      return;  // waiting for the era or the session, or answered (server/discover, 502)
    }
  } else if (!pinSession()) {
    return;
  }
  buildUpstreamHead();
  const settings::Upstream& up = x_.settings().upstreams[up_index_];
  const bool first = attempts_++ == 0;
  if (first) {
    keep_body_ = retryable() && x_.body.mode != Exchange::BodyMode::kStream;
  }
  upstream::UpstreamError error{};
  const bool started = up_.start(up, up_head_, x_.startedAt(), error);
  endpoint_ = up_.endpoint();
  if (first && up.retry) {
    // The retry budget's count of requests; the lease's state spares a second cluster lookup.
    upstream::UpstreamState* state = up_.cluster();
    (state != nullptr ? *state : x_.worker().pools->stateOf(up)).noteRequest(x_.now().count());
  }
  if (!started) {
    upstreamError(error);
    return;
  }
  up_open_ = true;
  x_.worker().shared->streams.fetch_add(1, std::memory_order_relaxed);
  x_.noteForwarded();
  resp_sse_ = false;
  bridge_hold_ = false;
  bridge_events_.clear();
  capture_json_ = false;
  capture_.clear();
  matching_ = false;
  match_text_.reset();
  writeRequest();
}

// The upstream request's head as name/value pairs (upstream::Http1Upstream adds Host and
// Content-Length for the endpoint it uses): the client's fields minus hop-by-hop ones, the
// client address fields, credentials unless forwarded, and the server's own session id.
void ForwardTarget::buildUpstreamHead() {
  const http::RequestHead& head = x_.head;
  const settings::Settings& s = x_.settings();
  const settings::Upstream& up = s.upstreams[up_index_];
  upstream::UpstreamRequestHead& uh = up_head_;
  http::ConnectionTokens conn;
  conn.collect(head.fields);
  uh.method = head.method;
  const size_t q = head.target.find('?');
  uh.query = q != std::string_view::npos ? head.target.substr(q) : std::string_view{};
  uh.fields.clear();
  uh.client_host = false;
  const bool trusted_peer = http::isTrustedPeer(x_.peer(), s.trusted_proxies);
  const bool front = frontRequest();
  const bool traced = x_.trace().on();
  // upstreams[].auth: `forward` sends the caller's Authorization to this upstream; another
  // type sends the credential made for it (Http1Upstream drops any other).
  const bool forward_auth = up.auth ? up.auth->type == settings::UpstreamAuthType::kForward
                                    : x_.ctx().forward_credentials;
  uh.authorization = x_.upstreamAuth().authorization(up_index_);
  for (const http::HeaderField& f : head.fields) {
    if (http::replacedByForwarding(f, trusted_peer)) {
      continue;  // client address fields: dropped, or merged below (trusted_proxies)
    }
    if (!forward_auth && core::iequals(f.name, "authorization")) {
      continue;
    }
    if (core::iequals(f.name, "accept-encoding") && readsAnswerWhole()) {
      continue;  // a list read whole must come as JSON text the gateway can read
    }
    if (core::iequals(f.name, "host")) {
      if (up.host_header != settings::HostHeader::kClient) {
        continue;  // Http1Upstream writes the endpoint's (or the configured) Host
      }
      uh.client_host = true;
    }
    if (session_endpoint_ >= 0 && core::iequals(f.name, "mcp-session-id")) {
      continue;  // the wrapped id: the server gets its own (below)
    }
    if (front && frontField(f.name)) {
      continue;  // a 2025-era client's: the 2026-07-28 fields are written below
    }
    if (bridge_ == Bridge::kOn && core::iequals(f.name, "mcp-protocol-version")) {
      uh.fields.push_back(http::Field{f.name, bridge_version_});  // the session's version
      continue;
    }
    if (!x_.federated().ownerName().empty() && core::iequals(f.name, "mcp-name")) {
      // names: prefix — the owner's own name (a sentinel when it cannot be sent plain).
      uh.fields.push_back(http::Field{f.name, x_.federated().ownerNameField()});
      continue;
    }
    if (traced && (core::iequals(f.name, "traceparent") || core::iequals(f.name, "tracestate"))) {
      continue;  // tracing: the gateway's own (below)
    }
    if (http::forwardRequestField(f, conn)) {
      uh.fields.push_back(http::Field{f.name, f.value});
    }
  }
  if (traced) {
    // The upstream's parent is this attempt's CLIENT span (request_trace.h).
    uh.fields.push_back(http::Field{"traceparent", x_.trace().upstreamTraceparent()});
    if (!x_.trace().traceState().empty()) {
      uh.fields.push_back(http::Field{"tracestate", x_.trace().traceState()});
    }
  }
  if (session_endpoint_ >= 0 && !session_server_id_.empty()) {
    uh.fields.push_back(http::Field{"Mcp-Session-Id", session_server_id_});
  }
  if (front) {
    addFrontFields(uh.fields);
  }
  // The listener is plain HTTP; a TLS listener passes "https".
  http::addClientAddressFields(uh.fields, xff_, head.fields, x_.peer(), trusted_peer, "http");
  uh.pinned_endpoint = session_endpoint_;
  if (x_.body.mode == Exchange::BodyMode::kBuffer) {
    rememberSentId();  // the body leaves for the upstream now: its id for a 502/504 later
    uh.content_length = x_.body.size();
  } else if (x_.body.mode == Exchange::BodyMode::kStream) {
    uh.content_length = head.content_length;
  } else {
    uh.content_length = 0;
  }
  uh.length_field = head.method == "POST" || head.method == "PUT";
}

// A 2025-era client on a federated route (federated_front.cc): the gateway is its server,
// and its requests go as 2026-07-28 ones.
bool ForwardTarget::frontRequest() const noexcept {
  const filters::RequestContext& ctx = x_.ctx();
  return ctx.legacy && ctx.route != nullptr && ctx.route->federated();
}

// The front session id of a 2025-era client on a federated route (its Mcp-Session-Id,
// checked by FederatedTarget::frontSessionOk): what names its own upstream sessions. Empty
// for any other request.
std::string_view ForwardTarget::frontClient() const noexcept {
  if (!frontRequest()) {
    return {};
  }
  for (const http::HeaderField& h : x_.head.fields) {
    if (core::iequals(h.name, "mcp-session-id")) {
      return h.value;
    }
  }
  return {};
}

// Fields a 2025-era client sends that the front writes itself (or must not pass on).
bool ForwardTarget::frontField(std::string_view name) noexcept {
  return core::iequals(name, "mcp-session-id") || core::iequals(name, "mcp-protocol-version") ||
         core::iequals(name, "mcp-method") || core::iequals(name, "mcp-name") ||
         core::istartsWith(name, "mcp-param-");
}

// The 2026-07-28 fields of a 2025-era client's request, from its body's view (the legacy
// inspection's: method, name, the x-mcp-header arguments): a value that cannot go plain is
// sent as a sentinel.
void ForwardTarget::addFrontFields(std::vector<http::Field>& fields) {
  const mcp::McpHeaders& m = x_.ctx().mcp;
  fields.push_back(http::Field{"MCP-Protocol-Version", bridge_ == Bridge::kOn
                                                           ? std::string_view(bridge_version_)
                                                           : mcp::front::kModernVersion});
  if (m.has_method) {
    fields.push_back(http::Field{"Mcp-Method", m.method});
  }
  front_text_.clear();
  front_text_.reserve(1 + 2 * m.params.size());  // no reallocation: the fields view them
  if (m.has_name) {
    if (!x_.federated().ownerName().empty()) {
      fields.push_back(http::Field{"Mcp-Name", x_.federated().ownerNameField()});
    } else {
      front_text_.push_back(mcp::needsSentinel(m.name.value) ? mcp::encodeSentinel(m.name.value)
                                                             : std::string(m.name.value));
      fields.push_back(http::Field{"Mcp-Name", front_text_.back()});
    }
  }
  for (const mcp::McpParam& p : m.params) {
    front_text_.push_back("Mcp-Param-" + std::string(p.name));
    const std::string& name = front_text_.back();
    front_text_.push_back(mcp::needsSentinel(p.v.value) ? mcp::encodeSentinel(p.v.value)
                                                        : std::string(p.v.value));
    fields.push_back(http::Field{name, front_text_.back()});
  }
}

// The head is written by start(); the body follows (whole, streamed, or none).
void ForwardTarget::writeRequest() {
  if (x_.body.mode == Exchange::BodyMode::kBuffer &&
      (bridge_ == Bridge::kOn || bridge_ == Bridge::kTrying || keep_body_)) {
    // Kept until the answer came: a lost session's request is sent again (bridgeRetry), as
    // is one an `auto` upstream answered as a 2025 server (bridgeTried).
    const std::string_view body = x_.body.view();
    evbuffer_add(up_.output(), body.data(), body.size());
    up_.requestComplete();
  } else if (x_.body.mode == Exchange::BodyMode::kBuffer) {
    evbuffer_add_buffer(up_.output(), x_.body.buf.get());
    x_.releaseBody();
    up_.requestComplete();
  } else if (x_.body.mode == Exchange::BodyMode::kStream) {
    x_.stream()->readBody(downstream::BodyRead::kStream);  // onBodyData from here on
  } else {
    up_.requestComplete();
  }
  scheduleFlush();
}

// Streamed request body bytes (Content-Length) go to the upstream as they arrive; the client
// is paused while the upstream output is above the high mark (onUpstreamWritable resumes it).
void ForwardTarget::onBodyData(evbuffer* src, size_t n, bool end) {
  evbuffer* out = up_.output();
  if (out == nullptr) {
    evbuffer_drain(src, n);
    return;
  }
  evbuffer_remove_buffer(src, out, n);
  if (n > 0) {
    scheduleFlush();
  }
  if (end) {
    up_.requestComplete();
  } else if (evbuffer_get_length(out) > downstream::Stream::kHighWatermark) {
    x_.stream()->readDisable(true);
  }
}

void ForwardTarget::onUpstreamWritable(upstream::Http1Upstream&) {
  // Below the low mark again, and the body not all sent (Http1Upstream asks only then): take
  // more of it from the client.
  if (x_.body.mode == Exchange::BodyMode::kStream && up_open_) {
    x_.stream()->readDisable(false);
  }
}

void ForwardTarget::onUpstreamOutput(upstream::Http1Upstream&) {
  scheduleFlush();
}

void ForwardTarget::rememberSentId() {
  if (x_.body.mode != Exchange::BodyMode::kBuffer ||
      sent_id_.kind != mcp::RequestId::Kind::kAbsent) {
    return;
  }
  char prefix[mcp::kIdScanBytes];
  const ev_ssize_t n =
      x_.body.buf ? evbuffer_copyout(x_.body.buf.get(), prefix, sizeof(prefix)) : 0;
  sent_id_ = mcp::scanIdPrefix(std::string_view(prefix, n > 0 ? static_cast<size_t>(n) : 0));
  if (sent_id_.kind == mcp::RequestId::Kind::kAbsent && x_.body.size() > sizeof(prefix)) {
    // "id" after the first KiB (a client that writes params first): the whole buffered
    // body, made contiguous once, is read for it.
    sent_id_ = mcp::extractId(x_.body.view());
  }
}

void ForwardTarget::scheduleFlush() {
  w_->flush_queue->schedule(w_->base, *this);
}

void ForwardTarget::flushOutbound() noexcept {
  if (up_.active() && !up_.writing()) {
    up_drained_ = up_.sendNow() == event::Sent::kDrained;
  }
}

void ForwardTarget::afterFlush() {
  const bool drained = std::exchange(up_drained_, false);
  if (up_.active() && !up_.writing() && (drained || up_.sendNow() == event::Sent::kDrained)) {
    up_.onFlushed();
  }
}

// ---- legacy session affinity (mcp/session.h) --------------------------------------------

// A request carrying an Mcp-Session-Id the gateway issued goes to the endpoint that created
// the session, with the server's own id. One that names no endpoint of the route's upstream
// (forged, from before this gateway, from an endpoint since removed) gets the 404 a server
// gives for an unknown session, so the client starts a new one — except on a trusted
// 2026-07-28 request, where Mcp-Session-Id means nothing and is forwarded as sent. False: the
// 404 was sent.
bool ForwardTarget::pinSession() {
  session_endpoint_ = -1;
  session_server_id_ = {};
  if (frontRequest()) {
    return true;  // the gateway's own session (federated_front.cc), never an upstream's
  }
  const http::HeaderField* field = nullptr;
  size_t count = 0;
  for (const http::HeaderField& f : x_.head.fields) {
    if (core::iequals(f.name, "mcp-session-id")) {
      field = &f;
      ++count;
    }
  }
  if (count == 0) {
    return true;
  }
  const settings::Upstream& up = x_.settings().upstreams[up_index_];
  mcp::WrappedSession ws;
  ws.error = mcp::SessionError::kEmpty;
  if (count == 1) {
    ws = mcp::unwrapSessionId(field->value);
  }
  int index = ws.error == mcp::SessionError::kNone
                  ? mcp::findSessionEndpoint(up.session_tokens, ws.token)
                  : -1;
  if (index >= 0) {
    session_endpoint_ = index;
    session_server_id_ = ws.server_id;
    return true;
  }
  if (x_.ctx().trusted) {
    return true;
  }
  sessionNotFound("Session not found", Outcome::kSessionNotFound);
  return false;
}

void ForwardTarget::sessionNotFound(const char* message, Outcome why) {
  rememberSentId();
  x_.upstreamFailed(404, mcp::code::kSessionNotFound, message, why);
}

// The upstream's Mcp-Session-Id must be one the client can be given wrapped: one field of
// 1..kMaxServerSessionId visible ASCII bytes (MCP 2025-06-18 transport, Session Management).
bool ForwardTarget::upstreamSessionValid(const http::ResponseHead& resp) noexcept {
  size_t count = 0;
  for (const http::HeaderField& f : resp.fields) {
    if (core::iequals(f.name, "mcp-session-id") &&
        (++count > 1 || !mcp::validServerSessionId(f.value))) {
      return false;
    }
  }
  return true;
}

// The client's `Mcp-Session-Id: <token>.<server id>` (upstreamSessionValid checked the id);
// with no token for the endpoint (settings not made by the loader) the field is left out
// rather than handing the client the server's own id.
void ForwardTarget::wrapSession(std::string_view server_id) {
  const settings::Upstream& up = x_.settings().upstreams[up_index_];
  const size_t index = up_.endpointIndex();
  wrapped_session_.clear();
  if (index >= up.session_tokens.size() ||
      !mcp::wrapSessionId(up.session_tokens[index], server_id, wrapped_session_)) {
    wrapped_session_.clear();
    return;
  }
  x_.responseFields().push_back(http::Field{"Mcp-Session-Id", wrapped_session_});
}

// ---- what the upstream request reports --------------------------------------------------

// The upstream request ends (complete, failed, or cut from this side): counters, the
// attempt's duration metric, and its connection closed unless the upstream request pooled it.
void ForwardTarget::release(bool record) {
  leaveBridge();
  if (!up_open_) {
    up_.release(false);
    return;
  }
  up_open_ = false;
  endpoint_ = up_.endpoint();  // the last one tried
  x_.worker().shared->streams.fetch_sub(1, std::memory_order_relaxed);
  x_.countSse(false);
  if (record) {
    x_.recordAttempt(x_.outcome == Outcome::kComplete ? Outcome::kNone : x_.outcome,
                     up_.attemptDuration());
  }
  up_.release(false);
}

void ForwardTarget::onUpstreamError(upstream::Http1Upstream& u, upstream::UpstreamError e) {
  if (e == upstream::UpstreamError::kTls) {
    spdlog::warn("upstream '{}' endpoint {}: TLS handshake failed: {}",
                 x_.settings().upstreams[up_index_].name,
                 u.endpoint() != nullptr ? u.endpoint()->text : std::string("?"), u.tlsError());
  }
  upstreamError(e);
}

void ForwardTarget::upstreamError(upstream::UpstreamError e) {
  using upstream::UpstreamError;
  if (!x_.responseStarted()) {
    const settings::Upstream& up = x_.settings().upstreams[up_index_];
    const char* reason = nullptr;
    if (up.retry) {
      switch (e) {
        case UpstreamError::kConnectFailed:
        case UpstreamError::kConnectRefused:
          reason = up.retry->on_connect_failure ? "connect_failure" : nullptr;
          break;
        case UpstreamError::kConnectTimeout:
        case UpstreamError::kResponseTimeout:
          reason = up.retry->on_timeout ? "timeout" : nullptr;
          break;
        case UpstreamError::kClosedBeforeAnswer:
          reason = up.retry->on_reset ? "reset" : nullptr;
          break;
        default:
          break;
      }
    }
    if (reason != nullptr && retry(reason)) {
      return;
    }
  }
  if (bridge_ == Bridge::kOn &&
      (e == UpstreamError::kSessionEndpointDown || e == UpstreamError::kConnectRefused ||
       e == UpstreamError::kConnectFailed || e == UpstreamError::kConnectTimeout)) {
    bridgeFailed(e != UpstreamError::kConnectTimeout);
    return;
  }
  switch (e) {
    case UpstreamError::kSessionEndpointDown:
      sessionNotFound("Session not found: its server cannot be reached",
                      Outcome::kSessionEndpointDown);
      return;
    case UpstreamError::kConnectFailed:
      x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                        "Bad Gateway: upstream connection could not be started",
                        Outcome::kConnectFailed);
      return;
    case UpstreamError::kConnectRefused:
      x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                        "Bad Gateway: upstream connection refused", Outcome::kConnectFailed);
      return;
    case UpstreamError::kConnectTimeout:
      x_.upstreamFailed(504, mcp::code::kUpstreamTimeout,
                        "Gateway Timeout: upstream connect timed out", Outcome::kConnectTimeout);
      return;
    case UpstreamError::kResponseTimeout:
      x_.upstreamFailed(504, mcp::code::kUpstreamTimeout,
                        "Gateway Timeout: upstream did not answer in time",
                        Outcome::kResponseTimeout);
      return;
    case UpstreamError::kClosedBeforeAnswer:
      x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                        "Bad Gateway: upstream closed the connection before answering",
                        Outcome::kUpstreamReset);
      return;
    case UpstreamError::kMalformed:
      x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                        "Bad Gateway: malformed upstream response", Outcome::kUpstreamMalformed);
      return;
    case UpstreamError::kTls:
      x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                        "Bad Gateway: the TLS handshake with the upstream failed",
                        Outcome::kUpstreamTls);
      return;
    case UpstreamError::kUnavailable:
    case UpstreamError::kOverflow: {
      // Fail fast (issue #29): no endpoint is usable, or the circuit breaker is full.
      const settings::Upstream& up = x_.settings().upstreams[up_index_];
      const bool overflow = e == UpstreamError::kOverflow;
      fail_message_ = overflow ? "Service Unavailable: upstream '" + up.name +
                                     "' has too many requests in flight (circuit_breaker); retry"
                               : "Service Unavailable: no endpoint of upstream '" + up.name +
                                     "' is usable (down or ejected); retry";
      const int retry = overflow ? 1
                                 : upstream::retryAfterSeconds(x_.worker().pools->stateOf(up), up,
                                                               x_.now().count());
      x_.upstreamFailed(503, mcp::code::kOverloaded, fail_message_.c_str(), upstream::outcomeOf(e),
                        retry);
      return;
    }
    case UpstreamError::kReset:
    case UpstreamError::kBadChunk:
    case UpstreamError::kMaxDuration:
    case UpstreamError::kStreamIdle:
      if (filtering_) {
        // A list read whole for filtering: nothing reached the client yet.
        dropListAnswer();
        x_.upstreamFailed(
            e == UpstreamError::kMaxDuration || e == UpstreamError::kStreamIdle ? 504 : 502,
            mcp::code::kUpstreamUnavailable, "Bad Gateway: the upstream's list answer was cut",
            upstream::outcomeOf(e));
        return;
      }
      x_.abortExchange(upstream::outcomeOf(e));
      return;
  }
}

// The access log's fields of this target (issue #16).
void ForwardTarget::appendLogFields(std::string& line) const {
  if (pin_observed_) {
    // tool_pinning: the tools of this list answer whose definitions await approval.
    line += ",\"pins_pending\":[";
    line += pin_log_;
    line += ']';
  }
  if (attempts_ > 1) {
    // upstreams[].retry: the upstream attempts this request took.
    line += ",\"upstream_attempts\":";
    line += std::to_string(attempts_);
  }
  if (filtered_) {
    // visibility: filter — how many list items this caller did not get.
    line += ",\"list_hidden\":";
    line += std::to_string(hidden_);
  }
}

void ForwardTarget::onUpstreamRetry(upstream::Http1Upstream&, core::Nanos attempt_duration) {
  x_.recordAttempt(Outcome::kConnectFailed, attempt_duration);
}

}  // namespace gw::proxy
