// proxy deadlines: every upstream timeout decided with a fake clock, no sleeps.

#include "gateway/proxy/deadlines.h"

#include <catch.hpp>

#include <chrono>

using namespace std::chrono_literals;
using gw::core::FakeClock;
using gw::proxy::Expiry;
using gw::proxy::kNever;
using gw::proxy::UpstreamLimits;
using gw::proxy::UpstreamTimes;

TEST_CASE("deadlines: a timeout of 0 is no limit", "[proxy][deadlines]") {
  FakeClock clock;
  CHECK(gw::proxy::deadlineAfter(clock.now(), 0ms) == kNever);
  CHECK(gw::proxy::deadlineAfter(clock.now(), 5ms) == clock.now() + 5ms);
  UpstreamTimes t{clock.now(), kNever, clock.now(), true, true};
  CHECK(gw::proxy::nextDeadline(t, UpstreamLimits{}) == kNever);
  clock.advance(std::chrono::hours(24 * 365));
  CHECK(gw::proxy::expiryAt(t, UpstreamLimits{}, clock.now()) == Expiry::kNone);
}

TEST_CASE("deadlines: connect and response timeouts before the response head",
          "[proxy][deadlines]") {
  FakeClock clock;
  const auto start = clock.now();
  UpstreamTimes t{start, gw::proxy::deadlineAfter(start, 100ms), start, false, false};
  UpstreamLimits l{};
  CHECK(gw::proxy::nextDeadline(t, l) == start + 100ms);
  clock.advance(99ms);
  CHECK(gw::proxy::expiryAt(t, l, clock.now()) == Expiry::kNone);
  clock.advance(1ms);
  CHECK(gw::proxy::expiryAt(t, l, clock.now()) == Expiry::kConnectTimeout);
  // Connected: the head deadline is now the response timeout.
  t.connected = true;
  t.head_deadline = gw::proxy::deadlineAfter(clock.now(), 1s);
  CHECK(gw::proxy::expiryAt(t, l, clock.now()) == Expiry::kNone);
  clock.advance(1s);
  CHECK(gw::proxy::expiryAt(t, l, clock.now()) == Expiry::kResponseTimeout);
}

TEST_CASE("deadlines: max_duration before the head is a 504, after it a cut",
          "[proxy][deadlines]") {
  FakeClock clock;
  const auto start = clock.now();
  UpstreamTimes t{start, gw::proxy::deadlineAfter(start, 10s), start, true, false};
  UpstreamLimits l{0ns, 2s};
  CHECK(gw::proxy::nextDeadline(t, l) == start + 2s);  // the nearer of the two
  clock.advance(2s);
  CHECK(gw::proxy::expiryAt(t, l, clock.now()) == Expiry::kResponseTimeout);
  t.response_started = true;
  CHECK(gw::proxy::expiryAt(t, l, clock.now()) == Expiry::kMaxDuration);
}

TEST_CASE("deadlines: stream_idle_timeout counts from the last upstream byte",
          "[proxy][deadlines]") {
  FakeClock clock;
  const auto start = clock.now();
  UpstreamTimes t{start, kNever, start, true, true};
  UpstreamLimits l{300ms, 0ns};
  for (int i = 0; i < 10; ++i) {  // a byte every 200 ms keeps the stream alive
    clock.advance(200ms);
    CHECK(gw::proxy::expiryAt(t, l, clock.now()) == Expiry::kNone);
    t.last_byte = clock.now();
    CHECK(gw::proxy::nextDeadline(t, l) == clock.now() + 300ms);
  }
  clock.advance(300ms);
  CHECK(gw::proxy::expiryAt(t, l, clock.now()) == Expiry::kStreamIdle);
  // max_duration wins when both are over.
  l.max_duration = 1s;
  CHECK(gw::proxy::expiryAt(t, l, clock.now()) == Expiry::kMaxDuration);
}
