#pragma once
// Exact decimal equality of number texts (spec item 57: an integer Mcp-Param-{Name} is
// compared with the body numerically, `42.0` equals `42`). Pure: texts in, values out.
//
// Both sides are compared as exact decimals, never through a double: `1e3`, `1000`,
// `1000.0`, `10E2` and `1.0e+3` are equal, `1.50` equals `1.5`, `-0` equals `0`, and
// `9007199254740993` differs from `9007199254740992`. The grammar is JSON's number
// (RFC 8259 §6): -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? — so a leading `+`, leading
// zeros, `.5`, `5.`, hex, `Infinity`/`NaN` or inner whitespace are not numbers. That is also
// how the spec says a client writes an integer into a header ("decimal string
// representation", `42`, `-7`).
//
// Work is bounded: one pass over the text, no allocation. An exponent with more than
// kMaxExponentDigits significant digits (|e| ≥ 10^9) is refused (not a number here), so
// `1e999999999999` costs nothing and compares equal to nothing; a zero significand ignores
// its exponent (`0e999999999999` is zero).

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gw::mcp {

inline constexpr size_t kMaxExponentDigits = 9;

// A JSON number as sign × 0.d1d2…dn × 10^exponent with d1 ≠ 0 and dn ≠ 0 (n == 0: zero,
// never negative). Views into the text it was parsed from.
struct Decimal {
  bool negative = false;
  std::string_view int_digits;   // digits before the '.', as written
  std::string_view frac_digits;  // digits after the '.', as written ("" when none)
  size_t first = 0;              // index of d1 in int_digits + frac_digits
  size_t count = 0;              // n, the number of significant digits
  int64_t exponent = 0;          // see above

  bool isZero() const noexcept { return count == 0; }
};

// False when `text` is not exactly one JSON number within the bounds above.
bool parseDecimal(std::string_view text, Decimal& out) noexcept;

// Same value (exact).
bool decimalEquals(const Decimal& a, const Decimal& b) noexcept;

// Both texts are numbers with the same value.
bool sameNumber(std::string_view a, std::string_view b) noexcept;

}  // namespace gw::mcp
