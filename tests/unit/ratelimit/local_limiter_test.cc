// Unit tests for ratelimit/ LocalLimiter: shared by threads, exact under contention, bounded.

#include "gateway/ratelimit/local_limiter.h"

#include <atomic>
#include <barrier>
#include <catch.hpp>
#include <string>
#include <thread>
#include <vector>

#include "gateway/core/clock.h"

namespace gw::ratelimit {
namespace {

TEST_CASE("LocalLimiter: 4 threads on one key admit exactly burst + rate * elapsed",
          "[ratelimit]") {
  core::FakeClock clock;
  LocalLimiter limiter(clock);
  const Rate r = Rate::make(100, std::chrono::seconds(1), 50);  // 10 ms interval
  constexpr int kThreads = 4;
  constexpr int kPhases = 20;
  constexpr int kPerPhase = 200;  // per thread: far more than a phase can admit
  constexpr auto kStep = std::chrono::milliseconds(37);
  std::atomic<int> admitted{0};
  std::atomic<int> denied_with_bad_retry{0};
  std::barrier sync(kThreads, [&]() noexcept { clock.advance(kStep); });
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&] {
      for (int phase = 0; phase < kPhases; ++phase) {
        for (int i = 0; i < kPerPhase; ++i) {
          Decision d = limiter.check("tenant-a", r);
          if (d.allowed) {
            admitted.fetch_add(1, std::memory_order_relaxed);
          } else if (d.retry_after <= std::chrono::milliseconds(0) ||
                     d.retry_after > std::chrono::milliseconds(10)) {
            denied_with_bad_retry.fetch_add(1, std::memory_order_relaxed);
          }
        }
        sync.arrive_and_wait();
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  // Checks happened at 0, 37, ..., 19 * 37 = 703 ms: 50 + floor(703 / 10).
  CHECK(admitted.load() == 50 + 70);
  CHECK(denied_with_bad_retry.load() == 0);
  CHECK(limiter.size() == 1);
}

TEST_CASE("LocalLimiter::refund gives back exactly what one allowed check took", "[ratelimit]") {
  core::FakeClock clock;
  LocalLimiter limiter(clock);
  const Rate r = Rate::make(2, std::chrono::minutes(1));  // burst 2, one per 30 s
  REQUIRE(limiter.check("k", r).allowed);
  REQUIRE(limiter.check("k", r).allowed);
  REQUIRE_FALSE(limiter.check("k", r).allowed);
  limiter.refund("k", r);  // one back: one more fits, then none
  CHECK(limiter.check("k", r).allowed);
  CHECK_FALSE(limiter.check("k", r).allowed);
  limiter.refund("k", r);
  limiter.refund("k", r);
  CHECK(limiter.peek("k", r).remaining == 1);  // two back, and the peek leaves them there
  CHECK(limiter.check("k", r).allowed);
  CHECK(limiter.check("k", r).allowed);
  CHECK_FALSE(limiter.check("k", r).allowed);
  limiter.refund("absent", r);  // a key not held: nothing happens
  CHECK(limiter.size() == 1);
}

TEST_CASE("LocalLimiter keeps keys apart and shares them across threads", "[ratelimit]") {
  core::FakeClock clock;
  LocalLimiter limiter(clock);
  const Rate r = Rate::make(1, std::chrono::seconds(1), 3);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int k = 0; k < 100; ++k) {
        for (int i = 0; i < 5; ++i) {
          if (limiter.check("key-" + std::to_string(k), r).allowed) {
            admitted.fetch_add(1, std::memory_order_relaxed);
          }
        }
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
  CHECK(admitted.load() == 100 * 3);
  CHECK(limiter.size() == 100);
}

TEST_CASE("LocalLimiter's key table is bounded", "[ratelimit]") {
  core::FakeClock clock;
  LocalLimiter limiter(clock, 640);
  REQUIRE(limiter.maxKeys() <= 640);
  const Rate r = Rate::make(1, std::chrono::minutes(1), 1);
  for (int i = 0; i < 20'000; ++i) {
    REQUIRE(limiter.check("k" + std::to_string(i), r).allowed);  // every new key is fresh
    if (i % 1000 == 0) {
      REQUIRE(limiter.size() <= 640);
    }
  }
  CHECK(limiter.size() <= 640);
  CHECK(limiter.size() >= 600);  // the bound is used, not collapsed
  // The most recent key is still remembered.
  CHECK_FALSE(limiter.check("k19999", r).allowed);

  // Once every TAT is in the past, a full table drops the stale keys, not live ones.
  clock.advance(std::chrono::minutes(2));
  for (int i = 0; i < 640; ++i) {
    limiter.check("fresh" + std::to_string(i), r);
  }
  CHECK(limiter.size() <= 640);

  LocalLimiter tiny(clock, 0);  // at least one key
  CHECK(tiny.maxKeys() == 1);
  CHECK(tiny.check("a", r).allowed);
  CHECK(tiny.size() == 1);
}

TEST_CASE("LocalLimiter evicts expired keys first, then the one closest to full", "[ratelimit]") {
  core::FakeClock clock;
  LocalLimiter limiter(clock, 3, 1);  // one stripe of three keys: eviction order is visible
  const auto per = [](std::chrono::milliseconds window) { return Rate::make(1, window, 1); };
  const Rate minute = per(std::chrono::minutes(1));
  const Rate second = per(std::chrono::seconds(1));
  const Rate hour = per(std::chrono::hours(1));
  const Rate ten = per(std::chrono::seconds(10));

  REQUIRE(limiter.check("a", minute).allowed);  // TAT +60 s
  REQUIRE(limiter.check("b", second).allowed);  // TAT +1 s
  REQUIRE(limiter.check("c", hour).allowed);    // TAT +3600 s
  REQUIRE(limiter.size() == 3);
  REQUIRE(limiter.check("d", ten).allowed);  // full, nothing expired: "b" (smallest TAT) goes
  CHECK(limiter.size() == 3);
  CHECK_FALSE(limiter.check("a", minute).allowed);
  CHECK_FALSE(limiter.check("c", hour).allowed);
  CHECK_FALSE(limiter.check("d", ten).allowed);

  clock.advance(std::chrono::seconds(11));  // "d" is now equivalent to a fresh bucket
  REQUIRE(limiter.check("e", minute).allowed);
  CHECK(limiter.size() == 3);
  CHECK_FALSE(limiter.check("a", minute).allowed);  // kept
  CHECK_FALSE(limiter.check("c", hour).allowed);    // kept
  CHECK_FALSE(limiter.check("e", minute).allowed);
}

}  // namespace
}  // namespace gw::ratelimit
