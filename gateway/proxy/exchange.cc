// One MCP request: the pipeline, the body, the rate limits, the choice of target, local
// replies, keep-alive comments, the end (see exchange.h). The upstream request and the relay
// are the forwarding target's (forward_target.h), metrics and the access log in
// request_log.cc.

#include "gateway/proxy/exchange.h"

#include <cstring>
#include <new>

#include "gateway/core/assert.h"
#include "gateway/filters/pipeline.h"
#include "gateway/http/forwarding.h"
#include "gateway/http/host.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/verifier.h"
#include "gateway/proxy/local_target.h"
#include "gateway/proxy/proxy_context.h"
#include "gateway/tls/server_context.h"

namespace gw::proxy {

core::Nanos Exchange::now() const noexcept {
  return w_->clock->now();
}

void Exchange::begin(ProxyContext& w, downstream::Stream& stream,
                     std::shared_ptr<const filters::Snapshot> snap, downstream::StreamPeer peer) {
  GW_ASSERT(life_ == Life::kIdle);
  life_ = Life::kBegun;
  w_ = &w;
  stream_ = &stream;
  snap_ = std::move(snap);
  peer_ = peer;  // (the pool's give() dropped the previous request's context)
  status = 0;
  outcome = Outcome::kNone;
  logged_ = false;
  started_ = now();
  fwd_.begin(w);
}

// The head is whole: the exchange keeps a copy (its views rebased onto head_buf), sets up
// the request's context, and runs the stages — or answers what the client side refused.
void Exchange::onHeaders(const http::RequestHead& h, const downstream::EdgeReply* refused) {
  GW_ASSERT(life_ == Life::kBegun);
  http::copyHead(h, head_buf, head);
  w_->shared->requests.fetch_add(1, std::memory_order_relaxed);
  life_ = Life::kRunning;
  resetContext();
  wait_began_ns_ = 0;
  // tracing: the request's context (refused requests have spans too). The exporter is made
  // at start; a reload that removes `tracing` stops the spans.
  const std::optional<settings::Tracing>& tracing = settings().tracing;
  trace_.begin(tracing ? w_->shared->tracer.load(std::memory_order_relaxed) : nullptr,
               tracing ? tracing->sample_ratio : 0.0, head);
  keys_.reset();
  introspection_.reset();
  limits_.reset();
  auth_.reset();
  step_ = Step::kHead;
  body.reset();
  forwarded_ = false;
  fwd_.reset();
  fed_.reset();
  if (peer_.sni != nullptr && refused == nullptr && misdirected()) {
    filters::setReply(ctx_, 421, mcp::code::kInvalidRequest,
                      "Misdirected Request: this connection's certificate is not the one for "
                      "this Host; send the request on a connection to that host",
                      "misdirected", false);
    ctx_.reply.id = mcp::RequestId::null();
    sendLocalReply();
    return;
  }
  if (!snap_->servers.empty() || peer_.listener != 0) {
    // servers: the request runs on the server its Host and path select among those of its
    // listener (the root stays owned: the selected snapshot lives in it).
    if (const filters::Snapshot* server = snap_->select(head.host, head.path, peer_.listener)) {
      if (server != snap_.get()) {
        snap_ = std::shared_ptr<const filters::Snapshot>(snap_, server);
        ctx_.snapshot = server;
      }
    } else if (refused == nullptr) {
      filters::notFound(ctx_);
      sendLocalReply();
      return;
    }
  }
  if (refused != nullptr) {
    local().error(refused->status, refused->code, refused->message, refused->outcome,
                  refused->retry_after_s);
    return;
  }
  if (head.framing == http::BodyFraming::kContentLength &&
      head.content_length > settings().limits.max_body_bytes) {
    local().error(413, mcp::code::kBodyTooLarge,
                  "Content Too Large: the body exceeds max_body_bytes", Outcome::kBodyTooLarge);
    return;
  }
  run();
}

// TLS with SNI certificates: the request's Host is one another certificate of the listener
// covers (RFC 9110 §15.5.20: the connection was made for another host, e.g. reused by a
// client for a second origin), so it is not served on this connection.
bool Exchange::misdirected() const noexcept {
  http::HostPort hp;
  if (head.host.empty() || !http::parseHostPort(head.host, hp)) {
    return false;
  }
  return peer_.sni->certFor(hp.host) != peer_.sni_cert;
}

void Exchange::resetContext() {
  ctx_.reset();
  arena_.reset();
  ctx_.snapshot = snap_.get();
  ctx_.head = &head;
  ctx_.client_ip = http::clientAddress(head.fields, peer_.address,
                                       settings().trusted_proxies);  // views head_buf
  ctx_.peer_subject = peer_.subject;
}

// ---- the stages ---------------------------------------------------------------------------

void Exchange::run() {
  for (;;) {
    GW_ASSERT(step_ != Step::kDone);
    if (step_ == Step::kTarget) {
      step_ = Step::kDone;
      toTarget();
      return;
    }
    switch (runStep()) {
      case filters::FilterStatus::kContinue:
        step_ = static_cast<Step>(static_cast<uint8_t>(step_) + 1);
        break;
      case filters::FilterStatus::kStop:
        if (trace_.on()) {
          wait_began_ns_ = RequestTrace::nowNanos();  // tracing: the wait is an event
        }
        return;  // resume() takes it up
      case filters::FilterStatus::kNeedBody:
        beginBodyRead();  // onBodyComplete() runs on
        return;
      case filters::FilterStatus::kLocalReply:
        step_ = Step::kDone;
        local().answer();
        return;
    }
  }
}

filters::FilterStatus Exchange::runStep() {
  switch (step_) {
    case Step::kHead:
      return headStep();
    case Step::kEarlyBody:
      // The body is checked before the limits are charged, so a request refused for its
      // body uses no quota. (With Expect: 100-continue the limits come first: a request
      // that will get 429 must never see a 100. A legacy POST has no route and no view
      // before its body, so its limits always wait for it.)
      if (body.mode == BodyMode::kBuffer && ctx_.need_body && !body.whole &&
          (ctx_.legacy_inspect ||
           !(head.expect_continue && head.version == http::Version::kHttp11))) {
        return filters::FilterStatus::kNeedBody;
      }
      return filters::FilterStatus::kContinue;
    case Step::kLimits:
      return limits_.run(ctx_, *w_, *this);
    case Step::kBody:
      return body.mode == BodyMode::kBuffer && !body.whole ? filters::FilterStatus::kNeedBody
                                                           : filters::FilterStatus::kContinue;
    case Step::kOwner:
      return fed_.ownerStep();
    case Step::kCredentials:
      return credentialsStep();
    case Step::kTarget:
    case Step::kDone:
      break;
  }
  GW_ASSERT(false && "runStep past the stages");
  return filters::FilterStatus::kStop;
}

// The wait a stopped stage makes (tracing: an event of the request's SERVER span).
const char* Exchange::waitName() const noexcept {
  switch (step_) {
    case Step::kHead:
      return "wait: identity (JWKS keys or token introspection)";
    case Step::kLimits:
      return "wait: rate limit (Redis)";
    case Step::kOwner:
      return "wait: federation refresh";
    case Step::kCredentials:
      return "wait: upstream credential (token endpoint)";
    default:
      return "wait";
  }
}

void Exchange::resume(filters::FilterStatus verdict) {
  GW_ASSERT(step_ != Step::kDone && step_ != Step::kTarget);
  if (wait_began_ns_ != 0) {
    trace_.wait(waitName(), wait_began_ns_, RequestTrace::nowNanos());
    wait_began_ns_ = 0;
  }
  if (verdict == filters::FilterStatus::kLocalReply) {
    step_ = Step::kDone;
    local().answer();
    return;
  }
  if (step_ == Step::kHead) {
    resetContext();  // the head runs again on a fresh context (the keys came)
  }
  run();
}

void Exchange::stopStages() noexcept {
  keys_.cancel();
  introspection_.cancel();
  limits_.cancel();
  auth_.cancel();
  fed_.leaveRefresh();
}

// upstreams[].auth: the credentials for the upstreams this request may reach — a plain
// route's upstream, or every upstream of a federated route (made before the owner is chosen:
// an ownership refresh asks them all).
filters::FilterStatus Exchange::credentialsStep() {
  const settings::Route* route = ctx_.route;
  if (route == nullptr || !settings().any_upstream_auth) {
    return filters::FilterStatus::kContinue;
  }
  auth_upstreams_.clear();
  if (!route->federated()) {
    auth_upstreams_.push_back(route->upstream_index);
  } else {
    auth_upstreams_ = route->upstream_indexes;
  }
  return auth_.run(ctx_, *w_, auth_upstreams_, *this);
}

// The pipeline's head stages, then how the body is read. A token whose key a JWKS fetch is
// bringing waits for it once (KeysWait), then the head runs again.
filters::FilterStatus Exchange::headStep() {
  const filters::FilterStatus st = filters::Pipeline::onHeaders(ctx_, arena_);
  if (st == filters::FilterStatus::kLocalReply) {
    if (ctx_.keys_pending.source != nullptr &&
        keys_.start(w_->base, *w_->clock, ctx_.keys_pending, *this)) {
      return filters::FilterStatus::kStop;
    }
    if (ctx_.introspection_pending) {
      // identity.introspection: the token's answer is being fetched; the head runs again once
      // it is in (the 503 in ctx_.reply stands after the call's timeout and a second).
      if (!introspection_.begun()) {
        const policy::Introspection* in = ctx_.snapshot->policy->introspection();
        introspection_.begin(*w_->clock, w_->clock->now(),
                             (in != nullptr ? in->timeout : std::chrono::milliseconds(5000)) +
                                 std::chrono::milliseconds(1000));
      }
      if (introspection_.again(w_->base, *this)) {
        return filters::FilterStatus::kStop;
      }
    }
    return st;
  }
  const bool has_body = head.framing != http::BodyFraming::kNone;
  if (st == filters::FilterStatus::kNeedBody || head.framing == http::BodyFraming::kChunked ||
      (has_body &&
       (settings().limits.request_buffering || (ctx_.route != nullptr && ctx_.route->federated()) ||
        (ctx_.route != nullptr && (fwd_.mayBridge() || fwd_.mayRetry()))))) {
    // Read whole before the upstream is contacted: verify mode, a chunked body (it goes
    // upstream with one Content-Length), and every body under request_buffering — a slow or
    // truncated body then never ties up an upstream connection. A request that may be
    // bridged to a 2025-era upstream is kept whole to be sent again in a new session.
    body.mode = BodyMode::kBuffer;
  } else if (has_body) {
    // Straight through (Content-Length only: chunked is buffered): the body is streamed as it
    // arrives once the limits passed.
    body.mode = BodyMode::kStream;
  }
  return filters::FilterStatus::kContinue;
}

bool Exchange::reserveBody(uint64_t n) {
  return body.reserve(w_->shared->buffered_body_bytes, settings().limits.max_buffered_body_bytes,
                      n);
}

void Exchange::releaseBody() {
  body.release(w_->shared->buffered_body_bytes);
}

// The whole body (bounded by max_body_bytes) is read into `body`, then onBodyComplete().
void Exchange::beginBodyRead() {
  if (!body.startBuffer() ||
      (head.framing == http::BodyFraming::kContentLength && !reserveBody(head.content_length))) {
    filters::setReply(ctx_, 503, mcp::code::kOverloaded,
                      "Service Unavailable: the gateway holds too many request bodies; retry",
                      "body_buffer_full");
    ctx_.reply.addField("Retry-After", "1");
    local().answer();
    return;
  }
  stream_->readBody(downstream::BodyRead::kBuffer);
}

void Exchange::onBodyComplete() {
  body.whole = true;
  size_t len = body.size();
  if (ctx_.need_body) {
    // The one body copy: contiguous and padded for simdjson (verify / classify only).
    verify_buf_.resize(len + mcp::bodyPadding());
    evbuffer_copyout(body.buf.get(), verify_buf_.data(), len);
    std::memset(verify_buf_.data() + len, 0, mcp::bodyPadding());
    // tracing: the body's params._meta.traceparent when the HTTP fields named no parent.
    trace_.adoptMeta(std::string_view(verify_buf_.data(), len));
    filters::FilterStatus st =
        filters::Pipeline::onBody(ctx_, std::string_view(verify_buf_.data(), len));
    if (st == filters::FilterStatus::kLocalReply) {
      step_ = Step::kDone;
      sendLocalReply();
      return;
    }
  }
  run();
}

// ---- the target ---------------------------------------------------------------------------

// Every stage and limit passed: the request goes to the route's upstream (a named call on a
// federated route: to the owner the kOwner step chose). On a federated route the federated
// target decides, for both eras (a 2025-era client is answered by the gateway as its server:
// federated_front.cc).
void Exchange::toTarget() {
  if (!fed_.routed()) {
    fwd_.useUpstream(ctx_.route->upstream_index);
    if (ctx_.route->federated()) {
      fed_.federate();  // hands a call to fwd_ once the upstream is chosen, or answers itself
      return;
    }
  }
  fwd_.connect();
}

// The upstream request ends (complete, failed, or cut from this side): the keep-alive timer
// stops, then the forwarding target's counters, attempt metric and connection.
void Exchange::releaseUpstream(bool record) {
  if (keepalive_timer) {
    evtimer_del(keepalive_timer.get());
  }
  fwd_.release(record);
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
  ctx_.reply.id = fwd_.sentId();
  sendLocalReply();
}

// Keep-alive comments go only into SSE answers whose framing has room for bytes the
// upstream did not send (chunked to the client, or close-delimited) — never into a
// Content-Length body.
bool Exchange::injectKeepalive() const noexcept {
  if (fed_.listenOpen()) {
    return settings().mcp.sse_keepalive.count() > 0;  // the merged stream: whole events only
  }
  return fwd_.relaysSseEvents() && settings().mcp.sse_keepalive.count() > 0;
}

void Exchange::armKeepalive() {
  if (injectKeepalive()) {
    timeval tv = event::toTimeval(settings().mcp.sse_keepalive);
    evtimer_add(keepalive_timer.get(), &tv);
  }
}

void Exchange::onKeepaliveTimer(evutil_socket_t, short, void* arg) {
  auto* x = static_cast<Exchange*>(arg);
  if (x->fwd_.filtering()) {
    x->fwd_.sendListWhenReady();
    return;
  }
  if (!x->responseStarted() || !x->injectKeepalive()) {
    return;
  }
  if (x->fed_.listenOpen() || x->fwd_.atEventBoundary()) {
    static constexpr std::string_view kComment = ": keepalive\n\n";
    event::EvBufferPtr comment = event::makeBuffer();
    evbuffer_add(comment.get(), kComment.data(), kComment.size());
    x->stream_->encodeData(comment.get(), kComment.size());
  }
  x->armKeepalive();
}

// The exchange cannot finish: the upstream is closed at once (never pooled) and the request
// is logged; the caller closes the client.
void Exchange::endAborted(Outcome why) {
  stopStages();
  outcome = why;
  fed_.stopFederation();
  if (status == 0) {
    status = 499;
  }
  releaseUpstream();
  if (!logged_) {
    endRequest();
  }
}

// The answer is cut (no last chunk, or short of its length), but what was already queued for
// the client still goes out before its connection is closed.
void Exchange::abortExchange(Outcome why) {
  endAborted(why);
  stream_->resetStream();
}

// ---- local replies and the end ----------------------------------------------------------

void Exchange::startResponse(downstream::ResponseHeaders& h) {
  GW_ASSERT(life_ == Life::kRunning);
  h.extra = limits_.headerFields();
  life_ = Life::kAnswering;
  status = h.status;
  stream_->encodeHeaders(h);
}

void Exchange::startSseResponse(downstream::ResponseHeaders& h) {
  countSse(true);
  startResponse(h);
}

void Exchange::refuseBeforeBody() {
  limits_.refund(*w_);  // a refused request consumes no quota
  local().answer();
}

void Exchange::respond(int st, std::string_view reason, std::string_view answer) {
  if (answer.empty()) {
    respond(st, reason, nullptr, 0);  // no body: no buffer
    return;
  }
  event::EvBufferPtr b = event::makeBuffer();
  evbuffer_add(b.get(), answer.data(), answer.size());
  respond(st, reason, b.get(), answer.size());
}

void Exchange::respond(int st, std::string_view reason, evbuffer* answer, size_t n) {
  downstream::ResponseHeaders h;
  h.status = st;
  h.reason = reason;
  h.fields = &resp_fields_;
  h.framing = http::BodyFraming::kContentLength;
  h.content_length = n;
  startResponse(h);
  if (n > 0) {
    stream_->encodeData(answer, n);
  }
  outcome = Outcome::kComplete;
  releaseUpstream();
  stream_->encodeEnd();
}

void Exchange::sendLocalReply() {
  GW_ASSERT(life_ == Life::kRunning);
  life_ = Life::kAnswering;
  step_ = Step::kDone;
  status = ctx_.reply.status;
  if (outcome == Outcome::kNone) {
    outcome = core::outcomeFromName(ctx_.reply.reason);
  }
  stream_->encodeLocalReply(ctx_.reply);  // the connection calls finish()
}

void Exchange::finish() {
  if (!logged_ && life_ != Life::kIdle && (life_ != Life::kBegun || status != 0)) {
    endRequest();
  }
  releaseBody();
  releaseUpstream();
  fed_.stopFederation();
}

void Exchange::cancel() {
  stopStages();
  releaseUpstream(false);  // closed, never pooled
  releaseBody();
  fed_.stopFederation();
}

// Body bytes from the client: kept whole (BodyMode::kBuffer, within max_body_bytes and the
// process-wide max_buffered_body_bytes: 413 / 503 otherwise), or sent on as they come.
void Exchange::onBodyData(evbuffer* src, size_t n, bool end) {
  if (body.mode != BodyMode::kBuffer) {
    fwd_.onBodyData(src, n, end);
    return;
  }
  if (n > 0) {
    if (head.framing == http::BodyFraming::kChunked) {
      // A chunked body's size shows as it comes (a Content-Length one was checked and
      // reserved whole before it was read).
      if (body.size() + n > settings().limits.max_body_bytes) {
        local().error(413, mcp::code::kBodyTooLarge,
                      "Content Too Large: the body exceeds max_body_bytes", Outcome::kBodyTooLarge);
        return;
      }
      if (!reserveBody(n)) {
        local().error(503, mcp::code::kOverloaded,
                      "Service Unavailable: the gateway holds too many request bodies; retry",
                      Outcome::kBodyBufferFull, 1);
        return;
      }
    }
    evbuffer_remove_buffer(src, body.buf.get(), n);
  }
  if (end) {
    onBodyComplete();
  }
}

void Exchange::onEdgeReply(const downstream::EdgeReply& r) {
  local().error(r.status, r.code, r.message, r.outcome, r.retry_after_s);
}

// The connection answered in plain text itself. A head that did not parse or arrive (the
// exchange is still kBegun) gets metrics and a rate-limited log line from the connection, no
// access-log line; a request that was running (a malformed chunked body) gets both.
void Exchange::onPlainAnswer(int st, Outcome why) {
  GW_ASSERT(life_ == Life::kBegun || life_ == Life::kRunning);
  if (life_ == Life::kRunning) {
    stopStages();
    step_ = Step::kDone;
    life_ = Life::kAnswering;
  }
  status = st;
  outcome = why;
}

void Exchange::onStreamReset(Outcome why) {
  // The client is gone (the protocol's cancellation) or stopped reading: the upstream
  // connection is closed at once and never pooled.
  endAborted(why == Outcome::kClientClosed ? fwd_.clientClosedOutcome() : why);
}

void Exchange::onBelowLowWatermark() {
  fed_.resumeListen();
  fwd_.resumeReading();
}

// ---- the worker's spare exchanges -------------------------------------------------------

namespace {

// A buffer a large request grew past this is released when its exchange goes back to the
// pool (the next request grows it again if it needs to).
constexpr size_t kKeepCapacity = 16 * 1024;

void trim(std::string& s) {
  if (s.capacity() > kKeepCapacity) {
    std::string().swap(s);
  } else {
    s.clear();
  }
}

}  // namespace

ExchangePool::~ExchangePool() {
  clear();
}

downstream::StreamCallbacks* ExchangePool::newStream(
    downstream::Stream& stream, std::shared_ptr<const filters::Snapshot> snapshot,
    downstream::StreamPeer peer) {
  Exchange* x = take();
  if (x != nullptr) {
    x->begin(w_, stream, std::move(snapshot), peer);
  }
  return x;
}

void ExchangePool::endStream(downstream::StreamCallbacks& s, bool answered) {
  auto& x = static_cast<Exchange&>(s);
  if (answered) {
    // Answered means a response started (or the connection answered a head it could not
    // parse): an exchange that ends as answered without one had no target take it.
    GW_ASSERT(x.life_ == Exchange::Life::kAnswering ||
              (x.life_ == Exchange::Life::kBegun && x.status != 0));
    x.finish();
  } else {
    x.cancel();
  }
  give(&x);
}

Exchange* ExchangePool::take() {
  if (!free_.empty()) {
    Exchange* x = free_.back();
    free_.pop_back();
    return x;
  }
  auto* x = new (std::nothrow) Exchange;
  if (x == nullptr) {
    return nullptr;
  }
  x->keepalive_timer.reset(evtimer_new(w_.base, &Exchange::onKeepaliveTimer, x));
  if (!x->keepalive_timer) {
    delete x;
    return nullptr;
  }
  return x;
}

void ExchangePool::give(Exchange* x) noexcept {
  x->life_ = Exchange::Life::kIdle;
  x->stopStages();
  evtimer_del(x->keepalive_timer.get());
  x->fwd_.recycle(kKeepCapacity);
  x->fed_.recycle(kKeepCapacity);
  x->head.clear();
  x->ctx_.reset();
  x->arena_.reset();
  x->limits_.reset();
  x->stream_ = nullptr;
  x->snap_.reset();
  x->body.reset();
  trim(x->head_buf);
  trim(x->verify_buf_);
  if (free_.size() >= kKeep) {
    delete x;
    return;
  }
  free_.push_back(x);
}

void ExchangePool::clear() noexcept {
  for (Exchange* x : free_) {
    delete x;
  }
  free_.clear();
}

}  // namespace gw::proxy
