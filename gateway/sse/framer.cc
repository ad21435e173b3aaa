// Incremental text/event-stream framer. proxy/ feeds it every SSE payload byte it relays and
// asks atBoundary() before injecting a ":" keep-alive; with a sink it also hands complete
// events to the caller (verify mode, tests). Follows the WHATWG event-stream parsing rules
// for lines, fields and dispatch; only "data" and "event" are interpreted.

#include "gateway/sse/framer.h"

#include <cstring>

namespace gw::sse {

namespace {

constexpr char kBom[3] = {'\xef', '\xbb', '\xbf'};

// The index of the first CR or LF in p[i, n), or n. memchr (vectorised) rather than a byte
// loop: value lines are most of an event stream's bytes.
size_t findLineEnd(const char* p, size_t i, size_t n) {
  const void* lf = std::memchr(p + i, '\n', n - i);
  size_t end = lf != nullptr ? static_cast<size_t>(static_cast<const char*>(lf) - p) : n;
  const void* cr = std::memchr(p + i, '\r', end - i);
  return cr != nullptr ? static_cast<size_t>(static_cast<const char*>(cr) - p) : end;
}

}  // namespace

void Framer::feed(std::string_view bytes) noexcept {
  const char* p = bytes.data();
  size_t n = bytes.size();
  if (!bom_done_) {
    while (n > 0 && bom_seen_ < sizeof(kBom) && *p == kBom[bom_seen_]) {
      ++bom_seen_;
      ++p;
      --n;
    }
    if (bom_seen_ == sizeof(kBom)) {
      bom_done_ = true;
    } else if (n > 0) {
      // Not a BOM after all: the held-back prefix is ordinary content.
      bom_done_ = true;
      feedBytes(kBom, bom_seen_);
    } else {
      return;  // a BOM prefix so far; wait for more
    }
  }
  feedBytes(p, n);
}

// A pending CR after a blank line still counts as a boundary: if an injected comment lands
// between that CR and an LF that follows it, the client reads the LF as one more blank line,
// which dispatches nothing. Without this, CR-only streams would never get keep-alives.
bool Framer::atBoundary() const noexcept {
  if (!bom_done_ && bom_seen_ > 0) {
    return false;
  }
  return !in_block_;
}

void Framer::feedBytes(const char* p, size_t n) noexcept {
  size_t i = 0;
  while (i < n) {
    const char c = p[i];
    if (c == '\n') {
      if (pending_cr_) {
        pending_cr_ = false;  // second half of a CRLF split or not
      } else {
        endLine();
      }
      ++i;
      continue;
    }
    pending_cr_ = false;
    if (c == '\r') {
      endLine();
      pending_cr_ = true;
      ++i;
      continue;
    }
    if (line_empty_) {
      line_empty_ = false;
      in_block_ = true;
      name_len_ = 0;
      if (c == ':') {
        line_ = Line::kComment;
        ++comments_;
        ++i;
        continue;
      }
      // Most lines of a stream are "data:" lines: taken whole when the name is all here.
      if (n - i >= 5 && std::memcmp(p + i, "data:", 5) == 0) {
        name_len_ = 4;
        std::memcpy(name_, "data", 4);
        startValue();
        skip_space_ = true;
        i += 5;
        continue;
      }
      line_ = Line::kName;
    }
    switch (line_) {
      case Line::kName:
        if (c == ':') {
          startValue();
          skip_space_ = true;
        } else if (name_len_ < sizeof(name_)) {
          name_[name_len_++] = c;
        } else {
          line_ = Line::kOther;  // longer than any field we interpret
        }
        ++i;
        break;
      case Line::kData:
      case Line::kEvent: {
        if (skip_space_) {
          skip_space_ = false;
          if (c == ' ') {
            ++i;
            break;
          }
        }
        const size_t end = findLineEnd(p, i, n);
        if (line_ == Line::kData) {
          appendHead(p + i, end - i);
        }
        if (sink_ != nullptr) {
          append(line_ == Line::kData ? &data_ : &event_type_, p + i, end - i);
        }
        i = end;
        break;
      }
      case Line::kComment:
      case Line::kOther:
        i = findLineEnd(p, i, n);
        break;
    }
  }
}

void Framer::startValue() noexcept {
  const std::string_view name(name_, name_len_);
  if (name == "data") {
    line_ = Line::kData;
    if (has_data_) {
      appendHead("\n", 1);
    }
    if (has_data_ && sink_ != nullptr) {
      append(&data_, "\n", 1);
    }
    has_data_ = true;
  } else if (name == "event") {
    line_ = Line::kEvent;
    if (sink_ != nullptr) {
      event_type_.clear();  // the last event line of a block wins
    }
  } else {
    line_ = Line::kOther;
  }
}

void Framer::endLine() noexcept {
  if (line_empty_) {
    if (in_block_) {
      endBlock();
    }
    return;
  }
  if (line_ == Line::kName) {
    startValue();  // a line without ':' is a field name with an empty value
  }
  line_empty_ = true;
  skip_space_ = false;
  line_ = Line::kName;
}

void Framer::endBlock() noexcept {
  if (has_data_) {
    ++events_;
    std::memcpy(last_head_, head_, head_len_);
    last_head_len_ = head_len_;
    if (sink_ != nullptr) {
      if (skip_event_) {
        ++oversized_;
      } else {
        sink_->onEvent(
            event_type_.empty() ? std::string_view("message") : std::string_view(event_type_),
            data_);
      }
    }
  }
  in_block_ = false;
  has_data_ = false;
  head_len_ = 0;
  skip_event_ = false;
  data_.clear();
  event_type_.clear();
}

void Framer::append(std::string* dst, const char* p, size_t n) noexcept {
  if (skip_event_) {
    return;
  }
  if (n > max_event_bytes_ || data_.size() + event_type_.size() > max_event_bytes_ - n) {
    skip_event_ = true;
    data_.clear();
    event_type_.clear();
    return;
  }
  dst->append(p, n);
}

void Framer::appendHead(const char* p, size_t n) noexcept {
  const size_t room = kHeadBytes - head_len_;
  const size_t k = n < room ? n : room;
  std::memcpy(head_ + head_len_, p, k);
  head_len_ += k;
}

}  // namespace gw::sse
