#pragma once
// What every downstream connection of one worker shares: the worker's event_base, its
// upstream pools, its HTTP parser, the current settings snapshot, the access log and the
// process-wide counters. One per worker thread; never touched from another thread except the
// atomics.

#include <atomic>
#include <memory>
#include <string>
#include <unordered_set>

#include "gateway/filters/snapshot.h"
#include "gateway/http/parser.h"
#include "gateway/upstream/pool.h"

namespace spdlog {
class logger;
}

namespace gw::proxy {

class Connection;

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
  std::shared_ptr<spdlog::logger> access_log;  // null: access log off
  std::atomic<int64_t> connections{0};         // open downstream connections
  std::atomic<int64_t> streams{0};             // exchanges in flight
  std::atomic<uint64_t> requests{0};
  std::atomic<bool> draining{false};
};

struct WorkerContext {
  int id = 0;
  event_base* base = nullptr;
  Shared* shared = nullptr;
  std::unique_ptr<http::Http1Parser> parser;
  std::unique_ptr<upstream::Pools> pools;
  int64_t local_connections = 0;  // this worker's open downstream connections
  std::unordered_set<Connection*> connections;  // every open downstream connection
};

}  // namespace gw::proxy
