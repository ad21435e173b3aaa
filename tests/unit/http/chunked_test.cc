// ChunkedDecoder: the step protocol driven the way a connection drives it.

#include <catch.hpp>

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/chunked.h"

namespace gw::http {
namespace {

using Kind = ChunkedDecoder::Kind;

struct Decoded {
  bool done = false;
  bool error = false;
  std::string payload;
  size_t consumed = 0;  // bytes of the input consumed up to and including kDone
};

// Feeds `wire` in pieces whose sizes come from `nextPiece`, keeping unconsumed bytes in a
// buffer exactly as a connection would (the decoder only ever sees a prefix of them).
template <typename NextPiece>
Decoded decode(std::string_view wire, NextPiece nextPiece) {
  ChunkedDecoder dec;
  Decoded out;
  std::string pending;
  size_t fed = 0;
  for (;;) {
    const ChunkedDecoder::Step step = dec.next(pending);
    switch (step.kind) {
      case Kind::kData:
        REQUIRE(step.length > 0);
        REQUIRE(step.length <= pending.size());
        out.payload.append(pending, 0, step.length);
        pending.erase(0, step.length);
        out.consumed += step.length;
        break;
      case Kind::kFraming:
        REQUIRE(step.length > 0);
        REQUIRE(step.length <= pending.size());
        pending.erase(0, step.length);
        out.consumed += step.length;
        break;
      case Kind::kDone:
        REQUIRE(step.length <= pending.size());
        out.consumed += step.length;
        out.done = true;
        CHECK(dec.done());
        CHECK(dec.payloadBytes() == out.payload.size());
        return out;
      case Kind::kError:
        CHECK(std::string_view(step.reason).size() > 0);
        out.error = true;
        return out;
      case Kind::kNeedMore:
        if (fed == wire.size()) {
          return out;
        }
        const size_t n = std::min(nextPiece(), wire.size() - fed);
        pending.append(wire.substr(fed, n));
        fed += n;
        break;
    }
  }
}

Decoded decodeWhole(std::string_view wire) {
  return decode(wire, [&] { return wire.size(); });
}

struct ValidCase {
  const char* name;
  std::string_view wire;
  std::string_view payload;
};

const ValidCase kValid[] = {
    {"one chunk", "5\r\nhello\r\n0\r\n\r\n", "hello"},
    {"two chunks", "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", "hello world"},
    {"hex sizes", "a\r\n0123456789\r\nA\r\nabcdefghij\r\n0\r\n\r\n", "0123456789abcdefghij"},
    {"leading zeros", "0005\r\nhello\r\n000\r\n\r\n", "hello"},
    {"empty body", "0\r\n\r\n", ""},
    {"extensions", "5;name=value\r\nhello\r\n3 ; a=\"q s\";b\r\nabc\r\n0;last\r\n\r\n", "helloabc"},
    {"trailers", "5\r\nhello\r\n0\r\nX-Trailer: 1\r\nChecksum: abc\r\n\r\n", "hello"},
    {"payload with CRLF inside", "4\r\n\r\n\r\n\r\n0\r\n\r\n", "\r\n\r\n"},
};

TEST_CASE("chunked: whole-buffer decoding", "[http][chunked]") {
  for (const ValidCase& c : kValid) {
    INFO(c.name);
    const Decoded d = decodeWhole(c.wire);
    CHECK(d.done);
    CHECK_FALSE(d.error);
    CHECK(d.payload == c.payload);
    CHECK(d.consumed == c.wire.size());
  }
}

TEST_CASE("chunked: byte-by-byte and random splits reassemble exactly", "[http][chunked]") {
  std::mt19937 rng(12345);
  for (const ValidCase& c : kValid) {
    INFO(c.name);
    const Decoded one = decode(c.wire, [] { return size_t{1}; });
    CHECK(one.done);
    CHECK(one.payload == c.payload);
    CHECK(one.consumed == c.wire.size());
    for (int round = 0; round < 50; ++round) {
      std::uniform_int_distribution<size_t> piece(1, 7);
      const Decoded d = decode(c.wire, [&] { return piece(rng); });
      CHECK(d.done);
      CHECK(d.payload == c.payload);
      CHECK(d.consumed == c.wire.size());
    }
  }
}

TEST_CASE("chunked: large random payload in random splits", "[http][chunked]") {
  std::mt19937 rng(777);
  std::string payload;
  std::string wire;
  char buf[24];
  for (int i = 0; i < 40; ++i) {
    std::string chunk(std::uniform_int_distribution<size_t>(1, 3000)(rng), '\0');
    for (char& ch : chunk) {
      ch = static_cast<char>(rng());
    }
    payload += chunk;
    wire += chunkSizeLine(chunk.size(), buf);
    wire += chunk;
    wire += "\r\n";
  }
  wire += kLastChunk;
  std::uniform_int_distribution<size_t> piece(1, 5000);
  const Decoded d = decode(wire, [&] { return piece(rng); });
  CHECK(d.done);
  CHECK(d.payload == payload);
  CHECK(d.consumed == wire.size());
}

TEST_CASE("chunked: kDone covers only the terminator, not what follows", "[http][chunked]") {
  const std::string_view wire = "3\r\nabc\r\n0\r\n\r\nGET / HTTP/1.1\r\n";
  ChunkedDecoder dec;
  size_t consumed = 0;
  ChunkedDecoder::Step step;
  do {
    step = dec.next(wire.substr(consumed));
    REQUIRE(step.kind != Kind::kError);
    REQUIRE(step.kind != Kind::kNeedMore);
    consumed += step.length;
  } while (step.kind != Kind::kDone);
  CHECK(step.length == 2);
  CHECK(wire.substr(consumed) == "GET / HTTP/1.1\r\n");
  CHECK(dec.payloadBytes() == 3);
  // Once done, it stays done and covers nothing more.
  step = dec.next(wire.substr(consumed));
  CHECK(step.kind == Kind::kDone);
  CHECK(step.length == 0);
  dec.reset();
  CHECK_FALSE(dec.done());
  CHECK(dec.payloadBytes() == 0);
}

TEST_CASE("chunked: data steps never cross the chunk boundary", "[http][chunked]") {
  ChunkedDecoder dec;
  const std::string_view wire = "3\r\nabcdefg";
  ChunkedDecoder::Step s = dec.next(wire);
  REQUIRE(s.kind == Kind::kFraming);
  CHECK(s.length == 3);
  s = dec.next(wire.substr(3));
  REQUIRE(s.kind == Kind::kData);
  CHECK(s.length == 3);
  s = dec.next(wire.substr(6));
  CHECK(s.kind == Kind::kError);  // "d" where CRLF must follow the chunk data
}

TEST_CASE("chunked: the CRLF after data and the next size line are one framing step",
          "[http][chunked]") {
  struct Expect {
    Kind kind;
    size_t length;
  };
  auto steps = [](std::string_view wire) {
    ChunkedDecoder dec;
    std::vector<Expect> out;
    size_t at = 0;
    for (int guard = 0; guard < 32; ++guard) {
      ChunkedDecoder::Step s = dec.next(wire.substr(at));
      out.push_back({s.kind, s.length});
      if (s.kind == Kind::kNeedMore || s.kind == Kind::kError || s.kind == Kind::kDone) {
        break;
      }
      at += s.length;
    }
    return out;
  };
  auto same = [](const std::vector<Expect>& got, const std::vector<Expect>& want) {
    if (got.size() != want.size()) {
      return false;
    }
    for (size_t i = 0; i < got.size(); ++i) {
      if (got[i].kind != want[i].kind || got[i].length != want[i].length) {
        return false;
      }
    }
    return true;
  };
  CHECK(same(steps("3\r\nabc\r\n5;x=y\r\nhello\r\n0\r\n\r\n"),
             {{Kind::kFraming, 3},
              {Kind::kData, 3},
              {Kind::kFraming, 9},  // "\r\n5;x=y\r\n"
              {Kind::kData, 5},
              {Kind::kFraming, 5},  // "\r\n0\r\n"
              {Kind::kDone, 2}}));
  // The next size line cut short: the CRLF alone, then more is needed.
  CHECK(same(steps("3\r\nabc\r\n5"),
             {{Kind::kFraming, 3}, {Kind::kData, 3}, {Kind::kFraming, 2}, {Kind::kNeedMore, 0}}));
  // A bad size line after the CRLF is still reported, by the next step.
  CHECK(same(steps("3\r\nabc\r\nzz\r\n"),
             {{Kind::kFraming, 3}, {Kind::kData, 3}, {Kind::kFraming, 2}, {Kind::kError, 0}}));
}

struct BadCase {
  const char* name;
  std::string_view wire;
};

TEST_CASE("chunked: malformed input is rejected", "[http][chunked]") {
  const BadCase cases[] = {
      {"non-hex size", "g\r\nabc\r\n0\r\n\r\n"},
      {"hex then junk", "5g\r\nhello\r\n0\r\n\r\n"},
      {"empty size", "\r\nhello\r\n0\r\n\r\n"},
      {"negative size", "-1\r\nx\r\n0\r\n\r\n"},
      {"plus size", "+1\r\nx\r\n0\r\n\r\n"},
      {"leading space", " 1\r\nx\r\n0\r\n\r\n"},
      {"0x prefix", "0x1\r\nx\r\n0\r\n\r\n"},
      {"overflow", "ffffffffffffffffff\r\n"},
      {"2^63", "8000000000000000\r\n"},
      {"missing CRLF after data", "3\r\nabcd\r\n0\r\n\r\n"},
      {"LF only after data", "3\r\nabc\n0\r\n\r\n"},
      {"CR only after data", "3\r\nabc\rX0\r\n\r\n"},
      {"bare LF size line", "3\nabc\r\n0\r\n\r\n"},
      {"bare LF in extension", "3;a\nabc\r\n0\r\n\r\n"},
      {"bare CR size line", "3\rabc\r\n0\r\n\r\n"},
      {"CTL in extension", "3;a\x01\r\nabc\r\n0\r\n\r\n"},
      {"bare LF last chunk", "0\n\r\n"},
      {"bare LF terminator", "0\r\n\n"},
      {"bare LF trailer", "0\r\nX: a\n\r\n"},
      {"malformed trailer", "0\r\nX : a\r\n\r\n"},
      {"trailer obs-fold", "0\r\nX: a\r\n b\r\n\r\n"},
  };
  for (const BadCase& c : cases) {
    INFO(c.name);
    const Decoded whole = decodeWhole(c.wire);
    CHECK(whole.error);
    CHECK_FALSE(whole.done);
    const Decoded bytewise = decode(c.wire, [] { return size_t{1}; });
    CHECK(bytewise.error);
  }
}

TEST_CASE("chunked: limits on size lines and trailers", "[http][chunked]") {
  {
    const std::string longExt =
        "1;" + std::string(ChunkedDecoder::kMaxLineBytes, 'x') + "\r\na\r\n0\r\n\r\n";
    CHECK(decodeWhole(longExt).error);
    // Still undecided while shorter than the limit.
    ChunkedDecoder dec;
    CHECK(dec.next(std::string_view(longExt).substr(0, 100)).kind == Kind::kNeedMore);
  }
  {
    std::string wire = "0\r\n";
    for (int i = 0; i < 2000; ++i) {
      wire += "X-Trailer-Field: 0123456789\r\n";
    }
    wire += "\r\n";
    CHECK(decodeWhole(wire).error);
  }
  {
    const std::string fine = "0\r\nX: " + std::string(1000, 'v') + "\r\n\r\n";
    const Decoded d = decodeWhole(fine);
    CHECK(d.done);
    CHECK(d.consumed == fine.size());
  }
}

TEST_CASE("chunked: an error is sticky", "[http][chunked]") {
  ChunkedDecoder dec;
  CHECK(dec.next("zz\r\n").kind == Kind::kError);
  CHECK(dec.next("5\r\nhello\r\n").kind == Kind::kError);
}

TEST_CASE("chunkSizeLine writes lowercase hex and CRLF", "[http][chunked]") {
  char buf[24];
  CHECK(chunkSizeLine(0, buf) == "0\r\n");
  CHECK(chunkSizeLine(1, buf) == "1\r\n");
  CHECK(chunkSizeLine(255, buf) == "ff\r\n");
  CHECK(chunkSizeLine(0x1a2b, buf) == "1a2b\r\n");
  CHECK(chunkSizeLine(SIZE_MAX, buf) == "ffffffffffffffff\r\n");
  CHECK(kLastChunk == "0\r\n\r\n");
}

}  // namespace
}  // namespace gw::http
