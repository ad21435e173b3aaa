// event::Socket's TLS half (see socket.h): the server-side handshake, SSL_read into the input
// and SSL_write from the output on the socket's own events. OpenSSL does the socket I/O
// itself (a socket BIO on the fd, read-ahead on); what it wants next (WANT_READ, WANT_WRITE)
// decides which event is armed. The plain path reaches here only through one `ssl_` test per
// event (onReadable, onWritable, sendNow, updateRead, close).

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "gateway/event/socket.h"

namespace gw::event {

namespace {

// One TLS record's worth of plaintext per read or write.
constexpr size_t kTlsChunk = 16 * 1024;
constexpr int kMaxWritesPerCall = 16;

TlsFailure classify(int ssl_error, unsigned long err) noexcept {
  if (ssl_error == SSL_ERROR_SYSCALL || ssl_error == SSL_ERROR_ZERO_RETURN) {
    return TlsFailure::kClosed;
  }
  if (ERR_GET_LIB(err) != ERR_LIB_SSL) {
    return TlsFailure::kProtocol;
  }
  switch (ERR_GET_REASON(err)) {
    case SSL_R_UNSUPPORTED_PROTOCOL:
    case SSL_R_WRONG_VERSION_NUMBER:
    case SSL_R_VERSION_TOO_LOW:
    case SSL_R_TLSV1_ALERT_PROTOCOL_VERSION:
      return TlsFailure::kVersion;
    case SSL_R_NO_SHARED_CIPHER:
    case SSL_R_NO_SHARED_GROUPS:
    case SSL_R_NO_SUITABLE_KEY_SHARE:
      return TlsFailure::kCipher;
    case SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE:
      return TlsFailure::kNoClientCert;
    case SSL_R_CERTIFICATE_VERIFY_FAILED:
      return TlsFailure::kBadClientCert;
    default:
      return TlsFailure::kProtocol;
  }
}

}  // namespace

const char* tlsFailureName(TlsFailure f) noexcept {
  switch (f) {
    case TlsFailure::kNone:
      return "none";
    case TlsFailure::kPlainHttp:
      return "plain_http";
    case TlsFailure::kNotTls:
      return "not_tls";
    case TlsFailure::kClosed:
      return "closed";
    case TlsFailure::kTimeout:
      return "timeout";
    case TlsFailure::kVersion:
      return "version";
    case TlsFailure::kCipher:
      return "cipher";
    case TlsFailure::kNoClientCert:
      return "no_client_cert";
    case TlsFailure::kBadClientCert:
      return "bad_client_cert";
    case TlsFailure::kProtocol:
      return "protocol";
  }
  return "protocol";
}

bool Socket::startTls(SSL* ssl) noexcept {
  if (ssl == nullptr || fd_ < 0 || SSL_set_fd(ssl, fd_) != 1) {
    SSL_free(ssl);
    ERR_clear_error();
    return false;
  }
  SSL_set_read_ahead(ssl, 1);
  ssl_ = ssl;
  return true;
}

void Socket::tlsFail(TlsFailure why, short what) noexcept {
  tls_failure_ = why;
  tls_dead_ = true;
  ERR_clear_error();
  disableRead();
  if (!writing_) {
    event_del(&write_ev_);
  }
  on_event_(arg_, static_cast<short>(BEV_EVENT_READING | what));  // last: may destroy
}

void Socket::tlsHandshake() noexcept {
  if (!tls_peeked_) {
    // A TLS connection starts with a handshake record (content type 22). Anything else is
    // answered (plain HTTP) or closed at once, instead of waiting for a record that never
    // comes.
    unsigned char first = 0;
    const ssize_t n = ::recv(fd_, &first, 1, MSG_PEEK);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) {
      return;
    }
    if (n <= 0) {
      tlsFail(TlsFailure::kClosed, n == 0 ? BEV_EVENT_EOF : BEV_EVENT_ERROR);
      return;
    }
    tls_peeked_ = true;
    if (first != 0x16) {
      tlsFail(first >= 'A' && first <= 'Z' ? TlsFailure::kPlainHttp : TlsFailure::kNotTls,
              BEV_EVENT_ERROR);
      return;
    }
  }
  ERR_clear_error();
  const int r = SSL_do_handshake(ssl_);
  if (r == 1) {
    tls_open_ = true;
    if (!writing_) {
      event_del(&write_ev_);
    }
    if (read_pending_) {
      event_active(&read_ev_, EV_READ, 1);  // a request sent right behind the Finished
    }
    on_event_(arg_, BEV_EVENT_CONNECTED);  // last: may destroy
    return;
  }
  const int e = SSL_get_error(ssl_, r);
  if (e == SSL_ERROR_WANT_READ) {
    event_del(&write_ev_);  // (writing_ is never set before the handshake is done)
    return;
  }
  if (e == SSL_ERROR_WANT_WRITE) {
    event_add(&write_ev_, nullptr);  // the header timer bounds the handshake
    return;
  }
  tls_error_ = ERR_peek_error();
  tlsFail(classify(e, tls_error_), e == SSL_ERROR_ZERO_RETURN ? BEV_EVENT_EOF : BEV_EVENT_ERROR);
}

