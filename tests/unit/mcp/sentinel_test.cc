// Unit tests for the base64 sentinel codec (gateway/mcp/sentinel.h, spec items 48-53).

#include "gateway/mcp/sentinel.h"

#include "gateway/core/utf8.h"

#include <catch.hpp>
#include <string>
#include <string_view>

namespace gw::mcp {
namespace {

using namespace std::string_view_literals;

struct RoundTrip {
  std::string_view plain;
  std::string_view encoded;
};

// Spec item 51 examples (spec and SEP).
constexpr RoundTrip kSpecExamples[] = {
    {"Hello, 世界", "=?base64?SGVsbG8sIOS4lueVjA==?="},
    {" padded ", "=?base64?IHBhZGRlZCA=?="},
    {"line1\nline2", "=?base64?bGluZTEKbGluZTI=?="},
    {"=?base64?literal?=", "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?="},
    {"日本語", "=?base64?5pel5pys6Kqe?="},
    {"\tindented", "=?base64?CWluZGVudGVk?="},
    {"",
     "=?base64?"
     "?="},
    {"a", "=?base64?YQ==?="},
    {"ab", "=?base64?YWI=?="},
    {"abc", "=?base64?YWJj?="},
    {"\xf0\x9f\x98\x80", "=?base64?8J+YgA==?="},  // U+1F600, uses '+'
};

TEST_CASE("sentinel: spec examples encode and decode both ways", "[mcp][sentinel]") {
  for (const auto& ex : kSpecExamples) {
    CAPTURE(ex.encoded);
    CHECK(encodeSentinel(ex.plain) == ex.encoded);
    ValueArena arena(256);
    const SentinelResult r = decodeSentinel(ex.encoded, arena);
    REQUIRE(r.status == SentinelStatus::kDecoded);
    CHECK(r.value == ex.plain);
    CHECK(arena.used() == ex.plain.size());
  }
}

struct DecodeCase {
  std::string_view raw;
  SentinelStatus status;
  const char* why;
};

constexpr DecodeCase kDecodeCases[] = {
    // Literals: a marker missing, the wrong case, or markers that would overlap.
    {"SGVsbG8=", SentinelStatus::kLiteral, "no markers"},
    {"=?base64?SGVsbG8=", SentinelStatus::kLiteral, "no suffix"},
    {"SGVsbG8=?=", SentinelStatus::kLiteral, "no prefix"},
    {"=?BASE64?SGVsbG8=?=", SentinelStatus::kLiteral, "uppercase prefix"},
    {"=?Base64?SGVsbG8=?=", SentinelStatus::kLiteral, "mixed-case prefix"},
    {"=?base64?=", SentinelStatus::kLiteral, "prefix and suffix overlap"},
    {"=?base64?", SentinelStatus::kLiteral, "prefix only"},
    {"", SentinelStatus::kLiteral, "empty"},
    {" =?base64?SGVsbG8=?=", SentinelStatus::kLiteral, "leading space"},
    {"tools/call", SentinelStatus::kLiteral, "plain"},
    // Invalid: both markers, bad payload.
    {"=?base64?SGVsbG8?=", SentinelStatus::kInvalid, "missing padding"},
    {"=?base64?SGVs!!!bG8=?=", SentinelStatus::kInvalid, "characters outside the alphabet"},
    {"=?base64?SGVsbG8h?==", SentinelStatus::kLiteral, "suffix not last"},
    {"=?base64?SG=sbG8=?=", SentinelStatus::kInvalid, "= in the middle"},
    {"=?base64?SGVs=G8=?=", SentinelStatus::kInvalid, "= in the middle of the last quantum"},
    {"=?base64?YQ==YWJj?=", SentinelStatus::kInvalid, "padding before the last quantum"},
    {"=?base64?Y===?=", SentinelStatus::kInvalid, "three padding characters"},
    {"=?base64?====?=", SentinelStatus::kInvalid, "padding only"},
    {"=?base64?YQ=?=", SentinelStatus::kInvalid, "length not a multiple of 4"},
    {"=?base64?YQ===?=", SentinelStatus::kInvalid, "too much padding"},
    {"=?base64?YR==?=", SentinelStatus::kInvalid, "non-canonical bits, two pads"},
    {"=?base64?YWJ=?=", SentinelStatus::kInvalid, "non-canonical bits, one pad"},
    {"=?base64?YW=I?=", SentinelStatus::kInvalid, "= before the last symbol"},
    {"=?base64?SGVs bG8=?=", SentinelStatus::kInvalid, "space in payload"},
    {"=?base64?SGVs-G8=?=", SentinelStatus::kInvalid, "url-safe alphabet"},
    {"=?base64?SGVs_G8=?=", SentinelStatus::kInvalid, "url-safe alphabet"},
    {"=?base64?/w==?=", SentinelStatus::kInvalid, "decodes to 0xFF (not UTF-8)"},
    {"=?base64?wIA=?=", SentinelStatus::kInvalid, "overlong NUL C0 80"},
    {"=?base64?7aCA?=", SentinelStatus::kInvalid, "surrogate ED A0 80"},
    {"=?base64?9JCAgA==?=", SentinelStatus::kInvalid, "above U+10FFFF (F4 90 80 80)"},
    {"=?base64?4oI=?=", SentinelStatus::kInvalid, "truncated E2 82"},
};

TEST_CASE("sentinel: literal and malformed forms", "[mcp][sentinel]") {
  for (const auto& c : kDecodeCases) {
    CAPTURE(c.raw, c.why);
    ValueArena arena(64);
    const SentinelResult r = decodeSentinel(c.raw, arena);
    CHECK(r.status == c.status);
    if (c.status == SentinelStatus::kLiteral) {
      CHECK(r.value == c.raw);
      CHECK(r.value.data() == c.raw.data());  // a view of the input, not a copy
      CHECK(arena.used() == 0);
    }
    if (c.status == SentinelStatus::kInvalid) {
      CHECK(std::string_view(r.reason).size() > 0);
      CHECK(r.value.empty());
    }
  }
}

TEST_CASE("sentinel: decoded bytes live in the arena", "[mcp][sentinel]") {
  ValueArena arena(64);
  const SentinelResult a = decodeSentinel("=?base64?YWJj?=", arena);
  const SentinelResult b = decodeSentinel("=?base64?ZGVm?=", arena);
  REQUIRE(a.status == SentinelStatus::kDecoded);
  REQUIRE(b.status == SentinelStatus::kDecoded);
  CHECK(a.value == "abc");
  CHECK(b.value == "def");
  CHECK(b.value.data() == a.value.data() + 3);
  CHECK(arena.used() == 6);
}

TEST_CASE("sentinel: arena full is reported as invalid", "[mcp][sentinel]") {
  ValueArena arena(4);
  const SentinelResult r = decodeSentinel("=?base64?SGVsbG8=?=", arena);  // 5 bytes
  CHECK(r.status == SentinelStatus::kInvalid);
  CHECK(std::string_view(r.reason) == "header values too large");
  ValueArena exact(5);
  const SentinelResult ok = decodeSentinel("=?base64?SGVsbG8=?=", exact);
  REQUIRE(ok.status == SentinelStatus::kDecoded);
  CHECK(ok.value == "Hello");
  ValueArena none(0);
  CHECK(decodeSentinel("=?base64?"
                       "?=",
                       none)
            .status == SentinelStatus::kDecoded);
  CHECK(decodeSentinel("=?base64?YQ==?=", none).status == SentinelStatus::kInvalid);
}

TEST_CASE("sentinel: malformed payload takes no arena space", "[mcp][sentinel]") {
  ValueArena arena(64);
  CHECK(decodeSentinel("=?base64?SGVs!!!bG8=?=", arena).status == SentinelStatus::kInvalid);
  CHECK(decodeSentinel("=?base64?YR==?=", arena).status == SentinelStatus::kInvalid);
  CHECK(arena.used() == 0);
}

TEST_CASE("sentinel: every canonical 1- and 2-byte value round-trips", "[mcp][sentinel]") {
  ValueArena arena(16);
  for (int c = 0; c < 0x80; ++c) {
    const std::string s(1, static_cast<char>(c));
    arena.reset();
    const SentinelResult r = decodeSentinel(encodeSentinel(s), arena);
    REQUIRE(r.status == SentinelStatus::kDecoded);
    REQUIRE(r.value == s);
  }
  // Every 2-byte UTF-8 sequence (U+0080..U+07FF).
  for (int cp = 0x80; cp < 0x800; ++cp) {
    std::string s;
    s.push_back(static_cast<char>(0xc0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3f)));
    arena.reset();
    const SentinelResult r = decodeSentinel(encodeSentinel(s), arena);
    REQUIRE(r.status == SentinelStatus::kDecoded);
    REQUIRE(r.value == s);
  }
}

TEST_CASE("sentinel: only the zero-bit variant of the last symbol is accepted", "[mcp][sentinel]") {
  // "Y?==" decodes one byte from 12 bits: the low 4 bits of the second symbol are unused
  // and must be zero, so of all 64 symbols only A, Q, g, w (0x60-0x63) are accepted.
  constexpr std::string_view kAlphabet =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  int accepted = 0;
  for (size_t v = 0; v < 64; ++v) {
    std::string raw = "=?base64?Y";
    raw.push_back(kAlphabet[v]);
    raw += "==?=";
    ValueArena arena(8);
    const SentinelResult r = decodeSentinel(raw, arena);
    if (r.status == SentinelStatus::kDecoded) {
      ++accepted;
      CHECK((v & 0x0f) == 0);
    }
  }
  CHECK(accepted == 4);
}

struct NeedsCase {
  std::string_view value;
  bool needs;
};

constexpr NeedsCase kNeedsCases[] = {
    {"", false},
    {"get_weather", false},
    {"us west 1", false},  // interior spaces stay plain
    {"a,b;c=d", false},
    {"file:///tmp/x?y=1", false},
    {"=?BASE64?abc?=", false},  // not the (lowercase) sentinel pattern
    {"=?base64?abc", false},
    {"abc?=", false},
    {" padded", true},
    {"padded ", true},
    {"\tindented", true},
    {"in\tside", true},  // interior HTAB is a control character
    {"line1\nline2", true},
    {"nul\0byte"sv, true},
    {"del\x7f", true},
    {"Hello, 世界", true},
    {"caf\xc3\xa9", true},
    {"=?base64?literal?=", true},
    {"=?base64?"
     "?=",
     true},
    {"=?base64?=", true},  // item 50 read literally: starts with prefix, ends with suffix
};

TEST_CASE("sentinel: needsSentinel per items 49-50", "[mcp][sentinel]") {
  for (const auto& c : kNeedsCases) {
    CAPTURE(c.value);
    CHECK(needsSentinel(c.value) == c.needs);
  }
}

TEST_CASE("sentinel: encoded values always decode back", "[mcp][sentinel]") {
  for (const auto& c : kNeedsCases) {
    if (!core::isValidUtf8(c.value)) {
      continue;
    }
    CAPTURE(c.value);
    ValueArena arena(128);
    const SentinelResult r = decodeSentinel(encodeSentinel(c.value), arena);
    REQUIRE(r.status == SentinelStatus::kDecoded);
    CHECK(r.value == c.value);
    CHECK(needsSentinel(encodeSentinel(c.value)));  // its own output is sentinel-shaped
  }
}

}  // namespace
}  // namespace gw::mcp
