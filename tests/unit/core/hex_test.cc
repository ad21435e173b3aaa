// core/hex.h: digit values and lowercase hex text.

#include <catch.hpp>

#include <string>
#include <string_view>

#include "gateway/core/hex.h"

namespace gw::core {
namespace {

using namespace std::string_view_literals;

TEST_CASE("hex: hexValue takes either case and refuses the rest", "[core][hex]") {
  CHECK(hexValue('0') == 0);
  CHECK(hexValue('9') == 9);
  CHECK(hexValue('a') == 10);
  CHECK(hexValue('F') == 15);
  for (const char c : {'g', 'G', ' ', '/', ':', '@', '`', '\0'}) {
    CHECK(hexValue(c) == -1);
  }
}

TEST_CASE("hex: hexEncode is two lowercase digits per byte", "[core][hex]") {
  CHECK(hexEncode("") == "");
  CHECK(hexEncode("\x00\x0f\xa5\xff"sv) == "000fa5ff");
  std::string out = "x=";
  appendHex(out, "AZ");
  CHECK(out == "x=415a");
}

}  // namespace
}  // namespace gw::core
