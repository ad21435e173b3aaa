#pragma once
// proxy/: one MCP request from its first byte to its end — the snapshot it started on, the
// pipeline stages (the asynchronous rate-limit stage stops and resumes it), the body mode,
// the choice of upstream and the upstream request(s) it owns, the response relay (JSON/SSE,
// keep-alive comments at event boundaries, tools/list capture), the outcome and the
// access-log line. It talks to its client only through downstream::Stream and hears from it
// through downstream::StreamCallbacks; it never sees HTTP/1 framing.
//
// A connection takes an exchange from its worker's ExchangePool when a request's first byte
// arrives and gives it back when the request ends, so an idle keep-alive connection holds
// none of this, and the buffers' capacity is reused by the next request on any connection.

#include <chrono>
#include <cstdint>
#include <memory>
#include <span>
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
#include "gateway/proxy/answer_hold.h"
#include "gateway/proxy/federated_target.h"
#include "gateway/proxy/keys_wait.h"
#include "gateway/proxy/limit_stage.h"
#include "gateway/proxy/stage.h"
#include "gateway/ratelimit/gcra.h"
#include "gateway/sse/framer.h"
#include "gateway/upstream/http1_upstream.h"

namespace gw::proxy {

struct WorkerContext;

class Exchange final : public downstream::StreamCallbacks,
                       public upstream::UpstreamCallbacks,
                       public sse::EventSink,
                       public StageRunner {
 public:
  enum class BodyMode : uint8_t { kNone, kStream, kBuffer };
  using Outcome = core::Outcome;

  Exchange() = default;
  Exchange(const Exchange&) = delete;
  Exchange& operator=(const Exchange&) = delete;
  ~Exchange() override = default;

  // A new request on `stream` (its first byte arrived): the snapshot it runs on, the peer
  // address text, the identity of its verified TLS client certificate ("" without one; both
  // views outlive the exchange), its start time.
  void begin(WorkerContext& w, downstream::Stream& stream,
             std::shared_ptr<const filters::Snapshot> snap, std::string_view peer,
             std::string_view peer_subject = {});
  // The head is parsed into `head` (and `bytes_in` counts it): the request's context is set
  // up (prepare), then the stages run (start).
  void prepare();
  void start();
  // StageRunner: a stopped stage's wait is over (stage.h).
  void resume(filters::FilterStatus verdict) override;
  // An answer the client side decided on (417, 413, 503, 408): the exchange renders it.
  void localReply(int status, int code, const char* message, Outcome outcome,
                  int retry_after_s = 0);  // Retry-After seconds (0: none)
  // The request ends: metrics and the access-log line (once), the body reservation and the
  // upstream request released.
  void finish();
  // The client side is going away under the exchange: pending work is cancelled.
  void cancel();

  // Holds n more request-body bytes against limits.max_buffered_body_bytes (all
  // connections). False: over the cap; nothing was taken.
  bool reserveBody(uint64_t n);
  void releaseBody();

  // The worker's flush (upstream-bound bytes first): write the upstream output now, then,
  // from the connection's resume, run what the write callbacks would have.
  void flushUpstream();
  void resumeUpstream();

  // downstream::StreamCallbacks
  void onBodyComplete() override;
  void onBodyData(evbuffer* src, size_t n, bool end) override;
  void onBelowLowWatermark() override;
  void onStreamReset(Outcome why) override;

  // sse::EventSink: events of a tools/list SSE answer (schema learning), or of a federated
  // call's answer (task ids).
  void onEvent(std::string_view event, std::string_view data) noexcept override;

  // The response head went to the client (startResponse, or a local reply).
  bool responseStarted() const noexcept { return life_ == Life::kAnswering; }

  // ---- state the client side reads or fills in ---------------------------------------
  std::string head_buf;  // the request head bytes (capacity reused)
  http::RequestHead head;
  event::EvBufferPtr body;  // BodyMode::kBuffer: the whole body (filled by the connection)
  BodyMode body_mode = BodyMode::kNone;
  bool body_read = false;  // `body` holds the whole request body
  bool garbage = false;    // the head did not parse: no access-log line (rate-limited log)
  int status = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  Outcome outcome = Outcome::kNone;
  // SSE keep-alive comments (made by the pool); while a list answer is read whole for
  // filtering (nothing relayed yet), the turn that sends it once its response event is in.
  event::EventPtr keepalive_timer;

 private:
  friend class ExchangePool;
  // A target answers through the methods below marked for it, and through respond,
  // startResponse, sendLocalReply, upstreamFailed, connectUpstream, buildUpstreamHead,
  // armKeepalive, now and the list filter's cutsLists/filterForCaller/observePins.
  friend class FederatedTarget;

  // ---- what a target (federated_target.h) reaches of the request ---------------------
  filters::RequestContext& ctx() noexcept { return ctx_; }
  const filters::RequestContext& ctx() const noexcept { return ctx_; }
  const std::shared_ptr<const filters::Snapshot>& snapshot() const noexcept { return snap_; }
  const settings::Settings& settings() const noexcept { return *s_; }
  WorkerContext& worker() const noexcept { return *w_; }
  downstream::Stream* stream() const noexcept { return stream_; }  // null between requests
  // The body's padded copy (verify / classify only; shorter than the padding when unread).
  const std::string& verifyBuffer() const noexcept { return verify_buf_; }
  // The request goes to Settings::upstreams[index] (connectUpstream then sends it there).
  void useUpstream(size_t index) noexcept { up_index_ = index; }
  // The forwarded request fields buildUpstreamHead made (they view head_buf and xff_).
  std::span<const http::Field> upstreamFields() const noexcept { return up_head_.fields; }
  void noteForwarded() noexcept { forwarded_ = true; }  // upstreams were asked (metrics)
  std::vector<http::Field>& responseFields() noexcept { return resp_fields_; }
  // A legacy client's tools and prompts are shown as "<upstream><separator><name>".
  void setLegacyPrefix(std::string_view upstream, std::string_view separator);
  // startResponse for an SSE answer the gateway makes itself (counted in the SSE streams).
  void startSseResponse(downstream::ResponseHeaders& h);

  // The stages, in order. run() goes through them from step_; a stage that stops (kStop)
  // is resumed through resume(), kNeedBody reads the body (onBodyComplete runs on), and
  // kLocalReply answers. kTarget hands the request to what answers it.
  enum class Step : uint8_t {
    kHead,       // the pipeline's head stages (a JWT may wait for its keys: KeysWait)
    kEarlyBody,  // a body checked before the limits are charged
    kLimits,     // the rate limits (LimitStage; Redis-backed ones wait)
    kBody,       // a buffered body not read yet
    kOwner,      // the owner of a named call on a federated route (may wait for a refresh)
    kTarget,     // the upstream, the fan-out or a merged answer
    kDone,       // answered, or handed to the target
  };
  void run();
  filters::FilterStatus runStep();
  filters::FilterStatus headStep();
  void stopStages() noexcept;  // whatever stage waits is cancelled
  // request and body
  void resetContext();  // the pipeline's context for `head`, as new
  void replyBeforeBody();
  void beginBodyRead();
  void sendLocalReply();
  // The one response start: the head, with the RateLimit fields of the limits that admitted
  // the request, goes to the client (once; responseStarted() and status say so from then on).
  void startResponse(downstream::ResponseHeaders& h);
  // A whole answer with resp_fields_ as its head and `answer` as its Content-Length body; the
  // exchange is over (kComplete).
  void respond(int status, std::string_view reason, std::string_view answer);
  // upstream (one request today: `up_`; the callbacks say which request reports, so a
  // fan-out exchange can own several)
  void connectUpstream();
  void upstreamError(upstream::UpstreamError e);
  void buildUpstreamHead();
  void writeRequest();
  void rememberSentId();
  bool pinSession();
  void sessionNotFound(const char* message, Outcome outcome);
  static bool upstreamSessionValid(const http::ResponseHead& resp) noexcept;
  void wrapSession(std::string_view server_id);
  void upstreamFailed(int status, int code, const char* message, Outcome outcome,
                      int retry_after_s = 0);  // Retry-After seconds (0: none)
  // `record`: the attempt's duration metric (not when the connection is torn down under it).
  void releaseUpstream(bool record = true);
  bool onUpstreamHeaders(upstream::Http1Upstream& from, const http::ResponseHead& resp) override;
  void onUpstreamData(upstream::Http1Upstream& from, evbuffer* src, size_t n) override;
  void onUpstreamComplete(upstream::Http1Upstream& from) override;
  void onUpstreamError(upstream::Http1Upstream& from, upstream::UpstreamError e) override;
  void onUpstreamWritable(upstream::Http1Upstream& from) override;
  void onUpstreamOutput(upstream::Http1Upstream& from) override;
  void onUpstreamRetry(upstream::Http1Upstream& from, core::Nanos attempt_duration) override;
  // response relay
  bool injectKeepalive() const noexcept;
  void armKeepalive();
  static void onKeepaliveTimer(evutil_socket_t, short, void* arg);
  void noteResponseEvent() noexcept;  // after SSE bytes went to the client
  Outcome clientClosedOutcome() const noexcept;
  void abortExchange(Outcome outcome);  // endAborted, then the stream is reset
  void endAborted(Outcome outcome);
  void learnTools(std::string_view json) noexcept;
  // visibility: filter on a plain route (list_filter.cc)
  enum class ListRead : uint8_t { kUnchanged, kRewritten, kUnreadable };
  bool beginListFilter(const http::ResponseHead& resp);
  bool collectListAnswer(evbuffer* in, size_t n);
  bool listAnswerReady() const noexcept;
  void sendFilteredList();
  ListRead readListResponse(std::string_view json, std::string& out, std::string& why);
  void refuseList(int status, std::string_view reason, const char* message, Outcome why,
                  std::string_view cause);
  void dropListAnswer() noexcept;
  bool filterForCaller(federation::ListKind kind, std::string_view json, std::string& out);
  bool cutsLists() const noexcept;         // visibility filter or pinning block with a tool pending
  bool readsAnswerWhole() const noexcept;  // this request's 2xx answer goes through the filter
  // tool_pinning (pinning.cc)
  void observePins(std::string_view upstream, std::span<const std::string> items);
  bool pinCuts() const noexcept;
  bool pinHidden(std::string_view key) const;
  bool pinAdmits();
  // metrics and access log (request_log.cc)
  void endRequest();
  void recordAttempt(Outcome error_type, core::Nanos duration);
  void countSse(bool open);
  void logAccess();
  void appendLegacyFields(std::string& line) const;
  core::Nanos now() const noexcept;

  WorkerContext* w_ = nullptr;
  downstream::Stream* stream_ = nullptr;
  std::shared_ptr<const filters::Snapshot> snap_;
  const settings::Settings* s_ = nullptr;
  std::string_view peer_;          // the connection's peer address text (outlives the exchange)
  std::string_view peer_subject_;  // the connection's client-certificate identity, or ""

  filters::RequestContext ctx_;
  mcp::ValueArena arena_{64 * 1024};
  std::string verify_buf_;      // contiguous padded copy (verify / classify / id echo only)
  bool logged_ = false;         // endRequest ran
  uint64_t body_reserved_ = 0;  // bytes of Shared::buffered_body_bytes this request holds
  mcp::RequestId sent_id_;      // the id of a buffered body sent upstream (502/504 echo it)

  // The exchange's life, with asserted transitions: taken from the pool (kIdle) → begin
  // (kBegun: a request's first byte) → prepare (kRunning: its stages) → one response start
  // (kAnswering) → finish or cancel (kIdle again, ready for the pool).
  enum class Life : uint8_t { kIdle, kBegun, kRunning, kAnswering };
  Life life_ = Life::kIdle;
  // the stages
  Step step_ = Step::kDone;
  KeysWait keys_;      // a JWT waiting for its JWKS fetch (kHead)
  LimitStage limits_;  // the rate limits; its RateLimit fields go on the answer

  // upstream
  size_t up_index_ = 0;                           // Settings::upstreams index of the target
  upstream::Http1Upstream up_;                    // the request to the route's upstream
  upstream::UpstreamRequestHead up_head_;         // its head (views head_buf, xff_, session ids)
  std::string xff_;                               // the X-Forwarded-For value up_head_ views
  const upstream::Endpoint* endpoint_ = nullptr;  // for the access log (owned by the pool)
  core::Nanos started_{};
  bool up_open_ = false;     // up_ was started and has not ended (counted in streams)
  bool forwarded_ = false;   // this request got an upstream connection (metrics: tools)
  bool up_drained_ = false;  // flushUpstream wrote the upstream output whole
  // Legacy session affinity: the endpoint index the client's wrapped Mcp-Session-Id names
  // (-1: none, the balancer picks) and the server's own id sent upstream (views head_buf).
  int session_endpoint_ = -1;
  std::string_view session_server_id_;

  // response relay
  std::vector<http::Field> resp_fields_;  // the response head for the client
  std::string wrapped_session_;           // Mcp-Session-Id the client gets (resp_fields_ views)
  bool resp_sse_ = false;
  bool sse_counted_ = false;  // counted in the worker's active SSE streams
  bool capture_json_ = false;
  // The SSE answer's last complete event is a JSON-RPC response, which ends in the client's
  // byte stream at bytes_out == response_end_ (noteResponseEvent; reset with framer_).
  bool response_relayed_ = false;
  std::unique_ptr<sse::Framer> framer_;
  uint64_t framer_events_ = 0;  // framer_->events() when noteResponseEvent last looked
  uint64_t response_end_ = 0;
  std::string capture_;  // tools/list JSON answer (schema learning only)

  // visibility: filter — a list answer read whole, then filtered for this caller
  enum class FilterStop : uint8_t { kNone, kTooLarge, kBudget };
  bool filtering_ = false;
  FilterStop filter_stop_ = FilterStop::kNone;  // the answer cannot be kept: refused
  SseResponse filter_answer_;                   // an SSE list answer: done at its response event
  federation::ListKind filter_kind_ = federation::ListKind::kTools;
  int filter_status_ = 0;
  event::EvBufferPtr filter_chain_;  // the answer, in the upstream's own chunks
  AnswerHold answer_hold_;           // its bytes against limits.max_buffered_answer_bytes
  // A legacy client on a `names: prefix` route sees its first upstream's tools and prompts
  // as "<upstream><separator><name>" (issue #24): that prefix, else empty.
  std::string legacy_prefix_;
  size_t hidden_ = 0;  // items taken out of this caller's list (access log)
  bool filtered_ = false;
  // tool_pinning: this request's list was observed; "pins_pending" items (JSON objects)
  bool pin_observed_ = false;
  std::string pin_log_;

  // A federated route's target (federated_target.h); last, so it ends before the rest.
  FederatedTarget fed_{*this};
};

// A worker's spare exchanges. take() hands out a spare one (or a new one); give() keeps at
// most kKeep of them and trims buffers a large request grew, so the pool's memory is bounded
// whatever the traffic was.
class ExchangePool {
 public:
  static constexpr size_t kKeep = 128;

  ExchangePool() = default;
  ExchangePool(const ExchangePool&) = delete;
  ExchangePool& operator=(const ExchangePool&) = delete;
  ~ExchangePool();

  // Null only when memory is short.
  Exchange* take(event_base* base);
  void give(Exchange* x) noexcept;
  void clear() noexcept;
  size_t spare() const noexcept { return free_.size(); }

 private:
  std::vector<Exchange*> free_;
};

}  // namespace gw::proxy
