#pragma once
// Injectable monotonic clock. Everything that measures time (GCRA buckets, timeouts in
// tests, access-log durations) asks a Clock, so tests can drive time by hand.
// steadyNow() and wallNow() are the only reads of std::chrono's clocks in gateway/ outside
// core/ (scripts/check-clock.sh enforces it): code that keeps std::chrono time points asks
// them, so every read of the time can be found, and later injected, from here.

#include <atomic>
#include <chrono>
#include <cstdint>

namespace gw::core {

using Nanos = std::chrono::nanoseconds;

// The monotonic time now, as a std::chrono::steady_clock time point (deadlines, ages, TTLs).
inline std::chrono::steady_clock::time_point steadyNow() noexcept {
  return std::chrono::steady_clock::now();
}

// The wall-clock time now (Unix time: JWT exp/nbf, log timestamps, certificate validity).
inline std::chrono::system_clock::time_point wallNow() noexcept {
  return std::chrono::system_clock::now();
}

class Clock {
 public:
  virtual ~Clock() = default;
  // Monotonic time since an arbitrary epoch.
  virtual Nanos now() const noexcept = 0;
};

class SteadyClock final : public Clock {
 public:
  Nanos now() const noexcept override {
    return std::chrono::duration_cast<Nanos>(steadyNow().time_since_epoch());
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
