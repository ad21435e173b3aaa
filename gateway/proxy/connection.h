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
#include "gateway/event/socket.h"
#include "gateway/filters/context.h"
#include "gateway/filters/limits.h"
#include "gateway/http/chunked.h"
#include "gateway/http/message.h"
#include "gateway/mcp/arena.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/worker_context.h"
#include "gateway/ratelimit/gcra.h"
#include "gateway/sse/framer.h"
#include "gateway/upstream/http1_upstream.h"
#include "gateway/upstream/pool.h"

namespace gw::proxy {

class Connection final : public sse::EventSink, public upstream::UpstreamCallbacks {
 public:
  // Takes ownership of fd. `peer` is the client's address text (no port); `ip` the same
  // address, whose slot in Shared::client_counts the caller took (given back on destruction).
  static void start(WorkerContext& w, evutil_socket_t fd, std::string peer,
                    const core::IpAddress& ip);

  // Closes the connection when it waits between requests (drain). True when closed.
  bool closeIfIdle();
  // Closes the connection (and any exchange on it) now; the object is deleted after the
  // current loop turn (reapClosed), so code still on the stack may touch it.
  void closeNow();
  // Deletes the connections closed since the last call (the worker's reaper event, and the
  // worker's shutdown).
  static void reapClosed(WorkerContext& w);

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
  using BodyMode = Exchange::BodyMode;
  using Outcome = core::Outcome;

  Connection(WorkerContext& w, evutil_socket_t fd, std::string peer, const core::IpAddress& ip);
  ~Connection() override;

  // downstream
  static void onDownRead(void* arg);
  static void onDownWrite(void* arg);
  static void onDownEvent(void* arg, short what);
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

  // upstream (upstream::Http1Upstream x_->up does the HTTP/1 side)
  void connectUpstream();
  void buildUpstreamHead();
  void writeRequest();
  void rememberSentId();
  bool onUpstreamHeaders(const http::ResponseHead& resp) override;
  void onUpstreamData(evbuffer* src, size_t n) override;
  void onUpstreamComplete() override;
  void onUpstreamError(upstream::UpstreamError e) override;
  void onUpstreamWritable() override;
  void onUpstreamOutput() override;
  void onUpstreamRetry(core::Nanos attempt_duration) override;
  // legacy session affinity (mcp/session.h)
  bool pinSession();
  void sessionNotFound(const char* message, Outcome outcome);
  static bool upstreamSessionValid(const http::ResponseHead& resp) noexcept;
  void appendWrappedSession(std::string& h, std::string_view server_id) const;
  static void keepaliveTimerCb(evutil_socket_t, short, void* arg);
  bool takeExchange();
  void giveExchange();
  void onKeepaliveTimer();
  bool injectKeepalive() const noexcept;
  void onResume();
  void scheduleFlush();
  void closeAfterFlush();
  core::Nanos now() const noexcept { return w_.clock->now(); }
  void writeBody(evbuffer* src, size_t n);
  void upstreamFailed(int status, int code, const char* message, Outcome outcome);
  void abortExchange(Outcome outcome);  // endAborted, then close once output is written
  void endAborted(Outcome outcome);
  void noteResponseEvent() noexcept;             // after SSE bytes went to the client
  Outcome clientClosedOutcome() const noexcept;  // kComplete or kClientClosed
  void releaseUpstream(bool reusable);
  void learnTools(std::string_view json) noexcept;
  void endRequest();  // metrics, then the access-log line
  void recordAttempt(Outcome error_type, core::Nanos duration);
  void countSse(bool open);
  void logAccess();
  void appendLegacyFields(std::string& line) const;

  WorkerContext& w_;
  event::Socket down_;
  event::EventPtr down_timer_;  // the one per-connection timer (idle, head, body, close)
  std::string peer_;
  core::IpAddress peer_ip_;  // its slot in Shared::client_counts is given back on destruction
  // The request in flight (from its first byte to its end), from w_.exchanges; null while
  // the connection waits between requests.
  Exchange* x_ = nullptr;
  std::shared_ptr<const filters::Snapshot> snap_;
  const settings::Settings* s_ = nullptr;
  std::chrono::milliseconds send_timeout_{-1};  // as set on down_ (send_timeout)
  size_t flush_slot_ = 0;
  State state_ = State::kIdle;
  bool close_after_ = false;
  bool linger_ = false;   // the close after this answer is a lingering close (error answers)
  bool garbage_ = false;  // the head did not parse: no access-log line (rate-limited log)
  // Queued in w_.pending_flush (at flush_slot_) until the worker's flush event writes the
  // output straight to the sockets (flushPending, then onResume), then parses a pipelined
  // request when parse_pending_.
  bool flush_queued_ = false;
  bool parse_pending_ = false;
  bool closed_ = false;  // closeNow ran: the reaper deletes the object after this loop turn
};

}  // namespace gw::proxy
