// One HTTP/1.1 client connection (see http1_connection.h).

#include "gateway/downstream/http1_connection.h"

#include <event2/buffer.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <utility>

#include <sys/socket.h>

#include "gateway/core/assert.h"
#include "gateway/http/forwarding.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/upstream/pool.h"

namespace gw::downstream {

namespace {

using std::chrono::milliseconds;

constexpr size_t kOutHigh = Stream::kHighWatermark;
constexpr size_t kOutLow = Stream::kLowWatermark;
// Lingering close: after an error answer the write side is shut and the client's input is
// read and dropped for at most this long, so the client reads the answer instead of a reset
// (nginx lingering_timeout, Envoy delayed_close_timeout).
constexpr milliseconds kLingerTime{2000};
// The answer to plain HTTP on a TLS port (nginx answers 400 "The plain HTTP request was sent
// to HTTPS port"), then a lingering close.
constexpr std::string_view kPlainHttpAnswer =
    "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
    "Content-Length: 23\r\nConnection: close\r\n\r\nthis port speaks HTTPS\n";

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
  auto& w = *static_cast<ConnectionContext*>(arg);
  if (uint64_t n = w.garbage_log.takeSuppressed(); n > 0) {
    spdlog::warn("suppressed {} more malformed-request log lines (limit {} a second per worker)", n,
                 w.garbage_log.perSecond());
  }
}

// Whether a line about a request whose head did not parse (or did not arrive), or about a
// failed TLS handshake, may be logged now: at most 10 a second per worker
// (ConnectionContext::garbage_log), so a flood of garbage cannot fill a disk. The lines dropped
// are counted (mcp_gateway_log_lines_suppressed_total) and summed up in one line a second
// later.
bool takeGarbageLine(ConnectionContext& w) {
  if (w.garbage_log.take(static_cast<int64_t>(std::time(nullptr)))) {
    return true;
  }
  w.metrics->log_lines_suppressed.add(1);
  if (w.garbage_log.suppressed() == 1) {
    if (!w.garbage_timer) {
      w.garbage_timer.reset(evtimer_new(w.base, onGarbageTimer, &w));
    }
    timeval tv{1, 0};
    evtimer_add(w.garbage_timer.get(), &tv);
  }
  return false;
}

// `peer` is an address printed by inet_ntop; `reason` is static text.
void logGarbage(ConnectionContext& w, std::string_view peer, int status, const char* reason) {
  if (takeGarbageLine(w)) {
    spdlog::warn("rejected a malformed request from {}: {} ({})", peer, reason, status);
  }
}

}  // namespace

// ---- lifetime ---------------------------------------------------------------------------

void Http1Connection::start(ConnectionContext& w, evutil_socket_t fd, std::string peer,
                            const core::IpAddress& ip, const tls::ServerContext* tls,
                            uint32_t listener) {
  auto* c = new Http1Connection(w, fd, std::move(peer), ip);
  if (!c->down_.isOpen()) {
    delete c;  // never opened: nothing refers to it
    return;
  }
  c->listener_ = listener;
  if (tls != nullptr && !c->down_.startTls(tls->newSession())) {
    c->closeNow();  // out of memory
    return;
  }
  // Output is written from the loop (onResume); the write event is on only while the socket
  // holds back bytes.
  c->down_.enableRead();
  c->setSendTimeout();
  // A new connection must send its first request within header_timeout (not the keep-alive
  // timeout): a client that opens sockets and stays silent cannot hold slots for long. On a
  // TLS port the handshake runs within the same time (the connection stays kIdle until the
  // first request byte is decrypted).
  c->armTimer(c->s_->limits.header_timeout);
}

Http1Connection::Http1Connection(ConnectionContext& w, evutil_socket_t fd, std::string peer,
                                 const core::IpAddress& ip)
    : w_(w), peer_(std::move(peer)), peer_ip_(ip) {
  snap_ = w_.shared->snapshot.load();
  s_ = snap_->settings.get();
  if (!down_.open(w_.base, fd, &Http1Connection::onRead, &Http1Connection::onWrite,
                  &Http1Connection::onEvent, this)) {
    w_.shared->client_counts.release(peer_ip_);  // (open closed fd)
    return;
  }
  upstream::setNoDelay(fd);
  timer_ = event::makeTimer<Http1Connection, &Http1Connection::onTimer>(w_.base, this);
  if (!w_.reaper) {
    w_.reaper.reset(evtimer_new(
        w_.base,
        [](evutil_socket_t, short, void* arg) {
          reapClosed(*static_cast<ConnectionContext*>(arg));
        },
        &w_));
  }
  // The request's handler comes from the worker's factory per request: an idle connection
  // costs its socket's two events, one timer and this object.
  ++w_.local_connections;
  w_.connections.insert(this);
  w_.shared->connections.fetch_add(1, std::memory_order_relaxed);
  w_.metrics->connections_accepted.add(1);
}

