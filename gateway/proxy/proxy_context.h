#pragma once
// What every exchange of one worker shares (ProxyContext): the worker's event_base, its
// upstream pools, its Redis client, its spare exchanges, the access log and the worker's
// metrics; and the process-wide state (Shared: the client side's, the counters, the local
// limits, the metrics registry). One ProxyContext per worker thread (owned by
// server::Worker, beside the connections' downstream::ConnectionContext); never touched
// from another thread except Shared's atomics.

#include <atomic>
#include <cstddef>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "gateway/core/clock.h"
#include "gateway/downstream/context.h"
#include "gateway/event/flush_queue.h"
#include "gateway/event/owners.h"
#include "gateway/filters/config_json.h"
#include "gateway/filters/snapshot.h"
#include "gateway/http/parser.h"
#include "gateway/metrics/metrics.h"
#include "gateway/policy/policy.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/legacy_sessions.h"
#include "gateway/proxy/list_memo.h"
#include "gateway/proxy/seen_answers.h"
#include "gateway/ratelimit/local_limiter.h"
#include "gateway/ratelimit/redis_limiter.h"
#include "gateway/tls/server_context.h"
#include "gateway/trace/trace.h"
#include "gateway/upstream/pool.h"

namespace spdlog {
class logger;
}

namespace gw::proxy {

class Exchange;

// Process-wide state shared by all workers: the client side's (downstream::Shared: the
// snapshot, open connections, draining, connections per client) and the rest below.
struct Shared : downstream::Shared {
  // listen/workers/admin as bound at start (set before any other thread runs; then read-only).
  filters::Bound bound;
  // Whether `listen` speaks TLS: fixed at start (set before any other thread runs). When it
  // does, `tls` is the context new connections use, replaced by every reload that brings a
  // valid `tls:` block; a connection's session keeps the context it began with.
  bool tls_on = false;
  std::atomic<std::shared_ptr<const tls::ServerContext>> tls;
  // The same for each listener after the first (`listeners:`; [i - 1] is listener i's), the
  // count fixed at start.
  struct ListenerTls {
    bool on = false;
    std::atomic<std::shared_ptr<const tls::ServerContext>> context;
  };
  std::vector<std::unique_ptr<ListenerTls>> more_tls;
  // The context new connections on listener `i` use (null: plain HTTP).
  std::shared_ptr<const tls::ServerContext> listenerTls(size_t i) const {
    if (i == 0) {
      return tls_on ? tls.load(std::memory_order_acquire) : nullptr;
    }
    if (i - 1 < more_tls.size() && more_tls[i - 1]->on) {
      return more_tls[i - 1]->context.load(std::memory_order_acquire);
    }
    return nullptr;
  }
  // The access log (null: off). A reload reopens it (log rotation) or replaces it; workers
  // notice through the generation and take a new reference (ProxyContext::accessLog).
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
  std::atomic<int64_t> streams{0};  // exchanges in flight
  std::atomic<uint64_t> requests{0};
  std::atomic<uint64_t> buffered_body_bytes{0};  // request bodies held (max_buffered_body_bytes)
  // Upstream answers read whole (max_buffered_answer_bytes): see AnswerHold.
  std::atomic<uint64_t> buffered_answer_bytes{0};
  // Local rate-limit buckets, shared by every worker; they survive reloads.
  std::unique_ptr<ratelimit::LocalLimiter> limiter;
  metrics::Registry metrics;
  // 2025-era clients of federated routes whose sessions ended (legacy_sessions.h).
  EndedClients ended_clients;
  // Where finished spans go (tracing: configured at start; null: no tracing). Set before
  // the workers start, cleared after they stop.
  std::atomic<trace::SpanSink*> tracer{nullptr};

