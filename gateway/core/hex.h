#pragma once
// Hexadecimal digits, both ways: the value of one digit (percent-decoding, chunk sizes, JSON
// \u escapes, digests in settings) and lowercase hex text of bytes (digests, certificate
// fingerprints, JSON \u00XX escapes, chunk-size lines). The one copy in gateway/.

#include <cstddef>
#include <string>
#include <string_view>

namespace gw::core {

// Lowercase hex digits: kHexDigits[v] for v in 0..15.
inline constexpr char kHexDigits[] = "0123456789abcdef";

// The value of a hex digit (either case), or -1.
constexpr int hexValue(char c) noexcept {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  if (c >= 'A' && c <= 'F') {
    return c - 'A' + 10;
  }
  return -1;
}

// Appends two lowercase hex digits per byte of `bytes`.
inline void appendHex(std::string& out, std::string_view bytes) {
  out.reserve(out.size() + 2 * bytes.size());
  for (const char b : bytes) {
    const auto u = static_cast<unsigned char>(b);
    out.push_back(kHexDigits[u >> 4]);
    out.push_back(kHexDigits[u & 0xF]);
  }
}

// `bytes` as lowercase hex text (2 digits per byte).
inline std::string hexEncode(std::string_view bytes) {
  std::string out;
  appendHex(out, bytes);
  return out;
}

}  // namespace gw::core