Http1Connection::~Http1Connection() {
  GW_ASSERT(closed_ || !down_.isOpen());
}

// Closes the connection now (its socket, any upstream connection, every timer and pending
// decision, so no callback can reach it again) and leaves the object to the worker's reaper,
// which deletes it after the current loop turn: code still on the stack may touch it.
void Http1Connection::closeNow() {
  if (closed_) {
    return;
  }
  closed_ = true;
  w_.flush_queue->remove(*this);
  evtimer_del(timer_.get());
  endStream(false);
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

void Http1Connection::reapClosed(ConnectionContext& w) {
  std::vector<Http1Connection*> dead;
  dead.swap(w.closed);
  for (Http1Connection* c : dead) {
    delete c;
  }
}

bool Http1Connection::takeStream() {
  snap_ = w_.shared->snapshot.load();
  s_ = snap_->settings.get();
  req_in_ = req_out_ = 0;
  answering_ = false;
  x_ = w_.streams->newStream(*this, snap_,
                             StreamPeer{peer_, tls_subject_, listener_, sni_, sni_cert_});
  return x_ != nullptr;
}

// The request is over (`answered`: recorded by its handler; else cancelled under it).
void Http1Connection::endStream(bool answered) {
  if (x_ == nullptr) {
    return;
  }
  StreamCallbacks* x = std::exchange(x_, nullptr);
  w_.streams->endStream(*x, answered);
}

bool Http1Connection::closeIfIdle() {
  if (state_ != State::kIdle) {
    return false;
  }
  closeAfterFlush();
  return true;
}

// Closes once the queued output reached the client (bounded by keepalive_timeout).
void Http1Connection::closeAfterFlush() {
  if (down_.outputLength() == 0) {
    lingerOrClose();
    return;
  }
  state_ = State::kClosing;
  down_.disableRead();
  down_.setWriteLow(0);
  armTimer(s_->limits.keepalive_timeout);
  scheduleFlush();
}

// The output is written: close now, or — after an error answer — shut the write side and
// read and drop what the client still sends until it closes or kLingerTime passes. Closing a
// socket with unread input makes the kernel send a reset, which can destroy the answer in the
// client's receive buffer before it was read.
void Http1Connection::lingerOrClose() {
  if (!linger_ || state_ == State::kLinger) {
    closeNow();
    return;
  }
  state_ = State::kLinger;
  down_.shutdownWrite();
  evbuffer* in = down_.input();
  evbuffer_drain(in, evbuffer_get_length(in));
  down_.setReadHigh(0);
  down_.disableWrite();
  down_.enableRead();
  armTimer(kLingerTime);
}

// send_timeout: a client that takes no byte of the output held for it for this long is
// closed (the write event's timeout runs only while the socket holds bytes back).
void Http1Connection::setSendTimeout() {
  if (s_->limits.send_timeout == send_timeout_) {
    return;
  }
  send_timeout_ = s_->limits.send_timeout;
  down_.setWriteTimeout(send_timeout_);
}

void Http1Connection::armTimer(milliseconds d) {
  if (d.count() <= 0) {
    evtimer_del(timer_.get());
    return;
  }
  timeval tv = event::toTimeval(d);
  evtimer_add(timer_.get(), &tv);
}

// ---- socket events ----------------------------------------------------------------------

void Http1Connection::onRead(void* arg) {
  static_cast<Http1Connection*>(arg)->process();
}

void Http1Connection::onWrite(void* arg) {
  auto* c = static_cast<Http1Connection*>(arg);
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
  if (c->x_ != nullptr && c->state_ == State::kExchange && queued <= kOutLow) {
    c->x_->onBelowLowWatermark();
  }
}

void Http1Connection::onEvent(void* arg, short what) {
  auto* c = static_cast<Http1Connection*>(arg);
  if ((what & BEV_EVENT_CONNECTED) != 0) {
    c->onTlsConnected();
    return;
  }
  if (c->down_.tlsHandshaking()) {
    c->onTlsFailed();  // every other event during the handshake ends it
    return;
  }
  const bool in_request = c->state_ == State::kExchange || c->state_ == State::kBody;
  if (what & BEV_EVENT_TIMEOUT) {
    // send_timeout: the client took no byte of its output for that long. An exchange in
    // flight (an SSE stream to a reader that stopped) ends with it.
    if (in_request && c->x_ != nullptr) {
      c->x_->onStreamReset(Outcome::kSendTimeout);
    }
    c->closeNow();
    return;
  }
  if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
    // The client is gone. Mid-exchange this is the protocol's cancellation signal: the
    // upstream connection is closed at once and never pooled.
    if (in_request && c->x_ != nullptr) {
      c->x_->onStreamReset(Outcome::kClientClosed);
    }
    c->closeNow();  // nothing more can reach it
  }
}

