#pragma once
// One downstream connection and the exchange in flight on it — the one place that wires
// downstream → filters → upstream → response relay. Requests on a connection are served
// strictly one at a time, in order (pipelined bytes wait in the input buffer, bounded).
//
// Ownership: a Connection owns itself (created by the worker on accept, deletes itself when
// the downstream side is done). It owns its downstream bufferevent and, during an exchange,
// the leased upstream bufferevent; the upstream connection goes back to the pool only after
// a complete, clean exchange.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "gateway/event/owners.h"
#include "gateway/filters/context.h"
#include "gateway/filters/limits.h"
#include "gateway/http/chunked.h"
#include "gateway/http/message.h"
#include "gateway/mcp/arena.h"
#include "gateway/proxy/worker_context.h"
#include "gateway/ratelimit/gcra.h"
#include "gateway/sse/framer.h"
#include "gateway/upstream/pool.h"

namespace gw::proxy {

class Connection final : public sse::EventSink {
 public:
  // Takes ownership of fd. `peer` is the client's address text (no port); `ip` the same
  // address, whose slot in Shared::client_counts the caller took (given back on destruction).
  static void start(WorkerContext& w, evutil_socket_t fd, std::string peer,
                    const core::IpAddress& ip);

  // Closes the connection when it waits between requests (drain). True when closed.
  bool closeIfIdle();
  // Closes the connection (and any exchange on it) now; `this` is gone afterwards.
  void closeNow();

  // The worker's flush event: writes the output every connection queued in this loop turn
  // (WorkerContext::pending_flush), upstream-bound first, then client-bound.
  static void flushPending(WorkerContext& w);

  // sse::EventSink: events of a tools/list SSE answer (schema learning).
  void onEvent(std::string_view event, std::string_view data) noexcept override;

 private:
  enum class State : uint8_t {
    kIdle,      // between requests (keepalive timeout)
    kHead,      // reading a request head (header timeout)
    kBody,      // reading the request body (body timeout)
    kExchange,  // request going upstream / response coming back
    kClosing,   // flushing the last bytes, then close (or linger)
    kLinger,    // lingering close: write side shut, input read and dropped, bounded in time
  };
  enum class BodyMode : uint8_t { kNone, kStream, kBuffer };

  Connection(WorkerContext& w, evutil_socket_t fd, std::string peer, const core::IpAddress& ip);
  ~Connection() override;

  // downstream
  static void onDownRead(bufferevent*, void* arg);
  static void onDownWrite(bufferevent*, void* arg);
  static void onDownEvent(bufferevent*, short what, void* arg);
  void onDownTimer();
  void process();
  void parseHead();
  void startRequest();
  void readBody();
  void beginBodyRead();
  void runLimits();
  void nextLimit();
  bool onLimitDecision(const ratelimit::Decision& d);
  void limitsPassed();
  void replyBeforeBody();
  bool takeBufferedBody();
  bool reserveBody(uint64_t n);
  void releaseBody();
  void lingerOrClose();
  void setSendTimeout();
  void pumpStreamBody();
  bool moveChunkedBody(evbuffer* in);
  void bodyComplete();
  void sendLocalReply();
  void sendPlainError(int status, const char* reason_phrase, const char* text);
  void finishRequest(bool keep_alive);
  void armDownTimer(std::chrono::milliseconds d);

  // upstream
  void connectUpstream();
  bool attachUpstream();
  bool retryConnect();
  void writeRequest();
  void writeUpstreamHead(evbuffer* out, uint64_t content_length);
  void rememberSentId();
  // upstreams[].host_header
  void appendUpstreamHost(std::string& h, const settings::Upstream& up) const;
  // legacy session affinity (mcp/session.h)
  bool pinSession();
  void sessionNotFound(const char* message, const char* outcome);
  bool upstreamSessionValid() const noexcept;
  void appendWrappedSession(std::string& h, std::string_view server_id) const;
  static void onUpRead(bufferevent*, void* arg);
  static void onUpWrite(bufferevent*, void* arg);
  static void onUpEvent(bufferevent*, short what, void* arg);
  void onUpTimer();
  void onKeepaliveTimer();
  bool injectKeepalive() const noexcept;
  void onResume();
  void scheduleFlush();
  void closeAfterFlush();
  void armUpTimer();
  void parseResponseHead();
  void sendResponseHead();
  void relayBody();
  void relayData(evbuffer* in, size_t n);
  void writeBody(evbuffer* src, size_t n);
  void responseComplete();
  void upstreamFailed(int status, int code, const char* message, const char* outcome);
  void abortExchange(const char* outcome);  // endAborted, then close once output is written
  void endAborted(const char* outcome);
  void noteResponseEvent() noexcept;                 // after SSE bytes went to the client
  const char* clientClosedOutcome() const noexcept;  // "complete" or "client_closed"
  void releaseUpstream(bool reusable);
  void learnTools(std::string_view json) noexcept;
  void endRequest();  // metrics, then the access-log line
  void recordAttempt(const char* error_type);
  void countSse(bool open);
  void logAccess();
  void appendLegacyFields(std::string& line) const;

