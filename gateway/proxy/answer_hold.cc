// Upstream answers held whole against limits.max_buffered_answer_bytes (see answer_hold.h).

#include "gateway/proxy/answer_hold.h"

#include <malloc.h>

#include <chrono>

#include "gateway/core/clock.h"

namespace gw::proxy {

namespace {

// A hold at least this large asks for the heap to be trimmed once it is quiet.
constexpr uint64_t kTrimAfter = 4 * 1024 * 1024;
// ... this long after the last such release (its answer has left the client buffers by then).
constexpr std::chrono::milliseconds kQuiet{200};

std::atomic<bool> g_trim_pending{false};
std::atomic<int64_t> g_last_large_ms{0};

int64_t nowMs() noexcept {
  return std::chrono::duration_cast<std::chrono::milliseconds>(core::steadyNow().time_since_epoch())
      .count();
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
    g_last_large_ms.store(nowMs(), std::memory_order_relaxed);
    g_trim_pending.store(true, std::memory_order_release);
  }
  peak_ = 0;
}

bool trimAfterLargeAnswers() noexcept {
  if (!g_trim_pending.load(std::memory_order_acquire) ||
      nowMs() - g_last_large_ms.load(std::memory_order_relaxed) < kQuiet.count()) {
    return false;
  }
  g_trim_pending.store(false, std::memory_order_relaxed);
  malloc_trim(0);
  return true;
}

}  // namespace gw::proxy
