// gw::mcp::parseDecimal / sameNumber: exact decimal equality of JSON number texts (spec
// item 57, "compare integer values numerically"; RFC 8259 §6 number grammar).

#include <catch.hpp>

#include <chrono>
#include <string>
#include <string_view>

#include "gateway/mcp/number.h"

namespace gw::mcp {
namespace {

TEST_CASE("sameNumber: every JSON spelling of one value is equal (spec item 57)") {
  struct Case {
    std::string_view a;
    std::string_view b;
  };
  const Case equal[] = {
      {"42", "42"},
      {"42", "42.0"},
      {"42", "42.000000"},
      {"42", "4.2e1"},
      {"42", "4.2E1"},
      {"42", "4.2e+1"},
      {"42", "420e-1"},
      {"42", "0.42e2"},
      {"42", "0.0042e4"},
      {"1000", "1e3"},
      {"1000", "1000.0"},
      {"1000", "10E2"},
      {"1000", "1.0e+3"},
      {"1000", "1e03"},
      {"1000", "1e0003"},
      {"1000", "10000e-1"},
      {"1.5", "1.50"},
      {"1.5", "15e-1"},
      {"1.5", "0.15e1"},
      {"-7", "-7.0"},
      {"-7", "-0.7e1"},
      {"-7", "-70e-1"},
      {"0", "-0"},
      {"0", "0.0"},
      {"0", "-0.0"},
      {"0", "0e5"},
      {"0", "-0E-5"},
      {"0", "0e999999999999999999999"},  // a zero significand ignores any exponent
      {"0", "0.000000000000000000000000000"},
      {"9007199254740993", "9007199254740993.0"},
      {"9007199254740993", "9.007199254740993e15"},
      {"-9007199254740993", "-90071992547409930e-1"},
      {"18446744073709551617", "1.8446744073709551617e19"},
      {"123456789012345678901234567890", "1.2345678901234567890123456789e29"},
      {"1e999999999", "10e999999998"},  // at the exponent bound
      {"5e-324", "0.5e-323"},
  };
  for (const Case& c : equal) {
    INFO(c.a << " == " << c.b);
    CHECK(sameNumber(c.a, c.b));
    CHECK(sameNumber(c.b, c.a));
  }
}

TEST_CASE("sameNumber: different values differ, beyond 2^53 exactly (never via a double)") {
  struct Case {
    std::string_view a;
    std::string_view b;
  };
  const Case different[] = {
      {"9007199254740993", "9007199254740992"},  // 2^53 + 1 vs 2^53: the same double
      {"9007199254740993", "9007199254740992.0"},
      {"9007199254740993.0", "9007199254740992"},
      {"9007199254740993", "9.007199254740992e15"},
      {"18446744073709551617", "18446744073709551616"},
      {"0.1", "0.10000000000000001"},  // the same double, different decimals
      {"42", "43"},
      {"42", "-42"},
      {"42", "4.2"},
      {"42", "42e1"},
      {"42", "42.0001"},
      {"1", "10"},
      {"1", "0.1"},
      {"100", "1"},
      {"0", "1e-999999999"},
      {"1e-400", "0"},  // a double would underflow both to 0
      {"1e400", "1e401"},
      {"12", "21"},
  };
  for (const Case& c : different) {
    INFO(c.a << " != " << c.b);
    CHECK_FALSE(sameNumber(c.a, c.b));
    CHECK_FALSE(sameNumber(c.b, c.a));
  }
}

TEST_CASE("parseDecimal: only the JSON number grammar (RFC 8259 §6), as headers must write it") {
  const std::string_view not_numbers[] = {
      "",    "-",    "+1",  "+0",   "01",       "-01",       "00",    "007",  ".5",    "5.",
      "-.5", "1.e3", "1e",  "1e+",  "1e-",      "1E+-1",     "e3",    "0x10", "1_000", "1,000",
      " 1",  "1 ",   "1\t", "1 0",  "Infinity", "-Infinity", "NaN",   "inf",  "1.5.2", "1e3e4",
      "--1", "1f",   "١",   "true", "null",     "\"1\"",     "1e1.5", "0.-1", "٣",
  };
  for (std::string_view s : not_numbers) {
    INFO("'" << s << "'");
    Decimal d;
    CHECK_FALSE(parseDecimal(s, d));
    CHECK_FALSE(sameNumber(s, s));
  }
}

TEST_CASE("parseDecimal: canonical form") {
  struct Case {
    std::string_view text;
    bool negative;
    size_t count;
    int64_t exponent;
  };
  const Case cases[] = {
      {"0", false, 0, 0},
      {"-0", false, 0, 0},
      {"-0.0e7", false, 0, 0},
      {"1", false, 1, 1},
      {"42", false, 2, 2},
      {"-7", true, 1, 1},
      {"1000", false, 1, 4},
      {"1e3", false, 1, 4},
      {"0.001", false, 1, -2},
      {"1.50", false, 2, 1},
      {"120.0300", false, 5, 3},
      {"-0.0012e-3", true, 2, -5},
      {"1e999999999", false, 1, 1000000000},
      {"1e-999999999", false, 1, -999999998},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    Decimal d;
    REQUIRE(parseDecimal(c.text, d));
    CHECK(d.negative == c.negative);
    CHECK(d.count == c.count);
    CHECK(d.exponent == c.exponent);
  }
}

TEST_CASE("parseDecimal: hostile exponents and lengths cost no memory and little time") {
  Decimal d;
  // More than kMaxExponentDigits significant exponent digits: refused, not computed.
  CHECK_FALSE(parseDecimal("1e1000000000", d));
  CHECK_FALSE(parseDecimal("1e-1000000000", d));
  CHECK_FALSE(parseDecimal("1e99999999999999999999999999999999", d));
  CHECK_FALSE(sameNumber("1e99999999999999999999", "1e99999999999999999999"));
  // Leading zeros of the exponent do not count toward the bound.
  CHECK(parseDecimal("1e000000000000000000000000000003", d));
  CHECK(sameNumber("1e000000000000000000000000000003", "1000"));

  // A long digit string is one linear pass, no allocation.
  const std::string ones(200000, '1');
  const std::string zeros(200000, '0');
  const auto start = std::chrono::steady_clock::now();
  CHECK(sameNumber(ones, ones + ".0"));
  CHECK(sameNumber("1" + zeros, "1e200000"));
  CHECK(sameNumber("0." + zeros + "1", "1e-200001"));
  CHECK_FALSE(sameNumber(ones, ones + "1"));
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(2));
}

}  // namespace
}  // namespace gw::mcp
