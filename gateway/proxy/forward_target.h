#pragma once
// proxy/: what answers a request that goes to one upstream, chosen after routing (a plain
// route, a legacy client of a federated route, or a call whose owner FederatedTarget chose):
// which upstream and endpoint (legacy session affinity), the one upstream request and its
// head, the request body sent on, the response relay (JSON/SSE, the SSE framing that keep-alive
// comments and the cancellation rule look at, tools/list capture for schema learning), list
// answers read whole and filtered for the caller (visibility: filter, a legacy client's
// prefixed names), and tool pinning's observation of tools/list answers.
//
// The target lives inside its Exchange (one per exchange, reused with it from the
// ExchangePool; begin() and reset() per request, recycle() on give) and reaches the request
// lifetime through it: the request's context, snapshot and body, the response start
// (startResponse, respond, upstreamFailed, abortExchange), the keep-alive timer (armKeepalive),
// the SSE stream count and the attempt metric. Exchange names it a friend for that: the
// target calls Exchange's methods (exchange.h lists them) and touches none of its private
// fields but the request's head, body, body_mode and outcome. FederatedTarget uses the forwarded
// head (buildUpstreamHead, upstreamFields), the list filter (cutsLists, filterForCaller) and
// observePins.
//
// forward_target.cc: the upstream request and session affinity; forward_relay.cc: the
// response relay; forward_lists.cc: list filtering; forward_pins.cc: tool pinning;
// forward_bridge.cc: a 2026-07-28 request to a 2025-era upstream (issue #26), carried in the
// worker's session with it (legacy_sessions.h).

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/clock.h"
#include "gateway/core/outcome.h"
#include "gateway/event/flush_queue.h"
#include "gateway/event/owners.h"
#include "gateway/federation/federation.h"
#include "gateway/http/message.h"
#include "gateway/mcp/id_scan.h"
#include "gateway/proxy/answer_hold.h"
#include "gateway/proxy/legacy_sessions.h"
#include "gateway/proxy/list_memo.h"
#include "gateway/proxy/sse_response.h"
#include "gateway/sse/framer.h"
#include "gateway/upstream/http1_upstream.h"

