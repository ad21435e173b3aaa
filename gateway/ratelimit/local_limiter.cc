// Striped, bounded, process-wide GCRA buckets (see local_limiter.h).

#include "gateway/ratelimit/local_limiter.h"

#include <algorithm>

namespace gw::ratelimit {

LocalLimiter::LocalLimiter(const core::Clock& clock, size_t max_keys, size_t stripes)
    : clock_(clock),
      stripe_count_(std::clamp<size_t>(std::min(max_keys, stripes), 1, kMaxStripes)),
      per_stripe_(std::max<size_t>(1, max_keys / stripe_count_)),
      stripes_(std::make_unique<Stripe[]>(stripe_count_)) {
  for (size_t i = 0; i < stripe_count_; ++i) {
    stripes_[i].tat.reserve(std::min<size_t>(per_stripe_, 1024));
  }
}

void LocalLimiter::evict(Stripe& s, int64_t now_ns) {
  auto oldest = s.tat.end();
  size_t dropped = 0;
  for (auto it = s.tat.begin(); it != s.tat.end();) {
    if (it->second <= now_ns) {
      it = s.tat.erase(it);
      ++dropped;
      continue;
    }
    if (oldest == s.tat.end() || it->second < oldest->second) {
      oldest = it;
    }
    ++it;
  }
  if (dropped == 0 && oldest != s.tat.end()) {
    s.tat.erase(oldest);
  }
}

Decision LocalLimiter::check(std::string_view key, const Rate& r) noexcept {
  const int64_t now = clock_.now().count();
  Stripe& s = stripes_[Hash{}(key) % stripe_count_];
  std::lock_guard lock(s.mu);
  auto it = s.tat.find(key);
  if (it != s.tat.end()) {
    return gcra(it->second, now, r);
  }
  int64_t tat = 0;  // fresh bucket
  Decision d = gcra(tat, now, r);
  if (!d.allowed) {
    return d;  // nothing to remember: a denied fresh bucket stays fresh
  }
  if (s.tat.size() >= per_stripe_) {
    evict(s, now);
  }
  try {
    s.tat.emplace(std::string(key), tat);
  } catch (...) {
    // Out of memory: answer as a fresh bucket would, without remembering the key.
  }
  return d;
}

void LocalLimiter::refund(std::string_view key, const Rate& r) noexcept {
  Stripe& s = stripes_[Hash{}(key) % stripe_count_];
  std::lock_guard lock(s.mu);
  auto it = s.tat.find(key);
  if (it != s.tat.end()) {
    it->second -= r.intervalNs();
  }
}

Decision LocalLimiter::peek(std::string_view key, const Rate& r) const noexcept {
  const int64_t now = clock_.now().count();
  const Stripe& s = stripes_[Hash{}(key) % stripe_count_];
  std::lock_guard lock(s.mu);
  auto it = s.tat.find(key);
  int64_t tat = it != s.tat.end() ? it->second : 0;  // a copy: the bucket is not touched
  return gcra(tat, now, r);
}

size_t LocalLimiter::size() const {
  size_t n = 0;
  for (size_t i = 0; i < stripe_count_; ++i) {
    std::lock_guard lock(stripes_[i].mu);
    n += stripes_[i].tat.size();
  }
  return n;
}

}  // namespace gw::ratelimit