  WorkerContext& w_;
  event::BufferEventPtr down_;
  event::EventPtr down_timer_;
  std::string peer_;
  core::IpAddress peer_ip_;  // its slot in Shared::client_counts is given back on destruction
  State state_ = State::kIdle;
  bool close_after_ = false;
  bool linger_ = false;   // the close after this answer is a lingering close (error answers)
  bool garbage_ = false;  // the head did not parse: no access-log line (rate-limited log)
  std::chrono::milliseconds send_timeout_{-1};  // as set on down_ (send_timeout)

  // request
  std::shared_ptr<const filters::Snapshot> snap_;
  const settings::Settings* s_ = nullptr;
  std::string head_buf_;  // the request head bytes (capacity reused)
  http::RequestHead head_;
  filters::RequestContext ctx_;
  mcp::ValueArena arena_;
  BodyMode body_mode_ = BodyMode::kNone;
  uint64_t body_remaining_ = 0;  // kStream with Content-Length: bytes still to move
  http::ChunkedDecoder req_chunked_;
  event::EvBufferPtr body_;     // kBuffer: the whole body
  std::string verify_buf_;      // contiguous padded copy (verify / classify only)
  bool body_read_ = false;      // body_ holds the whole request body
  bool limits_done_ = false;    // the rate limits admitted this request
  uint64_t body_reserved_ = 0;  // bytes of Shared::buffered_body_bytes this request holds
  mcp::RequestId sent_id_;      // the id of a buffered body sent upstream (502/504 echo it)

  // rate limits
  std::vector<filters::LimitCheck> limits_;
  size_t limit_index_ = 0;
  uint64_t redis_handle_ = 0;  // a pending Redis decision (cancelled if we go away)
  ratelimit::RedisLimiter* redis_owner_ = nullptr;  // the limiter that holds it
  std::string ratelimit_lines_;  // RateLimit fields for the answer (rate_limit_headers)
  uint64_t best_remaining_ = 0;
  bool sent_continue_ = false;

  // upstream
  upstream::Lease lease_;
  const upstream::Endpoint* endpoint_ = nullptr;  // for the access log (owned by the pool)
  event::EventPtr up_timer_;
  event::EventPtr keepalive_timer_;
  // Queued in w_.pending_flush (at flush_slot_) until the worker's flush event writes the
  // output straight to the sockets (flushPending, then onResume), then parses a pipelined
  // request when parse_pending_.
  bool flush_queued_ = false;
  bool up_drained_ = false;  // flushPending wrote the upstream output whole (onResume reports it)
  size_t flush_slot_ = 0;
  bool parse_pending_ = false;
  bool* alive_ = nullptr;  // set to false by the destructor (onResume's guard)
  std::chrono::steady_clock::time_point started_{};
  std::chrono::steady_clock::time_point head_deadline_{};
  std::chrono::steady_clock::time_point last_up_byte_{};
  std::chrono::steady_clock::time_point attempt_started_{};
  bool request_sent_ = false;  // every request byte handed to the upstream socket
  bool up_connected_ = false;
  bool forwarded_ = false;  // this request got an upstream connection (metrics: tool names)
  size_t connect_attempts_ = 0;
  size_t up_head_len_ = 0;          // bytes of the head written upstream (a retry rewrites it)
  uint64_t up_content_length_ = 0;  // the Content-Length that head announced
  // Legacy session affinity: the endpoint index the client's wrapped Mcp-Session-Id names
  // (-1: none, the balancer picks) and the server's own id sent upstream (views head_buf_).
  int session_endpoint_ = -1;
  std::string_view session_server_id_;
  std::string resp_buf_;
  http::ResponseHead resp_;
  bool resp_started_ = false;  // response head written to the client
  bool resp_sse_ = false;
  bool sse_counted_ = false;  // counted in the worker's active SSE streams
  bool client_chunked_ = false;
  uint64_t resp_remaining_ = 0;
  http::ChunkedDecoder resp_chunked_;
  std::unique_ptr<sse::Framer> framer_;
  // The SSE answer's last complete event is a JSON-RPC response, which ends in the client's
  // byte stream at bytes_out_ == response_end_ (noteResponseEvent; reset with framer_).
  bool response_relayed_ = false;
  uint64_t framer_events_ = 0;  // framer_->events() when noteResponseEvent last looked
  uint64_t response_end_ = 0;
  bool up_paused_ = false;  // upstream reads disabled for backpressure
  bool capture_json_ = false;
  std::string capture_;  // tools/list JSON answer (schema learning only)

  // access log
  int status_ = 0;
  uint64_t bytes_in_ = 0;
  uint64_t bytes_out_ = 0;
  const char* outcome_ = "";
};

}  // namespace gw::proxy