namespace gw::proxy {

class Exchange;
struct ProxyContext;

class ForwardTarget final : public upstream::UpstreamCallbacks,
                            public BridgeWaiter,
                            public sse::EventSink,
                            public event::Flushable {
 public:
  using Outcome = core::Outcome;

  explicit ForwardTarget(Exchange& x) noexcept : x_(x) {}
  ForwardTarget(const ForwardTarget&) = delete;
  ForwardTarget& operator=(const ForwardTarget&) = delete;
  ~ForwardTarget() override = default;

  // A new request on the exchange (its first byte): the upstream request is bound to the
  // worker, no endpoint was used yet.
  void begin(ProxyContext& w);
  // The request's stages start: nothing filtered, observed or prefixed yet.
  void reset() noexcept;
  // The exchange goes back to its pool: the upstream request released (never pooled), the
  // list answer dropped, and the capture buffer released when it grew past `keep_capacity`.
  void recycle(size_t keep_capacity) noexcept;

  // The request goes to Settings::upstreams[index] (connect() then sends it there).
  void useUpstream(size_t index) noexcept { up_index_ = index; }
  size_t upstreamIndex() const noexcept { return up_index_; }
  // Sends the request to the chosen upstream (after the pin and session checks, which may
  // answer it themselves).
  void connect();
  // The upstream request's head as name/value pairs; upstreamFields() are its fields (they
  // view head_buf and xff_).
  void buildUpstreamHead();
  std::span<const http::Field> upstreamFields() const noexcept { return up_head_.fields; }
  // The upstream request ends: counters and (`record`) the attempt's duration metric; its
  // connection closed unless the upstream request pooled it.
  void release(bool record);

  // The exchange's client side: streamed body bytes, the client drained below its low mark.
  void onBodyData(evbuffer* src, size_t n, bool end);
  void resumeReading();
  // event::Flushable (the worker's flush queue): the upstream request's output is written
  // once per loop turn, with every other upstream-bound output of the turn; then what its
  // write callbacks would have done.
  void flushOutbound() noexcept override;
  void afterFlush() override;
  // How a request whose client went away mid-exchange ends (forward_relay.cc).
  Outcome clientClosedOutcome() const noexcept;

  // What the keep-alive timer reads: the relayed answer is SSE with room for comments
  // (framed, not Content-Length), and the framer stands between events.
  bool relaysSseEvents() const noexcept;
  bool atEventBoundary() const noexcept { return framer_->atBoundary(); }
  // A list answer is read whole for filtering (the timer's turn sends it once it is in).
  bool filtering() const noexcept { return filtering_; }
  void sendListWhenReady();

  // A 2025-era client on a federated route (the gateway is its server: federated_front.cc).
  bool frontRequest() const noexcept;
  std::string_view frontClient() const noexcept;  // its front session id (see .cc)
  // visibility: filter (forward_lists.cc). The list answer `json` filtered for this request's
  // caller; when `json` is kept as `e` (found as `m`, or just kept: m null), a view kept for
  // the same visibility set is reused and a new one kept (ListMemo). False: not a list answer.
  bool filterForCaller(federation::ListKind kind, std::string_view json, std::string& out,
                       ListMemo::Entry* e = nullptr, const ListMemo::Match* m = nullptr);
  // A federated route's merged list members (`shared`, the route's immutable answer) filtered
  // for this caller: `members` gets the members of the filtered answer. False: not filtered.
  bool filterMerged(federation::ListKind kind, const std::shared_ptr<const std::string>& shared,
                    std::string& members);
  bool cutsLists() const noexcept;  // visibility filter or pinning block with a tool pending
  // tool_pinning (forward_pins.cc)
  void observePins(std::string_view upstream, std::span<const std::string> items);

  // Whether a request on this route may be bridged to a 2025-era upstream: a trusted
  // (2026-07-28) POST on a plain route whose upstream is not known to be modern. Its body is
  // then read whole (a lost session's request is sent again). forward_bridge.cc.
  bool mayBridge() const;
  // upstreams[].retry (forward_retry.cc): whether this request may be sent again — its
  // route's upstream retries its method (a plain route; a federated route's calls are read
  // whole anyway). Its body is then read whole and kept until the answer starts.
  bool mayRetry() const;
  // BridgeWaiter: the upstream's era or session is known (or could not be had).
  void onBridgeReady(bool ok, const char* why) override;

  // The id of the buffered body that left for the upstream (a 502/504 echoes it); absent
  // before it left, or for a streamed body.
  const mcp::RequestId& sentId() const noexcept { return sent_id_; }

  // The access log: the endpoint last tried (owned by the pool; null before any), and the
  // "pins_pending" and "list_hidden" fields.
  const upstream::Endpoint* endpoint() const noexcept { return endpoint_; }
  void appendLogFields(std::string& line) const;

  // sse::EventSink: events of a tools/list SSE answer (schema learning), or of a federated
  // call's answer (task ids).
  void onEvent(std::string_view event, std::string_view data) noexcept override;

 private:
  // the era bridge (forward_bridge.cc)
  bool bridgeReady();
  bool bridgeRetry(const http::ResponseHead& resp);
  bool bridgeTried(const http::ResponseHead& resp);
  void bridgeEvent(std::string_view data);
  void sendBridgedAnswer();
  bool bridgeCacheable() const noexcept;  // the request's result is a CacheableResult
  void bridgeFailed(bool connect);
  void leaveBridge() noexcept;

  // upstream (one request: `up_`; the callbacks say which request reports)
  void upstreamError(upstream::UpstreamError e);
  void writeRequest();
  void scheduleFlush();
  void rememberSentId();
  bool pinSession();
  static bool frontField(std::string_view name) noexcept;
  bool bridgeChecked();
  void addFrontFields(std::vector<http::Field>& fields);
  void sessionNotFound(const char* message, Outcome outcome);
  static bool upstreamSessionValid(const http::ResponseHead& resp) noexcept;
  void wrapSession(std::string_view server_id);
  bool onUpstreamHeaders(upstream::Http1Upstream& from, const http::ResponseHead& resp) override;
  void onUpstreamData(upstream::Http1Upstream& from, evbuffer* src, size_t n) override;
  void onUpstreamComplete(upstream::Http1Upstream& from) override;
  void onUpstreamError(upstream::Http1Upstream& from, upstream::UpstreamError e) override;
  void onUpstreamWritable(upstream::Http1Upstream& from) override;
  void onUpstreamOutput(upstream::Http1Upstream& from) override;
  void onUpstreamRetry(upstream::Http1Upstream& from, core::Nanos attempt_duration) override;
  // response relay
  void noteResponseEvent() noexcept;  // after SSE bytes went to the client
  void learnTools(std::string_view json) noexcept;
  void capturePiece(std::string_view piece);
  // visibility: filter on a plain route (forward_lists.cc)
  enum class ListRead : uint8_t { kUnchanged, kRewritten, kUnreadable };
  bool beginListFilter(const http::ResponseHead& resp);
  bool collectListAnswer(evbuffer* in, size_t n);
  bool listAnswerReady() const noexcept;
  void sendFilteredList();
  ListRead readListResponse(std::string_view json, std::string& out, std::string& why);
  void refuseList(int status, std::string_view reason, const char* message, Outcome why,
                  std::string_view cause);
  void dropListAnswer() noexcept;
  bool readsAnswerWhole() const noexcept;  // this request's 2xx answer goes through the filter
  // tool_pinning (forward_pins.cc)
  bool pinCuts() const noexcept;
  bool pinHidden(std::string_view key) const;
  bool pinAdmits();

  Exchange& x_;

  // upstream
  ProxyContext* w_ = nullptr;              // the worker's (begin)
  size_t up_index_ = 0;                    // Settings::upstreams index of the target
  upstream::Http1Upstream up_;             // the request to the route's upstream
  upstream::UpstreamRequestHead up_head_;  // its head (views head_buf, xff_, session ids)
  std::string xff_;
  std::vector<std::string> front_text_;  // a 2025-era client's 2026-07-28 field values // the
                                         // X-Forwarded-For value up_head_ views
  const upstream::Endpoint* endpoint_ = nullptr;  // for the access log (owned by the pool)
  mcp::RequestId sent_id_;                        // sentId()
  bool up_open_ = false;     // up_ was started and has not ended (counted in streams)
  bool up_drained_ = false;  // flushOutbound wrote the upstream output whole
  // Legacy session affinity: the endpoint index the client's wrapped Mcp-Session-Id names
  // (-1: none, the balancer picks) and the server's own id sent upstream (views head_buf).
  int session_endpoint_ = -1;
  std::string_view session_server_id_;

  // The era bridge: off (a modern upstream, or a legacy client); trying (era: auto, not known
  // yet: sent as it is, its answer tells — 2xx: modern, 400/404/405: ask server/discover);
  // waiting for the era or the session; on (the request goes in the gateway's session: its id
  // and version below).
  enum class Bridge : uint8_t { kOff, kTrying, kWaiting, kOn };
  Bridge bridge_ = Bridge::kOff;
  bool bridge_retried_ = false;     // the request was sent again once after a lost session
  size_t bridge_endpoint_ = 0;      // the endpoint whose session carries it
  uint64_t bridge_generation_ = 0;  // that session's generation (LegacySessions::expire)
  std::string bridge_session_;      // its Mcp-Session-Id (session_server_id_ views it)
  std::string bridge_version_;      // its protocol version (the MCP-Protocol-Version sent)
  // A bridged JSON answer is held whole in capture_ (a result gets its resultType before it
  // goes); a bridged SSE answer is re-framed event by event through bridge_events_.
  bool bridge_hold_ = false;
  std::string bridge_events_;

  // response relay
  std::string wrapped_session_;  // Mcp-Session-Id the client gets (the response fields view)
  bool resp_sse_ = false;
  bool capture_json_ = false;
  // The SSE answer's last complete event is a JSON-RPC response, which ends in the client's
  // byte stream at bytesSent() == response_end_ (noteResponseEvent; reset with framer_).
  bool response_relayed_ = false;
  std::unique_ptr<sse::Framer> framer_;
  uint64_t framer_events_ = 0;  // framer_->events() when noteResponseEvent last looked
  uint64_t response_end_ = 0;
  std::string capture_;  // tools/list JSON answer (schema learning only)
  // Schema learning of an answer this worker learned before: compared as it streams against
  // the text learned (no copy) while `matching_`; captured from the first difference that is
  // not the id (seen_answers.h).
  bool matching_ = false;
  std::shared_ptr<const std::string> match_text_;
  mcp::SameAnswerMatcher matcher_;

  // visibility: filter — a list answer read whole, then filtered for this caller
  enum class FilterStop : uint8_t { kNone, kTooLarge, kBudget };
  bool filtering_ = false;
  FilterStop filter_stop_ = FilterStop::kNone;  // the answer cannot be kept: refused
  SseResponse filter_answer_;                   // an SSE list answer: done at its response event
  federation::ListKind filter_kind_ = federation::ListKind::kTools;
  int filter_status_ = 0;
  event::EvBufferPtr filter_chain_;  // the answer, in the upstream's own chunks
  AnswerHold answer_hold_;           // its bytes against limits.max_buffered_answer_bytes
  size_t hidden_ = 0;                // items taken out of this caller's list (access log)
  bool filtered_ = false;
  // tool_pinning: this request's list was observed; "pins_pending" items (JSON objects)
  bool pin_observed_ = false;
  std::string pin_log_;
  // upstreams[].retry (forward_retry.cc)
  bool retryable() const;
  // An attempt failed before any answer byte went to the client (`reason`: connect_failure,
  // reset, timeout, or the status): true when it is sent again (after the backoff).
  bool retry(const char* reason);
  void onRetryTimer();
  int attempts_ = 0;             // upstream attempts of this request (1 = no retry)
  bool keep_body_ = false;       // the body stays for a retry (sent by copy)
  event::EventPtr retry_timer_;  // the backoff before the next attempt
  std::string fail_message_;     // a fail-fast 503's message (names the upstream)
};

}  // namespace gw::proxy
