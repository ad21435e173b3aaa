#pragma once
// One request to an upstream over HTTP/1.1: a connection leased from the worker's pool (or a
// new one, with the refused-connect retry on the next endpoint), the head written from
// name/value pairs and the upstream's configured `headers`, the request body the owner
// appends, the response head parsed (interim 1xx answers skipped), the body de-framed
// (Content-Length, chunked, or until close) and handed to the owner, the
// connect/response/stream-idle/max-duration timeouts, and the connection given back to the
// pool only after a clean, complete exchange.
//
// The owner (proxy::Exchange) hears about it through UpstreamCallbacks. An exchange may own
// one or several of these; each is reusable (start() after release()). Every callback is the
// last thing a method does, so the owner may release or restart the request inside one.

#include <event2/bufferevent.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/clock.h"
#include "gateway/core/outcome.h"
#include "gateway/event/owners.h"
#include "gateway/event/socket.h"
#include "gateway/http/chunked.h"
#include "gateway/http/message.h"
#include "gateway/http/parser.h"
#include "gateway/http/serialize.h"
#include "gateway/upstream/pool.h"

namespace gw::upstream {

// How an upstream request failed. Before the response head the owner answers the client
// (502/504/404); after it, the answer is cut.
enum class UpstreamError : uint8_t {
  kConnectFailed,        // no connection could be started
  kConnectRefused,       // the endpoint (and every other one tried) refused the connection
  kSessionEndpointDown,  // a pinned (session) endpoint cannot be reached
  kConnectTimeout,
  kResponseTimeout,
  kClosedBeforeAnswer,  // the upstream closed (or reset) before a response head
  kMalformed,           // a response head that does not parse
  kReset,               // closed or reset in the middle of the body
  kBadChunk,            // malformed chunked framing in the body
  kMaxDuration,         // the answer outlived max_duration
  kStreamIdle,          // no upstream byte for stream_idle_timeout
  kTls,                 // the TLS handshake failed (tlsError() says why)
  kUnavailable,         // no endpoint of the upstream is usable (down or ejected: health.h)
  kOverflow,            // the upstream's circuit_breaker is full
};

// The request outcome an error stands for (log, metrics).
core::Outcome outcomeOf(UpstreamError e) noexcept;

class Http1Upstream;

// Every callback names the upstream request it comes from: an owner of several (a fan-out)
// is told which one answered, failed or ended.
class UpstreamCallbacks {
 public:
  // The final response head. False: the owner refused it (and released the request).
  virtual bool onUpstreamHeaders(Http1Upstream& from, const http::ResponseHead& head) = 0;
  // `n` de-framed body bytes at the front of `src`: the owner moves or drains them all.
  virtual void onUpstreamData(Http1Upstream& from, evbuffer* src, size_t n) = 0;
  // The body is complete; the connection went back to the pool when it could.
  virtual void onUpstreamComplete(Http1Upstream& from) = 0;
  // The request failed and is released.
  virtual void onUpstreamError(Http1Upstream& from, UpstreamError e) = 0;
  // The request output drained below the low mark: the owner may append more body.
  virtual void onUpstreamWritable(Http1Upstream& from) = 0;
  // New output is queued for the socket (the owner schedules the worker's flush).
  virtual void onUpstreamOutput(Http1Upstream& from) = 0;
  // One connect attempt failed and the request moves to the next endpoint.
  virtual void onUpstreamRetry(Http1Upstream& from, core::Nanos attempt_duration) = 0;

 protected:
  ~UpstreamCallbacks() = default;
};

// The request as the owner describes it: no Host, no Content-Length, no framing fields
// (added here, for the endpoint actually used).
struct UpstreamRequestHead {
  std::string_view method;
  std::string_view query;  // "?…" or empty; the path is upstreams[].path
  // Forwarded as given (views the owner keeps alive), except a field upstreams[].headers
  // names: the configured value is sent instead.
  std::vector<http::Field> fields;
  bool client_host = false;  // fields carry the client's Host (host_header: client)
  uint64_t content_length = 0;
  bool length_field = false;  // write Content-Length even when 0
  int pinned_endpoint = -1;   // a session's endpoint, or -1: the balancer picks
  // upstreams[].auth other than forward: the Authorization value to send (views the owner's);
  // every Authorization among `fields` is dropped then. Empty for a client_credentials
  // upstream: the gateway's current token is looked up here.
  std::string_view authorization;
};

class Http1Upstream {
 public:
  static constexpr size_t kOutLow = 64 * 1024;

