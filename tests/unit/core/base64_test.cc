// core/base64.h: both alphabets, both padding rules, canonical decoding and what each error
// is.

#include <catch.hpp>

#include <string>
#include <string_view>

#include "gateway/core/base64.h"

namespace gw::core {
namespace {

using namespace std::string_view_literals;

constexpr auto kStd = Base64Alphabet::kStandard;
constexpr auto kUrl = Base64Alphabet::kUrl;
constexpr auto kPad = Base64Padding::kRequired;
constexpr auto kNoPad = Base64Padding::kNone;

std::string encoded(std::string_view bytes, Base64Alphabet a, Base64Padding p) {
  std::string out;
  appendBase64(out, bytes, a, p);
  return out;
}

TEST_CASE("base64: RFC 4648 §10 vectors, padded and not", "[core][base64]") {
  struct Vector {
    std::string_view plain, padded, unpadded;
  };
  for (const auto& v :
       {Vector{"", "", ""}, Vector{"f", "Zg==", "Zg"}, Vector{"fo", "Zm8=", "Zm8"},
        Vector{"foo", "Zm9v", "Zm9v"}, Vector{"foob", "Zm9vYg==", "Zm9vYg"},
        Vector{"fooba", "Zm9vYmE=", "Zm9vYmE"}, Vector{"foobar", "Zm9vYmFy", "Zm9vYmFy"}}) {
    CAPTURE(v.plain);
    CHECK(encoded(v.plain, kStd, kPad) == v.padded);
    CHECK(encoded(v.plain, kUrl, kNoPad) == v.unpadded);
    std::string out;
    CHECK(base64Decode(v.padded, kStd, kPad, out));
    CHECK(out == v.plain);
    CHECK(base64Decode(v.unpadded, kUrl, kNoPad, out));
    CHECK(out == v.plain);
  }
}

TEST_CASE("base64: the alphabets differ in two symbols", "[core][base64]") {
  CHECK(encoded("\xfb\xff"sv, kStd, kPad) == "+/8=");
  CHECK(encoded("\xfb\xff"sv, kUrl, kNoPad) == "-_8");
  CHECK(isBase64Symbol('+', kStd));
  CHECK_FALSE(isBase64Symbol('+', kUrl));
  CHECK(isBase64Symbol('_', kUrl));
  CHECK_FALSE(isBase64Symbol('=', kStd));
  std::string out;
  CHECK_FALSE(base64Decode("-_8=", kStd, kPad, out));
  CHECK_FALSE(base64Decode("+/8", kUrl, kNoPad, out));
}

TEST_CASE("base64: each error, in order", "[core][base64]") {
  struct Case {
    std::string_view in;
    Base64Alphabet a;
    Base64Padding p;
    Base64Error error;
  };
  constexpr Case kCases[] = {
      {"Zm9", kStd, kPad, Base64Error::kLength},
      {"Zm9vY", kUrl, kNoPad, Base64Error::kLength},
      {"Zg=a", kStd, kPad, Base64Error::kMisplacedPadding},
      {"====", kStd, kPad, Base64Error::kMisplacedPadding},
      {"Zg==", kUrl, kNoPad, Base64Error::kAlphabet},
      {"Z g=", kStd, kPad, Base64Error::kAlphabet},
      {"Zh==", kStd, kPad, Base64Error::kNonCanonical},
      {"Zm9=", kStd, kPad, Base64Error::kNonCanonical},
      {"Zh", kUrl, kNoPad, Base64Error::kNonCanonical},
      {"Zm9", kUrl, kNoPad, Base64Error::kNonCanonical},
      {"Zm8=", kStd, kPad, Base64Error::kNone},
  };
  for (const auto& c : kCases) {
    CAPTURE(c.in);
    CHECK(base64Check(c.in, c.a, c.p).error == c.error);
  }
  std::string out = "stale";
  CHECK_FALSE(base64Decode("Zh", kUrl, kNoPad, out));
  CHECK(out.empty());
}

TEST_CASE("base64: every byte round-trips", "[core][base64]") {
  std::string all;
  for (int b = 0; b < 256; ++b) {
    all.push_back(static_cast<char>(b));
  }
  for (size_t n = 0; n <= 5; ++n) {
    const std::string_view bytes(all.data() + 250 - n, n + 6);
    for (const auto a : {kStd, kUrl}) {
      for (const auto p : {kPad, kNoPad}) {
        std::string out;
        REQUIRE(base64Decode(encoded(bytes, a, p), a, p, out));
        CHECK(out == bytes);
      }
    }
  }
  const std::string text = encoded(all, kStd, kPad);
  const Base64Check check = base64Check(text, kStd, kPad);
  REQUIRE(check.error == Base64Error::kNone);
  std::string buf(check.decoded_size, '\0');
  base64DecodeChecked(text, kStd, buf.data());
  CHECK(buf == all);
}

}  // namespace
}  // namespace gw::core
