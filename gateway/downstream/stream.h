#pragma once
// downstream/: the client side of the gateway — connections, their sockets and timers, the
// HTTP/1.1 codec (parsing, serialising, pipelining, Expect, keep-alive, lingering close, the
// 400/408/414/431/501 answers). A request in flight (proxy::Exchange) sees its client only
// through the interfaces below, so an HTTP/2 connection can carry the same exchange; this
// header is all a codec needs (downstream/ does not link proxy/).
//
// StreamFactory: where a connection gets the handler of a new request (the worker wires
//   proxy's exchange pool in; server/worker.h).
// Stream: what the exchange calls on the client side of its request.
// StreamCallbacks: what the client side tells the exchange: the head, the body, the
//   answers the connection decided on, backpressure, the client going away.
// The exchange never sees HTTP/1 framing: chunking, Content-Length, Connection and
// keep-alive, 100 Continue and the request body's framing are the connection's.

#include <event2/buffer.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "gateway/core/outcome.h"
#include "gateway/http/message.h"
#include "gateway/http/serialize.h"
#include "gateway/mcp/reply.h"

namespace gw::tls {
class SniTable;
}

namespace gw::filters {
struct Snapshot;
}

namespace gw::downstream {

// A response head as the exchange gives it: name/value pairs without framing fields.
struct ResponseHeaders {
  int status = 0;
  std::string_view reason;
  const std::vector<http::Field>* fields = nullptr;
  // How the upstream framed the body (the connection frames it for its client).
  http::BodyFraming framing = http::BodyFraming::kNone;
  uint64_t content_length = 0;  // kContentLength
  // kNone on a HEAD answer or a 304: the length the body would have had (the upstream's).
  std::string_view length_field;
  std::span<const http::OwnedField> extra;  // RateLimit fields the gateway adds
};

// How the exchange wants the request body.
enum class BodyRead : uint8_t {
  kBuffer,  // the whole body is wanted before the exchange goes on (413 past its cap)
  kStream,  // as it arrives, with backpressure (readDisable)
};

class Stream {
 public:
  virtual void encodeHeaders(const ResponseHeaders& h) = 0;
  // Moves `n` body bytes from the front of `src` to the client.
  virtual void encodeData(evbuffer* src, size_t n) = 0;
  // The answer is complete: the exchange is over.
  virtual void encodeEnd() = 0;
  // The gateway's own answer (ctx.reply rendered); the exchange is over.
  virtual void encodeLocalReply(const mcp::LocalReply& r) = 0;
  // The answer is cut: what was queued still goes out, then the connection closes. The
  // exchange is over (it logged itself).
  virtual void resetStream() = 0;
  // Bytes queued for the client and not yet written (the exchange's backpressure).
  virtual size_t bufferedBytes() const noexcept = 0;
  // Start delivering the request body (sends 100 Continue when the client waits for it).
  virtual void readBody(BodyRead how) = 0;
  // A reply before the body: takes the body off the input when it is all there (false when
  // not: the connection will close after the reply). `id_copy` receives the bytes when not
  // null (the reply echoes the request id).
  virtual bool skipBody(std::string* id_copy) = 0;
  // Stop / resume reading the client (backpressure of a streamed request body).
  virtual void readDisable(bool disable) = 0;
  // Wire bytes of this request so far: read from the client (head, body and its framing)
  // and written to it (head, body and its framing). The access log and metrics read them.
  virtual uint64_t bytesReceived() const noexcept = 0;
  virtual uint64_t bytesSent() const noexcept = 0;
  // High / low marks for bytes queued to either side.
  static constexpr size_t kHighWatermark = 256 * 1024;
  static constexpr size_t kLowWatermark = 64 * 1024;

 protected:
  ~Stream() = default;
};

// An answer the client side decided on for a request it parsed (a head refused once whole,
// an Expect it cannot meet, a body that does not arrive in time): the exchange renders it
// as a JSON-RPC error on the endpoint.
struct EdgeReply {
  int status = 0;
  int code = 0;  // JSON-RPC error code
  const char* message = "";
  core::Outcome outcome = core::Outcome::kNone;
  int retry_after_s = 0;  // Retry-After seconds (0: none)
};

class StreamCallbacks {
 public:
  // The request head arrived whole. Its views are valid during the call only (the exchange
  // keeps its own copy). `refused` (null: none): the client side refuses the request it
  // parsed, and the exchange answers with it instead of running the request.
  virtual void onHeaders(const http::RequestHead& head, const EdgeReply* refused) = 0;
  // Request body bytes at the front of `src` (`n` of them; `end`: the body is whole, n may
  // be 0). BodyRead::kBuffer: the exchange keeps them (it may answer 413 or 503 instead);
  // kStream: they go on as they arrive.
  virtual void onBodyData(evbuffer* src, size_t n, bool end) = 0;
  // An answer the client side decided on mid-request (408: the body is late).
  virtual void onEdgeReply(const EdgeReply& r) = 0;
  // The connection answered this request itself in plain text (`status`: a head that did not
  // parse or arrive, or a malformed chunked body) and is closing; the exchange records it
  // (metrics; the access log only for a request whose head arrived).
  virtual void onPlainAnswer(int status, core::Outcome why) = 0;
  // The client's output fell below the low mark.
  virtual void onBelowLowWatermark() = 0;
  // The client went away (or stopped reading) before the answer was whole: the exchange
  // ends (and logs itself) with this outcome; nothing more can be sent.
  virtual void onStreamReset(core::Outcome why) = 0;

 protected:
  ~StreamCallbacks() = default;
};

// Who sent a request: views owned by the connection (they outlive the request).
struct StreamPeer {
  std::string_view address;  // the peer address text
  std::string_view subject;  // a verified TLS client certificate's identity, or ""
  uint32_t listener = 0;     // the index of the listener it came in on (Settings::listeners)
  // TLS with SNI certificates (tls.certificates): the listener's table, and which of them
  // the handshake served (0: the default). Null otherwise.
  const tls::SniTable* sni = nullptr;
  size_t sni_cert = 0;
};

class StreamFactory {
 public:
  // A request's first byte arrived on `stream` (its start time); it runs on `snapshot`.
  // Null only when memory is short (the connection closes).
  virtual StreamCallbacks* newStream(Stream& stream,
                                     std::shared_ptr<const filters::Snapshot> snapshot,
                                     StreamPeer peer) = 0;
  // The request is over: `answered` — its answer was encoded (encodeEnd, encodeLocalReply,
  // resetStream) or the connection answered it (onPlainAnswer), and it is recorded now;
  // false — the connection is torn down under it, and its pending work is cancelled. The
  // callbacks are not used again.
  virtual void endStream(StreamCallbacks& s, bool answered) = 0;

 protected:
  ~StreamFactory() = default;
};

}  // namespace gw::downstream
