// core/utf8.h: whole-text validation (simdjson), the per-sequence reader, the offset of the
// first bad byte and the encoder.

#include <catch.hpp>

#include <string>
#include <string_view>

#include "gateway/core/utf8.h"

namespace gw::core {
namespace {

struct Utf8Case {
  std::string_view bytes;
  bool valid;
};

constexpr Utf8Case kUtf8Cases[] = {
    {"", true},
    {"plain ascii", true},
    {"\x7f", true},
    {"\xc2\x80", true},          // U+0080
    {"\xdf\xbf", true},          // U+07FF
    {"\xe0\xa0\x80", true},      // U+0800
    {"\xed\x9f\xbf", true},      // U+D7FF
    {"\xee\x80\x80", true},      // U+E000
    {"\xef\xbf\xbf", true},      // U+FFFF
    {"\xf0\x90\x80\x80", true},  // U+10000
    {"\xf4\x8f\xbf\xbf", true},  // U+10FFFF
    {"\x80", false},             // lone continuation
    {"\xbf", false},
    {"\xc0\x80", false},          // overlong NUL
    {"\xc1\xbf", false},          // overlong
    {"\xe0\x9f\xbf", false},      // overlong 3-byte
    {"\xf0\x8f\xbf\xbf", false},  // overlong 4-byte
    {"\xed\xa0\x80", false},      // U+D800
    {"\xed\xbf\xbf", false},      // U+DFFF
    {"\xf4\x90\x80\x80", false},  // U+110000
    {"\xf5\x80\x80\x80", false},
    {"\xff", false},
    {"\xc2", false},              // truncated
    {"\xe2\x82", false},          // truncated
    {"\xf0\x9f\x98", false},      // truncated
    {"\xe2\x28\xa1", false},      // bad continuation
    {"\xf0\x9f\x98\x28", false},  // bad last continuation
    {"a\xc3\xa9z", true},
};

TEST_CASE("utf8: isValidUtf8 and invalidUtf8At agree on every case", "[core][utf8]") {
  for (const auto& c : kUtf8Cases) {
    CAPTURE(c.bytes);
    CHECK(isValidUtf8(c.bytes) == c.valid);
    CHECK((invalidUtf8At(c.bytes) == c.bytes.size()) == c.valid);
  }
}

TEST_CASE("utf8: utf8SequenceLength reads one sequence", "[core][utf8]") {
  CHECK(utf8SequenceLength("a", 0) == 1);
  CHECK(utf8SequenceLength("\xc3\xa9", 0) == 2);
  CHECK(utf8SequenceLength("\xe2\x82\xac", 0) == 3);
  CHECK(utf8SequenceLength("\xf0\x9f\x98\x80", 0) == 4);
  CHECK(utf8SequenceLength("\xf0\x9f\x98", 0) == 0);  // cut by the end
  CHECK(utf8SequenceLength("\xed\xa0\x80", 0) == 0);  // surrogate
  CHECK(utf8SequenceLength("\xc0\x80", 0) == 0);      // overlong
  CHECK(utf8SequenceLength("\x80", 0) == 0);          // continuation
  CHECK(utf8SequenceLength("x\xc3\xa9", 1) == 2);
}

TEST_CASE("utf8: invalidUtf8At is the offset of the first bad byte", "[core][utf8]") {
  CHECK(invalidUtf8At("abc") == 3);
  CHECK(invalidUtf8At("ab\xff"
                      "c") == 2);
  CHECK(invalidUtf8At("\xc3\xa9\xc3") == 2);
  CHECK(invalidUtf8At("\xe2\x82\xac\xed\xa0\x80") == 3);
}

TEST_CASE("utf8: appendUtf8 encodes each length", "[core][utf8]") {
  std::string out;
  for (const uint32_t cp : {0x41u, 0xE9u, 0x20ACu, 0x1F600u, 0x10FFFFu}) {
    appendUtf8(out, cp);
  }
  CHECK(out == "A\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\xf4\x8f\xbf\xbf");
  CHECK(isValidUtf8(out));
}

}  // namespace
}  // namespace gw::core
