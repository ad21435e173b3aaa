#pragma once
// A client socket without a bufferevent: two events embedded in the owner (read, and write
// with the send timeout) and two evbuffers made on first use and released when empty
// (releaseIdle), so a keep-alive connection waiting for its next request holds no buffer
// (issue #14: memory per idle connection; a bufferevent alone costs ~1 KiB). It keeps the
// subset of bufferevent behaviour the proxy's client side relies on:
//  - reads of up to 16 KiB per readv straight into the input, stopped while the input holds
//    the read high mark and resumed when the mark is raised or cleared (unlike a bufferevent,
//    draining the input alone does not resume them);
//  - the event callback with BEV_EVENT_READING|BEV_EVENT_EOF / |BEV_EVENT_ERROR (reads
//    stop), BEV_EVENT_WRITING|BEV_EVENT_ERROR / |BEV_EVENT_TIMEOUT (writes stop);
//  - the write callback after a write that left at most the write low mark queued; the write
//    event is on only while output waits (enableWrite), and goes off when the output is empty.
// Every callback is the last thing the socket does: it may destroy the socket.

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace gw::event {

enum class Sent : uint8_t { kNothing, kDrained, kPartial };

// One readv from `fd` straight into `in`: `want` bytes of room are reserved; `bounded` reads
// no more than that, otherwise all the room the buffer gave. Returns what readv returned
// (-1 with err = ENOMEM when no room could be had); `err` is its errno.
ssize_t readInto(evbuffer* in, evutil_socket_t fd, ev_ssize_t want, bool bounded,
                 int& err) noexcept;

class Socket {
 public:
  using ReadFn = void (*)(void* arg);
  using WriteFn = void (*)(void* arg);
  using EventFn = void (*)(void* arg, short what);

  Socket() = default;
  Socket(const Socket&) = delete;
  Socket& operator=(const Socket&) = delete;
  ~Socket();

  // Takes ownership of fd (closed by the destructor, or here on failure). Reading and writing
  // start disabled.
  bool open(event_base* base, evutil_socket_t fd, ReadFn on_read, WriteFn on_write,
            EventFn on_event, void* arg) noexcept;
  bool isOpen() const noexcept { return fd_ >= 0; }
  // Closes the socket now: events off, buffers freed, fd closed (the destructor does the same).
  void close() noexcept;
  evutil_socket_t fd() const noexcept { return fd_; }

  // The buffers, made on first use (null only when memory is short: callers treat a null
  // like a failed write, see ok()).
  evbuffer* input() noexcept;
  evbuffer* output() noexcept;
  size_t inputLength() const noexcept { return in_ ? evbuffer_get_length(in_) : 0; }
  size_t outputLength() const noexcept { return out_ ? evbuffer_get_length(out_) : 0; }
  // Frees the buffers that are empty (a connection between requests).
  void releaseIdle() noexcept;

  void enableRead() noexcept;
  void disableRead() noexcept;
  void enableWrite() noexcept;
  void disableWrite() noexcept;
  bool writing() const noexcept { return writing_; }
  // 0: no mark. Raising or clearing the mark resumes reads it had stopped.
  void setReadHigh(size_t high) noexcept;
  void setWriteLow(size_t low) noexcept { write_low_ = low; }
  // 0: none. Applies while the write event is on (bytes held back by the socket).
  void setWriteTimeout(std::chrono::milliseconds t) noexcept;

  // Writes the output straight to the socket from this stack; what the socket does not take
  // is left to the write event (enabled here), which finishes it or reports the error.
  Sent sendNow() noexcept;

 private:
  static void onReadable(evutil_socket_t fd, short what, void* arg);
  static void onWritable(evutil_socket_t fd, short what, void* arg);
  void updateRead() noexcept;
  void addWrite() noexcept;

  ::event read_ev_{};
  ::event write_ev_{};
  evbuffer* in_ = nullptr;
  evbuffer* out_ = nullptr;
  ReadFn on_read_ = nullptr;
  WriteFn on_write_ = nullptr;
  EventFn on_event_ = nullptr;
  void* arg_ = nullptr;
  size_t read_high_ = 0;
  size_t write_low_ = 0;
  int32_t write_timeout_ms_ = 0;
  evutil_socket_t fd_ = -1;
  bool read_enabled_ = false;
  bool read_pending_ = false;    // read_ev_ is added
  bool writing_ = false;         // write_ev_ is added
  bool last_read_full_ = false;  // the last read took all it asked for (more is coming)
};

}  // namespace gw::event
