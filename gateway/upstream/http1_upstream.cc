// One upstream request over HTTP/1.1 (see http1_upstream.h).

#include "gateway/upstream/http1_upstream.h"

#include <event2/buffer.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#include <algorithm>
#include <iterator>

#include "gateway/core/ascii.h"
#include "gateway/http/serialize.h"
#include "gateway/policy/token_answer.h"
#include "gateway/tls/tls.h"
#include "gateway/upstream/deadlines.h"

namespace gw::upstream {

namespace {

using std::chrono::milliseconds;

// Upstream response heads are bounded like request heads, with room to spare.
constexpr size_t kMaxResponseHead = 64 * 1024;

bool writeEnabled(bufferevent* bev) {
  return (bufferevent_get_enabled(bev) & EV_WRITE) != 0;
}

}  // namespace

core::Outcome outcomeOf(UpstreamError e) noexcept {
  switch (e) {
    case UpstreamError::kConnectFailed:
    case UpstreamError::kConnectRefused:
      return core::Outcome::kConnectFailed;
    case UpstreamError::kSessionEndpointDown:
      return core::Outcome::kSessionEndpointDown;
    case UpstreamError::kConnectTimeout:
      return core::Outcome::kConnectTimeout;
    case UpstreamError::kResponseTimeout:
      return core::Outcome::kResponseTimeout;
    case UpstreamError::kClosedBeforeAnswer:
    case UpstreamError::kReset:
      return core::Outcome::kUpstreamReset;
    case UpstreamError::kMalformed:
      return core::Outcome::kUpstreamMalformed;
    case UpstreamError::kBadChunk:
      return core::Outcome::kUpstreamBadChunk;
    case UpstreamError::kMaxDuration:
      return core::Outcome::kMaxDuration;
    case UpstreamError::kStreamIdle:
      return core::Outcome::kStreamIdleTimeout;
    case UpstreamError::kTls:
      return core::Outcome::kUpstreamTls;
    case UpstreamError::kUnavailable:
      return core::Outcome::kUpstreamUnavailable;
    case UpstreamError::kOverflow:
      return core::Outcome::kUpstreamOverflow;
  }
  return core::Outcome::kOther;
}

void Http1Upstream::init(event_base* base, Pools* pools, http::Http1Parser* parser,
                         const core::Clock* clock, UpstreamCallbacks* cb) noexcept {
  base_ = base;
  pools_ = pools;
  parser_ = parser;
  clock_ = clock;
  cb_ = cb;
}

bool Http1Upstream::start(const settings::Upstream& up, const UpstreamRequestHead& head,
                          core::Nanos started, UpstreamError& error) {
  release(false);
  up_ = &up;
  head_ = &head;
  started_ = started;
  connect_attempts_ = 0;
  request_complete_ = false;
  resp_started_ = false;
  endpoint_ = nullptr;
  if (!timer_) {
    timer_.reset(evtimer_new(base_, &Http1Upstream::onTimer, this));
  }
  if (!attach(error)) {
    return false;
  }
  writeHead(bufferevent_get_output(lease_.bev.get()));
  return true;
}

// Leases a connection and sets the request up on it.
bool Http1Upstream::attach(UpstreamError& error) {
  ++connect_attempts_;
  lease_ = head_->pinned_endpoint >= 0
               ? pools_->acquirePinned(*up_, static_cast<size_t>(head_->pinned_endpoint))
               : pools_->acquire(*up_);
  endpoint_ = lease_.endpoint;
  if (!lease_.bev) {
    error = lease_.overflow      ? UpstreamError::kOverflow
            : lease_.unavailable ? UpstreamError::kUnavailable
            : lease_.pinned      ? UpstreamError::kSessionEndpointDown
                                 : UpstreamError::kConnectFailed;
    lease_ = Lease{};
    return false;
  }
  if (!lease_.reused && up_->circuit_breaker && lease_.cluster != nullptr) {
    // circuit_breaker.max_pending: requests waiting for a new connection, all workers.
    if (lease_.cluster->pending.load(std::memory_order_relaxed) >=
        static_cast<int64_t>(up_->circuit_breaker->max_pending)) {
      lease_.cluster->overflows.fetch_add(1, std::memory_order_relaxed);
      lease_ = Lease{};
      error = UpstreamError::kOverflow;
      return false;
    }
    lease_.cluster->pending.fetch_add(1, std::memory_order_relaxed);
    pending_ = true;
  }
  count();
  attempt_started_ = clock_->now();
  connected_ = lease_.reused;
  bufferevent* ub = lease_.bev.get();
  bufferevent_setcb(ub, &Http1Upstream::onRead, &Http1Upstream::onWrite, &Http1Upstream::onEvent,
                    this);
  bufferevent_setwatermark(ub, EV_WRITE, kOutLow, 0);
  if (lease_.reused) {
    bufferevent_disable(ub, EV_WRITE);  // written by the worker's flush
    bufferevent_enable(ub, EV_READ);
  } else {
    bufferevent_enable(ub, EV_READ | EV_WRITE);  // the connect completes on the write event
  }
  resp_buf_.clear();
  resp_.clear();
  resp_chunked_.reset(http::ChunkedDecoder::Peer::kUpstream);
  paused_ = false;
  last_byte_ = clock_->now();
  const milliseconds first = connected_ ? up_->response_timeout : up_->connect_timeout;
  head_deadline_ = deadlineAfter(clock_->now(), first);
  armTimer();
  return true;
}

evbuffer* Http1Upstream::output() noexcept {
  return lease_.bev ? bufferevent_get_output(lease_.bev.get()) : nullptr;
}

void Http1Upstream::writeHead(evbuffer* out) {
  std::string& h = head_buf_;
  h.clear();
  http::appendRequestLine(h, head_->method, up_->path, head_->query);
  const std::vector<http::Field>* fields = &head_->fields;
  std::string made;
  if (up_->madeCredential()) {
    // upstreams[].auth: whatever Authorization the request carries never reaches this
    // upstream; the credential made for it does.
    // (The owners drop it already; a copy is made only when one is there after all.)
    const auto is_auth = [](const http::Field& f) {
      return core::iequals(f.name, "authorization");
    };
    if (std::any_of(head_->fields.begin(), head_->fields.end(), is_auth)) {
      auth_fields_.clear();
      std::remove_copy_if(head_->fields.begin(), head_->fields.end(),
                          std::back_inserter(auth_fields_), is_auth);
      fields = &auth_fields_;
    }
    std::string_view value = head_->authorization;
    if (value.empty() && up_->auth->type == settings::UpstreamAuthType::kClientCredentials) {
      made = policy::clientCredentialsAuthorization(*up_, clock_->now());
      value = made;
    }
    if (!value.empty()) {
      http::appendField(h, "Authorization", value);
    }
  }
  if (up_->headers.empty()) {
    http::appendFields(h, *fields);
  } else {
    // upstreams[].headers replace the request's fields of the same names (Authorization
    // forwarded by forward_credentials included), on every request to this upstream.
    http::appendFieldsSetting(h, *fields, up_->headers);
  }
  appendHost(h);
  if (head_->content_length > 0 || head_->length_field) {
    http::appendField(h, "Content-Length", head_->content_length);
  }
  h.append("\r\n");
  head_len_ = h.size();
  evbuffer_add(out, h.data(), h.size());
}

// upstreams[].host_header: the endpoint's host:port as written in config (nginx's default
// $proxy_host), a configured literal, or the client's Host. An HTTP/1.0 request may come
// without Host; the HTTP/1.1 request made of it may not (RFC 9112 §3.2): `client` then names
// the endpoint too.
void Http1Upstream::appendHost(std::string& h) const {
  std::string_view host;
  switch (up_->host_header) {
    case settings::HostHeader::kLiteral:
      host = up_->host_literal;
      break;
    case settings::HostHeader::kClient:
      if (head_->client_host) {
        return;  // forwarded as sent
      }
      [[fallthrough]];
    case settings::HostHeader::kEndpoint:
      if (lease_.index < up_->endpoints.size()) {
        host = up_->endpoints[lease_.index].text;
      }
      break;
  }
  if (!host.empty()) {
    http::appendField(h, "Host", host);
  }
}

// A connect that failed before any byte reached the upstream may go to the next endpoint
// (never after: a request whose bytes reached an upstream is not retried). The request
// bytes queued on the failed connection move to the new one, under a head written for the
// new endpoint (its Host). A session's request never moves: its server refusing is the 404 a
// server gives for an unknown session. True: retrying, or failed (reported).
bool Http1Upstream::retryConnect() {
  if (lease_.pinned && !lease_.reused && !connected_) {
    pools_->markFailed(lease_);
    fail(UpstreamError::kSessionEndpointDown);
    return true;
  }
  if (lease_.reused || connected_ || connect_attempts_ >= up_->endpoints.size()) {
    return false;
  }
  pools_->markFailed(lease_);
  reportFailed(UpstreamError::kConnectRefused);
  cb_->onUpstreamRetry(*this, attemptDuration());
  uncount();
  Lease failed = std::move(lease_);
  lease_ = Lease{};
  bufferevent_setcb(failed.bev.get(), nullptr, nullptr, nullptr, nullptr);
  UpstreamError error{};
  if (!attach(error)) {
    fail(error);
    return true;
  }
  // The queued request moves over. The failed bufferevent's output may be frozen at the front
  // like any socket bufferevent's: thawed for the move (it is freed right after).
  evbuffer* queued = bufferevent_get_output(failed.bev.get());
  evbuffer_unfreeze(queued, 1);
  evbuffer* to = bufferevent_get_output(lease_.bev.get());
  evbuffer_drain(queued, head_len_);
  writeHead(to);
  if (evbuffer_add_buffer(to, queued) != 0) {
    fail(UpstreamError::kConnectFailed);
    return true;
  }
  cb_->onUpstreamOutput(
      *this);  // a pooled connection is written by the flush, like any first write
  return true;
}

void Http1Upstream::release(bool reusable) noexcept {
  if (timer_) {
    evtimer_del(timer_.get());
  }
  uncount();
  if (!lease_.bev) {
    return;
  }
  bufferevent_setcb(lease_.bev.get(), nullptr, nullptr, nullptr, nullptr);
  if (reusable && up_ != nullptr) {
    pools_->release(std::move(lease_), up_->max_idle_connections);
  }
  lease_ = Lease{};  // closes it when not pooled
}

void Http1Upstream::fail(UpstreamError e) {
  reportFailed(e);
  release(false);
  cb_->onUpstreamError(*this, e);
}

void Http1Upstream::armTimer() {
  const UpstreamTimes t{started_, head_deadline_, last_byte_, connected_, resp_started_};
  const core::Nanos deadline =
      nextDeadline(t, UpstreamLimits{up_->stream_idle_timeout, up_->max_duration});
  if (deadline == kNever) {
    evtimer_del(timer_.get());
    return;
  }
  auto d = std::chrono::duration_cast<milliseconds>(deadline - clock_->now()) + milliseconds(1);
  timeval tv = event::toTimeval(d);
  evtimer_add(timer_.get(), &tv);
}

void Http1Upstream::onTimer(evutil_socket_t, short, void* arg) {
  auto* u = static_cast<Http1Upstream*>(arg);
  const UpstreamTimes t{u->started_, u->head_deadline_, u->last_byte_, u->connected_,
                        u->resp_started_};
  const UpstreamLimits l{u->up_->stream_idle_timeout, u->up_->max_duration};
  switch (expiryAt(t, l, u->clock_->now())) {
    case Expiry::kNone:
      u->armTimer();  // woken early (the deadline moved)
      return;
    case Expiry::kConnectTimeout:
      u->fail(UpstreamError::kConnectTimeout);
      return;
    case Expiry::kResponseTimeout:
      u->fail(UpstreamError::kResponseTimeout);
      return;
    case Expiry::kMaxDuration:
      u->fail(UpstreamError::kMaxDuration);
      return;
    case Expiry::kStreamIdle:
      u->fail(UpstreamError::kStreamIdle);
      return;
  }
}

void Http1Upstream::pauseReading() noexcept {
  if (!paused_ && lease_.bev) {
    paused_ = true;
    bufferevent_disable(lease_.bev.get(), EV_READ);
  }
}

void Http1Upstream::resumeReading() {
  if (!paused_ || !lease_.bev) {
    return;
  }
  paused_ = false;
  bufferevent_enable(lease_.bev.get(), EV_READ);
  relayBody();  // bytes may already wait in the input
}

event::Sent Http1Upstream::sendNow() noexcept {
  if (!lease_.bev) {
    return event::Sent::kNothing;
  }
  bufferevent* bev = lease_.bev.get();
  evbuffer* out = bufferevent_get_output(bev);
  if (evbuffer_get_length(out) == 0) {
    return event::Sent::kNothing;
  }
  if (lease_.tls) {
    // Only OpenSSL can write it: the bufferevent's write event does, and onWrite follows.
    bufferevent_enable(bev, EV_WRITE);
    return event::Sent::kPartial;
  }
  // Written from this stack: when the socket takes it all (the usual case) there is no poll
  // round trip and no epoll_ctl. What it does not take, and any error, is left to the
  // bufferevent's write event. A socket bufferevent keeps its output's front frozen;
  // libevent's own write callback thaws it the same way around its write.
  evutil_socket_t fd = bufferevent_getfd(bev);
  evbuffer_unfreeze(out, 1);
  for (int i = 0; i < 16 && evbuffer_get_length(out) > 0; ++i) {
    if (evbuffer_write(out, fd) <= 0) {
      break;
    }
  }
  evbuffer_freeze(out, 1);
  if (evbuffer_get_length(out) == 0) {
    return event::Sent::kDrained;
  }
  bufferevent_enable(bev, EV_WRITE);
  return event::Sent::kPartial;
}

bool Http1Upstream::writing() const noexcept {
  return lease_.bev && writeEnabled(lease_.bev.get());
}

void Http1Upstream::onFlushed() {
  if (lease_.bev) {
    onWrite(lease_.bev.get(), this);
  }
}

void Http1Upstream::onWrite(bufferevent* ub, void* arg) {
  auto* u = static_cast<Http1Upstream*>(arg);
  if (evbuffer_get_length(bufferevent_get_output(ub)) == 0) {
    bufferevent_disable(ub, EV_WRITE);  // the next bytes go out with the worker's flush
  }
  if (!u->request_complete_) {
    u->cb_->onUpstreamWritable(*u);  // below the low mark again: more request body
  }
}

void Http1Upstream::onEvent(bufferevent* bev, short what, void* arg) {
  auto* u = static_cast<Http1Upstream*>(arg);
  if (what & BEV_EVENT_CONNECTED) {
    u->connected_ = true;
    if (u->pending_ && u->lease_.cluster != nullptr) {
      u->lease_.cluster->pending.fetch_sub(1, std::memory_order_relaxed);
      u->pending_ = false;
    }
    u->head_deadline_ = deadlineAfter(u->clock_->now(), u->up_->response_timeout);
    u->armTimer();
    return;
  }
  if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) == 0) {
    return;
  }
  if (u->resp_started_) {
    if (u->resp_.framing == http::BodyFraming::kUntilClose && (what & BEV_EVENT_EOF)) {
      // What is left is the end of the body: the close ends it.
      evbuffer* in = bufferevent_get_input(u->lease_.bev.get());
      if (size_t n = evbuffer_get_length(in); n > 0) {
        u->cb_->onUpstreamData(*u, in, n);
      }
      u->release(false);
      u->cb_->onUpstreamComplete(*u);
      return;
    }
    u->fail(UpstreamError::kReset);
    return;
  }
  if (!u->connected_) {
    if (u->lease_.tls) {
      // The TCP connect may have failed (refused: retried below) or the handshake: a
      // certificate that does not verify, no common protocol... That is no endpoint's
      // passing trouble, so it is not retried elsewhere.
      if (std::optional<std::string> why = tlsHandshakeFailure(bev)) {
        u->tls_error_ = std::move(*why);
        u->fail(UpstreamError::kTls);
        return;
      }
    }
    if (u->retryConnect()) {
      return;
    }
    u->pools_->markFailed(u->lease_);
    u->fail(UpstreamError::kConnectRefused);
    return;
  }
  u->fail(UpstreamError::kClosedBeforeAnswer);
}

