// One MCP request: the pipeline, the body, the rate limits, local replies, the end (see
// exchange.h). The upstream side is in exchange_upstream.cc, the relay in response_relay.cc,
// metrics and the access log in request_log.cc.

#include "gateway/proxy/exchange.h"

#include <cstring>
#include <new>

#include "gateway/core/assert.h"
#include "gateway/filters/pipeline.h"
#include "gateway/http/forwarding.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/verifier.h"
#include "gateway/proxy/worker_context.h"

namespace gw::proxy {

core::Nanos Exchange::now() const noexcept {
  return w_->clock->now();
}

void Exchange::begin(WorkerContext& w, downstream::Stream& stream,
                     std::shared_ptr<const filters::Snapshot> snap, std::string_view peer,
                     std::string_view peer_subject) {
  GW_ASSERT(life_ == Life::kIdle);
  life_ = Life::kBegun;
  w_ = &w;
  stream_ = &stream;
  snap_ = std::move(snap);
  s_ = snap_->settings.get();
  peer_ = peer;  // (the pool's give() dropped the previous request's context)
  peer_subject_ = peer_subject;
  status = 0;
  bytes_in = bytes_out = 0;
  outcome = Outcome::kNone;
  garbage = false;
  logged_ = false;
  endpoint_ = nullptr;
  started_ = now();
  up_.init(w.base, w.pools.get(), w.parser.get(), w.clock, this);
}

void Exchange::prepare() {
  w_->shared->requests.fetch_add(1, std::memory_order_relaxed);
  GW_ASSERT(life_ == Life::kBegun);
  life_ = Life::kRunning;
  resetContext();
  keys_.reset();
  limits_.reset();
  step_ = Step::kHead;
  body_mode = BodyMode::kNone;
  body_read = false;
  sent_id_ = mcp::RequestId{};
  forwarded_ = false;
  filtering_ = filtered_ = false;
  legacy_prefix_.clear();
  hidden_ = 0;
  pin_observed_ = false;
  pin_log_.clear();
  fed_.reset();
}

void Exchange::resetContext() {
  ctx_.reset();
  arena_.reset();
  ctx_.snapshot = snap_.get();
  ctx_.head = &head;
  ctx_.client_ip = http::clientAddress(head.fields, peer_, s_->trusted_proxies);  // views head_buf
  ctx_.peer_subject = peer_subject_;
}

void Exchange::start() {
  GW_ASSERT(life_ == Life::kRunning && step_ == Step::kHead);
  if (head.framing == http::BodyFraming::kContentLength &&
      head.content_length > s_->limits.max_body_bytes) {
    localReply(413, mcp::code::kBodyTooLarge, "Content Too Large: the body exceeds max_body_bytes",
               Outcome::kBodyTooLarge);
    return;
  }
  run();
}

// ---- the stages ---------------------------------------------------------------------------

void Exchange::run() {
  for (;;) {
    GW_ASSERT(step_ != Step::kDone);
    if (step_ == Step::kTarget) {
      step_ = Step::kDone;
      connectUpstream();
      return;
    }
    switch (runStep()) {
      case filters::FilterStatus::kContinue:
        step_ = static_cast<Step>(static_cast<uint8_t>(step_) + 1);
        break;
      case filters::FilterStatus::kStop:
        return;  // resume() takes it up
      case filters::FilterStatus::kNeedBody:
        beginBodyRead();  // onBodyComplete() runs on
        return;
      case filters::FilterStatus::kLocalReply:
        step_ = Step::kDone;
        replyBeforeBody();
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
      if (body_mode == BodyMode::kBuffer && ctx_.need_body && !body_read &&
          (ctx_.legacy_inspect ||
           !(head.expect_continue && head.version == http::Version::kHttp11))) {
        return filters::FilterStatus::kNeedBody;
      }
      return filters::FilterStatus::kContinue;
    case Step::kLimits:
      return limits_.run(ctx_, *w_, *this);
    case Step::kBody:
      return body_mode == BodyMode::kBuffer && !body_read ? filters::FilterStatus::kNeedBody
                                                          : filters::FilterStatus::kContinue;
    case Step::kOwner:
      return fed_.ownerStep();
    case Step::kTarget:
    case Step::kDone:
      break;
  }
  GW_ASSERT(false && "runStep past the stages");
  return filters::FilterStatus::kStop;
}

void Exchange::resume(filters::FilterStatus verdict) {
  GW_ASSERT(step_ != Step::kDone && step_ != Step::kTarget);
  if (verdict == filters::FilterStatus::kLocalReply) {
    step_ = Step::kDone;
    replyBeforeBody();
    return;
  }
  if (step_ == Step::kHead) {
    resetContext();  // the head runs again on a fresh context (the keys came)
  }
  run();
}

void Exchange::stopStages() noexcept {
  keys_.cancel();
  limits_.cancel();
  fed_.leaveRefresh();
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
    return st;
  }
  const bool has_body = head.framing != http::BodyFraming::kNone;
  if (st == filters::FilterStatus::kNeedBody || head.framing == http::BodyFraming::kChunked ||
      (has_body &&
       (s_->limits.request_buffering || (ctx_.route != nullptr && ctx_.route->federated())))) {
    // Read whole before the upstream is contacted: verify mode, a chunked body (it goes
    // upstream with one Content-Length), and every body under request_buffering — a slow or
    // truncated body then never ties up an upstream connection.
    body_mode = BodyMode::kBuffer;
  } else if (has_body) {
    // Straight through (Content-Length only: chunked is buffered): the body is streamed as it
    // arrives once the limits passed.
    body_mode = BodyMode::kStream;
  }
  return filters::FilterStatus::kContinue;
}

// A request answered from its head alone (401, 403, 404, 405, 415, 429…): its body is never
// read from the socket and no 100 Continue is sent. The id is echoed only when the whole body
// is already in; otherwise the answer carries "id": null and the connection closes, since the
// body bytes still to come cannot be told from a next request.
void Exchange::replyBeforeBody() {
  if (head.framing != http::BodyFraming::kNone) {
    if (body_read) {
      if (ctx_.reply.id.kind == mcp::RequestId::Kind::kAbsent && body) {
        const size_t len = evbuffer_get_length(body.get());
        ctx_.reply.id = mcp::extractId(
            std::string_view(reinterpret_cast<const char*>(evbuffer_pullup(body.get(), -1)), len));
      }
    } else {
      const bool want_id =
          ctx_.reply.echo_id && ctx_.reply.id.kind == mcp::RequestId::Kind::kAbsent;
      verify_buf_.clear();
      if (stream_->skipBody(want_id ? &verify_buf_ : nullptr) && want_id) {
        ctx_.reply.id = mcp::extractId(verify_buf_);
      }
    }
  }
  sendLocalReply();
}

bool Exchange::reserveBody(uint64_t n) {
  const uint64_t cap = s_->limits.max_buffered_body_bytes;
  uint64_t held = w_->shared->buffered_body_bytes.fetch_add(n, std::memory_order_relaxed);
  if (held + n > cap) {
    w_->shared->buffered_body_bytes.fetch_sub(n, std::memory_order_relaxed);
    return false;
  }
  body_reserved_ += n;
  return true;
}

void Exchange::releaseBody() {
  if (body_reserved_ > 0) {
    w_->shared->buffered_body_bytes.fetch_sub(body_reserved_, std::memory_order_relaxed);
    body_reserved_ = 0;
  }
}

// The whole body (bounded by max_body_bytes) is read into `body`, then onBodyComplete().
void Exchange::beginBodyRead() {
  body_mode = BodyMode::kBuffer;
  if (!body) {
    body = event::makeBuffer();
  }
  evbuffer_drain(body.get(), evbuffer_get_length(body.get()));
  if (head.framing == http::BodyFraming::kContentLength && !reserveBody(head.content_length)) {
    filters::setReply(ctx_, 503, mcp::code::kOverloaded,
                      "Service Unavailable: the gateway holds too many request bodies; retry",
                      "body_buffer_full");
    ctx_.reply.addField("Retry-After", "1");
    replyBeforeBody();
    return;
  }
  stream_->readBody(downstream::BodyRead::kBuffer);
}

void Exchange::onBodyComplete() {
  body_read = true;
  size_t len = evbuffer_get_length(body.get());
  if (ctx_.need_body) {
    // The one body copy: contiguous and padded for simdjson (verify / classify only).
    verify_buf_.resize(len + mcp::bodyPadding());
    evbuffer_copyout(body.get(), verify_buf_.data(), len);
    std::memset(verify_buf_.data() + len, 0, mcp::bodyPadding());
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

// ---- local replies and the end ----------------------------------------------------------

void Exchange::localReply(int st, int code, const char* message, Outcome why, int retry_after_s) {
  stopStages();
  releaseUpstream();
  filters::setReply(ctx_, st, code, message, core::outcomeName(why).data(), false);
  if (retry_after_s > 0) {
    ctx_.reply.addField("Retry-After", std::to_string(retry_after_s));
  }
  sendLocalReply();
}

void Exchange::startResponse(downstream::ResponseHeaders& h) {
  GW_ASSERT(life_ == Life::kRunning);
  h.extra = limits_.headerFields();
  life_ = Life::kAnswering;
  status = h.status;
  stream_->encodeHeaders(h);
}

void Exchange::startSseResponse(downstream::ResponseHeaders& h) {
  resp_sse_ = true;
  countSse(true);
  startResponse(h);
}

void Exchange::setLegacyPrefix(std::string_view upstream, std::string_view separator) {
  legacy_prefix_ = upstream;
  legacy_prefix_ += separator;
}

void Exchange::respond(int st, std::string_view reason, std::string_view answer) {
  downstream::ResponseHeaders h;
  h.status = st;
  h.reason = reason;
  h.fields = &resp_fields_;
  h.framing = http::BodyFraming::kContentLength;
  h.content_length = answer.size();
  startResponse(h);
  if (!answer.empty()) {
    event::EvBufferPtr b = event::makeBuffer();
    evbuffer_add(b.get(), answer.data(), answer.size());
    stream_->encodeData(b.get(), answer.size());
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
  if (!logged_ && (head.head_bytes > 0 || status != 0)) {
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

void Exchange::onStreamReset(Outcome why) {
  // The client is gone (the protocol's cancellation) or stopped reading: the upstream
  // connection is closed at once and never pooled.
  endAborted(why == Outcome::kClientClosed ? clientClosedOutcome() : why);
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

Exchange* ExchangePool::take(event_base* base) {
  if (!free_.empty()) {
    Exchange* x = free_.back();
    free_.pop_back();
    return x;
  }
  auto* x = new (std::nothrow) Exchange;
  if (x == nullptr) {
    return nullptr;
  }
  x->keepalive_timer.reset(evtimer_new(base, &Exchange::onKeepaliveTimer, x));
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
  x->framer_.reset();
  x->up_.release(false);
  x->up_open_ = false;
  x->fed_.recycle(kKeepCapacity);
  x->head.clear();
  x->ctx_.reset();
  x->arena_.reset();
  x->limits_.trim();
  x->session_server_id_ = {};
  x->stream_ = nullptr;
  x->snap_.reset();
  if (x->body) {
    evbuffer_drain(x->body.get(), evbuffer_get_length(x->body.get()));
  }
  trim(x->head_buf);
  trim(x->verify_buf_);
  trim(x->capture_);
  x->dropListAnswer();
  x->filter_chain_.reset();  // a large answer's chunks go back now, not at the next list
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
