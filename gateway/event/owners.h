#pragma once
// event/: the libevent layer under the connections — RAII owners of every libevent handle,
// timers bound to their owner, and event::Socket, the client socket without a bufferevent.
// RAII owners of libevent handles. Every event_base, event, bufferevent, evbuffer and
// evconnlistener in the gateway lives in one of these; no bare *_free calls elsewhere.

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>

#include <chrono>
#include <memory>
#include <string_view>

namespace gw::event {

struct BaseDeleter {
  void operator()(event_base* b) const noexcept { event_base_free(b); }
};
struct EventDeleter {
  void operator()(::event* e) const noexcept { event_free(e); }
};
struct BufferEventDeleter {
  void operator()(bufferevent* b) const noexcept { bufferevent_free(b); }
};
struct EvBufferDeleter {
  void operator()(evbuffer* b) const noexcept { evbuffer_free(b); }
};
struct ListenerDeleter {
  void operator()(evconnlistener* l) const noexcept { evconnlistener_free(l); }
};

using BasePtr = std::unique_ptr<event_base, BaseDeleter>;
using EventPtr = std::unique_ptr<::event, EventDeleter>;
using BufferEventPtr = std::unique_ptr<bufferevent, BufferEventDeleter>;
using EvBufferPtr = std::unique_ptr<evbuffer, EvBufferDeleter>;
using ListenerPtr = std::unique_ptr<evconnlistener, ListenerDeleter>;

inline EvBufferPtr makeBuffer() {
  return EvBufferPtr(evbuffer_new());
}

inline void addString(evbuffer* b, std::string_view s) {
  evbuffer_add(b, s.data(), s.size());
}

// A duration as libevent takes it (a negative one as 0).
inline timeval toTimeval(std::chrono::milliseconds d) noexcept {
  if (d.count() < 0) {
    d = std::chrono::milliseconds(0);
  }
  return timeval{static_cast<time_t>(d.count() / 1000),
                 static_cast<suseconds_t>((d.count() % 1000) * 1000)};
}

// A one-shot/re-armable timer owned by `owner`; cb(owner) runs on expiry.
template <class T, void (T::*Method)()>
EventPtr makeTimer(event_base* base, T* owner) {
  return EventPtr(evtimer_new(
      base, [](evutil_socket_t, short, void* arg) { (static_cast<T*>(arg)->*Method)(); }, owner));
}

}  // namespace gw::event
