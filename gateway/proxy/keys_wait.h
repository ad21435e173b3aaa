#pragma once
// proxy/: the wait for a JWKS fetch. A token names a key the JWKS lacks (an identity
// provider that rotated its keys), or there is no key set yet, and a fetch is running or
// starts at the fetcher's next tick: rather than a 401 the client would take for a bad
// token, the request waits for that fetch to end (looking every 10 ms for its first 200 ms,
// then every 100 ms, 12 s at most — the fetch itself gives up after 10 s), then its head
// runs again. A request waits once; a second refusal stands. Nothing of its body is read.

#include <cstdint>

#include "gateway/core/clock.h"
#include "gateway/event/owners.h"
#include "gateway/policy/policy.h"
#include "gateway/proxy/stage.h"

namespace gw::proxy {

class KeysWait {
 public:
  KeysWait() = default;
  KeysWait(const KeysWait&) = delete;
  KeysWait& operator=(const KeysWait&) = delete;
  ~KeysWait() { cancel(); }

  // Waits for `p`'s fetch on `base`, then runner.resume(kContinue). False: no wait (this
  // request waited once already, or the source has its maximum of waiters, or no timer
  // could be had): the refusal stands.
  bool start(event_base* base, const core::Clock& clock, const policy::KeysPending& p,
             StageRunner& runner);
  // The request ends while it waits: no resume.
  void cancel() noexcept;
  // A new request: it may wait once again.
  void reset() noexcept {
    cancel();
    state_ = State::kIdle;
  }

 private:
  enum class State : uint8_t { kIdle, kWaiting, kDone };
  void onTimer();
  void arm(core::Nanos waited);

  State state_ = State::kIdle;
  event::EventPtr timer_;
  const core::Clock* clock_ = nullptr;
  StageRunner* runner_ = nullptr;
  policy::KeysPending keys_;
  core::Nanos since_{};
};

}  // namespace gw::proxy
