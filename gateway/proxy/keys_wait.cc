// The wait for a JWKS fetch (see keys_wait.h).

#include "gateway/proxy/keys_wait.h"

#include <chrono>

#include "gateway/core/assert.h"
#include "gateway/policy/jwks_source.h"

namespace gw::proxy {

namespace {
constexpr std::chrono::milliseconds kPoll{10};
constexpr std::chrono::milliseconds kPollSlow{100};
constexpr std::chrono::milliseconds kPollFastFor{200};
constexpr std::chrono::seconds kMaxWait{12};
}  // namespace

bool KeysWait::start(event_base* base, const core::Clock& clock, const policy::KeysPending& p,
                     StageRunner& runner) {
  GW_ASSERT(p.source != nullptr);
  if (state_ != State::kIdle) {
    return false;
  }
  state_ = State::kDone;
  if (!timer_) {
    timer_ = event::makeTimer<KeysWait, &KeysWait::onTimer>(base, this);
    if (!timer_) {
      return false;
    }
  }
  if (!p.source->beginWait()) {
    return false;
  }
  state_ = State::kWaiting;
  clock_ = &clock;
  runner_ = &runner;
  keys_ = p;
  since_ = clock.now();
  arm(core::Nanos{0});
  return true;
}

void KeysWait::arm(core::Nanos waited) {
  timeval tv = event::toTimeval(
      waited < std::chrono::duration_cast<core::Nanos>(kPollFastFor) ? kPoll : kPollSlow);
  evtimer_add(timer_.get(), &tv);
}

void KeysWait::onTimer() {
  GW_ASSERT(state_ == State::kWaiting);
  const core::Nanos waited = clock_->now() - since_;
  if (keys_.source->fetchesEnded() == keys_.ended &&
      waited < std::chrono::duration_cast<core::Nanos>(kMaxWait)) {
    arm(waited);
    return;
  }
  cancel();
  runner_->resume(filters::FilterStatus::kContinue);
}

void KeysWait::cancel() noexcept {
  if (state_ == State::kWaiting) {
    state_ = State::kDone;
    evtimer_del(timer_.get());
    keys_.source->endWait();
  }
}

}  // namespace gw::proxy
