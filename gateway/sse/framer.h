#pragma once
// Incremental text/event-stream framer (WHATWG HTML §9.2 event stream format). Pure.
//
// The proxy shows it every payload byte of an SSE response, in order, as the bytes pass
// through (it only looks; the bytes are moved by the caller). It answers whether the stream
// is at an event boundary — the only place a gateway-made ":" keep-alive comment may be
// injected without splitting an event — and, when capture is on, hands each complete
// event's data (the `data:` lines joined by "\n", as the spec's dispatch does) to a sink;
// capture is bounded by max_event_bytes (longer events are skipped, counted, not buffered).
//
// Line ends: CRLF, LF or CR (a CR at the end of one feed whose LF may come in the next is
// handled). A leading UTF-8 BOM is ignored. Comment lines (":...") are not events.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gw::sse {

class EventSink {
 public:
  virtual ~EventSink() = default;
  // `event` is the event type ("message" when absent), `data` the joined data lines.
  virtual void onEvent(std::string_view event, std::string_view data) noexcept = 0;
};

class Framer {
 public:
  // capture == nullptr: only boundary tracking (no allocation at all).
  explicit Framer(EventSink* capture = nullptr, size_t max_event_bytes = 4 * 1024 * 1024)
      : sink_(capture), max_event_bytes_(max_event_bytes) {}

  void feed(std::string_view bytes) noexcept;

  // True at stream start and right after the blank line that ends an event or comment
  // block; false in the middle of a line or of an event.
  bool atBoundary() const noexcept;

  uint64_t events() const noexcept { return events_; }          // events completed
  uint64_t comments() const noexcept { return comments_; }      // comment lines seen
  uint64_t oversized() const noexcept { return oversized_; }    // captures skipped

 private:
  // implementation state (line assembly for capture, CR pending, in-event flag, ...)
  EventSink* sink_;
  size_t max_event_bytes_;
  bool line_empty_ = true;     // no byte yet on the current line
  bool pending_cr_ = false;    // last byte was CR (an LF right after belongs to it)
  bool in_block_ = false;      // a non-blank line was seen since the last blank line
  bool bom_checked_ = false;
  uint8_t bom_seen_ = 0;
  bool skip_event_ = false;
  bool line_is_comment_ = false;
  std::string line_;           // current line (capture only)
  std::string event_type_;     // capture only
  std::string data_;           // capture only
  bool has_data_ = false;
  uint64_t events_ = 0;
  uint64_t comments_ = 0;
  uint64_t oversized_ = 0;
};

}  // namespace gw::sse
