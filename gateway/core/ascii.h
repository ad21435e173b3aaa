#pragma once
// ASCII helpers shared by every parser: RFC 9110 character classes, case-insensitive
// comparison of header names, optional-whitespace trimming. Pure, constexpr, no locale.

#include <array>
#include <cstdint>
#include <string_view>

namespace gw::core {

namespace detail {
constexpr std::array<bool, 256> makeTcharTable() {
  std::array<bool, 256> t{};
  for (int c = '0'; c <= '9'; ++c)
    t[c] = true;
  for (int c = 'a'; c <= 'z'; ++c)
    t[c] = true;
  for (int c = 'A'; c <= 'Z'; ++c)
    t[c] = true;
  for (char c : std::string_view("!#$%&'*+-.^_`|~"))
    t[static_cast<unsigned char>(c)] = true;
  return t;
}
inline constexpr std::array<bool, 256> kTchar = makeTcharTable();
}  // namespace detail

// RFC 9110 tchar: the characters of a token (header names, methods).
constexpr bool isTchar(unsigned char c) {
  return detail::kTchar[c];
}

constexpr bool isToken(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    if (!isTchar(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return true;
}

// RFC 9110 field-vchar plus SP/HTAB (what may appear inside a field value); obs-text
// (0x80-0xFF) is accepted here and judged by the caller.
constexpr bool isFieldValueChar(unsigned char c) {
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}

constexpr char toLowerAscii(char c) {
  return (c >= 'A' && c <= 'Z') ? char(c + 32) : c;
}

constexpr bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    if (toLowerAscii(a[i]) != toLowerAscii(b[i])) {
      return false;
    }
  }
  return true;
}

constexpr bool istartsWith(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && iequals(s.substr(0, prefix.size()), prefix);
}

// Whether `s` contains `needle`, ASCII case-insensitively (short header values only).
constexpr bool icontains(std::string_view s, std::string_view needle) {
  for (size_t i = 0; i + needle.size() <= s.size(); ++i) {
    if (iequals(s.substr(i, needle.size()), needle)) {
      return true;
    }
  }
  return false;
}

// How a host pattern (servers[].hosts, tls.certificates[].hosts: a name, or "*.example.com"
// for any name that ends in ".example.com") takes a host name, compared without case.
enum class HostMatch : uint8_t { kNone, kExact, kWildcard };
constexpr HostMatch matchHost(std::string_view pattern, std::string_view host) {
  if (pattern.starts_with("*.")) {
    const std::string_view suffix = pattern.substr(1);  // ".example.com"
    return host.size() > suffix.size() && iequals(host.substr(host.size() - suffix.size()), suffix)
               ? HostMatch::kWildcard
               : HostMatch::kNone;
  }
  return iequals(pattern, host) ? HostMatch::kExact : HostMatch::kNone;
}

constexpr bool isOws(char c) {
  return c == ' ' || c == '\t';
}

constexpr std::string_view trimOws(std::string_view s) {
  while (!s.empty() && isOws(s.front()))
    s.remove_prefix(1);
  while (!s.empty() && isOws(s.back()))
    s.remove_suffix(1);
  return s;
}

}  // namespace gw::core
