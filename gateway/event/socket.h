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
//
// TLS (server side, socket_tls.cc): after startTls the socket runs the handshake from its
// events, then decrypts into input() and encrypts from output(), so its user sees plaintext
// only; one predictable `ssl_` test per event keeps the plain path as it was.

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/event_struct.h>
#include <openssl/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>

namespace gw::event {

enum class Sent : uint8_t { kNothing, kDrained, kPartial };

// Why a TLS handshake failed (the `reason` label of mcp_gateway_tls_handshake_failures_total).
enum class TlsFailure : uint8_t {
  kNone,
  kPlainHttp,      // the first byte starts a plain HTTP request (an ASCII capital)
  kNotTls,         // the first byte cannot start a TLS handshake record
  kClosed,         // the client closed or reset the connection during the handshake
  kTimeout,        // not done within header_timeout (set by the connection, see markTimeout)
  kVersion,        // no protocol version in common (min_version, or an old client)
  kCipher,         // no cipher suite or group in common
  kNoClientCert,   // client certificates are required and none was sent
  kBadClientCert,  // the client certificate did not verify against client_ca
  kProtocol,       // any other handshake error
};
const char* tlsFailureName(TlsFailure f) noexcept;

// One readv from `fd` straight into `in`: `want` bytes of room are reserved; `bounded` reads
// no more than that, otherwise all the room the buffer gave. Returns what readv returned
// (-1 with err = ENOMEM when no room could be had); `err` is its errno.
ssize_t readInto(evbuffer* in, evutil_socket_t fd, ev_ssize_t want, bool bounded,
                 int& err) noexcept;

// How many of `in`'s first bytes a message-head parse needs to see, at most `limit` + 1 (one
// past the limit, so the parser can tell "too large"): up to and including the first blank
// line (CRLF CRLF) after any empty lines that lead, when the buffer holds one, else everything
// held (a head not whole yet, or one the parser refuses for its line endings). A head is
// copied out, not its body.
size_t headWindow(evbuffer* in, size_t limit) noexcept;

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

  // Serves TLS (server side) on this socket from now on, owning `ssl` (freed by close). Call
  // before enableRead. The handshake runs from the socket's events; when it completes the
  // event callback gets BEV_EVENT_CONNECTED (reads go on by themselves), when it fails
  // BEV_EVENT_READING|BEV_EVENT_ERROR (or |BEV_EVENT_EOF) with tlsFailure() saying why.
  bool startTls(SSL* ssl) noexcept;
  SSL* ssl() const noexcept { return ssl_; }
  bool tlsHandshaking() const noexcept { return ssl_ != nullptr && !tls_open_; }
  TlsFailure tlsFailure() const noexcept { return tls_failure_; }
  // OpenSSL's error code for the failure (0 when there was none): for the log line.
  unsigned long tlsError() const noexcept { return tls_error_; }
  // Ends TLS after a failed handshake: the socket moves plain bytes again (the plain-HTTP
  // answer on a TLS port). tlsFailure() keeps its value.
  void dropTls() noexcept;
  // Shuts the write side: a TLS close_notify first (when a session is up), then SHUT_WR.
  void shutdownWrite() noexcept;

 private:
  static void onReadable(evutil_socket_t fd, short what, void* arg);
  static void onWritable(evutil_socket_t fd, short what, void* arg);
  void updateRead() noexcept;
  void addWrite() noexcept;
  // socket_tls.cc
  void tlsReadable() noexcept;
  void tlsWritable() noexcept;
  void tlsHandshake() noexcept;
  void tlsFail(TlsFailure why, short what) noexcept;
  Sent tlsSendNow() noexcept;
  ssize_t tlsWrite() noexcept;  // as evbuffer_write: bytes written, or -1 with errno
  void tlsKick() noexcept;      // decrypted bytes or an EOF wait in the SSL: read them
  void tlsClose() noexcept;

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
  // TLS (null ssl_: a plain socket).
  SSL* ssl_ = nullptr;
  unsigned long tls_error_ = 0;
  TlsFailure tls_failure_ = TlsFailure::kNone;
  short tls_deferred_ = 0;             // EOF/error met after data: reported on the next read
  bool tls_open_ = false;              // the handshake is done
  bool tls_peeked_ = false;            // the first byte was looked at
  bool tls_dead_ = false;              // a fatal error: no close_notify
  bool tls_shut_ = false;              // close_notify sent
  bool tls_read_wants_write_ = false;  // SSL_read needs the socket writable first
};

}  // namespace gw::event