void Http1Connection::onTimer() {
  switch (state_) {
    case State::kIdle:
      if (down_.tlsHandshaking()) {
        w_.metrics->tls_handshake_failures.at({event::tlsFailureName(event::TlsFailure::kTimeout)})
            .add(1);
      }
      closeAfterFlush();
      return;
    case State::kHead:
      logGarbage(w_, peer_, 408, "request head not received in time");
      sendPlainError(408, "Request Timeout", "request head not received in time\n",
                     Outcome::kHeaderTimeout);
      return;
    case State::kBody:
    case State::kExchange:
      // A body that does not arrive in time: buffered (kBody), or streamed before the
      // answer began (after it, the answer's own timeouts apply).
      if (state_ == State::kBody || (streaming_ && !answering_)) {
        close_after_ = true;
        x_->onEdgeReply(EdgeReply{408, mcp::code::kBodyTimeout,
                                  "Request Timeout: request body not received in time",
                                  Outcome::kBodyTimeout});
      }
      return;
    case State::kClosing:
    case State::kLinger:
      closeNow();  // the client does not take the last bytes, or lingered long enough
      return;
  }
}

// ---- TLS --------------------------------------------------------------------------------

void Http1Connection::onTlsConnected() {
  SSL* ssl = down_.ssl();
  w_.metrics->tls_handshakes.at({SSL_session_reused(ssl) == 1 ? "resumed" : "full"}).add(1);
  // With client_ca the handshake only completes with a certificate that verified.
  if ((SSL_get_verify_mode(ssl) & SSL_VERIFY_PEER) != 0 &&
      SSL_get_verify_result(ssl) == X509_V_OK) {
    tls_subject_ = tls::peerSubject(SSL_get0_peer_certificate(ssl));
  }
  sni_ = tls::sniTableOf(ssl);
  sni_cert_ = sni_ != nullptr ? sni_->servedBy(ssl) : 0;
}

// The handshake failed (or the client closed during it): counted, logged within the
// malformed-request budget (a client that just closes is not logged), and the connection
// closes — after a plain-text 400 when the client spoke plain HTTP.
void Http1Connection::onTlsFailed() {
  const event::TlsFailure why = down_.tlsFailure();
  const event::TlsFailure reason =
      why == event::TlsFailure::kNone ? event::TlsFailure::kClosed : why;
  w_.metrics->tls_handshake_failures.at({event::tlsFailureName(reason)}).add(1);
  if (reason != event::TlsFailure::kClosed) {
    const unsigned long err = down_.tlsError();
    const char* detail = err != 0 ? ERR_reason_error_string(err) : nullptr;
    if (takeGarbageLine(w_)) {
      spdlog::warn("TLS handshake from {} failed: {}{}{}", peer_, event::tlsFailureName(reason),
                   detail != nullptr ? ": " : "", detail != nullptr ? detail : "");
    }
  }
  if (reason != event::TlsFailure::kPlainHttp) {
    closeNow();
    return;
  }
  down_.dropTls();
  evbuffer* out = down_.output();
  if (out == nullptr || evbuffer_add(out, kPlainHttpAnswer.data(), kPlainHttpAnswer.size()) != 0) {
    closeNow();
    return;
  }
  w_.metrics->bytes_out.add(kPlainHttpAnswer.size());
  linger_ = true;  // the request the client sent is read and dropped, so it reads the answer
  closeAfterFlush();
}

// Reads whatever the current state can use from the input.
void Http1Connection::process() {
  if (state_ == State::kLinger) {
    evbuffer* in = down_.input();
    evbuffer_drain(in, evbuffer_get_length(in));
    return;
  }
  if (state_ == State::kIdle || state_ == State::kHead) {
    parseHead();
  } else if (state_ == State::kBody) {
    readBodyBytes();
  } else if (state_ == State::kExchange && streaming_) {
    pumpBody();
  }
}

// ---- request head -----------------------------------------------------------------------

