// Downstream connection + exchange (see connection.h).

#include "gateway/proxy/connection.h"

#include <event2/buffer.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>

#include <sys/socket.h>

#include "gateway/core/ascii.h"
#include "gateway/core/assert.h"
#include "gateway/filters/pipeline.h"
#include "gateway/http/forwarding.h"
#include "gateway/http/serialize.h"
#include "gateway/mcp/id_scan.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/schema.h"
#include "gateway/mcp/session.h"
#include "gateway/mcp/verifier.h"
#include "gateway/upstream/direct_read.h"

namespace gw::proxy {

namespace {

using std::chrono::milliseconds;

// Backpressure marks (bytes queued in an output buffer).
constexpr size_t kOutHigh = 256 * 1024;
constexpr size_t kOutLow = 64 * 1024;
// Pipelined bytes kept while an exchange is in flight.
constexpr size_t kPipelineHigh = 64 * 1024;
// Upper bound on a tools/list answer captured for schema learning.
constexpr size_t kMaxCapture = 4 * 1024 * 1024;
// Upstream response heads are bounded like request heads, with room to spare.
constexpr size_t kMaxResponseHead = 64 * 1024;
// Lingering close: after an error answer the write side is shut and the client's input is
// read and dropped for at most this long, so the client reads the answer instead of a reset
// (nginx lingering_timeout, Envoy delayed_close_timeout).
constexpr milliseconds kLingerTime{2000};

timeval toTimeval(milliseconds d) {
  if (d.count() < 0) {
    d = milliseconds(0);
  }
  return timeval{static_cast<time_t>(d.count() / 1000),
                 static_cast<suseconds_t>((d.count() % 1000) * 1000)};
}

bool isEventStream(const http::ResponseHead& r) {
  const http::HeaderField* ct = http::findField(r.fields, "content-type");
  return ct != nullptr && core::istartsWith(ct->value, "text/event-stream");
}

void addStr(evbuffer* b, std::string_view s) {
  evbuffer_add(b, s.data(), s.size());
}

using event::Sent;

// The outcome (log, metrics label) of a request head that did not parse: one fixed name per
// status, never the parser's free text.
core::Outcome garbageOutcome(int status) {
  switch (status) {
    case 414:
      return core::Outcome::kRequestLineTooLong;
    case 431:
      return core::Outcome::kHeaderTooLarge;
    case 501:
      return core::Outcome::kUnsupportedTransferCoding;
    default:
      return core::Outcome::kMalformedRequest;
  }
}

void onGarbageTimer(evutil_socket_t, short, void* arg) {
  auto& w = *static_cast<WorkerContext*>(arg);
  if (uint64_t n = w.garbage_log.takeSuppressed(); n > 0) {
    spdlog::warn("suppressed {} more malformed-request log lines (limit {} a second per worker)", n,
                 w.garbage_log.perSecond());
  }
}

// One log line for a request whose head did not parse (or did not arrive), at most
// 10 a second per worker (WorkerContext::garbage_log): a flood of garbage cannot fill a disk. The
// lines dropped are counted (mcp_gateway_log_lines_suppressed_total) and summed up in one
// line a second later. `peer` is an address printed by inet_ntop; `reason` is static text.
void logGarbage(WorkerContext& w, std::string_view peer, int status, const char* reason) {
  if (w.garbage_log.take(static_cast<int64_t>(std::time(nullptr)))) {
    spdlog::warn("rejected a malformed request from {}: {} ({})", peer, reason, status);
    return;
  }
  w.metrics->log_lines_suppressed.add(1);
  if (w.garbage_log.suppressed() == 1) {
    if (!w.garbage_timer) {
      w.garbage_timer.reset(evtimer_new(w.base, onGarbageTimer, &w));
    }
    timeval tv{1, 0};
    evtimer_add(w.garbage_timer.get(), &tv);
  }
}

}  // namespace

// ---- lifetime ---------------------------------------------------------------------------

void Connection::start(WorkerContext& w, evutil_socket_t fd, std::string peer,
                       const core::IpAddress& ip) {
  auto* c = new Connection(w, fd, std::move(peer), ip);
  if (!c->down_.isOpen()) {
    delete c;  // never opened: nothing refers to it
    return;
  }
  // Output is written from the loop (onResume); the write event is on only while the socket
  // holds back bytes.
  c->down_.disableWrite();
  c->down_.enableRead();
  c->setSendTimeout();
  // A new connection must send its first request within header_timeout (not the keep-alive
  // timeout): a client that opens sockets and stays silent cannot hold slots for long.
  c->armDownTimer(c->s_->limits.header_timeout);
}

Connection::Connection(WorkerContext& w, evutil_socket_t fd, std::string peer,
                       const core::IpAddress& ip)
    : w_(w), peer_(std::move(peer)), peer_ip_(ip) {
  snap_ = w_.shared->snapshot.load();
  s_ = snap_->settings.get();
  if (!down_.open(w_.base, fd, &Connection::onDownRead, &Connection::onDownWrite,
                  &Connection::onDownEvent, this)) {
    w_.shared->client_counts.release(peer_ip_);  // (open closed fd)
    return;
  }
  upstream::setNoDelay(fd);
  down_timer_ = event::makeTimer<Connection, &Connection::onDownTimer>(w_.base, this);
  if (!w_.flush) {
    w_.flush.reset(evtimer_new(
        w_.base,
        [](evutil_socket_t, short, void* arg) { flushPending(*static_cast<WorkerContext*>(arg)); },
        &w_));
    w_.reaper.reset(evtimer_new(
        w_.base,
        [](evutil_socket_t, short, void* arg) { reapClosed(*static_cast<WorkerContext*>(arg)); },
        &w_));
  }
  // The request state (head copy, field views, decoded values, upstream timers) is taken
  // from the worker's ExchangePool per request: an idle connection costs its bufferevent, one
  // timer and this object.
  ++w_.local_connections;
  w_.connections.insert(this);
  w_.shared->connections.fetch_add(1, std::memory_order_relaxed);
  w_.metrics->connections_accepted.add(1);
}

Connection::~Connection() {
  GW_ASSERT(closed_ || !down_.isOpen());
}

// Closes the connection now (its socket, any upstream connection, every timer and pending
// decision, so no callback can reach it again) and leaves the object to the worker's reaper,
// which deletes it after the current loop turn: code still on the stack may touch it.
void Connection::closeNow() {
  if (closed_) {
    return;
  }
  closed_ = true;
  if (flush_queued_) {
    w_.pending_flush[flush_slot_] = nullptr;
    flush_queued_ = false;
  }
  evtimer_del(down_timer_.get());
  if (x_ != nullptr) {
    if (x_->redis_handle != 0 && x_->redis_owner != nullptr) {
      x_->redis_owner->cancel(x_->redis_handle);
      x_->redis_handle = 0;
    }
    releaseUpstream(false);  // closed, never pooled
    countSse(false);
    releaseBody();
    giveExchange();
  }
  if (down_.isOpen()) {
    down_.close();
    w_.connections.erase(this);
    --w_.local_connections;
    w_.shared->connections.fetch_sub(1, std::memory_order_relaxed);
    w_.shared->client_counts.release(peer_ip_);
  }
  w_.closed.push_back(this);
  if (w_.closed.size() == 1) {
    event_active(w_.reaper.get(), EV_TIMEOUT, 0);
  }
}

void Connection::reapClosed(WorkerContext& w) {
  std::vector<Connection*> dead;
  dead.swap(w.closed);
  for (Connection* c : dead) {
    delete c;
  }
}

// The request state comes from the worker's pool for the request's lifetime; its timers call
// back into this connection.
bool Connection::takeExchange() {
  x_ = w_.exchanges.take(w_.base, this, &Connection::keepaliveTimerCb);
  if (x_ == nullptr) {
    return false;
  }
  x_->up.init(w_.base, w_.pools.get(), w_.parser.get(), w_.clock, this);
  return true;
}

void Connection::giveExchange() {
  if (x_ == nullptr) {
    return;
  }
  countSse(false);
  x_->framer.reset();  // its sink is this connection
  x_->head.clear();
  w_.exchanges.give(x_);
  x_ = nullptr;
}

void Connection::keepaliveTimerCb(evutil_socket_t, short, void* arg) {
  static_cast<Exchange*>(arg)->conn->onKeepaliveTimer();
}

bool Connection::closeIfIdle() {
  if (state_ != State::kIdle) {
    return false;
  }
  closeAfterFlush();
  return true;
}

// Closes once the queued output reached the client (bounded by keepalive_timeout).
void Connection::closeAfterFlush() {
  if (down_.outputLength() == 0) {
    lingerOrClose();
    return;
  }
  state_ = State::kClosing;
  down_.disableRead();
  down_.setWriteLow(0);
  armDownTimer(s_->limits.keepalive_timeout);
  scheduleFlush();
}

// The output is written: close now, or — after an error answer — shut the write side and
// read and drop what the client still sends until it closes or kLingerTime passes. Closing a
// socket with unread input makes the kernel send a reset, which can destroy the answer in the
// client's receive buffer before it was read.
void Connection::lingerOrClose() {
  if (!linger_ || state_ == State::kLinger) {
    closeNow();
    return;
  }
  state_ = State::kLinger;
  ::shutdown(down_.fd(), SHUT_WR);
  evbuffer* in = down_.input();
  evbuffer_drain(in, evbuffer_get_length(in));
  down_.setReadHigh(0);
  down_.disableWrite();
  down_.enableRead();
  armDownTimer(kLingerTime);
}

// send_timeout: a client that takes no byte of the output held for it for this long is
// closed (the write event's timeout runs only while the socket holds bytes back).
void Connection::setSendTimeout() {
  if (s_->limits.send_timeout == send_timeout_) {
    return;
  }
  send_timeout_ = s_->limits.send_timeout;
  down_.setWriteTimeout(send_timeout_);
}

void Connection::armDownTimer(milliseconds d) {
  if (d.count() <= 0) {
    evtimer_del(down_timer_.get());
    return;
  }
  timeval tv = toTimeval(d);
  evtimer_add(down_timer_.get(), &tv);
}

// ---- downstream events ------------------------------------------------------------------

void Connection::onDownRead(void* arg) {
  static_cast<Connection*>(arg)->process();
}

void Connection::onDownWrite(void* arg) {
  auto* c = static_cast<Connection*>(arg);
  const size_t queued = c->down_.outputLength();
  if (queued == 0) {
    c->down_.disableWrite();  // the next bytes go out from onResume
  }
  if (c->state_ == State::kClosing && queued == 0) {
    c->lingerOrClose();
    return;
  }
  if (c->state_ == State::kIdle && queued <= kOutLow) {
    if (queued == 0 && c->down_.inputLength() == 0) {
      c->down_.releaseIdle();  // waiting for the next request: no buffers held
    }
    c->down_.setWriteLow(0);
    c->down_.enableRead();
    c->parseHead();
    return;
  }
  if (c->x_ != nullptr && c->x_->up.paused() && queued <= kOutLow) {
    c->x_->up.resumeReading();  // relays what already waits in the upstream input
  }
}

void Connection::onDownEvent(void* arg, short what) {
  auto* c = static_cast<Connection*>(arg);
  if (what & BEV_EVENT_TIMEOUT) {
    // send_timeout: the client took no byte of its output for that long. An exchange in
    // flight (an SSE stream to a reader that stopped) ends with it.
    if (c->state_ == State::kExchange || c->state_ == State::kBody) {
      c->endAborted(Outcome::kSendTimeout);
    }
    c->closeNow();
    return;
  }
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
    // The client is gone. Mid-exchange this is the protocol's cancellation signal: the
    // upstream connection is closed at once and never pooled.
    if (c->state_ == State::kExchange || c->state_ == State::kBody) {
      c->endAborted(c->clientClosedOutcome());
      c->closeNow();  // nothing more can reach it
      return;
    }
    c->closeNow();
  }
}

