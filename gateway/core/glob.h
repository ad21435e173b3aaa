#pragma once
// The one `*` glob matcher (any run of characters, including none; everything else literal),
// with the character comparison as a parameter: exact for route and policy values, ASCII
// case-insensitive for host names. Iterative with one backtrack point (the last `*`):
// O(|pattern| * |s|) in the worst case, no recursion, no allocation.

#include <cstddef>
#include <string_view>

namespace gw::core {

template <class Eq>
constexpr bool globMatch(std::string_view pattern, std::string_view s, Eq eq) noexcept {
  size_t p = 0;
  size_t i = 0;
  size_t star = std::string_view::npos;  // position of the last `*` seen in pattern
  size_t resume = 0;                     // where in s that `*` currently stops
  while (i < s.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      resume = i;
    } else if (p < pattern.size() && eq(pattern[p], s[i])) {
      ++p;
      ++i;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      i = ++resume;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') {
    ++p;
  }
  return p == pattern.size();
}

}  // namespace gw::core
