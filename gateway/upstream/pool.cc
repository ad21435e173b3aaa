// Per-worker keep-alive pools to upstream endpoints (see pool.h).

#include "gateway/upstream/pool.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <event2/bufferevent_ssl.h>

#include "gateway/core/clock.h"
#include "gateway/tls/tls.h"
#include "gateway/upstream/direct_read.h"

namespace gw::upstream {

bool resolveEndpoint(const settings::Address& a, Endpoint& out) {
  out = Endpoint{};
  out.text = a.host.find(':') != std::string::npos ? "[" + a.host + "]:" + std::to_string(a.port)
                                                   : a.host + ":" + std::to_string(a.port);
  // `ip` is numeric: the settings loader resolved any host name when it loaded the file.
  const std::string& host = a.ip;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&out.addr);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.addr);
  if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(a.port);
    out.addr_len = sizeof(sockaddr_in);
    out.valid = true;
  } else if (inet_pton(AF_INET6, host.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(a.port);
    out.addr_len = sizeof(sockaddr_in6);
    out.valid = true;
  }
  return out.valid;
}

std::optional<std::string> tlsHandshakeFailure(bufferevent* bev) {
  unsigned long errors[8];
  size_t n = 0;
  while (n < 8 && (errors[n] = bufferevent_get_openssl_error(bev)) != 0) {
    ++n;
  }
  while (bufferevent_get_openssl_error(bev) != 0) {
  }
  const unsigned long queued = tls::protocolError(errors, n);
  SSL* ssl = bufferevent_openssl_get_ssl(bev);
  if (!tls::handshakeFailed(ssl, queued)) {
    return std::nullopt;
  }
  return tls::handshakeError(ssl, queued);
}