void Http1Upstream::onRead(bufferevent*, void* arg) {
  auto* u = static_cast<Http1Upstream*>(arg);
  u->last_byte_ = u->clock_->now();
  if (!u->resp_started_) {
    u->parseHead();
  } else {
    u->relayBody();
  }
}

void Http1Upstream::parseHead() {
  evbuffer* in = bufferevent_get_input(lease_.bev.get());
  for (;;) {
    size_t avail = evbuffer_get_length(in);
    if (avail == 0) {
      return;
    }
    const size_t n = event::headWindow(in, kMaxResponseHead);
    resp_buf_.resize(n);
    evbuffer_copyout(in, resp_buf_.data(), n);
    http::HeadLimits hl{kMaxResponseHead, kMaxResponseHead, 1000};
    http::ParseResult pr = parser_->parseResponse(resp_buf_, hl, head_->method, resp_);
    if (pr.status == http::ParseStatus::kIncomplete) {
      return;
    }
    if (pr.status == http::ParseStatus::kError) {
      fail(UpstreamError::kMalformed);
      return;
    }
    evbuffer_drain(in, resp_.head_bytes);
    if (resp_.status >= 100 && resp_.status < 200) {
      continue;  // interim answers are not relayed (the gateway answers 100 itself)
    }
    break;
  }
  resp_started_ = true;
  if (lease_.health != nullptr && lease_.cluster != nullptr) {
    if (failedStatus(resp_.status)) {
      noteEndpointFailure(*lease_.cluster, *lease_.health, *up_, clock_->now().count(),
                          "HTTP " + std::to_string(resp_.status));
    } else {
      reportSuccess(*lease_.health);
    }
  }
  resp_remaining_ = resp_.framing == http::BodyFraming::kContentLength ? resp_.content_length : 0;
  if (!cb_->onUpstreamHeaders(*this, resp_)) {
    return;  // refused (and released) by the owner
  }
  armTimer();
  relayBody();
}

