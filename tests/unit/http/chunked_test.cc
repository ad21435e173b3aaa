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
    // RFC 9112 §7.1.1 without BWS (issue 12: whitespace around ";" is now rejected).
    {"extensions", "5;name=value\r\nhello\r\n3;a=\"q s\";b\r\nabc\r\n0;last\r\n\r\n", "helloabc"},
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

// RFC 9112 §7.1: chunk-size = 1*HEXDIG, bounded to kMaxSizeDigits; no BWS, sign or prefix.
// RFC 9112 §7.1.1: chunk-ext = *( ";" token [ "=" ( token / quoted-string ) ] ), exactly.
TEST_CASE("chunked: RFC 9112 7.1 and 7.1.1 every spelling of a bad size line",
          "[http][chunked][edge-http]") {
  const BadCase cases[] = {
      // chunk-size: whitespace anywhere
      {"SP before CRLF", "3 \r\nabc\r\n0\r\n\r\n"},
      {"HTAB before CRLF", "3\t\r\nabc\r\n0\r\n\r\n"},
      {"SP before semicolon", "3 ;a=b\r\nabc\r\n0\r\n\r\n"},
      {"HTAB before semicolon", "3\t;a\r\nabc\r\n0\r\n\r\n"},
      {"SP after semicolon", "3; a=b\r\nabc\r\n0\r\n\r\n"},
      {"SP before equals", "3;a =b\r\nabc\r\n0\r\n\r\n"},
      {"SP after equals", "3;a= b\r\nabc\r\n0\r\n\r\n"},
      {"SP after ext value", "3;a=b \r\nabc\r\n0\r\n\r\n"},
      {"SP in last chunk", "0 \r\n\r\n"},
      {"SP inside digits", "1 0\r\n"},
      // chunk-size: prefixes, signs, separators
      {"0X prefix", "0X3\r\nabc\r\n0\r\n\r\n"},
      {"x alone", "x3\r\nabc\r\n0\r\n\r\n"},
      {"minus zero", "-0\r\n\r\n"},
      {"plus hex", "+a\r\n0123456789\r\n0\r\n\r\n"},
      {"comma", "3,3\r\nabc\r\n0\r\n\r\n"},
      {"underscore", "1_0\r\n"},
      {"dot", "3.0\r\nabc\r\n0\r\n\r\n"},
      {"NUL after digits", std::string_view("3\0\r\nabc\r\n0\r\n\r\n", 14)},
      // chunk-size: digit count (bounded even when the value is small)
      {"17 digits of zero then 1", "00000000000000001\r\nx\r\n0\r\n\r\n"},
      {"17 zero digits", "00000000000000000\r\n\r\n"},
      {"17 digits", "10000000000000000\r\n"},
      {"16 digits over 2^63", "ffffffffffffffff\r\n"},
      // chunk-ext syntax
      {"empty extension", "3;\r\nabc\r\n0\r\n\r\n"},
      {"double semicolon", "3;;a\r\nabc\r\n0\r\n\r\n"},
      {"empty value", "3;a=\r\nabc\r\n0\r\n\r\n"},
      {"equals without name", "3;=b\r\nabc\r\n0\r\n\r\n"},
      {"non-token name", "3;a(b)\r\nabc\r\n0\r\n\r\n"},
      {"non-token value", "3;a=b/c\r\nabc\r\n0\r\n\r\n"},
      {"two equals", "3;a=b=c\r\nabc\r\n0\r\n\r\n"},
      {"unterminated quoted-string", "3;a=\"bc\r\nabc\r\n0\r\n\r\n"},
      {"junk after quoted-string", "3;a=\"b\"c\r\nabc\r\n0\r\n\r\n"},
      {"CTL in quoted-string", "3;a=\"b\x01\"\r\nabc\r\n0\r\n\r\n"},
      {"DEL in quoted-string", "3;a=\"b\x7f\"\r\nabc\r\n0\r\n\r\n"},
      {"CR in quoted-string", "3;a=\"b\rc\"\r\nabc\r\n0\r\n\r\n"},
      {"LF in quoted-string", "3;a=\"b\nc\"\r\nabc\r\n0\r\n\r\n"},
      {"quoted-pair of CTL", "3;a=\"\\\x01\"\r\nabc\r\n0\r\n\r\n"},
      {"quoted-pair of LF", "3;a=\"\\\n\"\r\nabc\r\n0\r\n\r\n"},
      {"quoted name", "3;\"a\"=b\r\nabc\r\n0\r\n\r\n"},
      {"obs-text in token", "3;a\xc3\xa9\r\nabc\r\n0\r\n\r\n"},
      {"bad extension on last chunk", "0;a b\r\n\r\n"},
      {"bad extension on a later chunk", "1\r\na\r\n2;=\r\nbc\r\n0\r\n\r\n"},
      // framing after data
      {"bare LF after data then valid", "3\r\nabc\n\r\n0\r\n\r\n"},
      {"bare CR after data", "3\r\nabc\r0\r\n\r\n"},
      {"no CRLF after data at all", "3\r\nabc0\r\n\r\n"},
      {"LF CR after data", "3\r\nabc\n\r0\r\n\r\n"},
      // trailer section
      {"trailer without colon", "0\r\nX-A\r\n\r\n"},
      {"trailer empty name", "0\r\n: a\r\n\r\n"},
      {"trailer tab before colon", "0\r\nX\t: a\r\n\r\n"},
      {"trailer bare CR in value", "0\r\nX: a\rb\r\n\r\n"},
      {"trailer NUL in value", std::string_view("0\r\nX: a\0b\r\n\r\n", 13)},
      {"trailer non-token name", "0\r\nX(y): a\r\n\r\n"},
      {"trailer tab obs-fold", "0\r\nX: a\r\n\tb\r\n\r\n"},
      {"trailer bare CR terminator", "0\r\n\r\r\n"},
  };
  for (const BadCase& c : cases) {
    INFO(c.name);
    const Decoded whole = decodeWhole(c.wire);
    CHECK(whole.error);
    CHECK_FALSE(whole.done);
    const Decoded bytewise = decode(c.wire, [] { return size_t{1}; });
    CHECK(bytewise.error);
    CHECK_FALSE(bytewise.done);
  }
}

