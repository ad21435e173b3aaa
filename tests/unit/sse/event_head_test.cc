// sse::Framer::lastEventHead (WHATWG HTML §9.2.6 dispatch: the data lines joined by "\n"): the
// first kHeadBytes of the last completed event's data, with and without capture, whatever the
// line ends, the field order or how the bytes are split across feeds.

#include <catch.hpp>
#include <string>
#include <string_view>

#include "gateway/sse/framer.h"

namespace {

class Nop : public gw::sse::EventSink {
 public:
  void onEvent(std::string_view, std::string_view) noexcept override {}
};

struct Case {
  const char* what;
  std::string stream;
  std::string head;  // expected lastEventHead() after the whole stream
};

}  // namespace

TEST_CASE("sse: lastEventHead is the start of the last dispatched event's data",
          "[sse][event-head]") {
  const std::string big(300, 'x');
  const Case cases[] = {
      {"nothing yet", "", ""},
      {"a comment is no event", ": hi\n\n", ""},
      {"an event without data is not dispatched", "event: x\nid: 1\n\n", ""},
      {"one data line", "data: {\"a\":1}\n\n", "{\"a\":1}"},
      {"LF, CRLF and CR line ends", "data: a\r\ndata: b\rdata:c\n\r\n", "a\nb\nc"},
      {"fields around the data", "event: message\nid: 9\ndata: v\nretry: 5\n\n", "v"},
      {"the last of several events", "data: one\n\ndata: two\n\n", "two"},
      {"an event still open does not count", "data: one\n\ndata: tw", "one"},
      {"a comment after the event keeps it", "data: one\n\n: ka\n\n", "one"},
      {"only the first kHeadBytes", "data: " + big + "\n\n", big.substr(0, 128)},
      {"joined lines cut at kHeadBytes", "data: " + big.substr(0, 127) + "\ndata: yz\n\n",
       big.substr(0, 127) + "\n"},
      {"a space after the colon is dropped once", "data:  two spaces\n\n", " two spaces"},
  };
  for (const Case& c : cases) {
    for (bool capture : {false, true}) {
      for (size_t split : {size_t{0}, size_t{1}, size_t{3}, size_t{7}}) {
        INFO(c.what << " capture=" << capture << " split=" << split);
        Nop sink;
        gw::sse::Framer f(capture ? &sink : nullptr);
        if (split == 0) {
          f.feed(c.stream);
        } else {
          for (size_t i = 0; i < c.stream.size(); i += split) {
            f.feed(std::string_view(c.stream).substr(i, split));
          }
        }
        CHECK(std::string(f.lastEventHead()) == c.head);
      }
    }
  }
}