void Connection::onDownTimer() {
  switch (state_) {
    case State::kIdle:
      closeAfterFlush();
      return;
    case State::kHead:
      x_->outcome = Outcome::kHeaderTimeout;
      garbage_ = true;
      logGarbage(w_, peer_, 408, "request head not received in time");
      sendPlainError(408, "Request Timeout", "request head not received in time\n");
      return;
    case State::kBody:
      filters::setReply(x_->ctx, 408, mcp::code::kBodyTimeout,
                        "Request Timeout: request body not received in time", "body_timeout",
                        false);
      close_after_ = true;
      sendLocalReply();
      return;
    case State::kExchange:
      if (x_->body_mode == BodyMode::kStream && !x_->request_sent && !x_->resp_started) {
        releaseUpstream(false);
        filters::setReply(x_->ctx, 408, mcp::code::kBodyTimeout,
                          "Request Timeout: request body not received in time", "body_timeout",
                          false);
        close_after_ = true;
        sendLocalReply();
      }
      return;
    case State::kClosing:
    case State::kLinger:
      closeNow();  // the client does not take the last bytes, or lingered long enough
      return;
  }
}

// Reads whatever the current state can use from the downstream input buffer.
void Connection::process() {
  if (state_ == State::kLinger) {
    evbuffer* in = down_.input();
    evbuffer_drain(in, evbuffer_get_length(in));
    return;
  }
  if (state_ == State::kIdle || state_ == State::kHead) {
    parseHead();
  } else if (state_ == State::kBody) {
    readBody();
  } else if (state_ == State::kExchange && x_->body_mode == BodyMode::kStream &&
             !x_->request_sent && x_->up.active()) {
    pumpStreamBody();
  }
}

// ---- request head -----------------------------------------------------------------------

void Connection::parseHead() {
  evbuffer* in = down_.input();
  size_t avail = evbuffer_get_length(in);
  if (avail == 0) {
    return;
  }
  if (state_ == State::kIdle) {
    if (x_ == nullptr && !takeExchange()) {
      closeNow();  // out of memory
      return;
    }
    state_ = State::kHead;
    // Nothing of the previous request may outlive it (its route points into the snapshot
    // about to be replaced).
    x_->ctx.reset();
    x_->status = 0;
    x_->bytes_in = x_->bytes_out = 0;
    x_->outcome = Outcome::kNone;
    x_->endpoint = nullptr;
    garbage_ = false;
    linger_ = false;
    snap_ = w_.shared->snapshot.load();
    s_ = snap_->settings.get();
    setSendTimeout();
    armDownTimer(s_->limits.header_timeout);
    x_->started = now();
  }
  const auto& lim = s_->limits;
  size_t n = std::min<size_t>(avail, lim.max_header_bytes + 1);
  x_->head_buf.resize(n);
  evbuffer_copyout(in, x_->head_buf.data(), n);
  http::HeadLimits hl{lim.max_request_line, lim.max_header_bytes, lim.max_headers,
                      lim.max_header_line};
  http::ParseResult pr = w_.parser->parseRequest(x_->head_buf, hl, x_->head);
  if (pr.status == http::ParseStatus::kIncomplete) {
    return;
  }
  if (pr.status == http::ParseStatus::kError) {
    // Not a request the gateway parsed: no access-log line, a rate-limited log line instead
    // (logGarbage); the outcome is a fixed name per status, the parser's reason goes to the log.
    int status = http::statusFor(pr.error);
    x_->outcome = garbageOutcome(status);
    garbage_ = true;
    logGarbage(w_, peer_, status, pr.reason);
    std::string text = std::string(pr.reason) + "\n";
    sendPlainError(status, http::reasonPhrase(status), text.c_str());
    return;
  }
  evbuffer_drain(in, x_->head.head_bytes);
  x_->bytes_in = x_->head.head_bytes;
  startRequest();
}

