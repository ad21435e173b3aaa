#pragma once
// One client connection speaking HTTP/1.1: its socket (event::Socket, no bufferevent), its
// one timer (idle, head, body, close), parsing and serialising, pipelining (strictly one
// request at a time, in order; pipelined bytes wait in the input, bounded), Expect, keep-alive
// and lingering close, and the answers it gives itself (400/408/414/431/501 before a request
// exists). The handler of the request in flight comes from the worker's StreamFactory (a
// proxy::Exchange): the connection tells it what happens through StreamCallbacks, and it
// answers through Stream.
//
// TLS (a `tls:` port): the socket runs the handshake and moves plaintext; the connection
// counts handshakes, answers plain HTTP on the TLS port with a 400 and a lingering close,
// bounds the handshake by the header timer (a new connection's first timer), and keeps the
// identity of a verified client certificate, which every request on it carries to the
// identity stage (RequestContext::peer_subject).
//
// Ownership: a connection owns itself (made by the worker on accept). closeNow() closes it
// and leaves the object to the worker's reaper, which deletes it after the loop turn. It owns
// the handler of the request in flight, from the worker's factory per request.

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "gateway/downstream/context.h"
#include "gateway/downstream/stream.h"
#include "gateway/event/flush_queue.h"
#include "gateway/event/owners.h"
#include "gateway/event/socket.h"
#include "gateway/http/chunked.h"
#include "gateway/tls/server_context.h"

namespace gw::downstream {

class Http1Connection final : public Stream, public event::Flushable {
 public:
  // Takes ownership of fd. `peer` is the client's address text (no port); `ip` the same
  // address, whose slot in Shared::client_counts the caller took (given back on close).
  // `tls` (null: plain HTTP) is the context the connection's TLS session is made from; the
  // session keeps its own reference, so a reload does not touch it.
  // `listener`: the index of the listener it was accepted on (Settings::listeners).
  static void start(ConnectionContext& w, evutil_socket_t fd, std::string peer,
                    const core::IpAddress& ip, const tls::ServerContext* tls = nullptr,
                    uint32_t listener = 0);

  // Closes the connection when it waits between requests (drain). True when closed.
  bool closeIfIdle();
  // Closes the connection (and any exchange on it) now; the object is deleted after the
  // current loop turn (reapClosed), so code still on the stack may touch it.
  void closeNow();
  // Deletes the connections closed since the last call (the worker's reaper event, and the
  // worker's shutdown).
  static void reapClosed(ConnectionContext& w);

  // downstream::Stream
  void encodeHeaders(const ResponseHeaders& h) override;
  void encodeData(evbuffer* src, size_t n) override;
  void encodeEnd() override;
  void encodeLocalReply(const mcp::LocalReply& r) override;
  void resetStream() override;
  size_t bufferedBytes() const noexcept override { return down_.outputLength(); }
  void readBody(BodyRead how) override;
  bool skipBody(std::string* id_copy) override;
  void readDisable(bool disable) override;
  uint64_t bytesReceived() const noexcept override { return req_in_; }
  uint64_t bytesSent() const noexcept override { return req_out_; }

  // event::Flushable (the worker's flush queue): after the turn's upstream-bound output, what
  // the write callbacks would have done, then a pipelined request.
  void afterFlush() override { onResume(); }

 private:
  enum class State : uint8_t {
    kIdle,      // between requests (keepalive timeout)
    kHead,      // reading a request head (header timeout)
    kBody,      // reading a buffered request body (body timeout)
    kExchange,  // the exchange runs (a streamed body may still be read: body timeout)
    kClosing,   // flushing the last bytes, then close (or linger)
    kLinger,    // lingering close: write side shut, input read and dropped, bounded in time
  };
  using Outcome = core::Outcome;
  // Pipelined bytes kept while an exchange is in flight.
  static constexpr size_t kPipelineHigh = 64 * 1024;

  Http1Connection(ConnectionContext& w, evutil_socket_t fd, std::string peer,
                  const core::IpAddress& ip);
  ~Http1Connection();

  static void onRead(void* arg);
  static void onWrite(void* arg);
  static void onEvent(void* arg, short what);
  void onTimer();
  void onTlsConnected();
  void onTlsFailed();
  void process();
  void parseHead();
  void readBodyBytes();
  bool moveChunkedBody(evbuffer* in);
  void bodyDone();
  void pumpBody();
  void sendContinue();
  // A plain-text answer the connection gives itself; the connection closes after it.
  void sendPlainError(int status, const char* reason_phrase, const char* text, Outcome why);
  void finishRequest(bool keep_alive);
  void closeAfterFlush();
  void lingerOrClose();
  void setSendTimeout();
  void armTimer(std::chrono::milliseconds d);
  void onResume();
  void scheduleFlush();
  bool takeStream();
  void endStream(bool answered);

  ConnectionContext& w_;
  event::Socket down_;
  event::EventPtr timer_;  // the one per-connection timer
  std::string peer_;
  std::string tls_subject_;             // a verified client certificate's identity ("" without one)
  core::IpAddress peer_ip_;             // its slot in Shared::client_counts is given back on close
  uint32_t listener_ = 0;               // the listener it was accepted on
  const tls::SniTable* sni_ = nullptr;  // its context's SNI certificates (onTlsConnected)
  size_t sni_cert_ = 0;                 // the one the handshake served
  // The handler of the request in flight (from its first byte to its end), from
  // w_.streams; null while the connection waits between requests.
  StreamCallbacks* x_ = nullptr;
  // What the codec keeps of the request's head (the head itself is the handler's).
  http::Version req_version_ = http::Version::kHttp11;
  http::BodyFraming req_framing_ = http::BodyFraming::kNone;
  bool req_head_method_ = false;  // a HEAD request: no body in the answer
  bool req_expect_continue_ = false;
  uint64_t req_in_ = 0;   // this request's bytes read (bytesReceived)
  uint64_t req_out_ = 0;  // and written (bytesSent)
  std::shared_ptr<const filters::Snapshot> snap_;
  const settings::Settings* s_ = nullptr;
  std::chrono::milliseconds send_timeout_{-1};  // as set on down_ (send_timeout)
  uint64_t body_remaining_ = 0;                 // Content-Length body bytes still to read
  http::ChunkedDecoder req_chunked_;
  State state_ = State::kIdle;
  bool close_after_ = false;
  bool linger_ = false;     // the close after this answer is a lingering close (error answers)
  bool body_done_ = true;   // the request's body was read whole, streamed whole, or skipped
  bool streaming_ = false;  // a streamed body is being read (BodyRead::kStream)
  bool sent_continue_ = false;
  bool chunked_out_ = false;  // the answer's body goes to the client in chunks
  bool answering_ = false;    // the answer's head went out (encodeHeaders)
  // The worker's flush (onResume) parses a pipelined request.
  bool parse_pending_ = false;
  bool closed_ = false;  // closeNow ran: the reaper deletes the object after this loop turn
};

}  // namespace gw::downstream