void Socket::tlsReadable() noexcept {
  if (!tls_open_) {
    tlsHandshake();
    return;
  }
  if (tls_deferred_ != 0) {
    const short what = tls_deferred_;
    tls_deferred_ = 0;
    disableRead();
    on_event_(arg_, static_cast<short>(BEV_EVENT_READING | what));  // last: may destroy
    return;
  }
  evbuffer* in = input();
  if (in == nullptr) {
    disableRead();
    errno = ENOMEM;
    on_event_(arg_, BEV_EVENT_READING | BEV_EVENT_ERROR);
    return;
  }
  const size_t have = evbuffer_get_length(in);
  size_t want = kTlsChunk;
  if (read_high_ > 0) {
    if (have >= read_high_) {
      updateRead();  // full: reads wait for the reader to drain it
      return;
    }
    want = std::min(want, read_high_ - have);
  }
  size_t total = 0;
  short what = 0;
  while (total < want) {
    evbuffer_iovec v;
    if (evbuffer_reserve_space(in, static_cast<ev_ssize_t>(want - total), &v, 1) < 1) {
      errno = ENOMEM;
      what = BEV_EVENT_ERROR;
      break;
    }
    size_t got = 0;
    ERR_clear_error();
    const int r = SSL_read_ex(ssl_, v.iov_base, std::min(v.iov_len, want - total), &got);
    if (r == 1) {
      v.iov_len = got;
      evbuffer_commit_space(in, &v, 1);
      total += got;
      continue;
    }
    evbuffer_commit_space(in, &v, 0);
    const int e = SSL_get_error(ssl_, r);
    if (e == SSL_ERROR_WANT_READ) {
      break;
    }
    if (e == SSL_ERROR_WANT_WRITE) {
      // (A post-handshake message to answer while the socket is full.) Reads go on once
      // the socket takes bytes again (tlsWritable).
      tls_read_wants_write_ = true;
      if (!writing_) {
        event_add(&write_ev_, nullptr);
      }
      break;
    }
    // ZERO_RETURN: close_notify, or (SSL_OP_IGNORE_UNEXPECTED_EOF) a plain EOF.
    what = e == SSL_ERROR_ZERO_RETURN ? BEV_EVENT_EOF : BEV_EVENT_ERROR;
    tls_dead_ = tls_dead_ || e != SSL_ERROR_ZERO_RETURN;
    tls_error_ = ERR_peek_error();
    ERR_clear_error();
    break;
  }
  last_read_full_ = total >= want;
  if (total == 0) {
    if (what != 0) {
      disableRead();
      on_event_(arg_, static_cast<short>(BEV_EVENT_READING | what));  // last: may destroy
    }
    return;
  }
  if (what != 0) {
    tls_deferred_ = what;  // the bytes before it first
  }
  if (read_high_ > 0 && evbuffer_get_length(in) >= read_high_) {
    updateRead();
  } else {
    tlsKick();
  }
  on_read_(arg_);  // last: it may destroy the socket
}

