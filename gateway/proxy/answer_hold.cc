// Upstream answers held whole against limits.max_buffered_answer_bytes (see answer_hold.h).

#include "gateway/proxy/answer_hold.h"

#include <malloc.h>

#include <chrono>

namespace gw::proxy {

namespace {

// A hold at least this large gives its memory back to the system when released.
constexpr uint64_t kTrimAfter = 4 * 1024 * 1024;
constexpr std::chrono::seconds kTrimEvery{1};

void trimHeap() noexcept {
  thread_local std::chrono::steady_clock::time_point last{};
  const auto now = std::chrono::steady_clock::now();
  if (now - last < kTrimEvery) {
    return;
  }
  last = now;
  malloc_trim(0);
}

}  // namespace

bool AnswerHold::take(std::atomic<uint64_t>& pool, uint64_t cap, uint64_t n) noexcept {
  const uint64_t before = pool.fetch_add(n, std::memory_order_relaxed);
  if (before + n > cap) {
    pool.fetch_sub(n, std::memory_order_relaxed);
    return false;
  }
  pool_ = &pool;
  held_ += n;
  if (held_ > peak_) {
    peak_ = held_;
  }
  return true;
}

void AnswerHold::release() noexcept {
  if (held_ > 0 && pool_ != nullptr) {
    pool_->fetch_sub(held_, std::memory_order_relaxed);
  }
  held_ = 0;
  if (peak_ >= kTrimAfter) {
    trimHeap();
  }
  peak_ = 0;
}

}  // namespace gw::proxy
