// The forwarding target's response relay: the upstream's head and body to the client (through
// downstream::Stream), SSE framing for keep-alive comments at event boundaries and for the
// cancellation rule, the tools/list capture for schema learning (see forward_target.h).

#include <algorithm>

#include "gateway/core/ascii.h"
#include "gateway/core/clock.h"
#include "gateway/filters/pipeline.h"
#include "gateway/http/forwarding.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/schema.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/forward_target.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

namespace {

// Upper bound on a tools/list answer captured for schema learning.
constexpr size_t kMaxCapture = 4 * 1024 * 1024;

bool isEventStream(const http::ResponseHead& r) {
  const http::HeaderField* ct = http::findField(r.fields, "content-type");
  return ct != nullptr && core::istartsWith(ct->value, "text/event-stream");
}

}  // namespace

bool ForwardTarget::onUpstreamHeaders(upstream::Http1Upstream&, const http::ResponseHead& resp) {
  if (bridge_ == Bridge::kOn && bridgeRetry(resp)) {
    return false;  // the session was lost: sent again in a new one
  }
  if (bridge_ == Bridge::kTrying && bridgeTried(resp)) {
    return false;  // era: auto, and the answer looks like a 2025 server's: asked, then resent
  }
  if (upstream::failedStatus(resp.status)) {
    const settings::Upstream& up = x_.settings().upstreams[up_index_];
    if (up.retry && std::find(up.retry->on_status.begin(), up.retry->on_status.end(),
                              resp.status) != up.retry->on_status.end()) {
      static constexpr const char* kStatus[] = {"502", "503", "504"};
      if (retry(kStatus[resp.status - 502])) {
        return false;  // dropped unread: the request goes again
      }
    }
  }
  if (!upstreamSessionValid(resp)) {
    x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                      "Bad Gateway: upstream sent an invalid Mcp-Session-Id",
                      Outcome::kUpstreamMalformed);
    return false;
  }
  resp_sse_ = isEventStream(resp);
  x_.countSse(resp_sse_);
  http::ConnectionTokens conn;
  conn.collect(resp.fields);
  std::vector<http::Field>& resp_fields = x_.responseFields();
  resp_fields.clear();
  bool has_accel = false;
  for (const http::HeaderField& f : resp.fields) {
    if (http::forwardResponseField(f, conn)) {
      has_accel = has_accel || core::iequals(f.name, "x-accel-buffering");
      if (core::iequals(f.name, "mcp-session-id")) {
        if (bridge_ == Bridge::kOn || frontRequest()) {
          continue;  // the gateway's session, not the client's
        }
        wrapSession(f.value);  // the client never sees the server's own id
        continue;
      }
      resp_fields.push_back(http::Field{f.name, f.value});
    }
  }
  if (resp_sse_ && !has_accel) {
    resp_fields.push_back(http::Field{"X-Accel-Buffering", "no"});
  }
  downstream::ResponseHeaders h;
  h.status = resp.status;
  h.reason = resp.reason;
  h.fields = &resp_fields;
  h.framing = resp.framing;
  h.content_length = resp.content_length;
  if (resp.framing == http::BodyFraming::kNone &&
      (x_.head.method == "HEAD" || resp.status == 304)) {
    // The length the body would have had is the upstream's to say.
    if (const http::HeaderField* cl = http::findField(resp.fields, "content-length")) {
      h.length_field = cl->value;
    }
  }
  if (beginListFilter(resp)) {
    return true;  // the answer is read whole, filtered for this caller, then sent
  }
  bridge_hold_ = false;
  if (bridge_ == Bridge::kOn && !resp_sse_ && resp.status >= 200 && resp.status < 300) {
    bridge_hold_ = true;  // a result needs its resultType: read whole (sendBridgedAnswer)
    capture_.clear();
    return true;
  }
  if (bridge_ == Bridge::kOn && resp_sse_ && h.framing == http::BodyFraming::kContentLength) {
    h.framing = http::BodyFraming::kChunked;  // re-framed events: their length changes
  }
  x_.startResponse(h);

  response_relayed_ = false;
  framer_events_ = response_end_ = 0;
  if (bridge_ == Bridge::kOn && resp_sse_) {
    framer_ = std::make_unique<sse::Framer>(this, kMaxCapture);  // events re-framed (onEvent)
  } else if ((x_.ctx().learn_tools || x_.federated().capturesTask()) && resp.status == 200) {
    if (resp_sse_) {
      framer_ = std::make_unique<sse::Framer>(this, kMaxCapture);
    } else {
      capture_json_ = true;
      if (x_.ctx().learn_tools && !x_.federated().capturesTask()) {
        match_text_ = x_.worker().seen_answers.text(x_.snapshot()->schemas,
                                                    x_.settings().upstreams[up_index_].name);
        matching_ = match_text_ != nullptr;
        if (matching_) {
          matcher_.reset(*match_text_);
        }
      }
    }
  } else if (resp_sse_) {
    framer_ = std::make_unique<sse::Framer>();
  }
  x_.armKeepalive();
  return true;
}

