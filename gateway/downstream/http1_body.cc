// The request body on an HTTP/1.1 connection: 100 Continue, Content-Length and chunked
// framing, the body read whole for the exchange or streamed to it, a body skipped for an
// answer given before it (see http1_connection.h).

#include <event2/buffer.h>

#include <algorithm>

#include "gateway/downstream/http1_connection.h"
#include "gateway/mcp/jsonrpc.h"

namespace gw::downstream {

void Http1Connection::sendContinue() {
  if (req_expect_continue_ && req_version_ == http::Version::kHttp11 && !sent_continue_ &&
      down_.inputLength() == 0) {
    event::addString(down_.output(), "HTTP/1.1 100 Continue\r\n\r\n");
    sent_continue_ = true;
    scheduleFlush();
  }
}

void Http1Connection::readBody(BodyRead how) {
  down_.setReadHigh(0);
  armTimer(s_->limits.body_timeout);
  if (how == BodyRead::kBuffer) {
    state_ = State::kBody;
    req_chunked_.reset();
    sendContinue();
    readBodyBytes();
    return;
  }
  streaming_ = true;
  sendContinue();
  pumpBody();
}

// The whole body is already here: take it off the input (the connection can go on). False
// when it is not all here (or chunked): the connection closes after the answer.
bool Http1Connection::skipBody(std::string* id_copy) {
  evbuffer* in = down_.input();
  if (req_framing_ != http::BodyFraming::kContentLength ||
      evbuffer_get_length(in) < body_remaining_) {
    return false;
  }
  const size_t len = body_remaining_;
  if (id_copy != nullptr) {
    id_copy->resize(len);
    evbuffer_copyout(in, id_copy->data(), len);
  }
  evbuffer_drain(in, len);
  req_in_ += len;
  body_remaining_ = 0;
  body_done_ = true;
  return true;
}

// A chunked body: its data goes to the handler piece by piece (which may answer 413 or 503
// instead, ending the request), its framing is dropped. False: the request was answered
// here or by the handler (the connection is closing).
bool Http1Connection::moveChunkedBody(evbuffer* in) {
  while (evbuffer_get_length(in) > 0) {
    size_t avail = evbuffer_get_length(in);
    size_t want = std::min<size_t>(avail, http::ChunkedDecoder::kMaxLineBytes + 2);
    // Look at the first contiguous segment; pull up more only when a framing line spans
    // segments (kNeedMore on a short view).
    evbuffer_iovec vec;
    if (evbuffer_peek(in, -1, nullptr, &vec, 1) < 1) {
      return true;
    }
    std::string_view view(static_cast<const char*>(vec.iov_base), vec.iov_len);
    http::ChunkedDecoder::Step step = req_chunked_.next(view);
    if (step.kind == http::ChunkedDecoder::Kind::kNeedMore && vec.iov_len < want) {
      const char* p =
          reinterpret_cast<const char*>(evbuffer_pullup(in, static_cast<ev_ssize_t>(want)));
      step = req_chunked_.next(std::string_view(p, want));
    }
    switch (step.kind) {
      case http::ChunkedDecoder::Kind::kNeedMore:
        if (avail > http::ChunkedDecoder::kMaxTrailerBytes + http::ChunkedDecoder::kMaxLineBytes) {
          sendPlainError(400, "Bad Request", "malformed chunked body\n", Outcome::kBadChunk);
          return false;
        }
        return true;
      case http::ChunkedDecoder::Kind::kError:
        sendPlainError(400, "Bad Request", "malformed chunked body\n", Outcome::kBadChunk);
        return false;
      case http::ChunkedDecoder::Kind::kData:
        req_in_ += step.length;
        x_->onBodyData(in, step.length, false);
        if (state_ != State::kBody) {
          return false;  // the handler answered (413, 503): the connection closes after it
        }
        break;
      case http::ChunkedDecoder::Kind::kFraming:
        evbuffer_drain(in, step.length);
        req_in_ += step.length;
        break;
      case http::ChunkedDecoder::Kind::kDone:
        evbuffer_drain(in, step.length);
        req_in_ += step.length;
        return true;
    }
  }
  return true;
}

// A buffered body: what arrived goes to the handler, which keeps it; when it is whole, the
// handler goes on.
void Http1Connection::readBodyBytes() {
  evbuffer* in = down_.input();
  if (req_framing_ == http::BodyFraming::kChunked) {
    if (!moveChunkedBody(in)) {
      return;  // a reply was sent (connection closing)
    }
    if (!req_chunked_.done()) {
      return;
    }
    bodyDone();
    state_ = State::kExchange;
    x_->onBodyData(in, 0, true);
    return;
  }
  pumpBody();
}

void Http1Connection::bodyDone() {
  body_done_ = true;
  streaming_ = false;
  armTimer(std::chrono::milliseconds(0));
  down_.setReadHigh(kPipelineHigh);
}

// A Content-Length body, buffered or streamed: hands what arrived to the handler, exactly
// body_remaining_ bytes in all.
void Http1Connection::pumpBody() {
  evbuffer* in = down_.input();
  const size_t n = std::min<uint64_t>(body_remaining_, evbuffer_get_length(in));
  body_remaining_ -= n;
  req_in_ += n;
  const bool end = body_remaining_ == 0;
  if (end) {
    bodyDone();
    state_ = State::kExchange;  // (a buffered body read in kBody)
  }
  x_->onBodyData(in, n, end);
}

void Http1Connection::readDisable(bool disable) {
  if (disable) {
    down_.disableRead();
    return;
  }
  down_.enableRead();
  if (streaming_) {
    pumpBody();  // what is already in the input
  }
}

}  // namespace gw::downstream
