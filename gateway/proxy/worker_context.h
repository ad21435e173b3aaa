#pragma once
// What every downstream connection of one worker shares: the worker's event_base, its
// upstream pools, its HTTP parser, the current settings snapshot, the access log and the
// process-wide counters. One per worker thread; never touched from another thread except the
// atomics.

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "gateway/core/clock.h"
#include "gateway/core/line_budget.h"
#include "gateway/event/flush_queue.h"
#include "gateway/event/owners.h"
#include "gateway/filters/config_json.h"
#include "gateway/filters/snapshot.h"
#include "gateway/http/parser.h"
#include "gateway/metrics/metrics.h"
#include "gateway/policy/policy.h"
#include "gateway/proxy/client_counts.h"
#include "gateway/proxy/exchange.h"
#include "gateway/ratelimit/local_limiter.h"
#include "gateway/ratelimit/redis_limiter.h"
#include "gateway/tls/server_context.h"
#include "gateway/upstream/pool.h"

namespace spdlog {
class logger;
}

namespace gw::downstream {
class Http1Connection;
}

namespace gw::proxy {

class Exchange;

// The published snapshot; workers load it per request (lock-free).
class SnapshotHolder {
 public:
  std::shared_ptr<const filters::Snapshot> load() const noexcept {
    return current_.load(std::memory_order_acquire);
  }
  void store(std::shared_ptr<const filters::Snapshot> s) noexcept {
    current_.store(std::move(s), std::memory_order_release);
  }

 private:
  std::atomic<std::shared_ptr<const filters::Snapshot>> current_;
};

// Process-wide state shared by all workers.
struct Shared {
  SnapshotHolder snapshot;
  // listen/workers/admin as bound at start (set before any other thread runs; then read-only).
  filters::Bound bound;
  // Whether `listen` speaks TLS: fixed at start (set before any other thread runs). When it
  // does, `tls` is the context new connections use, replaced by every reload that brings a
  // valid `tls:` block; a connection's session keeps the context it began with.
  bool tls_on = false;
  std::atomic<std::shared_ptr<const tls::ServerContext>> tls;
  // The access log (null: off). A reload reopens it (log rotation) or replaces it; workers
  // notice through the generation and take a new reference (WorkerContext::accessLog).
  void setAccessLog(std::shared_ptr<spdlog::logger> log) {
    std::lock_guard lock(access_log_mu);
    access_log = std::move(log);
    access_log_gen.fetch_add(1, std::memory_order_release);
  }
  std::shared_ptr<spdlog::logger> accessLog() const {
    std::lock_guard lock(access_log_mu);
    return access_log;
  }
  std::atomic<uint64_t> access_log_gen{0};
  std::atomic<int64_t> connections{0};  // open downstream connections
  std::atomic<int64_t> streams{0};      // exchanges in flight
  std::atomic<uint64_t> requests{0};
  std::atomic<bool> draining{false};
  std::atomic<uint64_t> buffered_body_bytes{0};  // request bodies held (max_buffered_body_bytes)
  // Upstream answers read whole (max_buffered_answer_bytes): see AnswerHold.
  std::atomic<uint64_t> buffered_answer_bytes{0};
  ClientCounts client_counts;  // open connections per client address
  // Local rate-limit buckets, shared by every worker; they survive reloads.
  std::unique_ptr<ratelimit::LocalLimiter> limiter;
  metrics::Registry metrics;

 private:
  mutable std::mutex access_log_mu;
  std::shared_ptr<spdlog::logger> access_log;
};

struct WorkerContext {
  int id = 0;
  event_base* base = nullptr;
  Shared* shared = nullptr;
  metrics::WorkerMetrics* metrics = nullptr;                  // this worker's, in shared->metrics
  const core::Clock* clock = &core::SteadyClock::instance();  // all the proxy's time
  std::unique_ptr<http::Http1Parser> parser;
  std::unique_ptr<upstream::Pools> pools;
  int64_t local_connections = 0;  // this worker's open downstream connections
  std::unordered_set<downstream::Http1Connection*> connections;  // every open downstream connection
  std::unique_ptr<ratelimit::RedisLimiter> redis;  // this worker's Redis client, lazily
  std::string redis_id;                            // the settings it was made for
  std::vector<std::unique_ptr<ratelimit::RedisLimiter>> retired_redis;  // finishing
  std::string scratch;  // message heads are built here, then added to an output in one piece
  // Connections, fan-outs and merged listen streams with output queued in this loop turn,
  // written by one event after the turn's callbacks (event/flush_queue.h). Declared before
  // the exchanges and refreshes whose fan-outs it may hold, so it outlives them.
  event::FlushQueue flush_queue;
  // Closed connections, deleted by the reaper event at the end of the loop turn (deferred
  // deletion: no `delete this` with callers still on the stack).
  std::vector<downstream::Http1Connection*> closed;
  event::EventPtr reaper;
  ExchangePool exchanges;  // spare request state (proxy/exchange.h)
  // Federation ownership refreshes (one per federated route and list method, reused).
  std::vector<std::unique_ptr<FederationRefresh>> fed_refreshes;
  std::shared_ptr<spdlog::logger> access_log;  // this worker's reference (see accessLog)
  uint64_t access_log_gen = ~uint64_t{0};
  // Log lines about requests whose head did not parse: at most 10 a second per worker; the
  // rest are counted and summed up in one "suppressed" line a second later (garbage_timer).
  core::LineBudget garbage_log{10};
  event::EventPtr garbage_timer;

  // The current access log (null: off); one relaxed load per call unless a reload changed it.
  spdlog::logger* accessLog() {
    uint64_t gen = shared->access_log_gen.load(std::memory_order_acquire);
    if (gen != access_log_gen) {
      access_log = shared->accessLog();
      access_log_gen = gen;
    }
    return access_log.get();
  }

  // The worker's Redis limiter for these settings (re-made when a reload changes them).
  ratelimit::RedisLimiter& redisFor(const policy::RedisSettings& rs) {
    std::string wanted = rs.host + ":" + std::to_string(rs.port) + "/" +
                         std::to_string(static_cast<int>(rs.on_error)) + "/" +
                         std::to_string(rs.timeout.count());
    if (!redis || wanted != redis_id) {
      // A replaced limiter would drop its pending callbacks: keep it until they are done.
      std::erase_if(retired_redis, [](const auto& r) { return r->pending() == 0; });
      if (redis) {
        retired_redis.push_back(std::move(redis));
      }
      redis = std::make_unique<ratelimit::RedisLimiter>(
          base, rs.host, rs.port, rs.timeout,
          static_cast<ratelimit::RedisLimiter::OnError>(static_cast<int>(rs.on_error)),
          *shared->limiter);
      redis_id = std::move(wanted);
    }
    return *redis;
  }
};

}  // namespace gw::proxy
