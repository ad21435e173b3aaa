// upstream/: pooled connections are reused, recycled without allocation, and closed after
// the idle timeout by the pool's sweep.

#include "gateway/upstream/pool.h"

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch.hpp>
#include <chrono>

using namespace std::chrono_literals;

namespace {

// A loopback listener the pool connects to (accepted by the test itself).
struct Listener {
  int fd = -1;
  uint16_t port = 0;
  Listener() {
    fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
    REQUIRE(::listen(fd, 16) == 0);
    socklen_t len = sizeof(a);
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
    port = ntohs(a.sin_port);
  }
  ~Listener() { ::close(fd); }
};

gw::settings::Upstream upstreamFor(uint16_t port) {
  gw::settings::Upstream up;
  up.name = "u";
  gw::settings::Address a;
  a.host = a.ip = "127.0.0.1";
  a.port = port;
  a.text = "127.0.0.1:" + std::to_string(port);
  up.endpoints.push_back(a);
  return up;
}

// Runs the loop until `done` or 2 s.
template <class Pred>
bool runUntil(event_base* base, Pred done) {
  auto deadline = std::chrono::steady_clock::now() + 2s;
  while (!done() && std::chrono::steady_clock::now() < deadline) {
    event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    ::usleep(1000);
  }
  return done();
}

// Runs the loop until the lease's connect completed (the proxy releases only connected,
// finished exchanges).
bool connect(event_base* base, gw::upstream::Lease& lease) {
  bool connected = false;
  bufferevent_setcb(
      lease.bev.get(), nullptr, nullptr,
      [](bufferevent*, short what, void* arg) {
        *static_cast<bool*>(arg) = (what & BEV_EVENT_CONNECTED) != 0;
      },
      &connected);
  bool ok = runUntil(base, [&] { return connected; });
  bufferevent_setcb(lease.bev.get(), nullptr, nullptr, nullptr, nullptr);
  return ok;
}

}  // namespace

TEST_CASE("upstream pool: a released connection is reused, and closed after the idle timeout",
          "[upstream]") {
  gw::event::BasePtr base(event_base_new());
  Listener l;
  gw::upstream::Pools pools(base.get(), 100ms);
  auto up = upstreamFor(l.port);

  gw::upstream::Lease first = pools.acquire(up);
  REQUIRE(first.bev);
  CHECK_FALSE(first.reused);
  REQUIRE(connect(base.get(), first));
  int server = ::accept(l.fd, nullptr, nullptr);
  REQUIRE(server >= 0);
  evutil_socket_t fd = bufferevent_getfd(first.bev.get());
  pools.release(std::move(first), 4);
  CHECK(pools.idleCount() == 1);

  gw::upstream::Lease again = pools.acquire(up);
  REQUIRE(again.bev);
  CHECK(again.reused);
  CHECK(bufferevent_getfd(again.bev.get()) == fd);
  CHECK(pools.idleCount() == 0);
  pools.release(std::move(again), 4);

  // The sweep (every idle_timeout / 4) closes it once it has been idle for 100 ms.
  auto released = std::chrono::steady_clock::now();
  REQUIRE(runUntil(base.get(), [&] { return pools.idleCount() == 0; }));
  auto took = std::chrono::steady_clock::now() - released;
  CHECK(took >= 100ms);
  CHECK(took < 1s);
  char byte;
  CHECK(::recv(server, &byte, 1, 0) == 0);  // the pool closed its end
  ::close(server);
}

TEST_CASE("upstream pool: an idle connection the upstream closes is dropped", "[upstream]") {
  gw::event::BasePtr base(event_base_new());
  Listener l;
  gw::upstream::Pools pools(base.get(), 10s);
  auto up = upstreamFor(l.port);
  gw::upstream::Lease lease = pools.acquire(up);
  REQUIRE(lease.bev);
  REQUIRE(connect(base.get(), lease));
  int server = ::accept(l.fd, nullptr, nullptr);
  REQUIRE(server >= 0);
  pools.release(std::move(lease), 4);
  REQUIRE(pools.idleCount() == 1);
  ::close(server);
  CHECK(runUntil(base.get(), [&] { return pools.idleCount() == 0; }));
  // The next acquire starts a new connection.
  gw::upstream::Lease next = pools.acquire(up);
  REQUIRE(next.bev);
  CHECK_FALSE(next.reused);
}
