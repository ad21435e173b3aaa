// The exchange's upstream side: which upstream and endpoint (legacy session affinity), the
// upstream request's head as name/value pairs, the request body, and what the upstream
// request reports (see exchange.h; the HTTP/1 side is upstream::Http1Upstream).

#include "gateway/core/ascii.h"
#include "gateway/filters/pipeline.h"
#include "gateway/http/forwarding.h"
#include "gateway/mcp/id_scan.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/session.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/worker_context.h"

#include <spdlog/spdlog.h>

namespace gw::proxy {

// Every stage and limit passed: the request goes to the route's upstream (a named call on a
// federated route: to the owner the kOwner step chose). Untrusted (legacy passthrough)
// traffic on a federated route is a plain request to the route's first upstream
// (`upstream_index`): a 2025-era session lives on one server, so its lists are not merged,
// and its calls not routed by owner (README, Federation). On a `names: prefix` route it sees
// that upstream's tools and prompts by the names the route lists (legacyPrefixed).
void Exchange::connectUpstream() {
  if (!fed_.routed()) {
    up_index_ = ctx_.route->upstream_index;
    if (ctx_.route->federated() && !ctx_.legacy) {
      fed_.federate();  // comes back here once the upstream is chosen, or answers itself
      return;
    }
  }
  if (!pinAdmits() || !pinSession()) {
    return;
  }
  buildUpstreamHead();
  const settings::Upstream& up = s_->upstreams[up_index_];
  upstream::UpstreamError error{};
  const bool started = up_.start(up, up_head_, started_, error);
  endpoint_ = up_.endpoint();
  if (!started) {
    upstreamError(error);
    return;
  }
  up_open_ = true;
  w_->shared->streams.fetch_add(1, std::memory_order_relaxed);
  forwarded_ = true;
  resp_sse_ = false;
  capture_json_ = false;
  capture_.clear();
  writeRequest();
}

// The upstream request's head as name/value pairs (upstream::Http1Upstream adds Host and
// Content-Length for the endpoint it uses): the client's fields minus hop-by-hop ones, the
// client address fields, credentials unless forwarded, and the server's own session id.
void Exchange::buildUpstreamHead() {
  const settings::Upstream& up = s_->upstreams[up_index_];
  upstream::UpstreamRequestHead& uh = up_head_;
  http::ConnectionTokens conn;
  conn.collect(head.fields);
  uh.method = head.method;
  const size_t q = head.target.find('?');
  uh.query = q != std::string_view::npos ? head.target.substr(q) : std::string_view{};
  uh.fields.clear();
  uh.client_host = false;
  const bool trusted_peer = http::isTrustedPeer(peer_, s_->trusted_proxies);
  for (const http::HeaderField& f : head.fields) {
    if (http::replacedByForwarding(f, trusted_peer)) {
      continue;  // client address fields: dropped, or merged below (trusted_proxies)
    }
    if (!ctx_.forward_credentials && core::iequals(f.name, "authorization")) {
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
    if (!fed_.ownerName().empty() && core::iequals(f.name, "mcp-name")) {
      // names: prefix — the owner's own name (a sentinel when it cannot be sent plain).
      uh.fields.push_back(http::Field{f.name, fed_.ownerNameField()});
      continue;
    }
    if (http::forwardRequestField(f, conn)) {
      uh.fields.push_back(http::Field{f.name, f.value});
    }
  }
  if (session_endpoint_ >= 0) {
    uh.fields.push_back(http::Field{"Mcp-Session-Id", session_server_id_});
  }
  // The listener is plain HTTP; a TLS listener passes "https".
  http::addClientAddressFields(uh.fields, xff_, head.fields, peer_, trusted_peer, "http");
  uh.pinned_endpoint = session_endpoint_;
  if (body_mode == BodyMode::kBuffer) {
    rememberSentId();  // the body leaves for the upstream now: its id for a 502/504 later
    uh.content_length = evbuffer_get_length(body.get());
  } else if (body_mode == BodyMode::kStream) {
    uh.content_length = head.content_length;
  } else {
    uh.content_length = 0;
  }
  uh.length_field = head.method == "POST" || head.method == "PUT";
}

// The head is written by start(); the body follows (whole, streamed, or none).
void Exchange::writeRequest() {
  if (body_mode == BodyMode::kBuffer) {
    evbuffer_add_buffer(up_.output(), body.get());
    releaseBody();
    up_.requestComplete();
  } else if (body_mode == BodyMode::kStream) {
    stream_->readBody(downstream::BodyRead::kStream);  // onBodyData from here on
  } else {
    up_.requestComplete();
  }
  stream_->scheduleFlush();
}

// Streamed request body bytes (Content-Length) go to the upstream as they arrive; the client
// is paused while the upstream output is above the high mark (onUpstreamWritable resumes it).
void Exchange::onBodyData(evbuffer* src, size_t n, bool end) {
  evbuffer* out = up_.output();
  if (out == nullptr) {
    evbuffer_drain(src, n);
    return;
  }
  evbuffer_remove_buffer(src, out, n);
  if (n > 0) {
    stream_->scheduleFlush();
  }
  if (end) {
    up_.requestComplete();
  } else if (evbuffer_get_length(out) > downstream::Stream::kHighWatermark) {
    stream_->readDisable(true);
  }
}

void Exchange::onUpstreamWritable(upstream::Http1Upstream&) {
  // Below the low mark again, and the body not all sent (Http1Upstream asks only then): take
  // more of it from the client.
  if (body_mode == BodyMode::kStream && up_open_) {
    stream_->readDisable(false);
  }
}

void Exchange::onUpstreamOutput(upstream::Http1Upstream&) {
  stream_->scheduleFlush();
}

void Exchange::flushUpstream() {
  if (up_.active() && !up_.writing()) {
    up_drained_ = up_.sendNow() == event::Sent::kDrained;
  }
}

void Exchange::resumeUpstream() {
  const bool drained = std::exchange(up_drained_, false);
  if (up_.active() && !up_.writing() && (drained || up_.sendNow() == event::Sent::kDrained)) {
    up_.onFlushed();
  }
}

void Exchange::rememberSentId() {
  if (body_mode == BodyMode::kBuffer && body && sent_id_.kind == mcp::RequestId::Kind::kAbsent) {
    char prefix[mcp::kIdScanBytes];
    ev_ssize_t n = evbuffer_copyout(body.get(), prefix, sizeof(prefix));
    sent_id_ = mcp::scanIdPrefix(std::string_view(prefix, n > 0 ? static_cast<size_t>(n) : 0));
    const size_t len = evbuffer_get_length(body.get());
    if (sent_id_.kind == mcp::RequestId::Kind::kAbsent && len > sizeof(prefix)) {
      // "id" after the first KiB (a client that writes params first): the whole buffered
      // body, made contiguous once, is read for it.
      const auto* p = evbuffer_pullup(body.get(), -1);
      if (p != nullptr) {
        sent_id_ = mcp::extractId(std::string_view(reinterpret_cast<const char*>(p), len));
      }
    }
  }
}

// ---- legacy session affinity (mcp/session.h) --------------------------------------------

// A request carrying an Mcp-Session-Id the gateway issued goes to the endpoint that created
// the session, with the server's own id. One that names no endpoint of the route's upstream
// (forged, from before this gateway, from an endpoint since removed) gets the 404 a server
// gives for an unknown session, so the client starts a new one — except on a trusted
// 2026-07-28 request, where Mcp-Session-Id means nothing and is forwarded as sent. False: the
// 404 was sent.
bool Exchange::pinSession() {
  session_endpoint_ = -1;
  session_server_id_ = {};
  const http::HeaderField* field = nullptr;
  size_t count = 0;
  for (const http::HeaderField& f : head.fields) {
    if (core::iequals(f.name, "mcp-session-id")) {
      field = &f;
      ++count;
    }
  }
  if (count == 0) {
    return true;
  }
  const settings::Upstream& up = s_->upstreams[up_index_];
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
  if (ctx_.trusted) {
    return true;
  }
  sessionNotFound("Session not found", Outcome::kSessionNotFound);
  return false;
}

void Exchange::sessionNotFound(const char* message, Outcome why) {
  rememberSentId();
  upstreamFailed(404, mcp::code::kSessionNotFound, message, why);
}

// The upstream's Mcp-Session-Id must be one the client can be given wrapped: one field of
// 1..kMaxServerSessionId visible ASCII bytes (MCP 2025-06-18 transport, Session Management).
bool Exchange::upstreamSessionValid(const http::ResponseHead& resp) noexcept {
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
void Exchange::wrapSession(std::string_view server_id) {
  const settings::Upstream& up = s_->upstreams[up_index_];
  const size_t index = up_.endpointIndex();
  wrapped_session_.clear();
  if (index >= up.session_tokens.size() ||
      !mcp::wrapSessionId(up.session_tokens[index], server_id, wrapped_session_)) {
    wrapped_session_.clear();
    return;
  }
  resp_fields_.push_back(http::Field{"Mcp-Session-Id", wrapped_session_});
}

// ---- what the upstream request reports --------------------------------------------------

// The upstream request ends (complete, failed, or cut from this side): counters, the
// attempt's duration metric, and its connection closed unless the upstream request pooled it.
void Exchange::releaseUpstream(bool record) {
  if (keepalive_timer) {
    evtimer_del(keepalive_timer.get());
  }
  if (!up_open_) {
    up_.release(false);
    return;
  }
  up_open_ = false;
  endpoint_ = up_.endpoint();  // the last one tried
  w_->shared->streams.fetch_sub(1, std::memory_order_relaxed);
  countSse(false);
  if (record) {
    recordAttempt(outcome == Outcome::kComplete ? Outcome::kNone : outcome, up_.attemptDuration());
  }
  up_.release(false);
}

void Exchange::upstreamFailed(int st, int code, const char* message, Outcome why,
                              int retry_after_s) {
  outcome = why;
  releaseUpstream();
  if (responseStarted()) {
    abortExchange(why);
    return;
  }
  filters::setReply(ctx_, st, code, message, core::outcomeName(why).data(), false);
  if (retry_after_s > 0) {
    ctx_.reply.addField("Retry-After", std::to_string(retry_after_s));
  }
  ctx_.reply.id = sent_id_;
  sendLocalReply();
}

void Exchange::onUpstreamError(upstream::Http1Upstream& u, upstream::UpstreamError e) {
  if (e == upstream::UpstreamError::kTls) {
    spdlog::warn("upstream '{}' endpoint {}: TLS handshake failed: {}",
                 s_->upstreams[up_index_].name,
                 u.endpoint() != nullptr ? u.endpoint()->text : std::string("?"), u.tlsError());
  }
  upstreamError(e);
}

void Exchange::upstreamError(upstream::UpstreamError e) {
  using upstream::UpstreamError;
  switch (e) {
    case UpstreamError::kSessionEndpointDown:
      sessionNotFound("Session not found: its server cannot be reached",
                      Outcome::kSessionEndpointDown);
      return;
    case UpstreamError::kConnectFailed:
      upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                     "Bad Gateway: upstream connection could not be started",
                     Outcome::kConnectFailed);
      return;
    case UpstreamError::kConnectRefused:
      upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                     "Bad Gateway: upstream connection refused", Outcome::kConnectFailed);
      return;
    case UpstreamError::kConnectTimeout:
      upstreamFailed(504, mcp::code::kUpstreamTimeout,
                     "Gateway Timeout: upstream connect timed out", Outcome::kConnectTimeout);
      return;
    case UpstreamError::kResponseTimeout:
      upstreamFailed(504, mcp::code::kUpstreamTimeout,
                     "Gateway Timeout: upstream did not answer in time", Outcome::kResponseTimeout);
      return;
    case UpstreamError::kClosedBeforeAnswer:
      upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                     "Bad Gateway: upstream closed the connection before answering",
                     Outcome::kUpstreamReset);
      return;
    case UpstreamError::kMalformed:
      upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                     "Bad Gateway: malformed upstream response", Outcome::kUpstreamMalformed);
      return;
    case UpstreamError::kTls:
      upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                     "Bad Gateway: the TLS handshake with the upstream failed",
                     Outcome::kUpstreamTls);
      return;
    case UpstreamError::kReset:
    case UpstreamError::kBadChunk:
    case UpstreamError::kMaxDuration:
    case UpstreamError::kStreamIdle:
      if (filtering_) {
        // A list read whole for filtering: nothing reached the client yet.
        dropListAnswer();
        upstreamFailed(
            e == UpstreamError::kMaxDuration || e == UpstreamError::kStreamIdle ? 504 : 502,
            mcp::code::kUpstreamUnavailable, "Bad Gateway: the upstream's list answer was cut",
            upstream::outcomeOf(e));
        return;
      }
      abortExchange(upstream::outcomeOf(e));
      return;
  }
}

void Exchange::onUpstreamRetry(upstream::Http1Upstream&, core::Nanos attempt_duration) {
  recordAttempt(Outcome::kConnectFailed, attempt_duration);
}

}  // namespace gw::proxy