void Http1Connection::parseHead() {
  if (down_.inputLength() == 0) {
    return;
  }
  evbuffer* in = down_.input();
  if (state_ == State::kIdle) {
    if (x_ == nullptr && !takeStream()) {
      closeNow();  // out of memory
      return;
    }
    state_ = State::kHead;
    linger_ = false;
    setSendTimeout();
    armTimer(s_->limits.header_timeout);
  }
  const auto& lim = s_->limits;
  const size_t n = event::headWindow(in, lim.max_header_bytes);
  std::string& buf = w_.head_buf;
  http::RequestHead& head = w_.head;
  buf.resize(n);
  evbuffer_copyout(in, buf.data(), n);
  http::HeadLimits hl{lim.max_request_line, lim.max_header_bytes, lim.max_headers,
                      lim.max_header_line};
  http::ParseResult pr = w_.parser->parseRequest(buf, hl, head);
  if (pr.status == http::ParseStatus::kIncomplete) {
    return;
  }
  // A head refused only once whole (two Authorization fields, a flawed target byte) is for
  // the MCP endpoint: its 400 is a request's JSON-RPC error, like every 4xx there (below).
  const char* refused =
      pr.status == http::ParseStatus::kError && pr.head_complete && head.path == s_->endpoint
          ? pr.reason
          : nullptr;
  if (pr.status == http::ParseStatus::kError && refused == nullptr) {
    // Not a request the gateway parsed: no access-log line, a rate-limited log line instead
    // (logGarbage); the outcome is a fixed name per status, the parser's reason goes to the log.
    int status = http::statusFor(pr.error);
    logGarbage(w_, peer_, status, pr.reason);
    std::string text = std::string(pr.reason) + "\n";
    sendPlainError(status, http::reasonPhrase(status), text.c_str(), garbageOutcome(status));
    return;
  }
  evbuffer_drain(in, head.head_bytes);
  req_in_ = head.head_bytes;
  // The request exists: from here its handler runs it.
  close_after_ = !head.keep_alive;
  linger_ = false;
  sent_continue_ = false;
  streaming_ = false;
  chunked_out_ = false;
  req_version_ = head.version;
  req_framing_ = head.framing;
  req_head_method_ = head.method == "HEAD";
  req_expect_continue_ = head.expect_continue;
  body_done_ = head.framing == http::BodyFraming::kNone;
  body_remaining_ = head.content_length;
  state_ = State::kExchange;
  armTimer(milliseconds(0));
  down_.setReadHigh(kPipelineHigh);
  if (refused != nullptr) {
    close_after_ = true;  // its body, if any, is never read
    const EdgeReply r{400, mcp::code::kInvalidRequest, refused, Outcome::kMalformedRequest};
    x_->onHeaders(head, &r);
    return;
  }
  // Expect (RFC 9110 §10.1.1): only 100-continue is understood. It is honoured on HTTP/1.1
  // (an HTTP/1.0 100-continue is ignored, as the RFC requires); anything else, or a list,
  // gets 417 and the connection closes (its body, if any, is never read).
  if (http::expectation(head.fields, head.version) == http::Expectation::kUnsupported) {
    close_after_ = true;
    const EdgeReply r{417, mcp::code::kInvalidRequest,
                      "Expectation Failed: only 'Expect: 100-continue' is supported",
                      Outcome::kExpectationFailed};
    x_->onHeaders(head, &r);
    return;
  }
  x_->onHeaders(head, nullptr);
}

// Ends the current request: access log, then either wait for the next one or close once
// the output is flushed. Bytes after a request that ends the connection are never parsed.
void Http1Connection::finishRequest(bool keep_alive) {
  GW_ASSERT(x_ != nullptr);
  endStream(true);
  streaming_ = false;
  snap_ = w_.shared->snapshot.load();
  s_ = snap_->settings.get();
  scheduleFlush();
  if (!keep_alive || w_.shared->draining.load(std::memory_order_relaxed)) {
    state_ = State::kClosing;
    armTimer(s_->limits.keepalive_timeout);
    down_.disableRead();
    down_.setWriteLow(0);
    if (down_.outputLength() == 0) {
      lingerOrClose();
    }
    return;
  }
  state_ = State::kIdle;
  linger_ = false;  // a later close of an idle connection follows no error answer
  armTimer(s_->limits.keepalive_timeout);
  down_.setReadHigh(0);
  if (down_.outputLength() > kOutHigh) {
    // The client does not read its answers: take no more requests until it does
    // (onWrite resumes below the low mark).
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

// ---- the worker's flush -----------------------------------------------------------------

void Http1Connection::scheduleFlush() {
  if (!closed_) {
    w_.flush_queue->schedule(w_.base, *this);
  }
}

// From the loop, after the callback that queued output: write it, then do what the write
// callbacks would have done, then parse a pipelined request.
void Http1Connection::onResume() {
  bool parse = std::exchange(parse_pending_, false);
  if (!closed_ && !down_.writing() && down_.sendNow() == Sent::kDrained) {
    onWrite(this);
  }
  if (!closed_ && parse && (state_ == State::kIdle || state_ == State::kHead)) {
    parseHead();
  }
}

}  // namespace gw::downstream
