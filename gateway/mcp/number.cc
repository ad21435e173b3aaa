// Exact decimal comparison of JSON number texts (see number.h).

#include "gateway/mcp/number.h"

namespace gw::mcp {

namespace {

bool isDigit(char c) noexcept {
  return c >= '0' && c <= '9';
}

// The k-th digit of int_digits + frac_digits.
char digitAt(const Decimal& d, size_t k) noexcept {
  return k < d.int_digits.size() ? d.int_digits[k] : d.frac_digits[k - d.int_digits.size()];
}

}  // namespace

bool parseDecimal(std::string_view s, Decimal& out) noexcept {
  out = Decimal{};
  size_t i = 0;
  const size_t n = s.size();
  auto digits = [&]() {
    const size_t start = i;
    while (i < n && isDigit(s[i])) {
      ++i;
    }
    return s.substr(start, i - start);
  };
  bool negative = false;
  if (i < n && s[i] == '-') {
    negative = true;
    ++i;
  }
  out.int_digits = digits();
  if (out.int_digits.empty() || (out.int_digits.size() > 1 && out.int_digits[0] == '0')) {
    return false;
  }
  if (i < n && s[i] == '.') {
    ++i;
    out.frac_digits = digits();
    if (out.frac_digits.empty()) {
      return false;
    }
  }
  int64_t exp = 0;
  bool exp_too_large = false;
  if (i < n && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    bool exp_negative = false;
    if (i < n && (s[i] == '+' || s[i] == '-')) {
      exp_negative = s[i] == '-';
      ++i;
    }
    std::string_view e = digits();
    if (e.empty()) {
      return false;
    }
    while (e.size() > 1 && e[0] == '0') {
      e.remove_prefix(1);
    }
    exp_too_large = e.size() > kMaxExponentDigits;
    for (char c : exp_too_large ? std::string_view{} : e) {
      exp = exp * 10 + (c - '0');
    }
    if (exp_negative) {
      exp = -exp;
    }
  }
  if (i != n) {
    return false;
  }

  const size_t total = out.int_digits.size() + out.frac_digits.size();
  size_t first = 0;
  while (first < total && digitAt(out, first) == '0') {
    ++first;
  }
  if (first == total) {
    return true;  // zero: no sign, no exponent
  }
  if (exp_too_large) {
    return false;
  }
  size_t last = total - 1;
  while (digitAt(out, last) == '0') {
    --last;
  }
  out.negative = negative;
  out.first = first;
  out.count = last - first + 1;
  out.exponent = static_cast<int64_t>(out.int_digits.size()) - static_cast<int64_t>(first) + exp;
  return true;
}

bool decimalEquals(const Decimal& a, const Decimal& b) noexcept {
  if (a.negative != b.negative || a.count != b.count || a.exponent != b.exponent) {
    return false;
  }
  for (size_t k = 0; k < a.count; ++k) {
    if (digitAt(a, a.first + k) != digitAt(b, b.first + k)) {
      return false;
    }
  }
  return true;
}

bool sameNumber(std::string_view a, std::string_view b) noexcept {
  Decimal da;
  Decimal db;
  return parseDecimal(a, da) && parseDecimal(b, db) && decimalEquals(da, db);
}

}  // namespace gw::mcp
