// Unit tests for the incremental text/event-stream framer (gateway/sse/framer.h).

#include "gateway/sse/framer.h"

#include <catch.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace gw::sse {
namespace {

struct Captured {
  std::string event;
  std::string data;
  bool operator==(const Captured&) const = default;
};

class Recorder : public EventSink {
 public:
  void onEvent(std::string_view event, std::string_view data) noexcept override {
    events.push_back(Captured{std::string(event), std::string(data)});
  }
  std::vector<Captured> events;
};

// A stream with '|' marking every prefix length at which the framer is at a boundary.
constexpr std::string_view kMarkedStream =
    "|: hello\n\n"
    "|event: progress\ndata: a\ndata: b\n\n"
    "|data: x\r\n\r|\n"
    "|id: 7\rdata:y\r\r"
    "|retry: 10\ndata\n\n"
    "|: one\n: two\r\n\r|\n"
    "|data:  spaced \n\n|";

struct Sample {
  std::string stream;
  std::vector<bool> boundary;  // boundary[i]: expected atBoundary() after i bytes
};

Sample sample() {
  Sample s;
  for (char c : kMarkedStream) {
    if (c == '|') {
      s.boundary.resize(s.stream.size() + 1, false);
      s.boundary[s.stream.size()] = true;
    } else {
      s.stream.push_back(c);
    }
  }
  s.boundary.resize(s.stream.size() + 1, false);
  return s;
}

const std::vector<Captured> kSampleEvents = {
    {"progress", "a\nb"}, {"message", "x"},        {"message", "y"},
    {"message", ""},      {"message", " spaced "},
};

TEST_CASE("framer: boundaries after every prefix, byte by byte", "[sse][framer]") {
  const Sample s = sample();
  Recorder rec;
  Framer f(&rec);
  CHECK(f.atBoundary());
  for (size_t i = 0; i < s.stream.size(); ++i) {
    f.feed(std::string_view(s.stream).substr(i, 1));
    CAPTURE(i + 1);
    CHECK(f.atBoundary() == s.boundary[i + 1]);
  }
  CHECK(rec.events == kSampleEvents);
  CHECK(f.events() == kSampleEvents.size());
  CHECK(f.comments() == 3);
}

TEST_CASE("framer: every split point gives the same result", "[sse][framer]") {
  const Sample s = sample();
  const std::string_view all(s.stream);
  for (size_t split = 0; split <= all.size(); ++split) {
    CAPTURE(split);
    Recorder rec;
    Framer f(&rec);
    f.feed(all.substr(0, split));
    CHECK(f.atBoundary() == s.boundary[split]);
    f.feed(all.substr(split));
    CHECK(f.atBoundary());
    CHECK(rec.events == kSampleEvents);
    CHECK(f.events() == kSampleEvents.size());
    CHECK(f.comments() == 3);

    Framer bare;  // boundary tracking only
    bare.feed(all.substr(0, split));
    CHECK(bare.atBoundary() == s.boundary[split]);
    bare.feed(all.substr(split));
    CHECK(bare.atBoundary());
    CHECK(bare.events() == kSampleEvents.size());
  }
}

TEST_CASE("framer: CR at the end of a feed and LF in the next is one line end", "[sse][framer]") {
  Recorder rec;
  Framer f(&rec);
  f.feed("data: a\r");
  CHECK_FALSE(f.atBoundary());
  f.feed("\n");  // belongs to the CR: not a blank line
  CHECK_FALSE(f.atBoundary());
  CHECK(rec.events.empty());
  f.feed("data: b\r");
  f.feed("\n\r");
  CHECK(f.atBoundary());
  f.feed("\n");
  CHECK(f.atBoundary());
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].data == "a\nb");
  // CR CR is two line ends (a line and a blank one), LF CR too.
  f.feed("data: c\r\r");
  CHECK(f.atBoundary());
  f.feed("data: d\n\r");
  CHECK(f.atBoundary());
  REQUIRE(rec.events.size() == 3);
  CHECK(rec.events[1].data == "c");
  CHECK(rec.events[2].data == "d");
}

TEST_CASE("framer: line-end styles", "[sse][framer]") {
  const std::vector<std::pair<std::string_view, std::string_view>> cases = {
      {"data: a\ndata: b\n\n", "LF"},
      {"data: a\r\ndata: b\r\n\r\n", "CRLF"},
      {"data: a\rdata: b\r\r", "CR"},
      {"data: a\r\ndata: b\rdata: c\n\n", "mixed (three lines)"},
  };
  for (const auto& [stream, why] : cases) {
    CAPTURE(why);
    Recorder rec;
    Framer f(&rec);
    f.feed(stream);
    CHECK(f.atBoundary());
    REQUIRE(rec.events.size() == 1);
    CHECK(rec.events[0].data == (why.starts_with("mixed") ? "a\nb\nc" : "a\nb"));
  }
}