void Connection::startRequest() {
  w_.shared->requests.fetch_add(1, std::memory_order_relaxed);
  x_->ctx.reset();
  x_->arena.reset();
  x_->ctx.snapshot = snap_.get();
  x_->ctx.head = &x_->head;
  x_->ctx.client_ip =
      http::clientAddress(x_->head.fields, peer_, s_->trusted_proxies);  // views x_->head_buf
  close_after_ = !x_->head.keep_alive;
  linger_ = false;
  garbage_ = false;
  x_->sent_continue = false;
  x_->body_mode = BodyMode::kNone;
  x_->request_sent = false;
  x_->resp_started = false;
  x_->status = 0;
  x_->bytes_out = 0;
  x_->outcome = Outcome::kNone;
  x_->endpoint = nullptr;
  x_->body_read = false;
  x_->limits_done = false;
  x_->sent_id = mcp::RequestId{};
  x_->forwarded = false;
  x_->ratelimit_lines.clear();
  const bool has_body = x_->head.framing != http::BodyFraming::kNone;

  // Expect (RFC 9110 §10.1.1): only 100-continue is understood. It is honoured on HTTP/1.1
  // (an HTTP/1.0 100-continue is ignored, as the RFC requires); anything else, or a list,
  // gets 417 and the connection closes (its body, if any, is never read).
  if (http::expectation(x_->head.fields, x_->head.version) == http::Expectation::kUnsupported) {
    filters::setReply(x_->ctx, 417, mcp::code::kInvalidRequest,
                      "Expectation Failed: only 'Expect: 100-continue' is supported",
                      "expectation_failed", false);
    close_after_ = true;
    sendLocalReply();
    return;
  }

  if (x_->head.framing == http::BodyFraming::kContentLength &&
      x_->head.content_length > s_->limits.max_body_bytes) {
    filters::setReply(x_->ctx, 413, mcp::code::kBodyTooLarge,
                      "Content Too Large: the body exceeds max_body_bytes", "body_too_large",
                      false);
    close_after_ = true;
    sendLocalReply();
    return;
  }

  filters::FilterStatus st = filters::Pipeline::onHeaders(x_->ctx, x_->arena);
  if (st == filters::FilterStatus::kLocalReply) {
    replyBeforeBody();
    return;
  }
  if (st == filters::FilterStatus::kNeedBody || x_->head.framing == http::BodyFraming::kChunked ||
      (has_body && s_->limits.request_buffering)) {
    // Read whole before the upstream is contacted: verify mode, a chunked body (it goes
    // upstream with one Content-Length), and every body under request_buffering — a slow or
    // truncated body then never ties up an upstream connection.
    x_->body_mode = BodyMode::kBuffer;
  } else if (has_body) {
    // Straight through (Content-Length only: chunked is buffered): the body is streamed as it
    // arrives once the limits passed; pumpStreamBody moves exactly this many bytes.
    x_->body_mode = BodyMode::kStream;
    x_->body_remaining = x_->head.content_length;
  }

  state_ = State::kExchange;
  armDownTimer(milliseconds(0));
  down_.setReadHigh(kPipelineHigh);
  if (x_->body_mode == BodyMode::kBuffer && x_->ctx.need_body &&
      (x_->ctx.legacy_inspect ||
       !(x_->head.expect_continue && x_->head.version == http::Version::kHttp11))) {
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

// A request answered from its head alone (401, 403, 404, 405, 415, 429…): its body is never
// read from the socket and no 100 Continue is sent. The id is echoed only when the whole body
// is already in the input buffer; otherwise the answer carries "id": null and the connection
// closes, since the body bytes still to come cannot be told from a next request.
void Connection::replyBeforeBody() {
  if (x_->head.framing != http::BodyFraming::kNone) {
    if (x_->body_read) {
      size_t len = evbuffer_get_length(x_->body.get());
      x_->verify_buf.resize(len);
      evbuffer_copyout(x_->body.get(), x_->verify_buf.data(), len);
      x_->ctx.reply.id = mcp::extractId(x_->verify_buf);
    } else if (!takeBufferedBody()) {
      close_after_ = true;
    }
  }
  sendLocalReply();
}

// The whole Content-Length body is already here: take it off the input (the connection can
// go on) and, when the reply echoes ids, read the id from it. False when it is not all here
// (or chunked).
bool Connection::takeBufferedBody() {
  evbuffer* in = down_.input();
  if (x_->head.framing != http::BodyFraming::kContentLength ||
      evbuffer_get_length(in) < x_->head.content_length) {
    return false;
  }
  const size_t len = x_->head.content_length;
  if (x_->ctx.reply.echo_id && x_->ctx.reply.id.kind == mcp::RequestId::Kind::kAbsent) {
    x_->verify_buf.resize(len);
    evbuffer_copyout(in, x_->verify_buf.data(), len);
    x_->ctx.reply.id = mcp::extractId(x_->verify_buf);
  }
  evbuffer_drain(in, len);
  x_->bytes_in += len;
  return true;
}

// ---- request body -----------------------------------------------------------------------

// Holds n more request-body bytes against limits.max_buffered_body_bytes (all connections).
// False: over the cap; nothing was taken.
bool Connection::reserveBody(uint64_t n) {
  const uint64_t cap = s_->limits.max_buffered_body_bytes;
  uint64_t held = w_.shared->buffered_body_bytes.fetch_add(n, std::memory_order_relaxed);
  if (held + n > cap) {
    w_.shared->buffered_body_bytes.fetch_sub(n, std::memory_order_relaxed);
    return false;
  }
  x_->body_reserved += n;
  return true;
}

void Connection::releaseBody() {
  if (x_->body_reserved > 0) {
    w_.shared->buffered_body_bytes.fetch_sub(x_->body_reserved, std::memory_order_relaxed);
    x_->body_reserved = 0;
  }
}

// Reads the whole body (bounded by max_body_bytes) into x_->body, then bodyComplete().
void Connection::beginBodyRead() {
  x_->body_mode = BodyMode::kBuffer;
  if (!x_->body) {
    x_->body = event::makeBuffer();
  }
  evbuffer_drain(x_->body.get(), evbuffer_get_length(x_->body.get()));
  x_->req_chunked.reset();
  x_->body_remaining = x_->head.content_length;
  if (x_->head.framing == http::BodyFraming::kContentLength &&
      !reserveBody(x_->head.content_length)) {
    filters::setReply(x_->ctx, 503, mcp::code::kOverloaded,
                      "Service Unavailable: the gateway holds too many request bodies; retry",
                      "body_buffer_full");
    x_->ctx.reply.extra_headers = "Retry-After: 1\r\n";
    replyBeforeBody();
    return;
  }
  state_ = State::kBody;
  down_.setReadHigh(0);
  armDownTimer(s_->limits.body_timeout);
  if (x_->head.expect_continue && x_->head.version == http::Version::kHttp11 &&
      !x_->sent_continue && down_.inputLength() == 0) {
    addStr(down_.output(), "HTTP/1.1 100 Continue\r\n\r\n");
    x_->sent_continue = true;
    scheduleFlush();
  }
  readBody();
}

bool Connection::moveChunkedBody(evbuffer* in) {
  while (evbuffer_get_length(in) > 0) {
    size_t avail = evbuffer_get_length(in);
    size_t want = std::min<size_t>(avail, http::ChunkedDecoder::kMaxLineBytes + 2);
    // Look at the first contiguous segment; pull up more only when a framing line spans
    // segments (kNeedMore on a short view).
    evbuffer_iovec vec;
    if (evbuffer_peek(in, -1, nullptr, &vec, 1) < 1) {
      return true;
    }
    std::string_view view(static_cast<const char*>(vec.iov_base), vec.iov_len);
    http::ChunkedDecoder::Step step = x_->req_chunked.next(view);
    if (step.kind == http::ChunkedDecoder::Kind::kNeedMore && vec.iov_len < want) {
      const char* p =
          reinterpret_cast<const char*>(evbuffer_pullup(in, static_cast<ev_ssize_t>(want)));
      step = x_->req_chunked.next(std::string_view(p, want));
    }
    switch (step.kind) {
      case http::ChunkedDecoder::Kind::kNeedMore:
        if (avail > http::ChunkedDecoder::kMaxTrailerBytes + http::ChunkedDecoder::kMaxLineBytes) {
          x_->outcome = Outcome::kBadChunk;
          sendPlainError(400, "Bad Request", "malformed chunked body\n");
          return false;
        }
        return true;
      case http::ChunkedDecoder::Kind::kError:
        x_->outcome = Outcome::kBadChunk;
        sendPlainError(400, "Bad Request", "malformed chunked body\n");
        return false;
      case http::ChunkedDecoder::Kind::kData:
        if (evbuffer_get_length(x_->body.get()) + step.length > s_->limits.max_body_bytes) {
          filters::setReply(x_->ctx, 413, mcp::code::kBodyTooLarge,
                            "Content Too Large: the body exceeds max_body_bytes", "body_too_large",
                            false);
          close_after_ = true;
          sendLocalReply();
          return false;
        }
        if (!reserveBody(step.length)) {
          filters::setReply(x_->ctx, 503, mcp::code::kOverloaded,
                            "Service Unavailable: the gateway holds too many request bodies; retry",
                            "body_buffer_full", false);
          x_->ctx.reply.extra_headers = "Retry-After: 1\r\n";
          close_after_ = true;
          sendLocalReply();
          return false;
        }
        evbuffer_remove_buffer(in, x_->body.get(), step.length);
        x_->bytes_in += step.length;
        break;
      case http::ChunkedDecoder::Kind::kFraming:
        evbuffer_drain(in, step.length);
        x_->bytes_in += step.length;
        break;
      case http::ChunkedDecoder::Kind::kDone:
        evbuffer_drain(in, step.length);
        x_->bytes_in += step.length;
        return true;
    }
  }
  return true;
}

void Connection::readBody() {
  evbuffer* in = down_.input();
  if (x_->head.framing == http::BodyFraming::kChunked) {
    if (!moveChunkedBody(in)) {
      return;  // a reply was sent (connection closing)
    }
    if (!x_->req_chunked.done()) {
      return;
    }
  } else {
    size_t n = std::min<uint64_t>(x_->body_remaining, evbuffer_get_length(in));
    evbuffer_remove_buffer(in, x_->body.get(), n);
    x_->body_remaining -= n;
    x_->bytes_in += n;
    if (x_->body_remaining > 0) {
      return;
    }
  }
  bodyComplete();
}

void Connection::bodyComplete() {
  armDownTimer(milliseconds(0));
  down_.setReadHigh(kPipelineHigh);
  x_->body_read = true;
  state_ = State::kExchange;
  size_t len = evbuffer_get_length(x_->body.get());
  if (x_->ctx.need_body) {
    // The one body copy: contiguous and padded for simdjson (verify / classify only).
    x_->verify_buf.resize(len + mcp::bodyPadding());
    evbuffer_copyout(x_->body.get(), x_->verify_buf.data(), len);
    std::memset(x_->verify_buf.data() + len, 0, mcp::bodyPadding());
    filters::FilterStatus st =
        filters::Pipeline::onBody(x_->ctx, std::string_view(x_->verify_buf.data(), len));
    if (st == filters::FilterStatus::kLocalReply) {
      sendLocalReply();
      return;
    }
  }
  if (x_->limits_done) {
    connectUpstream();
  } else {
    runLimits();
  }
}

// ---- rate limits ------------------------------------------------------------------------

void Connection::runLimits() {
  x_->limits.clear();
  x_->limit_index = 0;
  x_->ratelimit_lines.clear();
  x_->best_remaining = UINT64_MAX;
  filters::collectLimits(x_->ctx, x_->limits);
  nextLimit();
}

// Checks the limits one by one; a Redis-backed one suspends until its answer (or the
// on_error outcome) arrives on this worker's loop.
void Connection::nextLimit() {
  while (x_->limit_index < x_->limits.size()) {
    const filters::LimitCheck& c = x_->limits[x_->limit_index];
    const policy::RedisSettings& rs = snap_->policy->redis();
    if (c.spec->backend == policy::RateLimitSpec::Backend::kRedis && rs.present) {
      ratelimit::RedisLimiter& redis = w_.redisFor(rs);
      x_->redis_owner = &redis;
      x_->redis_handle = redis.check(c.key, c.rate, [this](const ratelimit::Decision& d) {
        x_->redis_handle = 0;
        x_->redis_owner = nullptr;
        if (onLimitDecision(d)) {
          nextLimit();
        }
      });
      if (x_->redis_handle != 0) {
        return;
      }
      // No timer could be had: decide locally rather than hang.
    }
    const ratelimit::Decision d = w_.shared->limiter->check(c.key, c.rate);
    x_->limits[x_->limit_index].charged_local = d.allowed;
    if (!onLimitDecision(d)) {
      return;
    }
  }
  limitsPassed();
}

// Every limit admitted the request: read its body if it is buffered and not read yet,
// else go upstream.
void Connection::limitsPassed() {
  x_->limits_done = true;
  if (x_->body_mode == BodyMode::kBuffer && !x_->body_read) {
    beginBodyRead();
    return;
  }
  connectUpstream();
}

// True: admitted, go on with the next limit. False: a 429 (or 503) is on its way.
bool Connection::onLimitDecision(const ratelimit::Decision& d) {
  const filters::LimitCheck& c = x_->limits[x_->limit_index];
  if (!d.allowed) {
    if (d.unavailable) {
      // The backend could not decide (Redis down, on_error: deny): the caller is not over
      // its limit, and a 429 would tell the agent the wrong thing.
      filters::setReply(x_->ctx, 503, mcp::code::kOverloaded,
                        "Service Unavailable: the rate-limit store is unavailable; retry",
                        "ratelimit_unavailable");
      x_->ctx.reply.extra_headers = "Retry-After: 1\r\n";
    } else {
      filters::setRateLimitedReply(x_->ctx, c, d);
    }
    // The request is refused: what the limits before this one took is given back (a refused
    // batch or a request refused by its second limit spends no quota). Redis-backed limits
    // keep what they took.
    for (size_t i = 0; i < x_->limit_index; ++i) {
      if (x_->limits[i].charged_local) {
        w_.shared->limiter->refund(x_->limits[i].key, x_->limits[i].rate);
      }
    }
    replyBeforeBody();
    return false;
  }
  if (s_->rate_limit_headers && d.remaining <= x_->best_remaining) {
    x_->best_remaining = d.remaining;  // the most constrained limit speaks for the answer
    x_->ratelimit_lines = ratelimit::headerLines(c.spec->name, c.rate, d, false);
  }
  ++x_->limit_index;
  return true;
}

// ---- local replies ----------------------------------------------------------------------

void Connection::sendLocalReply() {
  const filters::LocalReply& r = x_->ctx.reply;
  std::string body = filters::renderReplyBody(r);
  x_->status = r.status;
  if (x_->outcome == Outcome::kNone) {
    x_->outcome = core::outcomeFromName(r.reason);
  }
  if (state_ == State::kBody) {
    close_after_ = true;  // body only partly read
  }
  if (r.status >= 400) {
    linger_ = true;  // if this answer ends the connection, let the client read it
  }
  if (w_.shared->draining.load(std::memory_order_relaxed)) {
    close_after_ = true;  // the answer says so: no keep-alive while draining
  }
  char head[256];
  int n = std::snprintf(head, sizeof(head),
                        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s", r.status,
                        http::reasonPhrase(r.status),
                        r.json_rpc ? "application/json" : "text/plain; charset=utf-8", body.size(),
                        close_after_                                 ? "Connection: close\r\n"
                        : x_->head.version == http::Version::kHttp10 ? "Connection: keep-alive\r\n"
                                                                     : "");
  evbuffer* out = down_.output();
  evbuffer_add(out, head, static_cast<size_t>(n));
  addStr(out, r.extra_headers);
  addStr(out, "\r\n");
  // An answer to HEAD has no content whatever its Content-Length says (RFC 9110 §9.3.2,
  // RFC 9112 §6.3): body bytes here would be read as the start of the next answer.
  const size_t content = x_->head.method == "HEAD" ? 0 : body.size();
  evbuffer_add(out, body.data(), content);
  x_->bytes_out += static_cast<size_t>(n) + r.extra_headers.size() + 2 + content;
  finishRequest(!close_after_);
}

void Connection::sendPlainError(int status, const char* reason_phrase, const char* text) {
  x_->status = status;
  close_after_ = true;
  linger_ = true;
  char head[256];
  size_t len = std::strlen(text);
  int n = std::snprintf(head, sizeof(head),
                        "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                        status, reason_phrase, len);
  evbuffer* out = down_.output();
  evbuffer_add(out, head, static_cast<size_t>(n));
  evbuffer_add(out, text, len);
  x_->bytes_out += static_cast<size_t>(n) + len;
  finishRequest(false);
}

// Ends the current request: access log, then either wait for the next one or close once
// the output is flushed. Bytes after a request that ends the connection are never parsed.
void Connection::finishRequest(bool keep_alive) {
  GW_ASSERT(x_ != nullptr);
  if (x_->head.head_bytes > 0 || x_->status != 0) {
    endRequest();
  }
  releaseBody();
  releaseUpstream(false);
  giveExchange();
  snap_ = w_.shared->snapshot.load();
  s_ = snap_->settings.get();
  scheduleFlush();
  if (!keep_alive || w_.shared->draining.load(std::memory_order_relaxed)) {
    state_ = State::kClosing;
    armDownTimer(s_->limits.keepalive_timeout);
    down_.disableRead();
    down_.setWriteLow(0);
    if (down_.outputLength() == 0) {
      lingerOrClose();
    }
    return;
  }
  state_ = State::kIdle;
  linger_ = false;  // a later close of an idle connection follows no error answer
  armDownTimer(s_->limits.keepalive_timeout);
  down_.setReadHigh(0);
  if (down_.outputLength() > kOutHigh) {
    // The client does not read its answers: take no more requests until it does
    // (onDownWrite resumes below the low mark).
    down_.disableRead();
    down_.setWriteLow(kOutLow);
    return;
  }
  down_.setWriteLow(0);
  down_.enableRead();
  if (down_.inputLength() > 0) {
    // A pipelined request is already here: parse it from the loop, not from this stack.
    parse_pending_ = true;
  }
}

void Connection::scheduleFlush() {
  if (flush_queued_) {
    return;
  }
  flush_queued_ = true;
  flush_slot_ = w_.pending_flush.size();
  w_.pending_flush.push_back(this);
  if (flush_slot_ == 0) {
    event_active(w_.flush.get(), EV_TIMEOUT, 0);
  }
}

void Connection::flushPending(WorkerContext& w) {
  std::vector<Connection*>& list = w.pending_flush;
  // Upstream-bound bytes first, back to back; a connection queued by a callback below is
  // handled whole by onResume.
  const size_t queued = list.size();
  for (size_t i = 0; i < queued; ++i) {
    Connection* c = list[i];
    if (c != nullptr && c->x_ != nullptr && c->x_->up.active() && !c->x_->up.writing()) {
      c->x_->up_drained = c->x_->up.sendNow() == Sent::kDrained;
    }
  }
  // Bounded: a connection re-queues itself only for new output or a pipelined request
  // already in its input, as it would with any event.
  for (size_t i = 0; i < list.size(); ++i) {
    if (Connection* c = list[i]) {
      c->flush_queued_ = false;
      list[i] = nullptr;
      c->onResume();
    }
  }
  list.clear();
}

// From the loop, after the callback that queued output: write it, then do what the write
// callbacks would have done, then parse a pipelined request.
void Connection::onResume() {
  bool parse = std::exchange(parse_pending_, false);
  if (x_ != nullptr) {
    bool up_drained = std::exchange(x_->up_drained, false);
    if (x_->up.active() && !x_->up.writing() &&
        (up_drained || x_->up.sendNow() == Sent::kDrained)) {
      x_->up.onFlushed();
    }
  }
  if (!closed_ && !down_.writing() && down_.sendNow() == Sent::kDrained) {
    onDownWrite(this);
  }
  if (!closed_ && parse && (state_ == State::kIdle || state_ == State::kHead)) {
    parseHead();
  }
}

// ---- upstream ---------------------------------------------------------------------------

// Every stage and limit passed: the request goes to the route's upstream.
void Connection::connectUpstream() {
  if (!pinSession()) {
    return;
  }
  buildUpstreamHead();
  const settings::Upstream& up = s_->upstreams[x_->ctx.route->upstream_index];
  upstream::UpstreamError error{};
  if (!x_->up.start(up, x_->up_head, x_->started, error)) {
    x_->endpoint = x_->up.endpoint();
    onUpstreamError(error);
    return;
  }
  x_->endpoint = x_->up.endpoint();
  x_->up_open = true;
  w_.shared->streams.fetch_add(1, std::memory_order_relaxed);
  x_->forwarded = true;
  // Pipelined bytes wait, bounded, while the exchange runs; reading stays on so a client
  // disconnect is seen at once.
  down_.setReadHigh(kPipelineHigh);
  down_.setWriteLow(kOutLow);
  x_->resp_sse = false;
  x_->capture_json = false;
  x_->capture.clear();
  writeRequest();
}

// The head is written by start(); the body follows (whole, streamed, or none).
void Connection::writeRequest() {
  evbuffer* out = x_->up.output();
  if (x_->body_mode == BodyMode::kBuffer) {
    evbuffer_add_buffer(out, x_->body.get());
    releaseBody();
    x_->request_sent = true;
    x_->up.requestComplete();
  } else if (x_->body_mode == BodyMode::kStream) {
    down_.setReadHigh(0);
    armDownTimer(s_->limits.body_timeout);
    if (x_->head.expect_continue && x_->head.version == http::Version::kHttp11 &&
        down_.inputLength() == 0) {
      addStr(down_.output(), "HTTP/1.1 100 Continue\r\n\r\n");
      scheduleFlush();
    }
    pumpStreamBody();
  } else {
    x_->request_sent = true;
    x_->up.requestComplete();
  }
  scheduleFlush();
}

void Connection::rememberSentId() {
  if (x_->body_mode == BodyMode::kBuffer && x_->body &&
      x_->sent_id.kind == mcp::RequestId::Kind::kAbsent) {
    char prefix[mcp::kIdScanBytes];
    ev_ssize_t n = evbuffer_copyout(x_->body.get(), prefix, sizeof(prefix));
    x_->sent_id = mcp::scanIdPrefix(std::string_view(prefix, n > 0 ? static_cast<size_t>(n) : 0));
    const size_t len = evbuffer_get_length(x_->body.get());
    if (x_->sent_id.kind == mcp::RequestId::Kind::kAbsent && len > sizeof(prefix)) {
      // "id" after the first KiB (a client that writes params first): the whole buffered
      // body, made contiguous once, is read for it.
      const auto* p = evbuffer_pullup(x_->body.get(), -1);
      if (p != nullptr) {
        x_->sent_id = mcp::extractId(std::string_view(reinterpret_cast<const char*>(p), len));
      }
    }
  }
}

// The upstream request's head as name/value pairs (upstream::Http1Upstream adds Host and
// Content-Length for the endpoint it uses): the client's fields minus hop-by-hop ones, the
// client address fields, credentials unless forwarded, and the server's own session id.
void Connection::buildUpstreamHead() {
  const settings::Upstream& up = s_->upstreams[x_->ctx.route->upstream_index];
  upstream::UpstreamRequestHead& uh = x_->up_head;
  http::ConnectionTokens conn;
  conn.collect(x_->head.fields);
  uh.method = x_->head.method;
  const size_t q = x_->head.target.find('?');
  uh.query = q != std::string_view::npos ? x_->head.target.substr(q) : std::string_view{};
  uh.fields.clear();
  uh.client_host = false;
  const bool trusted_peer = http::isTrustedPeer(peer_, s_->trusted_proxies);
  for (const http::HeaderField& f : x_->head.fields) {
    if (http::replacedByForwarding(f, trusted_peer)) {
      continue;  // client address fields: dropped, or merged below (trusted_proxies)
    }
    if (!x_->ctx.forward_credentials && core::iequals(f.name, "authorization")) {
      continue;
    }
    if (core::iequals(f.name, "host")) {
      if (up.host_header != settings::HostHeader::kClient) {
        continue;  // Http1Upstream writes the endpoint's (or the configured) Host
      }
      uh.client_host = true;
    }
    if (x_->session_endpoint >= 0 && core::iequals(f.name, "mcp-session-id")) {
      continue;  // the wrapped id: the server gets its own (below)
    }
    if (http::forwardRequestField(f, conn)) {
      uh.fields.push_back(http::Field{f.name, f.value});
    }
  }
  if (x_->session_endpoint >= 0) {
    uh.fields.push_back(http::Field{"Mcp-Session-Id", x_->session_server_id});
  }
  // The listener is plain HTTP; a TLS listener passes "https".
  http::addClientAddressFields(uh.fields, x_->xff, x_->head.fields, peer_, trusted_peer, "http");
  uh.pinned_endpoint = x_->session_endpoint;
  if (x_->body_mode == BodyMode::kBuffer) {
    rememberSentId();  // the body leaves for the upstream now: its id for a 502/504 later
    uh.content_length = evbuffer_get_length(x_->body.get());
  } else if (x_->body_mode == BodyMode::kStream) {
    uh.content_length = x_->head.content_length;
  } else {
    uh.content_length = 0;
  }
  uh.length_field = x_->head.method == "POST" || x_->head.method == "PUT";
}

// ---- legacy session affinity (mcp/session.h) --------------------------------------------

// A request carrying an Mcp-Session-Id the gateway issued goes to the endpoint that created
// the session, with the server's own id. One that names no endpoint of the route's upstream
// (forged, from before this gateway, from an endpoint since removed) gets the 404 a server
// gives for an unknown session, so the client starts a new one — except on a trusted
// 2026-07-28 request, where Mcp-Session-Id means nothing and is forwarded as sent. False: the
// 404 was sent.
bool Connection::pinSession() {
  x_->session_endpoint = -1;
  x_->session_server_id = {};
  const http::HeaderField* field = nullptr;
  size_t count = 0;
  for (const http::HeaderField& f : x_->head.fields) {
    if (core::iequals(f.name, "mcp-session-id")) {
      field = &f;
      ++count;
    }
  }
  if (count == 0) {
    return true;
  }
  const settings::Upstream& up = s_->upstreams[x_->ctx.route->upstream_index];
  mcp::WrappedSession w;
  w.error = mcp::SessionError::kEmpty;
  if (count == 1) {
    w = mcp::unwrapSessionId(field->value);
  }
  int index = w.error == mcp::SessionError::kNone
                  ? mcp::findSessionEndpoint(up.session_tokens, w.token)
                  : -1;
  if (index >= 0) {
    x_->session_endpoint = index;
    x_->session_server_id = w.server_id;
    return true;
  }
  if (x_->ctx.trusted) {
    return true;
  }
  sessionNotFound("Session not found", Outcome::kSessionNotFound);
  return false;
}

void Connection::sessionNotFound(const char* message, Outcome outcome) {
  rememberSentId();
  upstreamFailed(404, mcp::code::kSessionNotFound, message, outcome);
}

// The upstream's Mcp-Session-Id must be one the client can be given wrapped: one field of
// 1..kMaxServerSessionId visible ASCII bytes (MCP 2025-06-18 transport, Session Management).
bool Connection::upstreamSessionValid(const http::ResponseHead& resp) noexcept {
  size_t count = 0;
  for (const http::HeaderField& f : resp.fields) {
    if (core::iequals(f.name, "mcp-session-id") &&
        (++count > 1 || !mcp::validServerSessionId(f.value))) {
      return false;
    }
  }
  return true;
}

// Writes `Mcp-Session-Id: <token>.<server id>` (upstreamSessionValid checked the id); with no
// token for the endpoint (settings not made by the loader) the field is left out rather than
// handing the client the server's own id.
void Connection::appendWrappedSession(std::string& h, std::string_view server_id) const {
  const settings::Upstream& up = s_->upstreams[x_->ctx.route->upstream_index];
  const size_t index = x_->up.endpointIndex();
  if (index >= up.session_tokens.size()) {
    return;
  }
  const size_t mark = h.size();
  h.append("Mcp-Session-Id: ");
  if (!mcp::wrapSessionId(up.session_tokens[index], server_id, h)) {
    h.resize(mark);
    return;
  }
  h.append("\r\n");
}

// Moves streamed request body bytes (Content-Length) from the client to the upstream,
// pausing the client while the upstream output is above the high mark.
void Connection::pumpStreamBody() {
  evbuffer* in = down_.input();
  evbuffer* out = x_->up.output();
  size_t n = std::min<uint64_t>(x_->body_remaining, evbuffer_get_length(in));
  evbuffer_remove_buffer(in, out, n);
  x_->body_remaining -= n;
  x_->bytes_in += n;
  if (n > 0) {
    scheduleFlush();
  }
  if (x_->body_remaining == 0) {
    x_->request_sent = true;
    x_->up.requestComplete();
    armDownTimer(milliseconds(0));
    down_.setReadHigh(kPipelineHigh);
  } else if (evbuffer_get_length(out) > kOutHigh) {
    down_.disableRead();
  }
}

bool Connection::onUpstreamHeaders(const http::ResponseHead& resp) {
  if (!upstreamSessionValid(resp)) {
    upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                   "Bad Gateway: upstream sent an invalid Mcp-Session-Id",
                   Outcome::kUpstreamMalformed);
    return false;
  }
  x_->resp_started = true;
  x_->status = resp.status;
  x_->resp_sse = isEventStream(resp);
  countSse(x_->resp_sse);
  http::ConnectionTokens conn;
  conn.collect(resp.fields);
  std::string& h = w_.scratch;
  h.clear();
  h.append("HTTP/1.1 ");
  http::appendNumber(h, static_cast<uint64_t>(resp.status));
  h.append(" ").append(resp.reason).append("\r\n");
  bool has_accel = false;
  for (const http::HeaderField& f : resp.fields) {
    if (http::forwardResponseField(f, conn)) {
      has_accel = has_accel || core::iequals(f.name, "x-accel-buffering");
      if (core::iequals(f.name, "mcp-session-id")) {
        appendWrappedSession(h, f.value);  // the client never sees the server's own id
        continue;
      }
      h.append(f.line).append("\r\n");
    }
  }
  if (x_->resp_sse && !has_accel) {
    h.append("X-Accel-Buffering: no\r\n");
  }
  h.append(x_->ratelimit_lines);
  x_->client_chunked = false;
  switch (resp.framing) {
    case http::BodyFraming::kNone:
      if (x_->head.method == "HEAD" || resp.status == 304) {
        // The length the body would have had is the upstream's to say.
        if (const http::HeaderField* cl = http::findField(resp.fields, "content-length")) {
          h.append(cl->line).append("\r\n");
        }
      } else if (resp.status != 204) {
        h.append("Content-Length: 0\r\n");
      }
      break;
    case http::BodyFraming::kContentLength:
      h.append("Content-Length: ");
      http::appendNumber(h, resp.content_length);
      h.append("\r\n");
      break;
    case http::BodyFraming::kChunked:
    case http::BodyFraming::kUntilClose:
      if (x_->head.version == http::Version::kHttp11) {
        h.append("Transfer-Encoding: chunked\r\n");
        x_->client_chunked = true;
      } else {
        close_after_ = true;  // HTTP/1.0 client: the close ends the body
      }
      break;
  }
  if (w_.shared->draining.load(std::memory_order_relaxed)) {
    close_after_ = true;  // no keep-alive while draining: the head says so
  }
  if (close_after_) {
    h.append("Connection: close\r\n");
  } else if (x_->head.version == http::Version::kHttp10) {
    h.append("Connection: keep-alive\r\n");
  }
  h.append("\r\n");
  addStr(down_.output(), h);
  x_->bytes_out += h.size();
  scheduleFlush();

  x_->response_relayed = false;
  x_->framer_events = x_->response_end = 0;
  if (x_->ctx.learn_tools && resp.status == 200) {
    if (x_->resp_sse) {
      x_->framer = std::make_unique<sse::Framer>(this, kMaxCapture);
    } else {
      x_->capture_json = true;
    }
  } else if (x_->resp_sse) {
    x_->framer = std::make_unique<sse::Framer>();
  }
  if (injectKeepalive()) {
    timeval tv = toTimeval(s_->mcp.sse_keepalive);
    evtimer_add(x_->keepalive_timer.get(), &tv);
  }
  return true;
}

// Keep-alive comments go only into SSE answers whose framing has room for bytes the
// upstream did not send (chunked to the client, or close-delimited) — never into a
// Content-Length body.
bool Connection::injectKeepalive() const noexcept {
  return x_->resp_sse && x_->framer && s_->mcp.sse_keepalive.count() > 0 &&
         x_->up.response().framing != http::BodyFraming::kContentLength;
}

// Moves n payload bytes from the upstream input to the client, framed as the client needs,
// letting the SSE framer and the tools/list capture look at them on the way. A slow client
// stops the upstream reads until its buffer drains (onDownWrite).
void Connection::onUpstreamData(evbuffer* in, size_t n) {
  if (n == 0) {
    return;
  }
  if (x_->framer || x_->capture_json) {
    evbuffer_iovec vecs[8];
    size_t seen = 0;
    evbuffer_ptr pos;
    evbuffer_ptr_set(in, &pos, 0, EVBUFFER_PTR_SET);
    while (seen < n) {
      // evbuffer_peek returns how many extents the range needs, which may be more than the
      // 8 it filled: the rest are taken on the next turn.
      int k = std::min(evbuffer_peek(in, static_cast<ev_ssize_t>(n - seen), &pos, vecs, 8), 8);
      if (k <= 0) {
        break;
      }
      for (int i = 0; i < k && seen < n; ++i) {
        size_t len = std::min(vecs[i].iov_len, n - seen);
        std::string_view piece(static_cast<const char*>(vecs[i].iov_base), len);
        if (x_->framer) {
          x_->framer->feed(piece);
        }
        if (x_->capture_json) {
          if (x_->capture.size() + len > kMaxCapture) {
            x_->capture_json = false;
            x_->capture.clear();
          } else {
            x_->capture.append(piece);
          }
        }
        seen += len;
      }
      evbuffer_ptr_set(in, &pos, seen, EVBUFFER_PTR_SET);
    }
  }
  writeBody(in, n);
  noteResponseEvent();
  if (injectKeepalive()) {
    timeval tv = toTimeval(s_->mcp.sse_keepalive);
    evtimer_add(x_->keepalive_timer.get(), &tv);
  }
  if (down_.outputLength() > kOutHigh) {
    x_->up.pauseReading();
  }
}

// Moves n body bytes from `src` to the client, in a chunk when the client gets chunks.
void Connection::writeBody(evbuffer* src, size_t n) {
  evbuffer* out = down_.output();
  if (x_->client_chunked) {
    char line[24];
    std::string_view sz = http::chunkSizeLine(n, line);
    addStr(out, sz);
    evbuffer_remove_buffer(src, out, n);
    addStr(out, "\r\n");
    x_->bytes_out += sz.size() + n + 2;
  } else {
    evbuffer_remove_buffer(src, out, n);
    x_->bytes_out += n;
  }
  scheduleFlush();
}

void Connection::onKeepaliveTimer() {
  if (!x_->resp_started || !injectKeepalive()) {
    return;
  }
  if (x_->framer->atBoundary()) {
    static constexpr std::string_view kComment = ": keepalive\n\n";
    event::EvBufferPtr comment = event::makeBuffer();
    addStr(comment.get(), kComment);
    writeBody(comment.get(), kComment.size());
  }
  timeval tv = toTimeval(s_->mcp.sse_keepalive);
  evtimer_add(x_->keepalive_timer.get(), &tv);
}

void Connection::onUpstreamComplete() {
  if (x_->client_chunked) {
    addStr(down_.output(), http::kLastChunk);
    x_->bytes_out += http::kLastChunk.size();
  }
  if (x_->capture_json && !x_->capture.empty()) {
    learnTools(x_->capture);
  }
  x_->outcome = Outcome::kComplete;
  releaseUpstream(false);  // (the upstream request pooled its connection when it could)
  if (x_->body_mode == BodyMode::kStream && x_->body_remaining > 0) {
    close_after_ = true;  // the answer came before the whole body: cannot reuse
  }
  finishRequest(!close_after_);
}

// The upstream request ends (complete, failed, or cut from this side): counters, the attempt's
// duration metric, and its connection closed unless the upstream request pooled it already.
void Connection::releaseUpstream(bool reusable) {
  evtimer_del(x_->keepalive_timer.get());
  if (!x_->up_open) {
    x_->up.release(false);
    return;
  }
  x_->up_open = false;
  x_->endpoint = x_->up.endpoint();  // the last one tried
  w_.shared->streams.fetch_sub(1, std::memory_order_relaxed);
  countSse(false);
  recordAttempt(x_->outcome == Outcome::kComplete ? Outcome::kNone : x_->outcome,
                x_->up.attemptDuration());
  x_->up.release(reusable);
}

void Connection::onUpstreamError(upstream::UpstreamError e) {
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
    case UpstreamError::kReset:
    case UpstreamError::kBadChunk:
    case UpstreamError::kMaxDuration:
    case UpstreamError::kStreamIdle:
      abortExchange(upstream::outcomeOf(e));
      return;
  }
}

void Connection::onUpstreamWritable() {
  // Below the low mark again: take more request body from the client.
  if (state_ == State::kExchange && x_->body_mode == BodyMode::kStream && !x_->request_sent) {
    down_.enableRead();
    pumpStreamBody();
  }
}

void Connection::onUpstreamOutput() {
  scheduleFlush();
}

void Connection::onUpstreamRetry(core::Nanos attempt_duration) {
  recordAttempt(Outcome::kConnectFailed, attempt_duration);
}

void Connection::upstreamFailed(int status, int code, const char* message, Outcome outcome) {
  x_->outcome = outcome;
  releaseUpstream(false);
  if (x_->resp_started) {
    abortExchange(outcome);
    return;
  }
  if (x_->body_mode == BodyMode::kStream && x_->body_remaining > 0) {
    close_after_ = true;
  }
  filters::setReply(x_->ctx, status, code, message, core::outcomeName(outcome).data(), false);
  x_->ctx.reply.id = x_->sent_id;
  state_ = State::kExchange;
  sendLocalReply();
}

// The exchange cannot finish: the upstream is closed at once (never pooled) and the request
// is logged; the caller closes the client.
void Connection::endAborted(Outcome outcome) {
  x_->outcome = outcome;
  if (x_->status == 0) {
    x_->status = 499;
  }
  releaseUpstream(false);
  endRequest();
}

// Looks at the SSE events completed by the bytes just queued for the client: when the last
// one is a JSON-RPC response (a bounded look at its first bytes, no parse), it ends at or
// before the current end of the client's byte stream. Conservative: an event that completed
// earlier in the same batch is taken to end with the batch.
void Connection::noteResponseEvent() noexcept {
  if (!x_->framer || x_->framer->events() == x_->framer_events) {
    return;
  }
  x_->framer_events = x_->framer->events();
  x_->response_relayed = mcp::looksLikeResponse(x_->framer->lastEventHead());
  x_->response_end = x_->bytes_out;
}

// How a request whose client went away mid-exchange ends. The client closing is the
// protocol's cancellation ("client_closed"), except when the SSE answer's final JSON-RPC
// response had already left the gateway whole (no byte up to its end still in the output
// buffer): the client had its answer and only did not wait for the terminating chunk, so the
// request is "complete" with the status that was relayed.
core::Outcome Connection::clientClosedOutcome() const noexcept {
  if (!x_->resp_started || !x_->framer || !x_->response_relayed) {
    return Outcome::kClientClosed;
  }
  const size_t pending = down_.outputLength();
  return pending <= x_->bytes_out - x_->response_end ? Outcome::kComplete : Outcome::kClientClosed;
}

// The answer is cut (no last chunk, or short of its length), but what was already queued for
// the client still goes out before its connection is closed.
void Connection::abortExchange(Outcome outcome) {
  endAborted(outcome);
  closeAfterFlush();
}

// ---- schema learning ------------------------------------------------------------------

void Connection::onEvent(std::string_view, std::string_view data) noexcept {
  learnTools(data);
}

void Connection::learnTools(std::string_view json) noexcept {
  std::vector<mcp::ToolSchema> tools;
  uint64_t ttl = 0;
  if (mcp::parseToolsList(json, tools, ttl)) {
    const settings::Upstream& up = s_->upstreams[x_->ctx.route->upstream_index];
    snap_->schemas->learn(up.name, std::move(tools), ttl, std::chrono::steady_clock::now());
  }
}

// ---- metrics and access log ------------------------------------------------------------

namespace {

// The tool-name label of a trusted (or body-inspected legacy) tools/call (capped, see
// metrics::ToolNames), else "". Only a request that reached an upstream may admit a new name.
std::string_view toolLabel(WorkerContext& w, const filters::RequestContext& ctx,
                           const settings::Settings& s, bool forwarded) {
  if (!(ctx.trusted || ctx.body_view) || !ctx.mcp.has_method || ctx.mcp.method != "tools/call" ||
      !ctx.mcp.has_name) {
    return {};
  }
  return w.metrics->tool_labels.label(w.shared->metrics.toolNames(), ctx.mcp.name.value,
                                      s.metrics_max_tool_names, forwarded);
}

std::string_view methodLabel(const filters::RequestContext& ctx) {
  return ctx.mcp.has_method ? metrics::methodLabel(ctx.mcp.method) : std::string_view{};
}

}  // namespace

// One upstream attempt ends (answered, failed or cut): mcp.client.operation.duration.
void Connection::recordAttempt(Outcome error_type, core::Nanos duration) {
  const settings::Upstream& up = s_->upstreams[x_->ctx.route->upstream_index];
  w_.metrics->client_ops
      .at({up.name, methodLabel(x_->ctx), toolLabel(w_, x_->ctx, *s_, true),
           core::outcomeName(error_type)})
      .observe(duration);
}

void Connection::countSse(bool open) {
  if (open != x_->sse_counted) {
    x_->sse_counted = open;
    auto& g = w_.metrics->sse_streams;
    g.store(g.load(std::memory_order_relaxed) + (open ? 1 : -1), std::memory_order_relaxed);
  }
}

void Connection::endRequest() {
  metrics::WorkerMetrics& m = *w_.metrics;
  std::string_view outcome = core::outcomeName(x_->outcome);
  bool failed = core::outcomeFailed(x_->outcome);
  char digits[8];
  std::string_view status(
      digits,
      static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), x_->status).ptr - digits));
  std::string_view error_type = failed ? outcome : std::string_view{};
  if (!failed && x_->status >= 500) {
    error_type = status;
  }
  m.server_ops
      .at({x_->ctx.route ? std::string_view(x_->ctx.route->name) : std::string_view{},
           methodLabel(x_->ctx), toolLabel(w_, x_->ctx, *s_, x_->forwarded), status, error_type})
      .observe(now() - x_->started);
  if (failed) {
    m.rejections.at({outcome}).add(1);
  }
  m.bytes_in.add(x_->bytes_in);
  m.bytes_out.add(x_->bytes_out);
  if (!garbage_) {
    logAccess();  // one line per request the gateway parsed (garbage: logGarbage)
  }
}