  Http1Upstream() = default;
  Http1Upstream(const Http1Upstream&) = delete;
  Http1Upstream& operator=(const Http1Upstream&) = delete;
  ~Http1Upstream() { release(false); }

  void init(event_base* base, Pools* pools, http::Http1Parser* parser, const core::Clock* clock,
            UpstreamCallbacks* cb) noexcept;

  // Leases a connection and writes the head (the body, if any, is appended by the owner to
  // output()). `started` is when the client's request began (max_duration counts from it).
  // False: nothing was started (kConnectFailed or kSessionEndpointDown in `error`).
  bool start(const settings::Upstream& up, const UpstreamRequestHead& head, core::Nanos started,
             UpstreamError& error);
  // The request's output (head and body bytes not yet on the socket).
  evbuffer* output() noexcept;
  // Every request byte is in output().
  void requestComplete() noexcept { request_complete_ = true; }
  // Gives the connection back to the pool (`reusable`) or closes it. Idempotent.
  void release(bool reusable) noexcept;

  bool active() const noexcept { return static_cast<bool>(lease_.bev); }
  bool connected() const noexcept { return connected_; }
  bool responseStarted() const noexcept { return resp_started_; }
  bool pinned() const noexcept { return lease_.pinned; }
  size_t endpointIndex() const noexcept { return lease_.index; }
  const Endpoint* endpoint() const noexcept { return endpoint_; }
  // The shared state of the upstream the current lease belongs to (null without a lease).
  UpstreamState* cluster() const noexcept { return lease_.cluster; }
  // Why the last TLS handshake failed (after UpstreamError::kTls).
  const std::string& tlsError() const noexcept { return tls_error_; }
  const http::ResponseHead& response() const noexcept { return resp_; }
  core::Nanos attemptDuration() const noexcept { return clock_->now() - attempt_started_; }

  // Backpressure from the client side: stop reading the answer, then go on (what already
  // waits in the input is relayed at once).
  void pauseReading() noexcept;
  void resumeReading();
  bool paused() const noexcept { return paused_; }

  // The worker's flush: writes the output straight to the socket. kDrained: onFlushed()
  // should run (from the owner's resume, not from the flush loop).
  event::Sent sendNow() noexcept;
  bool writing() const noexcept;
  void onFlushed();

 private:
  bool attach(UpstreamError& error);
  // Shared health (health.h): the request counted in flight on its upstream and endpoint
  // (once; uncount() when it ends or moves), and an answer or failure reported.
  void count() noexcept;
  void uncount() noexcept;
  void reportFailed(UpstreamError e);
  bool retryConnect();
  void writeHead(evbuffer* out);
  void appendHost(std::string& h) const;
  void armTimer();
  void fail(UpstreamError e);
  void parseHead();
  void relayBody();
  void complete();
  static void onRead(bufferevent*, void* arg);
  static void onWrite(bufferevent*, void* arg);
  static void onEvent(bufferevent*, short what, void* arg);
  static void onTimer(evutil_socket_t, short, void* arg);

  event_base* base_ = nullptr;
  Pools* pools_ = nullptr;
  http::Http1Parser* parser_ = nullptr;
  const core::Clock* clock_ = nullptr;
  UpstreamCallbacks* cb_ = nullptr;
  event::EventPtr timer_;
  event::EvBufferPtr batch_;  // chunked relay: a read's chunks, re-framed as one

  const settings::Upstream* up_ = nullptr;
  const UpstreamRequestHead* head_ = nullptr;  // the owner's, alive for the request
  Lease lease_;
  const Endpoint* endpoint_ = nullptr;    // the last endpoint tried (for the access log)
  std::string head_buf_;                  // the head as written (a retry rewrites it)
  std::vector<http::Field> auth_fields_;  // fields without Authorization (upstreams[].auth)
  std::string tls_error_;
  size_t head_len_ = 0;
  core::Nanos started_{};
  core::Nanos head_deadline_{};
  core::Nanos last_byte_{};
  core::Nanos attempt_started_{};
  size_t connect_attempts_ = 0;
  std::string resp_buf_;
  http::ResponseHead resp_;
  http::ChunkedDecoder resp_chunked_;
  uint64_t resp_remaining_ = 0;
  bool connected_ = false;
  bool resp_started_ = false;
  bool request_complete_ = false;
  bool paused_ = false;
  UpstreamState* counted_up_ = nullptr;  // in flight on it (count())
  EndpointState* counted_ep_ = nullptr;
  bool pending_ = false;  // counted as waiting for a new connection
};

}  // namespace gw::upstream