void setNoDelay(evutil_socket_t fd) noexcept {
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

Pools::~Pools() {
  closeIdle();
}

Pools::Pool& Pools::poolFor(const settings::Address& a, const settings::Upstream& up) {
  // Keyed by the resolved address too: a reload that resolves a name to a new address gets
  // a new pool rather than the old one's connections. Likewise a reload's new TLS context.
  ssl_ctx_st* ctx = up.tls ? up.tls->ctx.get() : nullptr;
  std::string key = up.name;
  key += '|';
  key += a.text;
  key += '|';
  key += a.ip;
  if (ctx != nullptr) {
    key += "|tls@";
    key += std::to_string(reinterpret_cast<uintptr_t>(ctx));
  }
  auto it = pools_.find(key);
  if (it == pools_.end()) {
    auto p = std::make_unique<Pool>();
    p->source = a.text;
    p->ip = a.ip;
    if (ctx != nullptr) {
      p->tls = up.tls->ctx;
      p->tls_name = up.tls->server_name.empty() ? a.host : up.tls->server_name;
    }
    resolveEndpoint(a, p->endpoint);
    it = pools_.emplace(std::move(key), std::move(p)).first;
  }
  return *it->second;
}

Pools::Cluster& Pools::clusterFor(const settings::Upstream& up) {
  Cluster& c = clusters_[up.name];
  bool same = c.pools.size() == up.endpoints.size();
  const ssl_ctx_st* ctx = up.tls ? up.tls->ctx.get() : nullptr;
  for (size_t i = 0; same && i < c.pools.size(); ++i) {
    same = c.pools[i]->source == up.endpoints[i].text && c.pools[i]->ip == up.endpoints[i].ip &&
           c.pools[i]->tls.get() == ctx;
  }
  if (!same || !c.state) {  // first use, or a reload changed the endpoints or the TLS context
    c.pools.clear();
    c.state = HealthRegistry::instance().upstream(up);
    const auto states = c.state->endpoints();
    for (size_t i = 0; i < up.endpoints.size(); ++i) {
      Pool& pool = poolFor(up.endpoints[i], up);
      pool.health = i < states.size() ? states[i] : nullptr;
      c.pools.push_back(&pool);
    }
  }
  return c;
}

Lease Pools::acquire(const settings::Upstream& up) {
  Cluster& c = clusterFor(up);
  if (c.pools.empty()) {
    Lease lease;
    lease.error = EINVAL;
    return lease;
  }
  if (up.circuit_breaker && c.state->in_flight.load(std::memory_order_relaxed) >=
                                static_cast<int64_t>(up.circuit_breaker->max_requests)) {
    c.state->overflows.fetch_add(1, std::memory_order_relaxed);
    Lease lease;
    lease.error = EBUSY;
    lease.overflow = true;
    return lease;
  }
  // round_robin starts at the next endpoint, first_healthy at the first; both take only a
  // usable endpoint (up, not ejected: health.h) and skip one that failed to connect within
  // kFailHold, unless all usable ones did.
  auto now = core::steadyNow();
  const int64_t now_ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count();
  size_t n = c.pools.size();
  size_t start = up.balance == settings::Balance::kRoundRobin ? c.next++ % n : 0;
  size_t index = n;
  size_t fallback = n;
  for (size_t i = 0; i < n; ++i) {
    size_t candidate = (start + i) % n;
    const Pool& p = *c.pools[candidate];
    if (p.health != nullptr && !p.health->usable(now_ns)) {
      continue;
    }
    if (p.failed_until <= now) {
      index = candidate;
      break;
    }
    fallback = fallback == n ? candidate : fallback;
  }
  index = index == n ? fallback : index;
  if (index == n) {
    Lease lease;
    lease.error = EHOSTUNREACH;
    lease.unavailable = true;
    lease.cluster = c.state.get();
    return lease;
  }
  Lease lease = leaseFrom(*c.pools[index], index);
  lease.cluster = c.state.get();
  return lease;
}

Lease Pools::acquirePinned(const settings::Upstream& up, size_t index) {
  Cluster& c = clusterFor(up);
  if (index >= c.pools.size()) {
    Lease lease;
    lease.error = EINVAL;
    lease.pinned = true;
    return lease;
  }
  Lease lease = leaseFrom(*c.pools[index], index);
  lease.pinned = true;
  lease.cluster = c.state.get();
  return lease;
}

Lease Pools::leaseFrom(Pool& pool, size_t index) {
  Lease lease;
  lease.endpoint = &pool.endpoint;
  lease.pool = &pool;
  lease.index = index;
  lease.health = pool.health.get();
  lease.tls = pool.tls != nullptr;
  if (!pool.idle.empty()) {
    Idle& idle = *pool.idle.back();
    --idle_total_;
    lease.bev = std::move(idle.bev);
    bufferevent_setcb(lease.bev.get(), nullptr, nullptr, nullptr, nullptr);
    lease.reused = true;
    spare_.splice(spare_.end(), pool.idle, idle.self);  // kept for the next release
    return lease;
  }
  if (!pool.endpoint.valid) {
    lease.error = EINVAL;
    return lease;
  }
  if (pool.tls) {
    // The handshake runs inside libevent's OpenSSL bufferevent; BEV_EVENT_CONNECTED comes
    // once it completed and the certificate was verified for tls_name.
    SSL* ssl = SSL_new(pool.tls.get());
    if (ssl == nullptr || !tls::prepareClient(ssl, pool.tls_name)) {
      SSL_free(ssl);
      lease.error = ENOMEM;
      return lease;
    }
    lease.bev.reset(bufferevent_openssl_socket_new(base_, -1, ssl, BUFFEREVENT_SSL_CONNECTING,
                                                   BEV_OPT_CLOSE_ON_FREE));
    if (lease.bev) {
      // A server that closes without close_notify ends a close-delimited body, not an error.
      bufferevent_openssl_set_allow_dirty_shutdown(lease.bev.get(), 1);
    }
  } else {
    lease.bev.reset(bufferevent_socket_new(base_, -1, BEV_OPT_CLOSE_ON_FREE));
  }
  if (!lease.bev) {
    lease.error = ENOMEM;
    return lease;
  }
  if (bufferevent_socket_connect(lease.bev.get(), reinterpret_cast<sockaddr*>(&pool.endpoint.addr),
                                 static_cast<int>(pool.endpoint.addr_len)) != 0) {
    lease.error = errno ? errno : ECONNREFUSED;
    lease.bev.reset();
    return lease;
  }
  setNoDelay(bufferevent_getfd(lease.bev.get()));
  if (!pool.tls) {
    useDirectReads(lease.bev.get());
  }
  return lease;
}

void Pools::release(Lease&& lease, uint32_t max_idle) {
  auto* target = static_cast<Pool*>(lease.pool);
  if (target == nullptr || !lease.bev || target->idle.size() >= max_idle) {
    return;  // lease.bev closes here
  }
  Pool& pool = *target;
  if (spare_.empty()) {
    spare_.push_back(std::make_unique<Idle>());
  }
  pool.idle.splice(pool.idle.end(), spare_, std::prev(spare_.end()));
  Idle* idle = pool.idle.back().get();
  idle->owner = this;
  idle->pool = &pool;
  idle->self = std::prev(pool.idle.end());
  idle->bev = std::move(lease.bev);
  idle->since = core::steadyNow();
  bufferevent* bev = idle->bev.get();
  bufferevent_setwatermark(bev, EV_READ, 0, 0);
  bufferevent_setwatermark(bev, EV_WRITE, 0, 0);
  bufferevent_set_timeouts(bev, nullptr, nullptr);
  bufferevent_setcb(bev, &Pools::onIdleRead, nullptr, &Pools::onIdleEvent, idle);
  bufferevent_enable(bev, EV_READ);
  ++idle_total_;
  if (!sweep_) {
    sweep_.reset(event_new(
        base_, -1, EV_PERSIST,
        [](evutil_socket_t, short, void* arg) { static_cast<Pools*>(arg)->sweep(); }, this));
  }
  if (!event_pending(sweep_.get(), EV_TIMEOUT, nullptr)) {
    // A quarter of the timeout: an idle connection is closed at most 25% late.
    auto period = std::max(std::chrono::milliseconds(10), idle_timeout_ / 4);
    timeval tv{static_cast<time_t>(period.count() / 1000),
               static_cast<suseconds_t>((period.count() % 1000) * 1000)};
    event_add(sweep_.get(), &tv);
  }
}

void Pools::sweep() {
  auto oldest_kept = core::steadyNow() - idle_timeout_;
  for (auto& [key, pool] : pools_) {
    // Most recently used at the back: the expired ones are at the front.
    while (!pool->idle.empty() && pool->idle.front()->since <= oldest_kept) {
      dropIdle(pool->idle.front().get());
    }
  }
  if (idle_total_ == 0) {
    event_del(sweep_.get());
  }
}

void Pools::markFailed(const Lease& lease) {
  if (auto* pool = static_cast<Pool*>(lease.pool)) {
    pool->failed_until = core::steadyNow() + kFailHold;
  }
}

void Pools::dropIdle(Idle* idle) {
  Pool* pool = idle->pool;
  --idle_total_;
  idle->bev.reset();  // closes the connection
  spare_.splice(spare_.end(), pool->idle, idle->self);
}

void Pools::onIdleEvent(bufferevent*, short, void* arg) {
  auto* idle = static_cast<Idle*>(arg);
  idle->owner->dropIdle(idle);
}

void Pools::onIdleRead(bufferevent*, void* arg) {
  // An idle upstream must not talk; whatever it sent makes the connection unusable.
  auto* idle = static_cast<Idle*>(arg);
  idle->owner->dropIdle(idle);
}

void Pools::closeIdle() {
  for (auto& [key, pool] : pools_) {
    idle_total_ -= pool->idle.size();
    pool->idle.clear();
  }
  spare_.clear();
}

}  // namespace gw::upstream
