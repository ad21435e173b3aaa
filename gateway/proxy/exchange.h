#pragma once
// proxy/: one MCP request from its first byte to its end — the snapshot it started on, the
// pipeline stages (the asynchronous rate-limit stage stops and resumes it), the body mode,
// the response start (startResponse / respond / local replies), SSE keep-alive comments, the
// outcome, the metrics and the access-log line. The answer comes from a target chosen once
// after the stages: LocalTarget (the gateway's own reply; local_target.h), or, after
// routing, ForwardTarget (one upstream request, the relay, list filtering, pin observation;
// forward_target.h) or FederatedTarget (federated_target.h). It talks to its
// client only through downstream::Stream and hears from it through
// downstream::StreamCallbacks; it never sees HTTP/1 framing, and the connection never
// touches its fields.
//
// A connection gets an exchange from its worker's ExchangePool (a downstream::StreamFactory)
// when a request's first byte arrives and hands it back when the request ends, so an idle
// keep-alive connection holds none of this, and the buffers' capacity is reused by the next
// request on any connection.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/clock.h"
#include "gateway/core/outcome.h"
#include "gateway/downstream/stream.h"
#include "gateway/event/owners.h"
#include "gateway/filters/context.h"
#include "gateway/filters/limits.h"
#include "gateway/filters/snapshot.h"
#include "gateway/http/chunked.h"
#include "gateway/http/message.h"
#include "gateway/mcp/arena.h"
#include "gateway/mcp/id_scan.h"
#include "gateway/proxy/federated_target.h"
#include "gateway/proxy/forward_target.h"
#include "gateway/proxy/keys_wait.h"
#include "gateway/proxy/limit_stage.h"
#include "gateway/proxy/local_target.h"
#include "gateway/proxy/poll_wait.h"
#include "gateway/proxy/request_body.h"
#include "gateway/proxy/request_trace.h"
#include "gateway/proxy/stage.h"
#include "gateway/proxy/upstream_auth.h"
#include "gateway/ratelimit/gcra.h"

namespace gw::proxy {

struct ProxyContext;

class Exchange final : public downstream::StreamCallbacks, public StageRunner {
 public:
  using BodyMode = RequestBody::Mode;
  using Outcome = core::Outcome;

  Exchange() = default;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;
  ~Exchange() = default;

  // A new request on `stream` (its first byte arrived): the snapshot it runs on, who sent
  // it (views that outlive the exchange), its start time.
  void begin(ProxyContext& w, downstream::Stream& stream,
             std::shared_ptr<const filters::Snapshot> snap, downstream::StreamPeer peer);
  // StageRunner: a stopped stage's wait is over (stage.h).
  void resume(filters::FilterStatus verdict) override;
  // The request ends: metrics and the access-log line (once), the body reservation and the
  // upstream request released.
  void finish();
  // The client side is going away under the exchange: pending work is cancelled.
  void cancel();

  // downstream::StreamCallbacks
  void onHeaders(const http::RequestHead& h, const downstream::EdgeReply* refused) override;
  void onBodyData(evbuffer* src, size_t n, bool end) override;
  void onEdgeReply(const downstream::EdgeReply& r) override;
  void onPlainAnswer(int status, Outcome why) override;
  void onBelowLowWatermark() override;
  void onStreamReset(Outcome why) override;

  // The response head went to the client (startResponse, or a local reply).
  bool responseStarted() const noexcept { return life_ == Life::kAnswering; }
  // The outcome so far (kNone while the request runs; tests read it).
  Outcome currentOutcome() const noexcept { return outcome; }

 private:
  friend class ExchangePool;
  // A target answers through the methods below marked for it, and through respond,
  // startResponse, sendLocalReply, upstreamFailed, abortExchange, armKeepalive, countSse,
  // recordAttempt and now.
  friend class FederatedTarget;
  friend class ForwardTarget;
  friend class LocalTarget;

