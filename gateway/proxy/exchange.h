#pragma once
// The state of one request on a downstream connection (proxy::Connection): its head, its
// pipeline context, its body, the rate-limit progress, the upstream lease, the response relay
// and the access-log figures. A connection takes one from its worker's ExchangePool when the
// first byte of a request arrives and gives it back when the request ends, so an idle
// keep-alive connection holds none of this (issue #14: memory per idle connection), and the
// buffers' capacity is reused by the next request on any connection of the worker.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/clock.h"
#include "gateway/core/outcome.h"
#include "gateway/event/owners.h"
#include "gateway/filters/context.h"
#include "gateway/filters/limits.h"
#include "gateway/http/chunked.h"
#include "gateway/http/message.h"
#include "gateway/mcp/arena.h"
#include "gateway/mcp/id_scan.h"
#include "gateway/ratelimit/gcra.h"
#include "gateway/sse/framer.h"
#include "gateway/upstream/http1_upstream.h"
#include "gateway/upstream/pool.h"

namespace gw::ratelimit {
class RedisLimiter;
}

namespace gw::proxy {

class Connection;

struct Exchange {
  enum class BodyMode : uint8_t { kNone, kStream, kBuffer };
  using TimePoint = core::Nanos;  // read from the worker's core::Clock

  Connection* conn = nullptr;  // the connection the request arrived on (set by take)

  // request
  std::string head_buf;  // the request head bytes (capacity reused)
  http::RequestHead head;
  filters::RequestContext ctx;
  mcp::ValueArena arena{64 * 1024};
  BodyMode body_mode = BodyMode::kNone;
  uint64_t body_remaining = 0;  // kStream with Content-Length: bytes still to move
  http::ChunkedDecoder req_chunked;
  event::EvBufferPtr body;     // kBuffer: the whole body
  std::string verify_buf;      // contiguous padded copy (verify / classify only)
  bool body_read = false;      // body holds the whole request body
  bool limits_done = false;    // the rate limits admitted this request
  bool sent_continue = false;  // a 100 Continue went to the client
  uint64_t body_reserved = 0;  // bytes of Shared::buffered_body_bytes this request holds
  mcp::RequestId sent_id;      // the id of a buffered body sent upstream (502/504 echo it)

  // rate limits
  std::vector<filters::LimitCheck> limits;
  size_t limit_index = 0;
  uint64_t redis_handle = 0;                       // a pending Redis decision (cancelled on close)
  ratelimit::RedisLimiter* redis_owner = nullptr;  // the limiter that holds it
  std::string ratelimit_lines;  // RateLimit fields for the answer (rate_limit_headers)
  uint64_t best_remaining = 0;

  // upstream
  upstream::Http1Upstream up;             // the request to the route's upstream
  upstream::UpstreamRequestHead up_head;  // its head (views head_buf, xff, session_server_id)
  std::string xff;                        // the X-Forwarded-For value up_head views
  const upstream::Endpoint* endpoint = nullptr;  // for the access log (owned by the pool)
  event::EventPtr keepalive_timer;
  TimePoint started{};
  bool up_open = false;       // `up` was started and has not ended (counted in Shared::streams)
  bool request_sent = false;  // every request byte handed to the upstream request
  bool forwarded = false;     // this request got an upstream connection (metrics: tool names)
  bool up_drained = false;    // flushPending wrote the upstream output whole (onResume reports it)
  // Legacy session affinity: the endpoint index the client's wrapped Mcp-Session-Id names
  // (-1: none, the balancer picks) and the server's own id sent upstream (views head_buf).
  int session_endpoint = -1;
  std::string_view session_server_id;

  // response relay
  bool resp_started = false;  // response head written to the client
  bool resp_sse = false;
  bool sse_counted = false;  // counted in the worker's active SSE streams
  bool client_chunked = false;
  bool capture_json = false;
  // The SSE answer's last complete event is a JSON-RPC response, which ends in the client's
  // byte stream at bytes_out == response_end (noteResponseEvent; reset with framer).
  bool response_relayed = false;
  std::unique_ptr<sse::Framer> framer;
  uint64_t framer_events = 0;  // framer->events() when noteResponseEvent last looked
  uint64_t response_end = 0;
  std::string capture;  // tools/list JSON answer (schema learning only)

  // access log
  int status = 0;
  uint64_t bytes_in = 0;
  uint64_t bytes_out = 0;
  core::Outcome outcome = core::Outcome::kNone;
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

  // Null only when memory is short. The keep-alive timer calls `keepalive_cb` with the
  // exchange as its argument.
  Exchange* take(event_base* base, Connection* conn, event_callback_fn keepalive_cb);
  void give(Exchange* x) noexcept;
  void clear() noexcept;
  size_t spare() const noexcept { return free_.size(); }

 private:
  std::vector<Exchange*> free_;
};

}  // namespace gw::proxy