// Access-log fields of issue #13: "legacy" (no trusted version, passthrough) and "view",
// where mcp_method / mcp_name came from: "headers" (trusted), "body" (a legacy body read by
// the gateway) or "none" (untrusted headers, logged but used for nothing).
void Connection::appendLegacyFields(std::string& line) const {
  line += ",\"legacy\":";
  line += x_->ctx.legacy ? "true" : "false";
  line += ",\"view\":\"";
  line += x_->ctx.trusted ? "headers" : x_->ctx.body_view ? "body" : "none";
  line += '"';
}

void Connection::logAccess() {
  spdlog::logger* log = w_.accessLog();
  if (log == nullptr) {
    return;
  }
  thread_local std::string line;
  line.clear();
  auto ms = std::chrono::duration<double, std::milli>(now() - x_->started).count();
  char tbuf[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  line += "{\"time\":\"";
  line += tbuf;
  line += "\",\"client\":\"";
  mcp::appendJsonEscaped(line,
                         x_->ctx.client_ip.empty() ? std::string_view(peer_) : x_->ctx.client_ip);
  line += "\",\"method\":\"";
  mcp::appendJsonEscaped(line, x_->head.method);
  line += "\",\"path\":\"";
  mcp::appendJsonEscaped(line, x_->head.path);
  char nums[160];
  std::snprintf(nums, sizeof(nums),
                "\",\"status\":%d,\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64
                ",\"duration_ms\":%.3f",
                x_->status, x_->bytes_in, x_->bytes_out, ms);
  line += nums;
  line += ",\"upstream\":";
  if (x_->endpoint) {
    line += '"';
    mcp::appendJsonEscaped(line, x_->endpoint->text);
    line += '"';
  } else {
    line += "null";
  }
  line += ",\"route\":";
  if (x_->ctx.route) {
    line += '"';
    mcp::appendJsonEscaped(line, x_->ctx.route->name);
    line += '"';
  } else {
    line += "null";
  }
  auto optional = [&](const char* key, bool present, std::string_view v) {
    line += ",\"";
    line += key;
    line += "\":";
    if (present) {
      line += '"';
      mcp::appendJsonEscaped(line, v.substr(0, 256));
      line += '"';
    } else {
      line += "null";
    }
  };
  optional("mcp_version", x_->ctx.mcp.has_version, x_->ctx.mcp.version);
  optional("mcp_method", x_->ctx.mcp.has_method, x_->ctx.mcp.method);
  optional("mcp_name", x_->ctx.mcp.has_name, x_->ctx.mcp.name.value);
  optional("subject", x_->ctx.identity.authenticated, x_->ctx.identity.subject);
  optional("policy_rule", !x_->ctx.policy_rule.empty(), x_->ctx.policy_rule);
  line += ",\"trusted\":";
  line += x_->ctx.trusted ? "true" : "false";
  appendLegacyFields(line);
  line += ",\"verify\":\"";
  line += x_->ctx.verify_body ? "on" : "off";
  line += "\",\"params\":\"";
  line += filters::paramCheckName(x_->ctx.param_check);
  line += "\",\"outcome\":\"";
  line += core::outcomeName(x_->outcome);
  line += "\"}";
  log->info(line);
}

}  // namespace gw::proxy
