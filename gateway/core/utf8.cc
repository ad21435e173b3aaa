// UTF-8 validation and encoding (see utf8.h).

#include "gateway/core/utf8.h"

#include <simdjson.h>

namespace gw::core {

bool isValidUtf8(std::string_view s) noexcept {
  return simdjson::validate_utf8(s.data(), s.size());
}

size_t utf8SequenceLength(std::string_view s, size_t i) noexcept {
  const auto b0 = static_cast<unsigned char>(s[i]);
  if (b0 < 0x80) {
    return 1;
  }
  size_t len = 0;
  unsigned char lo = 0x80;  // the range of the second byte
  unsigned char hi = 0xBF;
  if (b0 >= 0xC2 && b0 <= 0xDF) {
    len = 2;
  } else if (b0 >= 0xE0 && b0 <= 0xEF) {
    len = 3;
    lo = b0 == 0xE0 ? 0xA0 : 0x80;  // no overlong forms
    hi = b0 == 0xED ? 0x9F : 0xBF;  // no encoded surrogates
  } else if (b0 >= 0xF0 && b0 <= 0xF4) {
    len = 4;
    lo = b0 == 0xF0 ? 0x90 : 0x80;  // no overlong forms
    hi = b0 == 0xF4 ? 0x8F : 0xBF;  // nothing above U+10FFFF
  } else {
    return 0;  // a continuation byte, C0/C1 (overlong) or F5-FF
  }
  if (s.size() - i < len) {
    return 0;
  }
  const auto b1 = static_cast<unsigned char>(s[i + 1]);
  if (b1 < lo || b1 > hi) {
    return 0;
  }
  for (size_t k = 2; k < len; ++k) {
    const auto b = static_cast<unsigned char>(s[i + k]);
    if (b < 0x80 || b > 0xBF) {
      return 0;
    }
  }
  return len;
}

size_t invalidUtf8At(std::string_view s) noexcept {
  if (isValidUtf8(s)) {
    return s.size();
  }
  size_t i = 0;
  while (i < s.size()) {
    const size_t len = utf8SequenceLength(s, i);
    if (len == 0) {
      return i;
    }
    i += len;
  }
  return s.size();  // not reached: simdjson and this reader agree on what is UTF-8
}

void appendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

}  // namespace gw::core