  // ---- what a target (federated_target.h, forward_target.h) reaches of the request ----
  filters::RequestContext& ctx() noexcept { return ctx_; }
  const filters::RequestContext& ctx() const noexcept { return ctx_; }
  const std::shared_ptr<const filters::Snapshot>& snapshot() const noexcept { return snap_; }
  const settings::Settings& settings() const noexcept { return *snap_->settings; }
  std::string_view serverLabel() const noexcept;  // metrics and log (request_log.cc)
  bool misdirected() const noexcept;
  ProxyContext& worker() const noexcept { return *w_; }
  downstream::Stream* stream() const noexcept { return stream_; }  // null between requests
  // The body's padded copy (verify / classify only; shorter than the padding when unread).
  const std::string& verifyBuffer() const noexcept { return verify_buf_; }
  std::string_view peer() const noexcept { return peer_.address; }  // the peer address text
  core::Nanos startedAt() const noexcept { return started_; }
  // The forwarding target: one upstream request (a federated call's owner goes through it).
  ForwardTarget& forward() noexcept { return fwd_; }
  // tracing (request_trace.h): this request's trace context and spans.
  RequestTrace& trace() noexcept { return trace_; }
  FederatedTarget& federated() noexcept { return fed_; }
  // The Authorization each upstream gets (upstreams[].auth), made by the kCredentials step.
  const UpstreamAuth& upstreamAuth() const noexcept { return auth_; }
  void noteForwarded() noexcept { forwarded_ = true; }  // upstreams were asked (metrics)
  // The response head for the client (respond sends it; a target fills it first).
  std::vector<http::Field>& responseFields() noexcept { return resp_fields_; }
  // startResponse for an SSE answer the gateway makes itself (counted in the SSE streams).
  void startSseResponse(downstream::ResponseHeaders& h);
  // A target refuses the request before anything went upstream: the limits' charge is
  // refunded (a refused request consumes no quota) and ctx().reply is sent (LocalTarget).
  void refuseBeforeBody();
  // Holds n more request-body bytes against limits.max_buffered_body_bytes (all
  // connections). False: over the cap; nothing was taken.
  bool reserveBody(uint64_t n);
  void releaseBody();
  void onBodyComplete();  // the buffered body is whole

  // The stages, in order. run() goes through them from step_; a stage that stops (kStop)
  // is resumed through resume(), kNeedBody reads the body (onBodyComplete runs on), and
  // kLocalReply answers. kTarget hands the request to what answers it.
  enum class Step : uint8_t {
    kHead,         // the pipeline's head stages (a JWT may wait for its keys: KeysWait)
    kEarlyBody,    // a body checked before the limits are charged
    kLimits,       // the rate limits (LimitStage; Redis-backed ones wait)
    kBody,         // a buffered body not read yet
    kCredentials,  // what the upstreams get as Authorization (upstreams[].auth; may wait)
    kOwner,        // the owner of a named call on a federated route (may wait for a refresh)
    kTarget,       // the target: the upstream, the fan-out or a merged answer
    kDone,         // answered, or handed to the target
  };
  void run();
  filters::FilterStatus runStep();
  filters::FilterStatus headStep();
  filters::FilterStatus credentialsStep();
  void stopStages() noexcept;  // whatever stage waits is cancelled
  // request and body
  void resetContext();  // the pipeline's context for `head`, as new
  void beginBodyRead();
  void sendLocalReply();
  // The one response start: the head, with the RateLimit fields of the limits that admitted
  // the request, goes to the client (once; responseStarted() and status say so from then on).
  void startResponse(downstream::ResponseHeaders& h);
  // A whole answer with resp_fields_ as its head and `answer` as its Content-Length body; the
  // exchange is over (kComplete).
  void respond(int status, std::string_view reason, std::string_view answer);
  // The same with the body already in `answer` (n bytes; its chains move to the client: a
  // cached answer goes by reference).
  void respond(int status, std::string_view reason, evbuffer* answer, size_t n);
  // The target chosen once after the stages: the gateway's own reply when a stage decided
  // one (LocalTarget, made on the spot), else, after routing, the forwarding target (one
  // upstream) or the federated one, which may hand a call to the forwarding target once it
  // chose the owner.
  LocalTarget local() noexcept { return LocalTarget(*this); }
  void toTarget();
  // An answer the upstream side could not give (502, 504, 404 for a session): the exchange
  // renders it, or cuts an answer already started.
  void upstreamFailed(int status, int code, const char* message, Outcome outcome,
                      int retry_after_s = 0);  // Retry-After seconds (0: none)
  // The keep-alive timer stopped and the upstream request released (ForwardTarget::release).
  // `record`: the attempt's duration metric (not when the connection is torn down under it).
  void releaseUpstream(bool record = true);
  // SSE keep-alive comments (the timer's turns)
  bool injectKeepalive() const noexcept;
  void armKeepalive();
  static void onKeepaliveTimer(evutil_socket_t, short, void* arg);
  void abortExchange(Outcome outcome);  // endAborted, then the stream is reset
  void endAborted(Outcome outcome);
  // metrics and access log (request_log.cc)
  void endRequest();
  void recordAttempt(Outcome error_type, core::Nanos duration);
  std::string spanName() const;  // tracing (request_log.cc)
  void endTrace(std::string_view error_type);
  void countSse(bool open);
  void logAccess();
  void appendLegacyFields(std::string& line) const;
  core::Nanos now() const noexcept;