// The relayed answer is SSE that keep-alive comments may go into (Exchange::injectKeepalive):
// framed here, and not a Content-Length body.
bool ForwardTarget::relaysSseEvents() const noexcept {
  return resp_sse_ && framer_ && up_.response().framing != http::BodyFraming::kContentLength;
}

// Moves n payload bytes from the upstream to the client, letting the SSE framer and the
// tools/list capture look at them on the way. A slow client stops the upstream reads until
// its output drains (onBelowLowWatermark).
void ForwardTarget::onUpstreamData(upstream::Http1Upstream&, evbuffer* in, size_t n) {
  if (n == 0) {
    return;
  }
  if (filtering_) {
    if (collectListAnswer(in, n)) {
      // The response event is in: the rest of the stream (a server may keep it open) is not
      // waited for. Sent on a turn of its own (onKeepaliveTimer, at once), outside the
      // upstream request's read — which may still end the answer itself (onUpstreamComplete
      // sends it first and cancels the turn).
      up_.pauseReading();
      timeval now{0, 0};
      evtimer_add(x_.keepalive_timer.get(), &now);
    }
    return;
  }
  if (bridge_hold_) {
    if (capture_.size() + n > kMaxCapture) {
      x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                        "Bad Gateway: the 2025-era upstream's answer is too large to translate",
                        Outcome::kUpstreamMalformed);
      return;
    }
    const size_t at = capture_.size();
    capture_.resize(at + n);
    evbuffer_remove(in, capture_.data() + at, n);
    return;
  }
  const bool reframe = bridge_ == Bridge::kOn && resp_sse_ && framer_;
  if (framer_ || capture_json_) {
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
        if (framer_) {
          framer_->feed(piece);
        }
        if (capture_json_) {
          capturePiece(piece);
        }
        seen += len;
      }
      evbuffer_ptr_set(in, &pos, seen, EVBUFFER_PTR_SET);
    }
  }
  if (reframe) {
    // The upstream's bytes became bridge_events_ (onEvent): whole 2026-style events only.
    evbuffer_drain(in, n);
    if (bridge_events_.empty()) {
      return;
    }
    event::EvBufferPtr out = event::makeBuffer();
    evbuffer_add(out.get(), bridge_events_.data(), bridge_events_.size());
    const size_t len = bridge_events_.size();
    bridge_events_.clear();
    x_.stream()->encodeData(out.get(), len);
  } else {
    x_.stream()->encodeData(in, n);
  }
  noteResponseEvent();
  x_.armKeepalive();
  if (x_.stream()->bufferedBytes() > downstream::Stream::kHighWatermark) {
    up_.pauseReading();
  }
}

void ForwardTarget::resumeReading() {
  if (up_.paused()) {
    up_.resumeReading();  // relays what already waits in the upstream input
  }
}

