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
#include "gateway/policy/jwks_source.h"
#include "gateway/proxy/worker_context.h"

namespace gw::proxy {

core::Nanos Exchange::now() const noexcept {
  return w_->clock->now();
}

void Exchange::begin(WorkerContext& w, downstream::Stream& stream,
                     std::shared_ptr<const filters::Snapshot> snap, std::string_view peer,
                     std::string_view peer_subject) {
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
  resetContext();
  keys_waited_ = keys_waiting_ = false;
  body_mode = BodyMode::kNone;
  resp_started = false;
  body_read = false;
  limits_done_ = false;
  sent_id_ = mcp::RequestId{};
  forwarded_ = false;
  ratelimit_lines_.clear();
  filtering_ = filtered_ = false;
  legacy_prefix_.clear();
  hidden_ = 0;
  pin_observed_ = false;
  pin_log_.clear();
  catalog_ = nullptr;
  fed_routed_ = fed_refreshed_ = capture_task_ = fed_unknown_ = false;
  fed_owner_ = 0;
  fed_name_.clear();
  fed_log_.clear();
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
  const bool has_body = head.framing != http::BodyFraming::kNone;

  if (head.framing == http::BodyFraming::kContentLength &&
      head.content_length > s_->limits.max_body_bytes) {
    localReply(413, mcp::code::kBodyTooLarge, "Content Too Large: the body exceeds max_body_bytes",
               Outcome::kBodyTooLarge);
    return;
  }

  filters::FilterStatus st = filters::Pipeline::onHeaders(ctx_, arena_);
  if (st == filters::FilterStatus::kLocalReply) {
    if (ctx_.keys_pending.source != nullptr && !keys_waited_ && waitForKeys()) {
      return;
    }
    replyBeforeBody();
    return;
  }
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

  if (body_mode == BodyMode::kBuffer && ctx_.need_body &&
      (ctx_.legacy_inspect || !(head.expect_continue && head.version == http::Version::kHttp11))) {
    // The body is checked before the limits are charged, so a request refused for its body
    // uses no quota. (With Expect: 100-continue the limits come first: a request that will
    // get 429 must never see a 100. A legacy POST has no route and no view before its body,
    // so its limits always wait for it.)
    beginBodyRead();
    return;
  }
  // Head-only decisions first: the limits, then (limitsPassed) the body or the upstream.
  runLimits();
}

// ---- a JWT whose key a JWKS fetch is bringing --------------------------------------------

namespace {
// How often a waiting request looks whether the fetch ended (every 10 ms for its first
// 200 ms, then every 100 ms), and how long it waits at most (the fetch itself gives up after
// 10 s; server/jwks_fetcher.cc).
constexpr std::chrono::milliseconds kKeysPoll{10};
constexpr std::chrono::milliseconds kKeysPollSlow{100};
constexpr std::chrono::milliseconds kKeysPollFastFor{200};
constexpr std::chrono::seconds kKeysWait{12};
}  // namespace

// The token names a key the JWKS lacks (an identity provider that rotated its keys), or there
// is no key set yet, and a fetch is running or starts at the fetcher's next tick: rather than
// a 401 the client would take for a bad token, the request waits for that fetch to end, then
// runs the pipeline once more; a second refusal stands. Nothing of the body was read.
bool Exchange::waitForKeys() {
  keys_waited_ = true;
  if (!ctx_.keys_pending.source->beginWait()) {
    return false;
  }
  keys_waiting_ = true;
  keys_ = ctx_.keys_pending;
  keys_since_ = now();
  timeval tv = event::toTimeval(kKeysPoll);
  evtimer_add(keepalive_timer.get(), &tv);
  return true;
}

void Exchange::onKeysPoll() {
  const core::Nanos waited = now() - keys_since_;
  if (keys_.source->fetchesEnded() == keys_.ended &&
      waited < std::chrono::duration_cast<core::Nanos>(kKeysWait)) {
    timeval tv = event::toTimeval(waited < std::chrono::duration_cast<core::Nanos>(kKeysPollFastFor)
                                      ? kKeysPoll
                                      : kKeysPollSlow);
    evtimer_add(keepalive_timer.get(), &tv);
    return;
  }
  stopKeysWait();
  resetContext();
  start();
}

void Exchange::stopKeysWait() noexcept {
  if (keys_waiting_) {
    keys_waiting_ = false;
    evtimer_del(keepalive_timer.get());
    keys_.source->endWait();
  }
}

// A request answered from its head alone (401, 403, 404, 405, 415, 429…): its body is never
// read from the socket and no 100 Continue is sent. The id is echoed only when the whole body
// is already in; otherwise the answer carries "id": null and the connection closes, since the
// body bytes still to come cannot be told from a next request.
void Exchange::replyBeforeBody() {
  if (head.framing != http::BodyFraming::kNone) {
    if (body_read) {
      size_t len = evbuffer_get_length(body.get());
      verify_buf_.resize(len);
      evbuffer_copyout(body.get(), verify_buf_.data(), len);
      ctx_.reply.id = mcp::extractId(verify_buf_);
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
    ctx_.reply.extra_headers = "Retry-After: 1\r\n";
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
      sendLocalReply();
      return;
    }
  }
  if (limits_done_) {
    connectUpstream();
  } else {
    runLimits();
  }
}

// ---- rate limits: a stage that may stop the exchange and resume it later ----------------

void Exchange::runLimits() {
  limits_.clear();
  limit_index_ = 0;
  ratelimit_lines_.clear();
  best_remaining_ = UINT64_MAX;
  filters::collectLimits(ctx_, limits_);
  nextLimit();
}

// Checks the limits one by one; a Redis-backed one stops the exchange until its answer (or
// the on_error outcome) arrives on this worker's loop, then resumes it here.
void Exchange::nextLimit() {
  while (limit_index_ < limits_.size()) {
    const filters::LimitCheck& c = limits_[limit_index_];
    const policy::RedisSettings& rs = snap_->policy->redis();
    if (c.spec->backend == policy::RateLimitSpec::Backend::kRedis && rs.present) {
      ratelimit::RedisLimiter& redis = w_->redisFor(rs);
      redis_owner_ = &redis;
      redis_handle_ = redis.check(c.key, c.rate, [this](const ratelimit::Decision& d) {
        redis_handle_ = 0;
        redis_owner_ = nullptr;
        if (onLimitDecision(d)) {
          nextLimit();
        }
      });
      if (redis_handle_ != 0) {
        return;  // stopped: resumed by the callback
      }
      // No timer could be had: decide locally rather than hang.
    }
    const ratelimit::Decision d = w_->shared->limiter->check(c.key, c.rate);
    limits_[limit_index_].charged_local = d.allowed;
    if (!onLimitDecision(d)) {
      return;
    }
  }
  limitsPassed();
}

// Every limit admitted the request: read its body if it is buffered and not read yet,
// else go upstream.
void Exchange::limitsPassed() {
  limits_done_ = true;
  if (body_mode == BodyMode::kBuffer && !body_read) {
    beginBodyRead();
    return;
  }
  connectUpstream();
}

// What the first `count` limits took from local buckets is given back: the request is refused.
void Exchange::refundLimits(size_t count) {
  for (size_t i = 0; i < count && i < limits_.size(); ++i) {
    if (limits_[i].charged_local) {
      w_->shared->limiter->refund(limits_[i].key, limits_[i].rate);
      limits_[i].charged_local = false;
    }
  }
}

// True: admitted, go on with the next limit. False: a 429 (or 503) is on its way.
bool Exchange::onLimitDecision(const ratelimit::Decision& d) {
  const filters::LimitCheck& c = limits_[limit_index_];
  const char* why = d.allowed ? "" : d.unavailable ? "store unavailable" : "rate limited";
  ctx_.verdicts.push_back(policy::Verdict{c.spec->name, why, d.allowed, true, c.spec->audit});
  if (c.spec->audit) {
    // Its own bucket was charged and a refusal is recorded; the request goes on.
    ++limit_index_;
    return true;
  }
  if (!d.allowed) {
    if (d.unavailable) {
      // The backend could not decide (Redis down, on_error: deny): the caller is not over
      // its limit, and a 429 would tell the agent the wrong thing.
      filters::setReply(ctx_, 503, mcp::code::kOverloaded,
                        "Service Unavailable: the rate-limit store is unavailable; retry",
                        "ratelimit_unavailable");
      ctx_.reply.extra_headers = "Retry-After: 1\r\n";
    } else {
      filters::setRateLimitedReply(ctx_, c, d);
    }
    // The request is refused: what the limits before this one took is given back (a refused
    // batch or a request refused by its second limit spends no quota). Redis-backed limits
    // keep what they took.
    refundLimits(limit_index_);
    replyBeforeBody();
    return false;
  }
  if (s_->rate_limit_headers && d.remaining <= best_remaining_) {
    best_remaining_ = d.remaining;  // the most constrained limit speaks for the answer
    ratelimit_lines_ = ratelimit::headerLines(c.spec->name, c.rate, d, false);
  }
  ++limit_index_;
  return true;
}

// ---- local replies and the end ----------------------------------------------------------

void Exchange::localReply(int st, int code, const char* message, Outcome why,
                          const char* extra_headers) {
  releaseUpstream();
  filters::setReply(ctx_, st, code, message, core::outcomeName(why).data(), false);
  ctx_.reply.extra_headers = extra_headers;
  sendLocalReply();
}

void Exchange::sendLocalReply() {
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
  stopFederation();
}

void Exchange::cancel() {
  stopKeysWait();
  if (redis_handle_ != 0 && redis_owner_ != nullptr) {
    redis_owner_->cancel(redis_handle_);
    redis_handle_ = 0;
    redis_owner_ = nullptr;
  }
  releaseUpstream(false);  // closed, never pooled
  releaseBody();
  stopFederation();
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
  x->stopKeysWait();
  evtimer_del(x->keepalive_timer.get());
  x->framer_.reset();
  x->up_.release(false);
  x->up_open_ = false;
  x->stopFederation();
  x->catalog_ = nullptr;
  x->redis_handle_ = 0;
  x->redis_owner_ = nullptr;
  x->head.clear();
  x->ctx_.reset();
  x->arena_.reset();
  x->limits_.clear();
  x->session_server_id_ = {};
  x->stream_ = nullptr;
  x->snap_.reset();
  if (x->body) {
    evbuffer_drain(x->body.get(), evbuffer_get_length(x->body.get()));
  }
  trim(x->head_buf);
  trim(x->verify_buf_);
  trim(x->capture_);
  trim(x->fed_body_);
  x->dropListAnswer();
  x->filter_chain_.reset();  // a large answer's chunks go back now, not at the next list
  trim(x->ratelimit_lines_);
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
