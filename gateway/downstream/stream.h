#pragma once
// downstream/: the client side of the gateway — connections, their sockets and timers, the
// HTTP/1.1 codec (parsing, serialising, pipelining, Expect, keep-alive, lingering close, the
// 400/408/414/431/501 answers). A request in flight (proxy::Exchange) sees its client only
// through the two interfaces below, so an HTTP/2 connection can carry the same exchange.
//
// Stream: what the exchange calls on the client side of its request.
// StreamCallbacks: what the client side tells the exchange.
// The exchange never sees HTTP/1 framing: chunking, Content-Length, Connection and
// keep-alive, 100 Continue and the request body's framing are the connection's.

#include <event2/buffer.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gateway/core/outcome.h"
#include "gateway/http/message.h"
#include "gateway/http/serialize.h"
#include "gateway/mcp/reply.h"

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
  kBuffer,  // whole, into the exchange's body buffer, then StreamCallbacks::onBodyComplete
  kStream,  // as it arrives, through StreamCallbacks::onBodyData
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
  // Output was queued for the upstream: the connection's flush writes it this loop turn.
  virtual void scheduleFlush() = 0;
  // High / low marks for bytes queued to either side.
  static constexpr size_t kHighWatermark = 256 * 1024;
  static constexpr size_t kLowWatermark = 64 * 1024;

 protected:
  ~Stream() = default;
};

class StreamCallbacks {
 public:
  // The buffered body is whole (BodyRead::kBuffer).
  virtual void onBodyComplete() = 0;
  // Streamed body bytes at the front of `src` (`n` of them, the rest of the body when `end`).
  virtual void onBodyData(evbuffer* src, size_t n, bool end) = 0;
  // The client's output fell below the low mark.
  virtual void onBelowLowWatermark() = 0;
  // The client went away (or stopped reading) before the answer was whole: the exchange
  // ends (and logs itself) with this outcome; nothing more can be sent.
  virtual void onStreamReset(core::Outcome why) = 0;

 protected:
  ~StreamCallbacks() = default;
};

}  // namespace gw::downstream
