// router/: glob matching (see glob.h). Common shapes (literal, `*`, `a*`, `*b`) are
// classified once at compile time; the general case is core::globMatch.

#include "gateway/router/glob.h"

#include <algorithm>
#include <utility>

#include "gateway/core/glob.h"

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
  return core::globMatch(pattern_, s, [](char a, char b) { return a == b; });
}

}  // namespace gw::router
