#pragma once
// upstream/: everything on the way to an MCP server — per-worker connection pools, one
// HTTP/1.1 upstream request (connect, retry, head, de-chunking, timeouts), the timeout
// decisions, and the direct socket reads its bufferevents use.
// Per-worker upstream connection pools. One Pools object per worker (never shared across
// threads); it owns every idle keep-alive connection to every endpoint of every upstream and
// hands them out as Leases. An idle connection that the upstream closes, that receives
// unexpected bytes, or that stays idle past idle_timeout is closed and forgotten.
//
// acquire() never blocks: it returns an idle connection (reused=true, already connected)
// or a new bufferevent whose non-blocking connect has been started (reused=false; the caller
// sees BEV_EVENT_CONNECTED or an error on its own callbacks).

#include <sys/socket.h>

#include <chrono>
#include <cstdint>
#include <list>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "gateway/event/owners.h"
#include "gateway/settings/settings.h"
#include "gateway/upstream/health.h"

namespace gw::upstream {

struct Endpoint {
  sockaddr_storage addr{};
  socklen_t addr_len = 0;
  std::string text;  // "127.0.0.1:9000"
  bool valid = false;
};

struct Lease {
  event::BufferEventPtr bev;
  const Endpoint* endpoint = nullptr;
  void* pool = nullptr;  // the pool to give it back to (opaque to callers)
  size_t index = 0;      // the endpoint's index in settings::Upstream::endpoints
  bool pinned = false;   // acquired for one endpoint (a session's): never moved to another
  bool reused = false;
  bool tls = false;  // an OpenSSL bufferevent: written and read only through libevent
  int error = 0;     // errno when no connection could even be started
  // Shared health (health.h): the endpoint's and its upstream's (null for a lease that has no
  // endpoint).
  EndpointState* health = nullptr;
  UpstreamState* cluster = nullptr;
  // Why there is no connection: no endpoint of the upstream is usable (down or ejected), or
  // the upstream's circuit_breaker is full.
  bool unavailable = false;
  bool overflow = false;
};

class Pools {
 public:
  explicit Pools(event_base* base, std::chrono::milliseconds idle_timeout)
      : base_(base), idle_timeout_(idle_timeout) {}
  ~Pools();
  Pools(const Pools&) = delete;
  Pools& operator=(const Pools&) = delete;

  // Picks an endpoint of `up` (round robin per worker) among the usable ones (health.h) and
  // leases a connection to it; none usable: no connection, `unavailable`. Over the upstream's
  // circuit_breaker: no connection, `overflow`.
  Lease acquire(const settings::Upstream& up);
  // The shared state of `up` (health.h), for this worker's cluster of it.
  UpstreamState& stateOf(const settings::Upstream& up) { return *clusterFor(up).state; }
  // Leases a connection to endpoint `index` of `up` (a session's endpoint), whether or not it
  // failed lately: the session lives there and nowhere else. EINVAL when there is no such
  // endpoint.
  Lease acquirePinned(const settings::Upstream& up, size_t index);

  // Records that a new connection to the lease's endpoint failed to connect: the endpoint
  // is skipped for kFailHold unless every endpoint of the upstream is failing.
  void markFailed(const Lease& lease);
  static constexpr std::chrono::seconds kFailHold{5};

  // Returns a healthy connection after a complete exchange (its read side is re-enabled
  // and its callbacks reset here). Connections beyond max_idle are closed.
  void release(Lease&& lease, uint32_t max_idle);

  size_t idleCount() const noexcept { return idle_total_; }
  // Closes every idle connection (drain).
  void closeIdle();

 private:
  struct Pool;
  struct Idle {
    Pools* owner = nullptr;
    Pool* pool = nullptr;
    event::BufferEventPtr bev;
    std::chrono::steady_clock::time_point since{};  // when it was given back
    std::list<std::unique_ptr<Idle>>::iterator self;
  };
  struct Pool {
    Endpoint endpoint;
    std::chrono::steady_clock::time_point failed_until{};
    std::string source;                     // the address as configured
    std::string ip;                         // what `source` resolved to at load
    std::shared_ptr<ssl_ctx_st> tls;        // upstreams[].tls's context, or null
    std::string tls_name;                   // the name sent as SNI and verified
    std::list<std::unique_ptr<Idle>> idle;  // most recently used at the back
    std::shared_ptr<EndpointState> health;  // shared by every worker (health.h)
  };
  struct Cluster {
    std::vector<Pool*> pools;
    size_t next = 0;
    std::shared_ptr<UpstreamState> state;  // shared by every worker (health.h)
  };

  Pool& poolFor(const settings::Address& a, const settings::Upstream& up);
  Cluster& clusterFor(const settings::Upstream& up);
  Lease leaseFrom(Pool& pool, size_t index);
  void dropIdle(Idle* idle);
  static void onIdleEvent(bufferevent* bev, short what, void* arg);
  static void onIdleRead(bufferevent* bev, void* arg);
  void sweep();

  event_base* base_;
  std::chrono::milliseconds idle_timeout_;
  // One timer for every idle connection of the worker: each sweep closes those idle longer
  // than idle_timeout (so one may live up to a sweep period longer). Armed while any is idle.
  event::EventPtr sweep_;
  // Idle records not in use, kept so that a request's release/acquire allocates nothing.
  std::list<std::unique_ptr<Idle>> spare_;
  std::unordered_map<std::string, std::unique_ptr<Pool>> pools_;  // key: upstream|endpoint
  std::unordered_map<std::string, Cluster> clusters_;             // key: upstream name
  size_t idle_total_ = 0;
};

// Builds the sockaddr for `a` from its numeric `ip` (no name lookup here). False when `ip` is
// not an IPv4 or IPv6 literal (e.g. an Address that did not come from the settings loader).
bool resolveEndpoint(const settings::Address& a, Endpoint& out);

// Why an OpenSSL bufferevent's connection failed before it was established, when it failed
// in TLS (a certificate that does not verify, a protocol error); nullopt when it failed in
// TCP (refused, reset: libevent lists only SSL_ERROR_SYSCALL then). Drains the bufferevent's
// OpenSSL error list either way.
std::optional<std::string> tlsHandshakeFailure(bufferevent* bev);

// Sets TCP_NODELAY on a connected or connecting socket.
void setNoDelay(evutil_socket_t fd) noexcept;

}  // namespace gw::upstream
