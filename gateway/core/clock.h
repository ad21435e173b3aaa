#pragma once
// Injectable monotonic clock. Everything that measures time (GCRA buckets, timeouts in
// tests, access-log durations) asks a Clock, so tests can drive time by hand.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace gw::core {

using Nanos = std::chrono::nanoseconds;

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time since an arbitrary epoch.
  virtual Nanos now() const noexcept = 0;
};

class SteadyClock final : public Clock {
 public:
  Nanos now() const noexcept override {
    return std::chrono::duration_cast<Nanos>(std::chrono::steady_clock::now().time_since_epoch());
  }
  static const SteadyClock& instance() noexcept {
    static const SteadyClock c;
    return c;
  }
};

// A clock that moves only when told to; for tests.
class FakeClock final : public Clock {
 public:
  Nanos now() const noexcept override { return Nanos(now_.load(std::memory_order_relaxed)); }
  void advance(Nanos d) noexcept { now_.fetch_add(d.count(), std::memory_order_relaxed); }
  void set(Nanos t) noexcept { now_.store(t.count(), std::memory_order_relaxed); }

 private:
  std::atomic<int64_t> now_{1'000'000'000};
};

}  // namespace gw::core
