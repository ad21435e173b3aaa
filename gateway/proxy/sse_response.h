#pragma once
// proxy/: an SSE answer to one JSON-RPC request, read until its response — the first event
// whose data is a JSON-RPC response (mcp::looksLikeResponse on its first bytes). A server may
// keep its stream open after that event (later notifications, keep-alives, or nothing at all),
// so whoever waits for the answer stops at that event instead of at the end of the stream.
// Used by the federation fan-out (each upstream's list answer) and by a plain route's list
// answer read whole for visibility filtering or tool pinning.

#include <event2/buffer.h>

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "gateway/sse/framer.h"

namespace gw::proxy {

// Shows the first n bytes of src to the framer, in order; src is left as it was.
void feedFramer(sse::Framer& framer, evbuffer* src, size_t n) noexcept;

class SseResponse final : public sse::EventSink {
 public:
  // A new answer. An event longer than max_event_bytes is skipped (it is never the response).
  void begin(size_t max_event_bytes);
  // No answer is being read (the framer is freed).
  void reset() noexcept;
  bool active() const noexcept { return framer_ != nullptr; }

  // The next n bytes of the answer, at the front of src (not drained). Bytes after the
  // response event are looked at but change nothing.
  void feed(evbuffer* src, size_t n) noexcept;

  // The response event is complete.
  bool done() const noexcept { return done_; }
  // Its data (the JSON-RPC response text), once done(); the caller may move it out.
  std::string& response() noexcept { return response_; }

  void onEvent(std::string_view event, std::string_view data) noexcept override;

 private:
  std::unique_ptr<sse::Framer> framer_;
  std::string response_;
  bool done_ = false;
};

}  // namespace gw::proxy