  ProxyContext* w_ = nullptr;
  downstream::Stream* stream_ = nullptr;
  std::shared_ptr<const filters::Snapshot> snap_;
  downstream::StreamPeer peer_;  // the connection's (outlives the exchange)

  // The request (a target reads these; see the friends above).
  std::string head_buf;    // the request head's bytes (capacity reused); `head` views them
  http::RequestHead head;  // onHeaders' copy
  RequestBody body;        // how it is read; a buffered body's bytes
  int status = 0;          // the answer's status (0: none yet)
  Outcome outcome = Outcome::kNone;
  // SSE keep-alive comments (made by the pool); while a list answer is read whole for
  // filtering (nothing relayed yet), the turn that sends it once its response event is in.
  event::EventPtr keepalive_timer;

  filters::RequestContext ctx_;
  mcp::ValueArena arena_{64 * 1024};
  std::string verify_buf_;  // contiguous padded copy (verify / classify / id echo only)
  bool logged_ = false;     // endRequest ran

  // The exchange's life, with asserted transitions: taken from the pool (kIdle) → begin
  // (kBegun: a request's first byte) → onHeaders (kRunning: its stages) → one response start
  // (kAnswering) → finish or cancel (kIdle again, ready for the pool).
  enum class Life : uint8_t { kIdle, kBegun, kRunning, kAnswering };
  Life life_ = Life::kIdle;
  // the stages
  Step step_ = Step::kDone;
  KeysWait keys_;                       // a JWT waiting for its JWKS fetch (kHead)
  PollWait introspection_;              // an opaque token waiting for its introspection (kHead)
  LimitStage limits_;                   // the rate limits; its RateLimit fields go on the answer
  UpstreamAuth auth_;                   // the credentials made for the upstreams (kCredentials)
  std::vector<size_t> auth_upstreams_;  // the upstreams kCredentials makes them for (reused)

  core::Nanos started_{};   // the request's first byte (its duration; the upstream attempt's)
  bool forwarded_ = false;  // this request got an upstream connection (metrics: tools)
  std::vector<http::Field> resp_fields_;  // the response head for the client
  bool sse_counted_ = false;              // counted in the worker's active SSE streams

  RequestTrace trace_;
  uint64_t wait_began_ns_ = 0;  // tracing: a stopped stage's wait began (0: none)
  const char* waitName() const noexcept;
  // The targets, last, so they end before the rest: one upstream (forward_target.h), and a
  // federated route's (federated_target.h).
  ForwardTarget fwd_{*this};
  FederatedTarget fed_{*this};
};

// A worker's spare exchanges, and where its connections get them (a
// downstream::StreamFactory). newStream() hands out a spare one (or a new one); endStream()
// ends it and keeps at most kKeep of them, trimming buffers a large request grew, so the
// pool's memory is bounded whatever the traffic was.
class ExchangePool final : public downstream::StreamFactory {
 public:
  static constexpr size_t kKeep = 128;

  explicit ExchangePool(ProxyContext& w) noexcept : w_(w) {}
  ExchangePool(const ExchangePool&) = delete;
  ExchangePool& operator=(const ExchangePool&) = delete;
  ~ExchangePool();

  // downstream::StreamFactory
  downstream::StreamCallbacks* newStream(downstream::Stream& stream,
                                         std::shared_ptr<const filters::Snapshot> snapshot,
                                         downstream::StreamPeer peer) override;
  void endStream(downstream::StreamCallbacks& s, bool answered) override;

  void clear() noexcept;
  size_t spare() const noexcept { return free_.size(); }

 private:
  Exchange* take();
  void give(Exchange* x) noexcept;

  ProxyContext& w_;
  std::vector<Exchange*> free_;
};

}  // namespace gw::proxy