TEST_CASE("chunked: RFC 9112 7.1.1 valid extension spellings", "[http][chunked][edge-http]") {
  const ValidCase cases[] = {
      {"name only", "3;a\r\nabc\r\n0\r\n\r\n", "abc"},
      {"token value", "3;a=b\r\nabc\r\n0\r\n\r\n", "abc"},
      {"several", "3;a=b;c;d=e\r\nabc\r\n0\r\n\r\n", "abc"},
      {"tchar symbols", "3;!#$%&'*+-.^_`|~=!#$%&'*+-.^_`|~\r\nabc\r\n0\r\n\r\n", "abc"},
      {"quoted empty", "3;a=\"\"\r\nabc\r\n0\r\n\r\n", "abc"},
      {"quoted with SP HTAB", "3;a=\" \tb \"\r\nabc\r\n0\r\n\r\n", "abc"},
      {"quoted with semicolon", "3;a=\";b=c\"\r\nabc\r\n0\r\n\r\n", "abc"},
      {"quoted-pair quote", "3;a=\"x\\\"y\"\r\nabc\r\n0\r\n\r\n", "abc"},
      {"quoted-pair backslash", "3;a=\"x\\\\\"\r\nabc\r\n0\r\n\r\n", "abc"},
      {"quoted obs-text", "3;a=\"caf\xc3\xa9\"\r\nabc\r\n0\r\n\r\n", "abc"},
      {"on the last chunk", "3\r\nabc\r\n0;end=1\r\n\r\n", "abc"},
      {"16 digits", "0000000000000003\r\nabc\r\n0\r\n\r\n", "abc"},
  };
  for (const ValidCase& c : cases) {
    INFO(c.name);
    const Decoded whole = decodeWhole(c.wire);
    CHECK(whole.done);
    CHECK(whole.payload == c.payload);
    const Decoded bytewise = decode(c.wire, [] { return size_t{1}; });
    CHECK(bytewise.done);
    CHECK(bytewise.payload == c.payload);
  }
  const std::string mixed = "aB\r\n" + std::string(0xab, 'z') + "\r\n0\r\n\r\n";
  CHECK(decodeWhole(mixed).payload.size() == 0xab);
}

