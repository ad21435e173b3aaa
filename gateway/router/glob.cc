// router/: glob matching (see glob.h). The general case is the classic two-pointer
// backtracking match: on a mismatch, retry from the most recent `*` consuming one more
// character. Common shapes (literal, `*`, `a*`, `*b`) are classified once at compile time.

#include "gateway/router/glob.h"

#include <algorithm>
#include <utility>

namespace gw::router {

Glob::Glob(std::string pattern) : pattern_(std::move(pattern)) {
  size_t stars = static_cast<size_t>(std::count(pattern_.begin(), pattern_.end(), '*'));
  if (stars == 0) {
    kind_ = Kind::kLiteral;
  } else if (stars == pattern_.size()) {
    kind_ = Kind::kAny;
  } else if (stars == 1 && pattern_.back() == '*') {
    kind_ = Kind::kPrefix;
  } else if (stars == 1 && pattern_.front() == '*') {
    kind_ = Kind::kSuffix;
  } else {
    kind_ = Kind::kGeneral;
  }
}

std::string_view Glob::fixed() const noexcept {
  std::string_view p = pattern_;
  switch (kind_) {
    case Kind::kPrefix:
      return p.substr(0, p.size() - 1);
    case Kind::kSuffix:
      return p.substr(1);
    default:
      return p;
  }
}

bool Glob::match(std::string_view s) const noexcept {
  switch (kind_) {
    case Kind::kLiteral:
      return s == std::string_view(pattern_);
    case Kind::kAny:
      return true;
    case Kind::kPrefix:
      return s.starts_with(fixed());
    case Kind::kSuffix:
      return s.ends_with(fixed());
    case Kind::kGeneral:
      break;
  }
  std::string_view p = pattern_;
  size_t pi = 0;
  size_t si = 0;
  size_t star = std::string_view::npos;  // position of the last `*` seen in p
  size_t resume = 0;                     // where in s that `*` currently stops
  while (si < s.size()) {
    if (pi < p.size() && p[pi] == '*') {
      star = pi++;
      resume = si;
    } else if (pi < p.size() && p[pi] == s[si]) {
      ++pi;
      ++si;
    } else if (star != std::string_view::npos) {
      pi = star + 1;
      si = ++resume;
    } else {
      return false;
    }
  }
  while (pi < p.size() && p[pi] == '*') {
    ++pi;
  }
  return pi == p.size();
}

}  // namespace gw::router
