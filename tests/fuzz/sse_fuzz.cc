// libFuzzer target: the SSE framer. The first input byte picks a split point; the rest is
// the stream. Feeding it whole, in two pieces, or without capture must give the same
// boundary state, counters and captured events.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/sse/framer.h"

namespace {

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

class Recorder : public gw::sse::EventSink {
 public:
  void onEvent(std::string_view event, std::string_view data) noexcept override {
    log.append(event);
    log.push_back('\0');
    log.append(data);
    log.push_back('\0');
    total += data.size() + event.size();
  }
  std::string log;
  size_t total = 0;
};

constexpr size_t kMaxEvent = 64;  // small, so the oversized path is exercised

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  if (size == 0) {
    return 0;
  }
  const std::string_view stream(reinterpret_cast<const char*>(bytes) + 1, size - 1);
  const size_t split = stream.size() * bytes[0] / 255;

  Recorder whole_rec;
  gw::sse::Framer whole(&whole_rec, kMaxEvent);
  whole.feed(stream);

  Recorder split_rec;
  gw::sse::Framer two(&split_rec, kMaxEvent);
  two.feed(stream.substr(0, split));
  const bool mid_boundary = two.atBoundary();
  two.feed(stream.substr(split));

  gw::sse::Framer bare;
  bare.feed(stream.substr(0, split));
  check(bare.atBoundary() == mid_boundary);
  bare.feed(stream.substr(split));

  // The prefix alone, fed whole, agrees with the first piece.
  gw::sse::Framer prefix;
  prefix.feed(stream.substr(0, split));
  check(prefix.atBoundary() == mid_boundary);

  check(two.atBoundary() == whole.atBoundary());
  check(bare.atBoundary() == whole.atBoundary());
  check(two.events() == whole.events());
  check(bare.events() == whole.events());
  check(two.comments() == whole.comments());
  check(bare.comments() == whole.comments());
  check(two.oversized() == whole.oversized());
  check(split_rec.log == whole_rec.log);
  check(whole.oversized() <= whole.events());
  // Each captured event (its data plus its type, "message" excepted) fits the bound; an
  // empty stream is at its start.
  check(whole_rec.total <= whole.events() * (kMaxEvent + 7));
  if (stream.empty()) {
    check(whole.atBoundary());
  }
  return 0;
}