void ForwardTarget::sendListWhenReady() {
  if (listAnswerReady()) {
    sendFilteredList();  // the list's response event is in (onUpstreamData)
  }
}

void ForwardTarget::onUpstreamComplete(upstream::Http1Upstream&) {
  if (filtering_) {
    sendFilteredList();
    return;
  }
  if (bridge_hold_) {
    sendBridgedAnswer();
    return;
  }
  if (capture_json_ && matching_) {
    // Compared all the way: the answer learned before, its id aside, renews what was learned;
    // else (the cache learned another since, or the answer ended early) it is learned.
    const settings::Upstream& up = x_.settings().upstreams[up_index_];
    if (!matcher_.same() || !x_.worker().seen_answers.renewFrom(x_.snapshot()->schemas, up.name,
                                                                match_text_, core::steadyNow())) {
      capture_.clear();
      matcher_.appendFed(capture_);
      learnTools(capture_);
    }
  } else if (capture_json_ && !capture_.empty()) {
    if (x_.federated().capturesTask()) {
      x_.federated().captureTask(capture_);
    } else {
      learnTools(capture_);
    }
  }
  x_.outcome = Outcome::kComplete;
  x_.releaseUpstream();      // (the upstream request pooled its connection when it could)
  x_.stream()->encodeEnd();  // the connection calls finish()
}

// Looks at the SSE events completed by the bytes just queued for the client: when the last
// one is a JSON-RPC response (a bounded look at its first bytes, no parse), it ends at or
// before the current end of the client's byte stream. Conservative: an event that completed
// earlier in the same batch is taken to end with the batch.
void ForwardTarget::noteResponseEvent() noexcept {
  if (!framer_ || framer_->events() == framer_events_) {
    return;
  }
  framer_events_ = framer_->events();
  response_relayed_ = mcp::looksLikeResponse(framer_->lastEventHead());
  response_end_ = x_.stream()->bytesSent();
}

// How a request whose client went away mid-exchange ends. The client closing is the
// protocol's cancellation ("client_closed"), except when the SSE answer's final JSON-RPC
// response had already left the gateway whole (no byte up to its end still queued): the
// client had its answer and only did not wait for the terminating chunk, so the request is
// "complete" with the status that was relayed.
core::Outcome ForwardTarget::clientClosedOutcome() const noexcept {
  if (!x_.responseStarted() || !framer_ || !response_relayed_) {
    return Outcome::kClientClosed;
  }
  const size_t pending = x_.stream()->bufferedBytes();
  return pending <= x_.stream()->bytesSent() - response_end_ ? Outcome::kComplete
                                                             : Outcome::kClientClosed;
}

void ForwardTarget::onEvent(std::string_view, std::string_view data) noexcept {
  if (bridge_ == Bridge::kOn) {
    bridgeEvent(data);
    if (x_.ctx().learn_tools && !data.empty()) {
      learnTools(data);
    }
    return;
  }
  if (x_.federated().capturesTask()) {
    x_.federated().captureTask(data);
  } else {
    learnTools(data);
  }
}

// One piece of a JSON answer captured for learning: compared with the answer learned before
// while it matches (matching_), else kept (at most kMaxCapture bytes, then nothing is learned).
void ForwardTarget::capturePiece(std::string_view piece) {
  if (matching_) {
    if (matcher_.feed(piece)) {
      return;
    }
    matching_ = false;  // from here on, the bytes are kept: those so far rebuilt first
    capture_.clear();
    matcher_.appendFed(capture_);
  }
  if (capture_.size() + piece.size() > kMaxCapture) {
    capture_json_ = false;
    capture_.clear();
  } else {
    capture_.append(piece);
  }
}

// The answer this worker saw last for the upstream, again (its id aside): what was learned of
// it only lives on; anything else is parsed and learned.
void ForwardTarget::learnTools(std::string_view json) noexcept {
  x_.worker().seen_answers.learn(x_.snapshot()->schemas, x_.settings().upstreams[up_index_].name,
                                 json, core::steadyNow());
}

}  // namespace gw::proxy
