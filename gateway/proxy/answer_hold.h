#pragma once
// proxy/: the bytes of upstream answers the gateway holds whole — a list read for visibility,
// tool pinning or a legacy client's prefixed view, each page of a federated fan-out — counted
// against one process-wide budget (limits.max_buffered_answer_bytes), so many large lists at
// once cannot take the process's memory. A hold is taken chunk by chunk as the answer arrives
// and given back when the answer is sent or dropped. Giving back a large hold (4 MiB or more)
// asks for the freed memory to go back to the system: the server's main loop calls
// trimAfterLargeAnswers() on its tick, which runs malloc_trim once no large answer was given
// back for 200 ms, off the request path, so idle RSS comes back near its baseline.

#include <atomic>
#include <cstdint>

namespace gw::proxy {

class AnswerHold {
 public:
  AnswerHold() = default;
  AnswerHold(const AnswerHold&) = delete;
  AnswerHold& operator=(const AnswerHold&) = delete;
  ~AnswerHold() { release(); }

  // Holds n more bytes of `pool` (all holders' total) if that stays within `cap`. False:
  // over the budget, nothing taken (the answer must be refused).
  bool take(std::atomic<uint64_t>& pool, uint64_t cap, uint64_t n) noexcept;
  // Gives every byte held back.
  void release() noexcept;
  uint64_t held() const noexcept { return held_; }

 private:
  std::atomic<uint64_t>* pool_ = nullptr;
  uint64_t held_ = 0;
  uint64_t peak_ = 0;  // the most held since the last release (a large one trims the heap)
};

// Any thread (the server's tick): malloc_trim(0) when a large answer was given back and none
// for 200 ms since. True when it trimmed.
bool trimAfterLargeAnswers() noexcept;

}  // namespace gw::proxy
