// A worker's one flush queue (see flush_queue.h).

#include "gateway/event/flush_queue.h"

namespace gw::event {

bool FlushQueue::ready(event_base* base) {
  if (!ev_) {
    ev_.reset(evtimer_new(base, &FlushQueue::onEvent, this));
  }
  return ev_ != nullptr;
}

bool FlushQueue::schedule(event_base* base, Flushable& f) {
  if (f.flush_queued_) {
    return true;
  }
  if (!ready(base)) {
    return false;
  }
  f.flush_queued_ = true;
  f.flush_slot_ = list_.size();
  list_.push_back(&f);
  if (f.flush_slot_ == 0) {
    event_active(ev_.get(), EV_TIMEOUT, 0);
  }
  return true;
}

void FlushQueue::remove(Flushable& f) noexcept {
  if (f.flush_queued_) {
    f.flush_queued_ = false;
    if (f.flush_slot_ < list_.size() && list_[f.flush_slot_] == &f) {
      list_[f.flush_slot_] = nullptr;
    }
  }
}

void FlushQueue::clear() noexcept {
  for (Flushable* f : list_) {
    if (f != nullptr) {
      f->flush_queued_ = false;
    }
  }
  list_.clear();
  ev_.reset();
}

void FlushQueue::onEvent(evutil_socket_t, short, void* arg) {
  static_cast<FlushQueue*>(arg)->run();
}

void FlushQueue::run() {
  // Upstream-bound bytes first, back to back; an entry queued by a callback below gets both
  // passes in turn.
  const size_t queued = list_.size();
  for (size_t i = 0; i < queued; ++i) {
    if (Flushable* f = list_[i]) {
      f->flushOutbound();
    }
  }
  // Bounded: an entry queues itself again only for new output (or a pipelined request
  // already in its input), as it would with any event.
  for (size_t i = 0; i < list_.size(); ++i) {
    if (Flushable* f = list_[i]) {
      if (i >= queued) {
        f->flushOutbound();
      }
      if (list_[i] != f) {
        continue;  // it went away in its own flushOutbound
      }
      f->flush_queued_ = false;
      list_[i] = nullptr;
      f->afterFlush();
    }
  }
  list_.clear();
}

}  // namespace gw::event
