#pragma once
// ratelimit/: the buckets behind the rate-limit stage — the GCRA arithmetic and 429 header
// lines both backends share, the process-wide local buckets, and the per-worker Redis limiter
// with its on_error fallback.
// Process-wide GCRA buckets for `backend: local` limits, and the fallback of the Redis
// backend. One LocalLimiter per process, shared by every worker thread: keys are spread over
// striped mutexes (each stripe an unordered_map key → TAT), so workers contend only when
// their keys hash to the same stripe. The key table is bounded: a stripe that is full first
// drops keys whose TAT is in the past (they are indistinguishable from a fresh bucket) and,
// when none is, the key closest to full (smallest TAT), so a flood of unique keys costs
// memory up to the bound and can only make a limit more lenient, never stricter.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gateway/core/clock.h"
#include "gateway/ratelimit/gcra.h"

namespace gw::ratelimit {

class LocalLimiter {
 public:
  static constexpr size_t kMaxStripes = 64;

  // `clock` must outlive the limiter. max_keys bounds size() (at least 1); the table is split
  // into min(stripes, max_keys) stripes of max_keys / stripes keys each (tests pass 1 stripe
  // to make eviction order observable).
  explicit LocalLimiter(const core::Clock& clock, size_t max_keys = 100000,
                        size_t stripes = kMaxStripes);
  LocalLimiter(const LocalLimiter&) = delete;
  LocalLimiter& operator=(const LocalLimiter&) = delete;

  // One request against `key` at the clock's now. Thread-safe; allocates only when the key
  // is new. The same key must always be checked with the same Rate (keys are the caller's
  // namespace: include the limit's name).
  Decision check(std::string_view key, const Rate& r) noexcept;
  // Gives back one request an earlier allowed check() took from `key` (a request refused
  // later by another limit spends nothing, as nginx's limit_req does). No-op for a key no
  // longer held.
  void refund(std::string_view key, const Rate& r) noexcept;
  // What check() would answer now, without spending from the bucket (admin /explain).
  Decision peek(std::string_view key, const Rate& r) const noexcept;

  // Keys currently held (sum over stripes; a snapshot under concurrent checks).
  size_t size() const;
  size_t maxKeys() const noexcept { return per_stripe_ * stripe_count_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  struct Stripe {
    mutable std::mutex mu;
    std::unordered_map<std::string, int64_t, Hash, std::equal_to<>> tat;
  };
  // Makes room for one key in a full stripe (called with its mutex held).
  static void evict(Stripe& s, int64_t now_ns);

  const core::Clock& clock_;
  size_t stripe_count_;
  size_t per_stripe_;
  std::unique_ptr<Stripe[]> stripes_;
};

}  // namespace gw::ratelimit