void Http1Upstream::relayBody() {
  if (!lease_.bev || !resp_started_) {
    return;
  }
  evbuffer* in = bufferevent_get_input(lease_.bev.get());
  switch (resp_.framing) {
    case http::BodyFraming::kNone:
      complete();
      return;
    case http::BodyFraming::kContentLength: {
      size_t n = std::min<uint64_t>(resp_remaining_, evbuffer_get_length(in));
      if (n > 0) {
        cb_->onUpstreamData(*this, in, n);
      }
      resp_remaining_ -= n;
      if (resp_remaining_ == 0) {
        complete();
        return;
      }
      break;
    }
    case http::BodyFraming::kUntilClose:
      if (size_t n = evbuffer_get_length(in); n > 0) {
        cb_->onUpstreamData(*this, in, n);
      }
      break;
    case http::BodyFraming::kChunked: {
      // The data of every upstream chunk already here goes to the owner as one piece: the
      // per-chunk work (client framing, SSE framer, keep-alive timer) is paid once per read,
      // not once per event. Nothing waits for more: only bytes already received are batched.
      if (!batch_) {
        batch_ = event::makeBuffer();
      }
      evbuffer* batch = batch_.get();
      using Kind = http::ChunkedDecoder::Kind;
      // The decoder walks the input's first extent in place; the data it finds is copied into
      // the batch and what it consumed is drained once per extent, not once per chunk.
      bool pulled = false;  // the first extent was already made as long as a step may need
      Kind last = Kind::kNeedMore;
      for (size_t avail; (avail = evbuffer_get_length(in)) > 0;) {
        evbuffer_iovec vec;
        if (evbuffer_peek(in, -1, nullptr, &vec, 1) < 1) {
          break;
        }
        std::string_view rest(static_cast<const char*>(vec.iov_base), vec.iov_len);
        size_t used = 0;
        last = Kind::kNeedMore;
        while (!rest.empty()) {
          http::ChunkedDecoder::Step step = resp_chunked_.next(rest);
          last = step.kind;
          if (last == Kind::kNeedMore || last == Kind::kError) {
            break;
          }
          if (last == Kind::kData) {
            evbuffer_add(batch, rest.data(), step.length);
          }
          rest.remove_prefix(step.length);
          used += step.length;
          if (last == Kind::kDone) {
            break;
          }
        }
        evbuffer_drain(in, used);
        if (last == Kind::kError) {
          if (size_t n = evbuffer_get_length(batch); n > 0) {
            cb_->onUpstreamData(*this, batch, n);  // what came before is the client's
          }
          fail(UpstreamError::kBadChunk);
          return;
        }
        if (last == Kind::kDone) {
          if (size_t n = evbuffer_get_length(batch); n > 0) {
            cb_->onUpstreamData(*this, batch, n);
          }
          complete();
          return;
        }
        if (used > 0) {
          pulled = false;
        }
        if (last == Kind::kNeedMore) {
          // A size line or trailer split across extents: make it contiguous once (bounded by
          // what a step may need), then decode on; still short means wait for more bytes.
          size_t left = avail - used;
          if (pulled || rest.size() >= left) {
            break;
          }
          static_assert(
              http::ChunkedDecoder::kMaxLineBytes <= http::ChunkedDecoder::kMaxTrailerBytes,
              "a size line must fit in what is made contiguous");
          size_t want = std::min<size_t>(left, http::ChunkedDecoder::kMaxTrailerBytes + 8);
          if (evbuffer_pullup(in, static_cast<ev_ssize_t>(want)) == nullptr) {
            break;
          }
          pulled = true;
        }
      }
      if (size_t n = evbuffer_get_length(batch); n > 0) {
        cb_->onUpstreamData(*this, batch, n);
      }
      break;
    }
  }
  if (lease_.bev) {
    armTimer();
  }
}

// The whole answer is in: the connection goes back to the pool when the exchange was clean
// (keep-alive answer, the whole request sent, nothing unread or unwritten).
void Http1Upstream::complete() {
  const bool reusable = resp_.keep_alive && resp_.framing != http::BodyFraming::kUntilClose &&
                        request_complete_ &&
                        evbuffer_get_length(bufferevent_get_input(lease_.bev.get())) == 0 &&
                        evbuffer_get_length(bufferevent_get_output(lease_.bev.get())) == 0;
  release(reusable);
  cb_->onUpstreamComplete(*this);
}

}  // namespace gw::upstream
