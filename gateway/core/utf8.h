#pragma once
// UTF-8 validation and encoding, the one copy in gateway/: whole-text validation is
// simdjson's (SIMD), the per-sequence reader serves the JSON escaper and the pins
// canonicalizer, which must say where a text stops being UTF-8. "Valid" means RFC 3629:
// no overlong forms, no encoded surrogates, nothing above U+10FFFF.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gw::core {

// True when all of `s` is valid UTF-8.
bool isValidUtf8(std::string_view s) noexcept;

// The length (1..4) of the valid UTF-8 sequence starting at s[i], or 0 when the bytes there
// are not one (a continuation byte, an overlong or surrogate form, a code point above
// U+10FFFF, or a sequence cut by the end of `s`). Requires i < s.size().
size_t utf8SequenceLength(std::string_view s, size_t i) noexcept;

// The offset of the first byte that does not belong to a valid UTF-8 sequence, or s.size()
// when all of `s` is valid.
size_t invalidUtf8At(std::string_view s) noexcept;

// Appends code point `cp` (≤ U+10FFFF, not a surrogate: the caller checked) as UTF-8.
void appendUtf8(std::string& out, uint32_t cp);

}  // namespace gw::core
