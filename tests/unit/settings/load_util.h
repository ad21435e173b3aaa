#pragma once
// Helpers for the settings tests: what a load said, and where.

#include <string>
#include <string_view>

#include "gateway/settings/settings.h"

namespace gw::settings::test {

// Every diagnostic of `r`, one "file:line:column: message" per line (for INFO / failures).
inline std::string dump(const LoadResult& r) {
  std::string out;
  for (const Diagnostic& d : r.errors) {
    out += d.str() + "\n";
  }
  return out;
}

// True when some diagnostic sits at line:column and its message contains `text`.
inline bool hasError(const LoadResult& r, int line, int column, std::string_view text) {
  for (const Diagnostic& d : r.errors) {
    if (d.line == line && d.column == column && d.message.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

// True when some diagnostic's message contains `text` (position not checked).
inline bool hasError(const LoadResult& r, std::string_view text) {
  for (const Diagnostic& d : r.errors) {
    if (d.message.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

}  // namespace gw::settings::test
