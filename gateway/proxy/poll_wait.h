#pragma once
// proxy/: a stage's wait for an answer another thread brings into a shared store (the token
// fetcher's, policy/credential_store.h): the stage stops, and is run again after a short
// pause — every 5 ms for the first 200 ms, then every 25 ms — until it finds the answer or
// its deadline passes. Polling keeps the store free of per-request callbacks across threads;
// a waiting request costs one timer.

#include <chrono>

#include "gateway/core/clock.h"
#include "gateway/event/owners.h"
#include "gateway/proxy/stage.h"

namespace gw::proxy {

class PollWait {
 public:
  PollWait() = default;
  PollWait(const PollWait&) = delete;
  PollWait& operator=(const PollWait&) = delete;
  ~PollWait() { cancel(); }

  // The first wait of a request, begun at `now` (clock's time): its deadline is `limit` later.
  void begin(const core::Clock& clock, core::Nanos now, std::chrono::milliseconds limit) noexcept;
  bool begun() const noexcept { return begun_; }
  // Arms one pause, then runner.resume(kContinue). False: past the deadline, or no timer
  // could be had (the stage answers instead).
  bool again(event_base* base, StageRunner& runner);
  // The request ends while it waits: no resume.
  void cancel() noexcept;
  // A new request.
  void reset() noexcept {
    cancel();
    begun_ = false;
  }

 private:
  void onTimer();

  bool begun_ = false;
  const core::Clock* clock_ = nullptr;
  core::Nanos since_{};
  core::Nanos deadline_{};
  event::EventPtr timer_;
  StageRunner* runner_ = nullptr;
};

}  // namespace gw::proxy