// Bytes OpenSSL read ahead (or a deferred EOF) do not make the fd readable again.
void Socket::tlsKick() noexcept {
  if (read_pending_ && tls_open_ && (tls_deferred_ != 0 || SSL_has_pending(ssl_) == 1)) {
    event_active(&read_ev_, EV_READ, 1);
  }
}

ssize_t Socket::tlsWrite() noexcept {
  const size_t n = std::min(evbuffer_get_length(out_), kTlsChunk);
  // One record from contiguous bytes (a copy only when the front chain is shorter). After
  // WANT_WRITE the same bytes are offered again: they are still at the front.
  unsigned char* p = evbuffer_pullup(out_, static_cast<ev_ssize_t>(n));
  if (p == nullptr) {
    errno = ENOMEM;
    return -1;
  }
  ERR_clear_error();
  size_t wrote = 0;
  const int r = SSL_write_ex(ssl_, p, n, &wrote);
  if (r == 1) {
    evbuffer_drain(out_, wrote);
    return static_cast<ssize_t>(wrote);
  }
  const int saved = errno;
  const int e = SSL_get_error(ssl_, r);
  if (e == SSL_ERROR_WANT_WRITE) {
    errno = EAGAIN;
    return -1;
  }
  // WANT_READ cannot happen on a server with renegotiation off once the handshake is done
  // (client post-handshake messages are handled by SSL_read); treated as an error.
  tls_dead_ = true;
  tls_error_ = ERR_peek_error();
  ERR_clear_error();
  errno = e == SSL_ERROR_SYSCALL && saved != 0 ? saved : EPIPE;
  return -1;
}

Sent Socket::tlsSendNow() noexcept {
  for (int i = 0; i < kMaxWritesPerCall && evbuffer_get_length(out_) > 0; ++i) {
    if (tlsWrite() <= 0) {
      break;
    }
  }
  if (evbuffer_get_length(out_) == 0) {
    return Sent::kDrained;
  }
  enableWrite();  // the rest, or the error, is the write event's
  return Sent::kPartial;
}

void Socket::tlsWritable() noexcept {
  if (!tls_open_) {
    tlsHandshake();
    return;
  }
  if (tls_read_wants_write_) {
    tls_read_wants_write_ = false;
    if (read_pending_) {
      event_active(&read_ev_, EV_READ, 1);
    }
    if (!writing_) {
      event_del(&write_ev_);
      return;
    }
  }
  if (outputLength() > 0) {
    const ssize_t r = tlsWrite();
    if (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      disableWrite();
      on_event_(arg_, BEV_EVENT_WRITING | BEV_EVENT_ERROR);
      return;
    }
  }
  if (outputLength() == 0) {
    disableWrite();
    event_del(&write_ev_);  // (also when only the handshake or a read had it on)
  }
  if (outputLength() <= write_low_) {
    on_write_(arg_);  // last: it may destroy the socket
  }
}

void Socket::dropTls() noexcept {
  if (ssl_ == nullptr) {
    return;
  }
  SSL_free(ssl_);
  ssl_ = nullptr;
  tls_open_ = false;
  tls_read_wants_write_ = false;
  tls_deferred_ = 0;
  if (!writing_) {
    event_del(&write_ev_);
  }
  ERR_clear_error();
}

void Socket::shutdownWrite() noexcept {
  if (fd_ < 0) {
    return;
  }
  if (ssl_ != nullptr && tls_open_ && !tls_dead_ && !tls_shut_) {
    tls_shut_ = true;
    ERR_clear_error();
    SSL_shutdown(ssl_);  // close_notify; the peer's is not waited for
    ERR_clear_error();
  }
  ::shutdown(fd_, SHUT_WR);
}

void Socket::tlsClose() noexcept {
  if (tls_open_ && !tls_dead_ && !tls_shut_) {
    // close_notify, best effort (non-blocking; a close-delimited answer needs it to be
    // told apart from a cut).
    ERR_clear_error();
    SSL_shutdown(ssl_);
  }
  SSL_free(ssl_);
  ssl_ = nullptr;
  ERR_clear_error();
  tls_open_ = tls_peeked_ = tls_shut_ = tls_dead_ = tls_read_wants_write_ = false;
  tls_deferred_ = 0;
}

}  // namespace gw::event
