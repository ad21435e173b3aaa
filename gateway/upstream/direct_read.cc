// Direct socket reads into a bufferevent's input (see direct_read.h).

#include "gateway/upstream/direct_read.h"

#include <event2/buffer.h>
#include <event2/bufferevent_struct.h>
#include <event2/event.h>

#include <algorithm>
#include <cerrno>

#include "gateway/event/socket.h"

namespace gw::upstream {

namespace {

constexpr ev_ssize_t kReadBytes = 16 * 1024;
// After a read that came back full, up to kBursts more in the same callback, of kBurstBytes
// each: a large answer moves in fewer, larger reads (and, relayed, fewer writes) while a small
// one still costs one read of a small buffer. 48 KiB keeps each new buffer at 64 KiB: larger
// ones cross glibc's mmap threshold, and the page faults of fresh mappings cost more than the
// syscalls saved (measured: 240 KiB bursts doubled the CPU of a 300 KB tools/list relay; 48 KiB
// cut it by a fifth and its syscalls from 23 to 10 per answer).
constexpr ev_ssize_t kBurstBytes = 48 * 1024;
constexpr int kBursts = 2;

void onReadable(evutil_socket_t fd, short what, void* arg) {
  auto* bev = static_cast<bufferevent*>(arg);
  evbuffer* in = bufferevent_get_input(bev);
  short failure = 0;
  if ((what & EV_TIMEOUT) != 0) {
    failure = BEV_EVENT_READING | BEV_EVENT_TIMEOUT;
  } else {
    ev_ssize_t want = kReadBytes;
    size_t have = evbuffer_get_length(in);
    if (bev->wm_read.high > 0) {
      if (have >= bev->wm_read.high) {
        return;  // full: the watermark callback suspends reading
      }
      want = std::min<ev_ssize_t>(want, static_cast<ev_ssize_t>(bev->wm_read.high - have));
    }
    // A socket bufferevent keeps its input's end frozen; libevent's read thaws it the same way.
    evbuffer_unfreeze(in, 0);
    int err = ENOMEM;
    const ssize_t got = event::readInto(in, fd, want, bev->wm_read.high > 0, err);
    // While a read comes back full, up to kBursts more of kBurstBytes each. Whatever a later
    // read meets beyond data (EAGAIN, the end, an error) is left for the next callback: the
    // socket stays readable at its end or error, and the bytes read before are delivered now.
    ssize_t last = got;
    ev_ssize_t asked = want;
    for (int i = 0; i < kBursts && last >= asked; ++i) {
      asked = kBurstBytes;
      if (bev->wm_read.high > 0) {
        have = evbuffer_get_length(in);
        if (have >= bev->wm_read.high) {
          break;
        }
        asked = std::min<ev_ssize_t>(asked, static_cast<ev_ssize_t>(bev->wm_read.high - have));
      }
      int ignored = 0;
      last = event::readInto(in, fd, asked, bev->wm_read.high > 0, ignored);
    }
    evbuffer_freeze(in, 0);
    if (got < 0) {
      if (err == EAGAIN || err == EWOULDBLOCK || err == EINTR) {
        return;
      }
      failure = BEV_EVENT_READING | BEV_EVENT_ERROR;
      errno = err;  // for the event callback, as libevent leaves it
    } else if (got == 0) {
      failure = BEV_EVENT_READING | BEV_EVENT_EOF;
    }
  }
  if (failure != 0) {
    bufferevent_disable(bev, EV_READ);
    if (bev->errorcb != nullptr) {
      bev->errorcb(bev, failure, bev->cbarg);
    }
    return;  // the callback may have freed bev
  }
  if (evbuffer_get_length(in) >= bev->wm_read.low && bev->readcb != nullptr) {
    bev->readcb(bev, bev->cbarg);  // last: it may free bev
  }
}

}  // namespace

bool useDirectReads(bufferevent* bev) noexcept {
  evutil_socket_t fd = bufferevent_getfd(bev);
  if (fd < 0 || event_pending(&bev->ev_read, EV_READ | EV_TIMEOUT, nullptr) != 0) {
    return false;
  }
  return event_assign(&bev->ev_read, bufferevent_get_base(bev), fd,
                      EV_READ | EV_PERSIST | EV_FINALIZE, &onReadable, bev) == 0;
}

}  // namespace gw::upstream
