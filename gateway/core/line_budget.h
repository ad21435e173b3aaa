#pragma once
// A per-second budget of log lines: the first `per_second` lines of each wall-clock second
// are written, the rest are counted as suppressed until someone takes the count (and writes
// one summary line). One per worker for the malformed-request log; single-threaded, pure: the
// caller passes the second.

#include <cstdint>

namespace gw::core {

class LineBudget {
 public:
  explicit LineBudget(uint32_t per_second) : per_second_(per_second) {}

  // True: write this line. False: it was counted as suppressed.
  bool take(int64_t second) noexcept {
    if (second != second_) {
      second_ = second;
      used_ = 0;
    }
    if (used_ < per_second_) {
      ++used_;
      return true;
    }
    ++suppressed_;
    return false;
  }

  // Lines suppressed since the last call (then zero).
  uint64_t takeSuppressed() noexcept {
    uint64_t n = suppressed_;
    suppressed_ = 0;
    return n;
  }
  uint64_t suppressed() const noexcept { return suppressed_; }
  uint32_t perSecond() const noexcept { return per_second_; }

 private:
  uint32_t per_second_;
  int64_t second_ = INT64_MIN;
  uint32_t used_ = 0;
  uint64_t suppressed_ = 0;
};

}  // namespace gw::core