 private:
  mutable std::mutex access_log_mu;
  std::shared_ptr<spdlog::logger> access_log;
};

struct ProxyContext {
  int id = 0;
  event_base* base = nullptr;
  Shared* shared = nullptr;
  metrics::WorkerMetrics* metrics = nullptr;                  // this worker's, in shared->metrics
  const core::Clock* clock = &core::SteadyClock::instance();  // all the proxy's time
  std::unique_ptr<http::Http1Parser> parser;                  // upstream answers' heads
  std::unique_ptr<upstream::Pools> pools;
  std::unique_ptr<ratelimit::RedisLimiter> redis;  // this worker's Redis client, lazily
  std::string redis_id;                            // the settings it was made for
  // Limiters of other Redis settings, by redisFor's id (see redisFor).
  std::vector<std::pair<std::string, std::unique_ptr<ratelimit::RedisLimiter>>> retired_redis;
  // The worker's one flush queue (event/flush_queue.h; the worker owns it and outlives
  // this): upstream requests, fan-outs and merged listen streams with output queued in this
  // loop turn.
  event::FlushQueue* flush_queue = nullptr;
  // The gateway's sessions with 2025-era upstreams (legacy_sessions.h; made on first use).
  // Before `exchanges`: a waiting exchange leaves it when it ends.
  std::unique_ptr<LegacySessions> legacy_sessions;
  // Spare request state (proxy/exchange.h); the worker's connections get exchanges from it
  // (downstream::StreamFactory).
  ExchangePool exchanges{*this};
  // Federation ownership refreshes (one per federated route and list method, reused).
  std::vector<std::unique_ptr<FederationRefresh>> fed_refreshes;
  std::shared_ptr<spdlog::logger> access_log;  // this worker's reference (see accessLog)
  uint64_t access_log_gen = ~uint64_t{0};
  // Credentials towards upstreams this worker used in the last second (upstream_auth.h).
  CredentialMemo credential_memo;
  // The tools/list answers this worker's schema learning saw last (seen_answers.h).
  SeenAnswers seen_answers;
  // The list answers this worker read whole and what it made of them (list_memo.h).
  ListMemo list_memo;

  LegacySessions& legacySessions() {
    if (!legacy_sessions) {
      legacy_sessions = std::make_unique<LegacySessions>(
          base, clock, shared != nullptr ? &shared->ended_clients : nullptr);
    }
    return *legacy_sessions;
  }

  // The current access log (null: off); one relaxed load per call unless a reload changed it.
  spdlog::logger* accessLog() {
    uint64_t gen = shared->access_log_gen.load(std::memory_order_acquire);
    if (gen != access_log_gen) {
      access_log = shared->accessLog();
      access_log_gen = gen;
    }
    return access_log.get();
  }

  // The worker's Redis limiter for these settings. Several servers' policies may name
  // different Redis settings: each keeps its own limiter (the last used is `redis`, the
  // others wait in `retired_redis`), so requests alternating between them reuse connections;
  // one a reload no longer names is dropped once idle and there are more than kRedisKept.
  static constexpr size_t kRedisKept = 8;
  ratelimit::RedisLimiter& redisFor(const policy::RedisSettings& rs) {
    std::string wanted = rs.host + ":" + std::to_string(rs.port) + "/" +
                         std::to_string(static_cast<int>(rs.on_error)) + "/" +
                         std::to_string(rs.timeout.count());
    if (redis && wanted == redis_id) {
      return *redis;
    }
    for (auto& [other_id, limiter] : retired_redis) {
      if (other_id == wanted) {
        std::swap(other_id, redis_id);
        std::swap(limiter, redis);
        return *redis;
      }
    }
    if (redis) {
      retired_redis.emplace_back(std::move(redis_id), std::move(redis));
    }
    // A limiter with callbacks pending must outlive them: only idle ones are dropped.
    for (size_t i = 0; retired_redis.size() > kRedisKept && i < retired_redis.size();) {
      if (retired_redis[i].second->pending() == 0) {
        retired_redis.erase(retired_redis.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }
    redis = std::make_unique<ratelimit::RedisLimiter>(
        base, rs.host, rs.port, rs.timeout,
        static_cast<ratelimit::RedisLimiter::OnError>(static_cast<int>(rs.on_error)),
        *shared->limiter);
    redis_id = std::move(wanted);
    return *redis;
  }
};

}  // namespace gw::proxy
