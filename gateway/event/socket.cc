// Client socket: events embedded, buffers on demand (see socket.h).

#include "gateway/event/socket.h"

#include <sys/uio.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>

namespace gw::event {

namespace {

// Reads go straight into the input, up to 16 KiB at once, but a read into an empty input (the
// start of a request: most are well under 4 KiB) reserves only 4 KiB, so the many connections
// that each hold one small request at a time do not each hold a 16 KiB block — unless the
// last read filled what it asked for (a body streaming in), which keeps reading 16 KiB.
constexpr ev_ssize_t kReadBytes = 16 * 1024;
constexpr ev_ssize_t kFirstReadBytes = 4 * 1024;

}  // namespace

ssize_t readInto(evbuffer* in, evutil_socket_t fd, ev_ssize_t want, bool bounded,
                 int& err) noexcept {
  evbuffer_iovec vec[2];
  const int n = evbuffer_reserve_space(in, want, vec, 2);
  if (n <= 0) {
    err = ENOMEM;
    return -1;
  }
  iovec iov[2];
  // The extents may be larger than asked for: bounded, read no more than `want`; otherwise
  // take all the reserved room (fewer, larger reads on a fast stream).
  size_t room = bounded ? static_cast<size_t>(want) : SIZE_MAX;
  for (int i = 0; i < n; ++i) {
    iov[i].iov_base = vec[i].iov_base;
    iov[i].iov_len = std::min(vec[i].iov_len, room);
    room -= iov[i].iov_len;
  }
  const ssize_t got = ::readv(fd, iov, n);
  err = errno;
  int used = 0;
  size_t left = got > 0 ? static_cast<size_t>(got) : 0;
  for (int i = 0; i < n && left > 0; ++i, ++used) {
    vec[i].iov_len = std::min(vec[i].iov_len, left);
    left -= vec[i].iov_len;
  }
  evbuffer_commit_space(in, vec, used);
  return got;
}

size_t headWindow(evbuffer* in, size_t limit) noexcept {
  const size_t avail = evbuffer_get_length(in);
  const size_t most = std::min(avail, limit + 1);
  // Empty lines before a request line are skipped by the parser (RFC 9112 §2.2): the blank
  // line looked for comes after the first byte that is neither CR nor LF.
  evbuffer_iovec first{};
  if (evbuffer_peek(in, -1, nullptr, &first, 1) < 1) {
    return most;
  }
  const auto* p = static_cast<const unsigned char*>(first.iov_base);
  size_t lead = 0;
  while (lead < first.iov_len && (p[lead] == '\r' || p[lead] == '\n')) {
    ++lead;
  }
  evbuffer_ptr from{};
  evbuffer_ptr stop{};
  if (lead == first.iov_len || lead >= most ||
      evbuffer_ptr_set(in, &from, lead, EVBUFFER_PTR_SET) != 0 ||
      evbuffer_ptr_set(in, &stop, most, EVBUFFER_PTR_SET) != 0) {
    return most;
  }
  // Only the first `most` bytes are searched: a blank line beyond them changes nothing.
  const evbuffer_ptr end = evbuffer_search_range(in, "\r\n\r\n", 4, &from, &stop);
  return end.pos >= 0 ? std::min(static_cast<size_t>(end.pos) + 4, most) : most;
}

Socket::~Socket() {
  close();
}

void Socket::close() noexcept {
  if (fd_ < 0) {
    return;
  }
  if (ssl_ != nullptr) {
    tlsClose();
  }
  event_del(&read_ev_);
  event_del(&write_ev_);
  if (in_ != nullptr) {
    evbuffer_free(in_);
    in_ = nullptr;
  }
  if (out_ != nullptr) {
    evbuffer_free(out_);
    out_ = nullptr;
  }
  evutil_closesocket(fd_);
  fd_ = -1;
  read_pending_ = writing_ = read_enabled_ = false;
}

bool Socket::open(event_base* base, evutil_socket_t fd, ReadFn on_read, WriteFn on_write,
                  EventFn on_event, void* arg) noexcept {
  if (event_assign(&read_ev_, base, fd, EV_READ | EV_PERSIST, &Socket::onReadable, this) != 0 ||
      event_assign(&write_ev_, base, fd, EV_WRITE | EV_PERSIST, &Socket::onWritable, this) != 0) {
    evutil_closesocket(fd);
    return false;
  }
  fd_ = fd;
  on_read_ = on_read;
  on_write_ = on_write;
  on_event_ = on_event;
  arg_ = arg;
  return true;
}

evbuffer* Socket::input() noexcept {
  if (in_ == nullptr) {
    in_ = evbuffer_new();
  }
  return in_;
}

evbuffer* Socket::output() noexcept {
  if (out_ == nullptr) {
    out_ = evbuffer_new();
  }
  return out_;
}

void Socket::releaseIdle() noexcept {
  if (in_ != nullptr && evbuffer_get_length(in_) == 0) {
    evbuffer_free(in_);
    in_ = nullptr;
  }
  if (out_ != nullptr && evbuffer_get_length(out_) == 0) {
    evbuffer_free(out_);
    out_ = nullptr;
  }
}

// Reads are wanted while enabled and below the high mark.
void Socket::updateRead() noexcept {
  const bool want = read_enabled_ && (read_high_ == 0 || inputLength() < read_high_);
  if (want == read_pending_) {
    return;
  }
  read_pending_ = want;
  if (want) {
    event_add(&read_ev_, nullptr);
    if (ssl_ != nullptr) {
      tlsKick();
    }
  } else {
    event_del(&read_ev_);
  }
}

void Socket::enableRead() noexcept {
  read_enabled_ = true;
  updateRead();
}

void Socket::disableRead() noexcept {
  read_enabled_ = false;
  updateRead();
}

void Socket::setReadHigh(size_t high) noexcept {
  read_high_ = high;
  updateRead();
}

void Socket::addWrite() noexcept {
  if (write_timeout_ms_ > 0) {
    timeval tv{write_timeout_ms_ / 1000,
               static_cast<suseconds_t>((write_timeout_ms_ % 1000) * 1000)};
    event_add(&write_ev_, &tv);
  } else {
    event_add(&write_ev_, nullptr);
  }
}

void Socket::enableWrite() noexcept {
  if (!writing_) {
    writing_ = true;
    addWrite();
  }
}

void Socket::disableWrite() noexcept {
  if (writing_) {
    writing_ = false;
    event_del(&write_ev_);
  }
}

void Socket::setWriteTimeout(std::chrono::milliseconds t) noexcept {
  write_timeout_ms_ =
      t.count() > 0 ? static_cast<int32_t>(std::min<int64_t>(t.count(), INT32_MAX)) : 0;
  if (writing_) {
    addWrite();  // re-added with the new timeout
  }
}

Sent Socket::sendNow() noexcept {
  if (outputLength() == 0) {
    return Sent::kNothing;
  }
  if (ssl_ != nullptr) {
    return tlsSendNow();
  }
  for (int i = 0; i < 16 && evbuffer_get_length(out_) > 0; ++i) {
    if (evbuffer_write(out_, fd_) <= 0) {
      break;
    }
  }
  if (evbuffer_get_length(out_) == 0) {
    return Sent::kDrained;
  }
  enableWrite();  // the rest, or the error, is the write event's
  return Sent::kPartial;
}

void Socket::onReadable(evutil_socket_t fd, short, void* arg) {
  auto* s = static_cast<Socket*>(arg);
  if (s->ssl_ != nullptr) {
    s->tlsReadable();
    return;
  }
  evbuffer* in = s->input();
  const size_t have = in != nullptr ? evbuffer_get_length(in) : 0;
  ev_ssize_t want = have == 0 && !s->last_read_full_ ? kFirstReadBytes : kReadBytes;
  if (s->read_high_ > 0) {
    if (have >= s->read_high_) {
      s->updateRead();  // full: reads wait for the reader to drain it
      return;
    }
    want = std::min<ev_ssize_t>(want, static_cast<ev_ssize_t>(s->read_high_ - have));
  }
  int err = ENOMEM;
  const ssize_t got = in != nullptr ? readInto(in, fd, want, s->read_high_ > 0, err) : -1;
  s->last_read_full_ = got >= want;
  if (got < 0 && (err == EAGAIN || err == EWOULDBLOCK || err == EINTR)) {
    return;
  }
  if (got <= 0) {
    s->disableRead();
    errno = err;
    s->on_event_(s->arg_, static_cast<short>(BEV_EVENT_READING |
                                             (got == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR)));
    return;  // the callback may have destroyed the socket
  }
  if (s->read_high_ > 0 && evbuffer_get_length(in) >= s->read_high_) {
    s->updateRead();
  }
  s->on_read_(s->arg_);  // last: it may destroy the socket
}

void Socket::onWritable(evutil_socket_t fd, short what, void* arg) {
  auto* s = static_cast<Socket*>(arg);
  if ((what & EV_TIMEOUT) != 0) {
    s->disableWrite();
    s->on_event_(s->arg_, BEV_EVENT_WRITING | BEV_EVENT_TIMEOUT);
    return;
  }
  if (s->ssl_ != nullptr) {
    s->tlsWritable();
    return;
  }
  if (s->outputLength() > 0) {
    int r = evbuffer_write(s->out_, fd);
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      s->disableWrite();
      s->on_event_(s->arg_, BEV_EVENT_WRITING | BEV_EVENT_ERROR);
      return;
    }
    // (A persistent event's timeout starts over whenever it fires: progress resets it.)
    if (r == 0) {
      s->disableWrite();
      s->on_event_(s->arg_, BEV_EVENT_WRITING | BEV_EVENT_EOF);
      return;
    }
  }
  if (s->outputLength() == 0) {
    s->disableWrite();
  }
  if (s->outputLength() <= s->write_low_) {
    s->on_write_(s->arg_);  // last: it may destroy the socket
  }
}

}  // namespace gw::event