TEST_CASE("framer: comments", "[sse][framer]") {
  Framer f;
  f.feed(": keepalive\n");
  CHECK_FALSE(f.atBoundary());  // mid block
  f.feed("\n");
  CHECK(f.atBoundary());  // a comment-only block ends at the blank line
  CHECK(f.comments() == 1);
  CHECK(f.events() == 0);
  f.feed(":\r\n\r\n:\n\n");
  CHECK(f.atBoundary());
  CHECK(f.comments() == 3);
  f.feed(": ka\ndata: x\n");  // a comment inside an event block
  CHECK_FALSE(f.atBoundary());
  f.feed("\n");
  CHECK(f.atBoundary());
  CHECK(f.events() == 1);
  CHECK(f.comments() == 4);
}

TEST_CASE("framer: mid-line and mid-event are not boundaries", "[sse][framer]") {
  Framer f;
  f.feed("da");
  CHECK_FALSE(f.atBoundary());
  f.feed("ta: x");
  CHECK_FALSE(f.atBoundary());
  f.feed("\n");
  CHECK_FALSE(f.atBoundary());
  f.feed("\n\n\n");  // extra blank lines keep the boundary
  CHECK(f.atBoundary());
  CHECK(f.events() == 1);
}

TEST_CASE("framer: field parsing", "[sse][framer]") {
  Recorder rec;
  Framer f(&rec);
  f.feed("data:x\n\n");                       // no space after the colon
  f.feed("data:  two\n\n");                   // only one space is dropped
  f.feed("data\n\n");                         // bare name: empty value
  f.feed("event: a\nevent: b\ndata: d\n\n");  // the last event line wins
  f.feed("event: lone\n\n");                  // no data: not an event, and the type is reset
  f.feed("data: after\n\n");
  f.feed("dataX: no\nDATA: no\nid: 1\nretry: 5\n\n");  // not data fields
  f.feed("event\ndata: e\n\n");                        // empty event type → "message"
  f.feed("data: a:b: c\n\n");                          // only the first colon separates
  const std::vector<Captured> want = {
      {"message", "x"},     {"message", " two"}, {"message", ""},       {"b", "d"},
      {"message", "after"}, {"message", "e"},    {"message", "a:b: c"},
  };
  CHECK(rec.events == want);
  CHECK(f.events() == want.size());
  CHECK(f.atBoundary());
}

TEST_CASE("framer: oversized events are skipped and counted", "[sse][framer]") {
  Recorder rec;
  Framer f(&rec, 8);
  f.feed("data: 0123456789\n\n");
  CHECK(rec.events.empty());
  CHECK(f.oversized() == 1);
  CHECK(f.events() == 1);
  CHECK(f.atBoundary());
  f.feed("data: 0123\ndata: 567\n\n");      // "0123\n567" = 8 bytes: fits exactly
  f.feed("data: 0123\ndata: 5678\n\n");     // 9 bytes across lines: skipped
  f.feed("event: 123456789\ndata: x\n\n");  // the event type counts too
  f.feed("data: ok\n\n");
  const std::vector<Captured> want = {{"message", "0123\n567"}, {"message", "ok"}};
  CHECK(rec.events == want);
  CHECK(f.oversized() == 3);
  CHECK(f.events() == 5);
}

TEST_CASE("framer: oversized split across feeds", "[sse][framer]") {
  Recorder rec;
  Framer f(&rec, 4);
  f.feed("data: ab");
  f.feed("cd");
  f.feed("e\n");
  f.feed("\ndata: abcd\n\n");
  REQUIRE(rec.events.size() == 1);
  CHECK(rec.events[0].data == "abcd");
  CHECK(f.oversized() == 1);
}

TEST_CASE("framer: leading BOM", "[sse][framer]") {
  {
    Recorder rec;
    Framer f(&rec);
    f.feed(
        "\xef\xbb\xbf"
        "data: x\n\n");
    REQUIRE(rec.events.size() == 1);
    CHECK(rec.events[0].data == "x");
  }
  {
    Recorder rec;
    Framer f(&rec);
    f.feed("\xef");
    CHECK_FALSE(f.atBoundary());  // might be a BOM, might be content
    f.feed("\xbb");
    CHECK_FALSE(f.atBoundary());
    f.feed("\xbf");
    CHECK(f.atBoundary());  // a whole BOM: still at the stream start
    f.feed("data: y\n\n");
    REQUIRE(rec.events.size() == 1);
    CHECK(rec.events[0].data == "y");
  }
  {
    // A BOM prefix that turns out to be content: the first line's name is not "data".
    Recorder rec;
    Framer f(&rec);
    f.feed("\xef\xbb");
    f.feed("data: z\n");
    CHECK_FALSE(f.atBoundary());
    f.feed("\ndata: w\n\n");
    REQUIRE(rec.events.size() == 1);
    CHECK(rec.events[0].data == "w");
  }
  {
    // Only a leading BOM is skipped.
    Recorder rec;
    Framer f(&rec);
    f.feed(
        "data: a\n\n\xef\xbb\xbf"
        "data: b\n\n");
    REQUIRE(rec.events.size() == 1);
    CHECK(rec.events[0].data == "a");
  }
}

TEST_CASE("framer: empty feeds change nothing", "[sse][framer]") {
  Framer f;
  f.feed("");
  CHECK(f.atBoundary());
  f.feed("data: x");
  f.feed("");
  CHECK_FALSE(f.atBoundary());
  f.feed("\n\n");
  f.feed("");
  CHECK(f.atBoundary());
}

}  // namespace
}  // namespace gw::sse
