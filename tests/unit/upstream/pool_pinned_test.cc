// upstream/: acquirePinned leases a connection to one given endpoint (a legacy session's),
// never to another, even when that endpoint is marked failing; the balancer's acquire still
// skips a failing endpoint. The lease carries its endpoint index (Host and session token).

#include <arpa/inet.h>
#include <event2/event.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch.hpp>
#include <cerrno>
#include <chrono>
#include <string>

#include "gateway/upstream/pool.h"

using namespace std::chrono_literals;

namespace {

struct PinListener {
  int fd = -1;
  uint16_t port = 0;
  PinListener() {
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
  ~PinListener() { ::close(fd); }
};

gw::settings::Address loopback(uint16_t port) {
  gw::settings::Address a;
  a.host = a.ip = "127.0.0.1";
  a.port = port;
  a.text = "127.0.0.1:" + std::to_string(port);
  return a;
}

// The port the lease's socket connects to.
uint16_t peerPort(const gw::upstream::Lease& lease) {
  const auto* sin = reinterpret_cast<const sockaddr_in*>(&lease.endpoint->addr);
  return ntohs(sin->sin_port);
}

}  // namespace

TEST_CASE("upstream pool: a pinned lease goes to its endpoint only, failing or not",
          "[upstream][session]") {
  gw::event::BasePtr base(event_base_new());
  PinListener l0;
  PinListener l1;
  gw::settings::Upstream up;
  up.name = "u";
  up.endpoints = {loopback(l0.port), loopback(l1.port)};
  gw::upstream::Pools pools(base.get(), 1000ms);

  for (int i = 0; i < 6; ++i) {
    gw::upstream::Lease lease = pools.acquirePinned(up, 1);
    REQUIRE(lease.bev);
    CHECK(lease.pinned);
    CHECK(lease.index == 1);
    CHECK(peerPort(lease) == l1.port);
  }
  // Endpoint 1 failing: the balancer avoids it, a pinned lease does not.
  gw::upstream::Lease failed = pools.acquirePinned(up, 1);
  pools.markFailed(failed);
  for (int i = 0; i < 4; ++i) {
    gw::upstream::Lease any = pools.acquire(up);
    REQUIRE(any.bev);
    CHECK_FALSE(any.pinned);
    CHECK(any.index == 0);
    CHECK(peerPort(any) == l0.port);
    gw::upstream::Lease pinned = pools.acquirePinned(up, 1);
    REQUIRE(pinned.bev);
    CHECK(pinned.index == 1);
    CHECK(peerPort(pinned) == l1.port);
  }
  // No such endpoint (a reload removed it): no lease, EINVAL, still marked pinned.
  gw::upstream::Lease none = pools.acquirePinned(up, 2);
  CHECK_FALSE(none.bev);
  CHECK(none.pinned);
  CHECK(none.error == EINVAL);
}

TEST_CASE("upstream pool: balanced leases carry their endpoint index", "[upstream]") {
  gw::event::BasePtr base(event_base_new());
  PinListener l0;
  PinListener l1;
  gw::settings::Upstream up;
  up.name = "u";
  up.endpoints = {loopback(l0.port), loopback(l1.port)};
  gw::upstream::Pools pools(base.get(), 1000ms);
  for (int i = 0; i < 4; ++i) {
    gw::upstream::Lease lease = pools.acquire(up);
    REQUIRE(lease.bev);
    CHECK(peerPort(lease) == (lease.index == 0 ? l0.port : l1.port));
    CHECK(lease.index == static_cast<size_t>(i % 2));
  }
}
