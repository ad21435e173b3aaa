#pragma once
// event/: a worker's one flush queue. Whatever queued output in a loop turn — a client
// connection, a federation fan-out, a merged subscriptions/listen stream — is written by one
// zero-delay event after the turn's callbacks: first every entry's upstream-bound output,
// back to back (an upstream woken by the first request then finds the rest waiting instead
// of sleeping between them), then each entry's follow-up (client-bound output, finished
// pages, a pipelined request). An entry that goes away while queued leaves a hole, never a
// dangling pointer; an entry queued again during the run is handled in the same run.

#include <event2/event.h>

#include <cstddef>
#include <vector>

#include "gateway/event/owners.h"

namespace gw::event {

class FlushQueue;

class Flushable {
 public:
  // First pass: write the upstream-bound output now.
  virtual void flushOutbound() noexcept {}
  // Second pass: the rest of what the flush owes this entry (it may queue itself again).
  virtual void afterFlush() = 0;

 protected:
  Flushable() = default;
  Flushable(const Flushable&) = delete;
  Flushable& operator=(const Flushable&) = delete;
  virtual ~Flushable() = default;

 private:
  friend class FlushQueue;
  size_t flush_slot_ = 0;
  bool flush_queued_ = false;
};

class FlushQueue {
 public:
  FlushQueue() = default;
  FlushQueue(const FlushQueue&) = delete;
  FlushQueue& operator=(const FlushQueue&) = delete;

  // The event is made on first use, on `base` (the worker's). False: it could not be made.
  bool ready(event_base* base);
  // Queues `f` (once) for this turn's flush. False: no event could be made (nothing queued).
  bool schedule(event_base* base, Flushable& f);
  // `f` goes away, or wants no flush any more.
  void remove(Flushable& f) noexcept;
  // The worker's shutdown: the event goes, every entry is forgotten.
  void clear() noexcept;

 private:
  static void onEvent(evutil_socket_t, short, void* arg);
  void run();

  std::vector<Flushable*> list_;
  EventPtr ev_;
};

}  // namespace gw::event
