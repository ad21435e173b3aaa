#pragma once
// router/: the one pattern language of routes (and later policy rules): `*` matches any run
// of characters, including none; every other byte is literal (no `?`, no classes, no
// escapes). Compiled once when settings are loaded; matching is pure, allocation-free and
// noexcept, so it runs on the request path.

#include <string>
#include <string_view>

namespace gw::router {

class Glob {
 public:
  Glob() = default;  // matches only the empty string
  explicit Glob(std::string pattern);

  // True when the whole of `s` matches the whole pattern. Worst case O(|pattern| * |s|),
  // linear for patterns with at most one `*`.
  bool match(std::string_view s) const noexcept;

  const std::string& pattern() const noexcept { return pattern_; }

 private:
  enum class Kind : unsigned char { kLiteral, kAny, kPrefix, kSuffix, kGeneral };
  std::string pattern_;
  Kind kind_ = Kind::kLiteral;
  std::string_view fixed() const noexcept;  // the literal part for kLiteral/kPrefix/kSuffix
};

}  // namespace gw::router
