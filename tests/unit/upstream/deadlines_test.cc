// upstream deadlines: every upstream timeout decided with a fake clock, no sleeps.

#include "gateway/upstream/deadlines.h"

#include <catch.hpp>

#include <chrono>

using namespace std::chrono_literals;
using gw::core::FakeClock;
using gw::upstream::Expiry;
using gw::upstream::kNever;
using gw::upstream::UpstreamLimits;
using gw::upstream::UpstreamTimes;

TEST_CASE("deadlines: a timeout of 0 is no limit", "[upstream][deadlines]") {
  FakeClock clock;
  CHECK(gw::upstream::deadlineAfter(clock.now(), 0ms) == kNever);
  CHECK(gw::upstream::deadlineAfter(clock.now(), 5ms) == clock.now() + 5ms);
  UpstreamTimes t{clock.now(), kNever, clock.now(), true, true};
  CHECK(gw::upstream::nextDeadline(t, UpstreamLimits{}) == kNever);
  clock.advance(std::chrono::hours(24 * 365));
  CHECK(gw::upstream::expiryAt(t, UpstreamLimits{}, clock.now()) == Expiry::kNone);
}

TEST_CASE("deadlines: connect and response timeouts before the response head",
          "[upstream][deadlines]") {
  FakeClock clock;
  const auto start = clock.now();
  UpstreamTimes t{start, gw::upstream::deadlineAfter(start, 100ms), start, false, false};
  UpstreamLimits l{};
  CHECK(gw::upstream::nextDeadline(t, l) == start + 100ms);
  clock.advance(99ms);
  CHECK(gw::upstream::expiryAt(t, l, clock.now()) == Expiry::kNone);
  clock.advance(1ms);
  CHECK(gw::upstream::expiryAt(t, l, clock.now()) == Expiry::kConnectTimeout);
  // Connected: the head deadline is now the response timeout.
  t.connected = true;
  t.head_deadline = gw::upstream::deadlineAfter(clock.now(), 1s);
  CHECK(gw::upstream::expiryAt(t, l, clock.now()) == Expiry::kNone);
  clock.advance(1s);
  CHECK(gw::upstream::expiryAt(t, l, clock.now()) == Expiry::kResponseTimeout);
}

TEST_CASE("deadlines: max_duration before the head is a 504, after it a cut",
          "[upstream][deadlines]") {
  FakeClock clock;
  const auto start = clock.now();
  UpstreamTimes t{start, gw::upstream::deadlineAfter(start, 10s), start, true, false};
  UpstreamLimits l{0ns, 2s};
  CHECK(gw::upstream::nextDeadline(t, l) == start + 2s);  // the nearer of the two
  clock.advance(2s);
  CHECK(gw::upstream::expiryAt(t, l, clock.now()) == Expiry::kResponseTimeout);
  t.response_started = true;
  CHECK(gw::upstream::expiryAt(t, l, clock.now()) == Expiry::kMaxDuration);
}

TEST_CASE("deadlines: stream_idle_timeout counts from the last upstream byte",
          "[upstream][deadlines]") {
  FakeClock clock;
  const auto start = clock.now();
  UpstreamTimes t{start, kNever, start, true, true};
  UpstreamLimits l{300ms, 0ns};
  for (int i = 0; i < 10; ++i) {  // a byte every 200 ms keeps the stream alive
    clock.advance(200ms);
    CHECK(gw::upstream::expiryAt(t, l, clock.now()) == Expiry::kNone);
    t.last_byte = clock.now();
    CHECK(gw::upstream::nextDeadline(t, l) == clock.now() + 300ms);
  }
  clock.advance(300ms);
  CHECK(gw::upstream::expiryAt(t, l, clock.now()) == Expiry::kStreamIdle);
  // max_duration wins when both are over.
  l.max_duration = 1s;
  CHECK(gw::upstream::expiryAt(t, l, clock.now()) == Expiry::kMaxDuration);
}
