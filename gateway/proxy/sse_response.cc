// An SSE answer read until its JSON-RPC response (see sse_response.h).

#include "gateway/proxy/sse_response.h"

#include <algorithm>

#include "gateway/mcp/id_scan.h"

namespace gw::proxy {

void feedFramer(sse::Framer& framer, evbuffer* src, size_t n) noexcept {
  evbuffer_iovec vecs[8];
  size_t seen = 0;
  evbuffer_ptr pos;
  evbuffer_ptr_set(src, &pos, 0, EVBUFFER_PTR_SET);
  while (seen < n) {
    // evbuffer_peek returns how many extents the range needs, which may be more than the 8
    // it filled: the rest are taken on the next turn.
    const int k = std::min(evbuffer_peek(src, static_cast<ev_ssize_t>(n - seen), &pos, vecs, 8), 8);
    if (k <= 0) {
      break;
    }
    for (int i = 0; i < k && seen < n; ++i) {
      const size_t len = std::min(vecs[i].iov_len, n - seen);
      framer.feed(std::string_view(static_cast<const char*>(vecs[i].iov_base), len));
      seen += len;
    }
    evbuffer_ptr_set(src, &pos, seen, EVBUFFER_PTR_SET);
  }
}

void SseResponse::begin(size_t max_event_bytes) {
  framer_ = std::make_unique<sse::Framer>(this, max_event_bytes);
  response_.clear();
  done_ = false;
}

void SseResponse::reset() noexcept {
  framer_.reset();
  std::string().swap(response_);  // a pooled reader keeps no answer-sized buffer
  done_ = false;
}

void SseResponse::feed(evbuffer* src, size_t n) noexcept {
  if (framer_ && !done_) {
    feedFramer(*framer_, src, n);
  }
}

void SseResponse::onEvent(std::string_view, std::string_view data) noexcept {
  if (!done_ && mcp::looksLikeResponse(data)) {
    response_.assign(data);
    done_ = true;
  }
}

}  // namespace gw::proxy
