// Answers on an HTTP/1.1 connection: the exchange's response head serialised from its
// name/value pairs with this connection's framing (Content-Length, chunked, or close) and
// keep-alive, body bytes chunked when the client gets chunks, the gateway's own answers
// (see http1_connection.h).

#include <event2/buffer.h>

#include <cstdio>
#include <cstring>

#include "gateway/downstream/http1_connection.h"
#include "gateway/http/chunked.h"

namespace gw::downstream {

void Http1Connection::encodeLocalReply(const mcp::LocalReply& r) {
  std::string body = mcp::renderReplyBody(r);
  if (!body_done_) {
    close_after_ =
        true;  // the body was not (all) read: its bytes cannot be told from a next request
  }
  if (r.status >= 400) {
    linger_ = true;  // if this answer ends the connection, let the client read it
  }
  if (w_.shared->draining.load(std::memory_order_relaxed)) {
    close_after_ = true;  // the answer says so: no keep-alive while draining
  }
  char head[256];
  int n = std::snprintf(head, sizeof(head),
                        "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s", r.status,
                        http::reasonPhrase(r.status),
                        r.json_rpc                  ? "application/json"
                        : r.content_type != nullptr ? r.content_type
                                                    : "text/plain; charset=utf-8",
                        body.size(),
                        close_after_                             ? "Connection: close\r\n"
                        : req_version_ == http::Version::kHttp10 ? "Connection: keep-alive\r\n"
                                                                 : "");
  std::string& fields = w_.scratch;
  fields.clear();
  http::appendFields(fields, r.extra_fields);
  fields += "\r\n";
  evbuffer* out = down_.output();
  evbuffer_add(out, head, static_cast<size_t>(n));
  event::addString(out, fields);
  // An answer to HEAD has no content whatever its Content-Length says (RFC 9110 §9.3.2,
  // RFC 9112 §6.3): body bytes here would be read as the start of the next answer.
  const size_t content = req_head_method_ ? 0 : body.size();
  evbuffer_add(out, body.data(), content);
  req_out_ += static_cast<size_t>(n) + fields.size() + content;
  finishRequest(!close_after_);
}

void Http1Connection::encodeHeaders(const ResponseHeaders& r) {
  std::string& h = w_.scratch;
  h.clear();
  http::appendStatusLine(h, r.status, r.reason);
  http::appendFields(h, *r.fields);
  http::appendFields(h, r.extra);
  chunked_out_ = false;
  switch (r.framing) {
    case http::BodyFraming::kNone:
      if (!r.length_field.empty()) {
        http::appendField(h, "Content-Length", r.length_field);
      } else if (r.status != 204 && r.status != 304 && !req_head_method_) {
        h.append("Content-Length: 0\r\n");
      }
      break;
    case http::BodyFraming::kContentLength:
      http::appendField(h, "Content-Length", r.content_length);
      break;
    case http::BodyFraming::kChunked:
    case http::BodyFraming::kUntilClose:
      if (req_version_ == http::Version::kHttp11) {
        h.append("Transfer-Encoding: chunked\r\n");
        chunked_out_ = true;
      } else {
        close_after_ = true;  // HTTP/1.0 client: the close ends the body
      }
      break;
  }
  if (w_.shared->draining.load(std::memory_order_relaxed)) {
    close_after_ = true;  // no keep-alive while draining: the head says so
  }
  if (close_after_) {
    h.append("Connection: close\r\n");
  } else if (req_version_ == http::Version::kHttp10) {
    h.append("Connection: keep-alive\r\n");
  }
  h.append("\r\n");
  event::addString(down_.output(), h);
  req_out_ += h.size();
  answering_ = true;
  down_.setWriteLow(kLowWatermark);
  scheduleFlush();
}

// Moves n body bytes from `src` to the client, in a chunk when the client gets chunks.
void Http1Connection::encodeData(evbuffer* src, size_t n) {
  evbuffer* out = down_.output();
  if (chunked_out_) {
    char line[24];
    std::string_view sz = http::chunkSizeLine(n, line);
    event::addString(out, sz);
    evbuffer_remove_buffer(src, out, n);
    event::addString(out, "\r\n");
    req_out_ += sz.size() + n + 2;
  } else {
    evbuffer_remove_buffer(src, out, n);
    req_out_ += n;
  }
  scheduleFlush();
}

void Http1Connection::encodeEnd() {
  if (chunked_out_) {
    event::addString(down_.output(), http::kLastChunk);
    req_out_ += http::kLastChunk.size();
  }
  if (!body_done_) {
    close_after_ = true;  // the answer came before the whole body: cannot reuse
  }
  finishRequest(!close_after_);
}

void Http1Connection::resetStream() {
  closeAfterFlush();
}

void Http1Connection::sendPlainError(int status, const char* reason_phrase, const char* text,
                                     Outcome why) {
  close_after_ = true;
  linger_ = true;
  char head[256];
  size_t len = std::strlen(text);
  int n = std::snprintf(head, sizeof(head),
                        "HTTP/1.1 %d %s\r\nContent-Type: text/plain; charset=utf-8\r\n"
                        "Content-Length: %zu\r\nConnection: close\r\n\r\n",
                        status, reason_phrase, len);
  evbuffer* out = down_.output();
  evbuffer_add(out, head, static_cast<size_t>(n));
  evbuffer_add(out, text, len);
  req_out_ += static_cast<size_t>(n) + len;
  x_->onPlainAnswer(status, why);
  finishRequest(false);
}

}  // namespace gw::downstream
