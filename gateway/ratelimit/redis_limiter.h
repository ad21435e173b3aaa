#pragma once
// `backend: redis` limits: GCRA buckets kept in a shared Redis, so several gateway replicas
// enforce one limit together. One RedisLimiter per worker, living on that worker's
// event_base (hiredis' libevent adapter); never shared across threads.
//
// check() never blocks and never calls back synchronously: the decision arrives later on the
// worker's loop. Each decision is one EVALSHA of a Lua script (EVAL when Redis answers
// NOSCRIPT) that runs the gcra() arithmetic atomically with Redis' TIME as the clock, so
// replicas need no clock agreement, and sets the key to expire when the bucket is full again.
//
// Failure: when Redis does not answer within `timeout`, refuses the connection, drops it or
// answers an error, the request gets the OnError outcome, still asynchronously and at the
// latest `timeout` after check():
//   kLocal → the decision of the LocalLimiter fallback for the same key and rate
//   kAllow → allowed;  kDeny → denied with retry_after 1 s.
// A timeout also drops the connection (Redis is stalled: later requests fail fast instead of
// each waiting the timeout). While disconnected, requests fail fast; a reconnect is tried at
// most once per second, on demand. `host` should be an IP literal: hiredis resolves names
// with a blocking getaddrinfo.

#include <event2/event.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "gateway/event/owners.h"
#include "gateway/ratelimit/gcra.h"
#include "gateway/ratelimit/local_limiter.h"

struct redisAsyncContext;

namespace gw::ratelimit {

// The one owner of a hiredis async context. hiredis frees a context by itself after a failed
// connect or a disconnect (it reports both through the callbacks); the limiter then
// release()s the owner instead of freeing twice.
struct RedisAsyncDeleter {
  void operator()(redisAsyncContext* c) const noexcept;
};
using RedisAsyncPtr = std::unique_ptr<redisAsyncContext, RedisAsyncDeleter>;

class RedisLimiter {
 public:
  enum class OnError { kLocal, kAllow, kDeny };
  using Callback = std::function<void(const Decision&)>;

  // Starts connecting at once (non-blocking). `fallback` must outlive the limiter.
  RedisLimiter(event_base* base, std::string host, uint16_t port, std::chrono::milliseconds timeout,
               OnError on_error, LocalLimiter& fallback);
  // Pending callbacks are dropped (not called).
  ~RedisLimiter();
  RedisLimiter(const RedisLimiter&) = delete;
  RedisLimiter& operator=(const RedisLimiter&) = delete;

  // One request against `key` (stored in Redis as "gw:rl:<key>"). `cb` runs exactly once
  // on this limiter's loop unless cancel()ed first; it may call check(), cancel() or destroy
  // the limiter. Returns a non-zero handle for cancel(), or 0 (and `cb` will never run) only
  // when libevent cannot allocate a timer (out of memory).
  uint64_t check(std::string key, const Rate& r, Callback cb);
  // Forgets a pending request: its callback will not run. Unknown or finished handles are
  // ignored.
  void cancel(uint64_t handle) noexcept;

  bool connected() const noexcept { return state_ == State::kConnected; }
  size_t pending() const noexcept { return pending_.size(); }

  // The Lua script and its SHA-1 (the EVALSHA name); exposed for tests.
  static const char* script() noexcept;
  static const char* scriptSha1() noexcept;

 private:
  enum class State { kDown, kConnecting, kConnected };
  struct Pending {
    RedisLimiter* owner = nullptr;
    uint64_t id = 0;
    std::string key;  // with the prefix
    Rate rate;
    Callback cb;
    event::EventPtr timer;  // the timeout; made active early to deliver `result`
    std::optional<Decision> result;
    bool sent_eval = false;  // NOSCRIPT already answered once
  };

  void connect();
  bool send(Pending& p);
  // Records the outcome of `p` and schedules its delivery on the loop.
  void finish(Pending& p, const Decision& d) noexcept;
  void fail(Pending& p) noexcept;
  Decision errorOutcome(const Pending& p) noexcept;
  void dropConnection() noexcept;

  static void onTimer(evutil_socket_t, short, void* arg);
  static void onReply(redisAsyncContext* ac, void* reply, void* privdata);
  static void onConnect(const redisAsyncContext* ac, int status);
  static void onDisconnect(const redisAsyncContext* ac, int status);

  event_base* base_;
  std::string host_;
  uint16_t port_;
  std::chrono::milliseconds timeout_;
  OnError on_error_;
  LocalLimiter& fallback_;
  State state_ = State::kDown;
  std::chrono::steady_clock::time_point last_attempt_{};
  bool attempted_ = false;
  uint64_t next_id_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Pending>> pending_;
  RedisAsyncPtr ctx_;  // declared last: freed first, while pending_ is still valid
};

}  // namespace gw::ratelimit
