// proxy/: waiting for an answer in a shared store (poll_wait.h).

#include "gateway/proxy/poll_wait.h"

namespace gw::proxy {

namespace {

constexpr std::chrono::milliseconds kFastPoll{5};
constexpr std::chrono::milliseconds kSlowPoll{25};
constexpr std::chrono::milliseconds kFastFor{200};

}  // namespace

void PollWait::begin(const core::Clock& clock, core::Nanos now,
                     std::chrono::milliseconds limit) noexcept {
  begun_ = true;
  clock_ = &clock;
  since_ = now;
  deadline_ = since_ + limit;
}

bool PollWait::again(event_base* base, StageRunner& runner) {
  const core::Nanos now = clock_->now();
  if (now >= deadline_) {
    return false;
  }
  if (!timer_) {
    timer_.reset(evtimer_new(
        base, [](evutil_socket_t, short, void* arg) { static_cast<PollWait*>(arg)->onTimer(); },
        this));
    if (!timer_) {
      return false;
    }
  }
  runner_ = &runner;
  const timeval tv = event::toTimeval(now - since_ < kFastFor ? kFastPoll : kSlowPoll);
  evtimer_add(timer_.get(), &tv);
  return true;
}

void PollWait::cancel() noexcept {
  if (timer_) {
    evtimer_del(timer_.get());
  }
  runner_ = nullptr;
}

void PollWait::onTimer() {
  StageRunner* r = runner_;
  runner_ = nullptr;
  if (r != nullptr) {
    r->resume(filters::FilterStatus::kContinue);
  }
}

}  // namespace gw::proxy
