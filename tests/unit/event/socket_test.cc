// event::Socket: the client socket without a bufferevent (reads, high mark, EOF, writes, send
// timeout, buffers released when empty). Driven over a socketpair with EVLOOP_NONBLOCK turns,
// every loop bounded.

#include "gateway/event/socket.h"

#include <catch.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <string>

#include "gateway/event/owners.h"

namespace {

struct Seen {
  int reads = 0;
  int writes = 0;
  short event = 0;
};

void onRead(void* arg) {
  ++static_cast<Seen*>(arg)->reads;
}
void onWrite(void* arg) {
  ++static_cast<Seen*>(arg)->writes;
}
void onEvent(void* arg, short what) {
  static_cast<Seen*>(arg)->event = what;
}

void turns(event_base* b, int n = 5) {
  for (int i = 0; i < n; ++i) {
    event_base_loop(b, EVLOOP_NONBLOCK);
  }
}

}  // namespace

TEST_CASE("socket: reads, the high mark, EOF and released buffers", "[event][socket]") {
  gw::event::BasePtr base(event_base_new());
  int sv[2];
  REQUIRE(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
  Seen seen;
  gw::event::Socket s;
  REQUIRE(s.open(base.get(), sv[0], onRead, onWrite, onEvent, &seen));
  CHECK(s.inputLength() == 0);
  CHECK(s.outputLength() == 0);

  SECTION("a read lands in the input, the callback runs") {
    s.enableRead();
    REQUIRE(::write(sv[1], "hello", 5) == 5);
    turns(base.get());
    CHECK(seen.reads == 1);
    CHECK(s.inputLength() == 5);
    evbuffer_drain(s.input(), 5);
    s.releaseIdle();
    CHECK(s.inputLength() == 0);
  }
  SECTION("no reads while disabled, or while the input holds the high mark") {
    REQUIRE(::write(sv[1], "0123456789", 10) == 10);
    turns(base.get());
    CHECK(seen.reads == 0);
    s.setReadHigh(4);
    s.enableRead();
    turns(base.get());
    CHECK(s.inputLength() == 4);  // read at most up to the mark
    const int reads = seen.reads;
    turns(base.get());
    CHECK(seen.reads == reads);  // stopped at the mark
    evbuffer_drain(s.input(), 4);
    s.setReadHigh(0);  // cleared: reads resume
    turns(base.get());
    CHECK(s.inputLength() == 6);
  }
  SECTION("the peer's close is EOF while reading") {
    s.enableRead();
    ::close(sv[1]);
    sv[1] = -1;
    turns(base.get());
    CHECK((seen.event & BEV_EVENT_EOF) != 0);
    CHECK((seen.event & BEV_EVENT_READING) != 0);
  }
  SECTION("sendNow writes what the socket takes; the write callback once it drains") {
    evbuffer_add(s.output(), "abc", 3);
    CHECK(s.sendNow() == gw::event::Sent::kDrained);
    CHECK_FALSE(s.writing());
    char buf[8];
    CHECK(::read(sv[1], buf, sizeof(buf)) == 3);
    CHECK(s.sendNow() == gw::event::Sent::kNothing);
    // More than the socket buffer takes: the rest goes out on the write event.
    std::string big(4 * 1024 * 1024, 'x');
    evbuffer_add(s.output(), big.data(), big.size());
    CHECK(s.sendNow() == gw::event::Sent::kPartial);
    CHECK(s.writing());
    size_t got = 0;
    std::string sink(1 << 16, '\0');
    for (int i = 0; i < 10000 && got < big.size(); ++i) {
      ssize_t n = ::read(sv[1], sink.data(), sink.size());
      if (n > 0) {
        got += static_cast<size_t>(n);
      }
      turns(base.get(), 1);
    }
    turns(base.get());
    CHECK(got == big.size());
    CHECK(s.outputLength() == 0);
    CHECK_FALSE(s.writing());  // off once the output is empty
    CHECK(seen.writes >= 1);
    s.releaseIdle();
    CHECK(s.outputLength() == 0);
  }
  SECTION("the send timeout runs only while bytes are held back") {
    s.setWriteTimeout(std::chrono::milliseconds(50));
    std::string big(4 * 1024 * 1024, 'x');
    evbuffer_add(s.output(), big.data(), big.size());
    CHECK(s.sendNow() == gw::event::Sent::kPartial);
    for (int i = 0; i < 100 && seen.event == 0; ++i) {
      usleep(5000);
      turns(base.get(), 1);
    }
    CHECK((seen.event & BEV_EVENT_TIMEOUT) != 0);
    CHECK((seen.event & BEV_EVENT_WRITING) != 0);
    CHECK_FALSE(s.writing());
  }
  if (sv[1] >= 0) {
    ::close(sv[1]);
  }
}

TEST_CASE("socket: headWindow covers the head through its blank line and nothing after",
          "[event][socket]") {
  auto window = [](std::initializer_list<std::string_view> pieces, size_t limit) {
    evbuffer* b = evbuffer_new();
    for (std::string_view p : pieces) {
      // Each piece its own chain, as reads leave them: a blank line may span two.
      evbuffer* part = evbuffer_new();
      evbuffer_add(part, p.data(), p.size());
      evbuffer_add_buffer(b, part);
      evbuffer_free(part);
    }
    const size_t n = gw::event::headWindow(b, limit);
    evbuffer_free(b);
    return n;
  };
  const std::string head = "GET / HTTP/1.1\r\nHost: a\r\n\r\n";
  const std::string body(100000, 'x');
  CHECK(window({head + body}, 65536) == head.size());
  CHECK(window({head}, 65536) == head.size());
  // The blank line split across chains, at every place.
  for (size_t cut = 1; cut < head.size(); ++cut) {
    INFO("cut at " << cut);
    CHECK(window({head.substr(0, cut), head.substr(cut) + body}, 65536) == head.size());
  }
  // Not whole yet, or never whole within the limit: everything held, at most limit + 1.
  CHECK(window({"GET / HTTP/1.1\r\nHost: a\r\n"}, 65536) == 25);
  CHECK(window({"GET / HTTP/1.1\r\nHost: a\r\n" + body}, 1000) == 1001);
  // A blank line beyond the limit does not count.
  CHECK(window({"GET / HTTP/1.1\r\nX: " + std::string(2000, 'a') + "\r\n\r\n"}, 1000) == 1001);
  // Empty lines before the request line are skipped (RFC 9112 §2.2): the head's own blank line.
  CHECK(window({"\r\n\r\n\r\n" + head + body}, 65536) == 6 + head.size());
  // (A first chain of nothing but empty lines: everything held, up to the limit.)
  CHECK(window({"\r\n\r\n", head + body}, 65536) == 65537);
  CHECK(window({"\n\n" + head}, 65536) == 2 + head.size());
  // Bare-LF endings are left to the parser: everything held.
  CHECK(window({"GET / HTTP/1.1\nHost: a\n\n" + body}, 65536) == 65537);
  // Nothing held.
  CHECK(window({}, 65536) == 0);
}