TEST_CASE("chunked: extension bytes are bounded per message", "[http][chunked][edge-http]") {
  // Each line carries ";" + 99 bytes = 100 extension bytes; 40 lines = 4000 bytes pass, the
  // 41st line puts the message over kMaxExtensionBytes (4096).
  const std::string ext = ";" + std::string(99, 'e');
  std::string ok;
  for (int i = 0; i < 40; ++i) {
    ok += "1" + ext + "\r\nx\r\n";
  }
  const Decoded fine = decodeWhole(ok + "0\r\n\r\n");
  CHECK(fine.done);
  CHECK(fine.payload == std::string(40, 'x'));
  const Decoded over = decodeWhole(ok + "1" + ext + "\r\nx\r\n0\r\n\r\n");
  CHECK(over.error);
  const Decoded over_last = decodeWhole(ok + "0" + ext + "\r\n\r\n");
  CHECK(over_last.error);
  const Decoded bytewise = decode(ok + "1" + ext + "\r\nx\r\n0\r\n\r\n", [] { return size_t{3}; });
  CHECK(bytewise.error);
  // Two long lines: the first fits, the second crosses the per-message budget.
  const std::string big = ";" + std::string(2100, 'a');
  CHECK(decodeWhole("1" + big + "\r\nx\r\n0\r\n\r\n").done);
  CHECK(decodeWhole("1" + big + "\r\nx\r\n1" + big + "\r\ny\r\n0\r\n\r\n").error);
  // reset() gives a new message a new budget.
  ChunkedDecoder dec;
  dec.reset();
  CHECK(dec.next("1;a\r\n").kind == Kind::kFraming);
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

namespace gw::http {
namespace {

// Upstream responses: RFC 9112 §7.1.1 BWS around ";" and "=" is taken and there is no
// per-message extension budget; everything else is as strict as for requests.
TEST_CASE("chunked: upstream responses take RFC BWS in extensions, no extension budget",
          "[http][chunked][edge-http]") {
  auto run = [](std::string_view wire, ChunkedDecoder::Peer peer) {
    ChunkedDecoder dec(peer);
    size_t at = 0;
    for (int guard = 0; guard < 1000; ++guard) {
      const ChunkedDecoder::Step s = dec.next(wire.substr(at));
      if (s.kind == Kind::kError || s.kind == Kind::kNeedMore) {
        return s.kind;
      }
      if (s.kind == Kind::kDone) {
        return Kind::kDone;
      }
      at += s.length;
    }
    return Kind::kError;
  };
  using P = ChunkedDecoder::Peer;
  const std::string_view bws[] = {"3 ;a=1\r\nabc\r\n0\r\n\r\n",
                                  "3; a = \"x\" ;b\r\nabc\r\n0\r\n\r\n",
                                  "3\t;\ta\r\nabc\r\n0\r\n\r\n"};
  for (std::string_view w : bws) {
    INFO(w);
    CHECK(run(w, P::kUpstream) == Kind::kDone);
    CHECK(run(w, P::kClient) == Kind::kError);
  }
  std::string many;
  for (int i = 0; i < 10; ++i) {
    many += "1;" + std::string(1000, 'e') + "\r\nx\r\n";
  }
  many += "0\r\n\r\n";
  CHECK(run(many, P::kUpstream) == Kind::kDone);
  CHECK(run(many, P::kClient) == Kind::kError);
  const std::string_view still_bad[] = {"0x3\r\nabc\r\n0\r\n\r\n", "3;a=\r\nabc\r\n0\r\n\r\n",
                                        "3\r\nabc\n0\r\n\r\n", "00000000000000003\r\nabc\r\n"};
  for (std::string_view w : still_bad) {
    INFO(w);
    CHECK(run(w, P::kUpstream) == Kind::kError);
  }
  // reset() keeps the peer; reset(peer) changes it.
  ChunkedDecoder dec(P::kUpstream);
  dec.reset();
  CHECK(dec.next("3 ;a\r\n").kind == Kind::kFraming);
  dec.reset(P::kClient);
  CHECK(dec.next("3 ;a\r\n").kind == Kind::kError);
}

}  // namespace
}  // namespace gw::http
