#pragma once
// Base64 and base64url (RFC 4648 §4, §5), the one copy in gateway/: MCP header sentinels
// (standard alphabet, `=` padding required), JWT segments and JWK members (url alphabet, no
// padding) and session tokens (url alphabet, no padding). Decoding is strict and canonical:
// no whitespace, no characters outside the alphabet, and the bits of the last symbol beyond
// the decoded bytes must be zero (RFC 4648 §3.5), so each byte string has one encoding.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace gw::core {

enum class Base64Alphabet : uint8_t {
  kStandard,  // A-Z a-z 0-9 + /
  kUrl,       // A-Z a-z 0-9 - _
};

enum class Base64Padding : uint8_t {
  kRequired,  // length a multiple of 4; one or two `=` end a short last quantum
  kNone,      // no `=` at all; any length but 4n+1
};

enum class Base64Error : uint8_t {
  kNone,
  kLength,            // kRequired: not a multiple of 4; kNone: 4n+1
  kMisplacedPadding,  // kRequired: `=` before the padding at the end
  kAlphabet,          // a character outside the alphabet (kNone: `=` too)
  kNonCanonical,      // bits of the last symbol beyond the decoded bytes are not zero
};

struct Base64Check {
  Base64Error error = Base64Error::kNone;
  size_t decoded_size = 0;  // bytes base64DecodeChecked writes (when error is kNone)
};

// True when `c` is a symbol of `alphabet` (`=` is not).
bool isBase64Symbol(char c, Base64Alphabet alphabet) noexcept;

// Validates `in` without decoding it; errors are reported in this order: length, then the
// first bad character, then trailing bits.
Base64Check base64Check(std::string_view in, Base64Alphabet alphabet,
                        Base64Padding padding) noexcept;

// Decodes `in`, which base64Check accepted with the same alphabet, into
// out[0..decoded_size). For callers that place the bytes themselves (an arena).
void base64DecodeChecked(std::string_view in, Base64Alphabet alphabet, char* out) noexcept;

// Validates and decodes `in` into `out` (replaced). False (out cleared) when base64Check
// refuses it.
bool base64Decode(std::string_view in, Base64Alphabet alphabet, Base64Padding padding,
                  std::string& out);

// Appends `bytes` encoded; kRequired pads the last quantum with `=`.
void appendBase64(std::string& out, std::string_view bytes, Base64Alphabet alphabet,
                  Base64Padding padding);

}  // namespace gw::core
