#pragma once
// sse/: text/event-stream as the response relay sees it — event boundaries (where a
// keep-alive comment may go) and bounded capture of each event's data.
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

  // How many leading bytes of each event's data lastEventHead() keeps.
  static constexpr size_t kHeadBytes = 128;

  // The first kHeadBytes of the data of the last completed event (the data lines joined by
  // "\n", as dispatched), with or without capture: enough for a bounded look at what the
  // event is (mcp::looksLikeResponse) without holding the event. Empty before the first one.
  std::string_view lastEventHead() const noexcept {
    return std::string_view(last_head_, last_head_len_);
  }

  uint64_t events() const noexcept { return events_; }        // events completed
  uint64_t comments() const noexcept { return comments_; }    // comment lines seen
  uint64_t oversized() const noexcept { return oversized_; }  // captures skipped

 private:
  // What the current line is, decided by its first bytes (the field name).
  enum class Line : uint8_t {
    kName,     // still reading the field name (no ':' yet)
    kComment,  // starts with ':'
    kData,     // "data" field: value bytes go to the data buffer
    kEvent,    // "event" field: value bytes go to the event type
    kOther,    // any other field (id, retry, unknown): ignored
  };

  void feedBytes(const char* p, size_t n) noexcept;
  void startValue() noexcept;  // after the ':' of a data/event line (or at a bare name)
  void endLine() noexcept;     // a CR, LF or CRLF ended the current line
  void endBlock() noexcept;    // a blank line ended a non-empty block
  void append(std::string* dst, const char* p, size_t n) noexcept;  // capture, bounded
  void appendHead(const char* p, size_t n) noexcept;  // the event's first kHeadBytes of data

  EventSink* sink_;
  size_t max_event_bytes_;
  bool pending_cr_ = false;  // last byte was CR (an LF right after belongs to it)
  bool line_empty_ = true;   // no byte yet on the current line
  bool in_block_ = false;    // a non-blank line was seen since the last blank line
  bool bom_done_ = false;    // past the stream start (BOM skipped or absent)
  uint8_t bom_seen_ = 0;     // bytes of a BOM prefix held back at the stream start
  Line line_ = Line::kName;
  bool skip_space_ = false;  // the next value byte is dropped if it is one SP
  uint8_t name_len_ = 0;
  char name_[6] = {};        // field-name prefix (longest field we track is "event")
  bool has_data_ = false;    // the block has at least one data line (it is an event)
  bool skip_event_ = false;  // capture of this event exceeded max_event_bytes
  std::string event_type_;   // capture only
  std::string data_;         // capture only
  uint64_t events_ = 0;
  uint64_t comments_ = 0;
  uint64_t oversized_ = 0;
  size_t head_len_ = 0;       // bytes in head_ (the current event's data so far)
  size_t last_head_len_ = 0;  // bytes in last_head_
  char head_[kHeadBytes];
  char last_head_[kHeadBytes];
};

}  // namespace gw::sse
