#pragma once
// What the client connections of one worker share (ConnectionContext), and what every
// worker's connections share process-wide (Shared). The worker (server/worker.h) owns both
// and wires in the StreamFactory that gives each request its handler. Only the worker's
// thread touches its ConnectionContext; Shared is atomics and locked maps.

#include <event2/event.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "gateway/core/line_budget.h"
#include "gateway/downstream/client_counts.h"
#include "gateway/downstream/stream.h"
#include "gateway/event/flush_queue.h"
#include "gateway/event/owners.h"
#include "gateway/filters/snapshot.h"
#include "gateway/http/message.h"
#include "gateway/http/parser.h"
#include "gateway/metrics/metrics.h"

namespace gw::downstream {

class Http1Connection;

// The client side's process-wide state.
struct Shared {
  filters::SnapshotHolder snapshot;
  std::atomic<int64_t> connections{0};  // open client connections (limits.max_connections)
  std::atomic<bool> draining{false};    // no keep-alive, no new connections
  ClientCounts client_counts;           // open connections per client address
};

struct ConnectionContext {
  event_base* base = nullptr;
  Shared* shared = nullptr;
  metrics::WorkerMetrics* metrics = nullptr;  // this worker's
  event::FlushQueue* flush_queue = nullptr;   // the worker's one flush queue
  StreamFactory* streams = nullptr;           // a handler per request (proxy's exchanges)
  std::unique_ptr<http::Http1Parser> parser;
  // The head being parsed: every connection of the worker parses into these (a parse runs
  // to its end on the loop; the exchange copies what it keeps), so an idle connection holds
  // no head buffer.
  std::string head_buf;
  http::RequestHead head;
  std::string scratch;  // answer heads are built here, then added to an output in one piece
  int64_t local_connections = 0;                     // this worker's open connections
  std::unordered_set<Http1Connection*> connections;  // every open connection of the worker
  // Closed connections, deleted by the reaper event at the end of the loop turn (deferred
  // deletion: no `delete this` with callers still on the stack).
  std::vector<Http1Connection*> closed;
  event::EventPtr reaper;
  // Log lines about requests whose head did not parse: at most 10 a second per worker; the
  // rest are counted and summed up in one "suppressed" line a second later (garbage_timer).
  core::LineBudget garbage_log{10};
  event::EventPtr garbage_timer;
};

}  // namespace gw::downstream
