// Base64 sentinel codec for MCP header values (spec items 48-53). Called by the header
// contract (contract.cc) for Mcp-Name and every Mcp-Param-*; decoded bytes live in the
// per-connection ValueArena, so decoding allocates nothing.

#include "gateway/mcp/sentinel.h"

#include <array>
#include <cstdint>

#include "gateway/core/utf8.h"

namespace gw::mcp {

namespace {

constexpr std::string_view kPrefix = "=?base64?";
constexpr std::string_view kSuffix = "?=";
constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

constexpr uint8_t kBad = 0xff;  // not in the alphabet (includes '=': padding is positional)

constexpr std::array<uint8_t, 256> makeDecodeTable() {
  std::array<uint8_t, 256> t{};
  for (auto& v : t) {
    v = kBad;
  }
  for (uint8_t i = 0; i < 64; ++i) {
    t[static_cast<unsigned char>(kAlphabet[i])] = i;
  }
  return t;
}
constexpr std::array<uint8_t, 256> kDecode = makeDecodeTable();

uint8_t sym(char c) {
  return kDecode[static_cast<unsigned char>(c)];
}

// Both markers present without overlapping: `=?base64?=` (10 bytes) shares its `?` between
// prefix and suffix and is therefore a literal.
bool isSentinelShaped(std::string_view v) {
  return v.size() >= kPrefix.size() + kSuffix.size() && v.starts_with(kPrefix) &&
         v.ends_with(kSuffix);
}

SentinelResult invalid(const char* reason) {
  return SentinelResult{SentinelStatus::kInvalid, {}, reason};
}

}  // namespace

SentinelResult decodeSentinel(std::string_view raw, ValueArena& arena) noexcept {
  if (!isSentinelShaped(raw)) {
    return SentinelResult{SentinelStatus::kLiteral, raw, ""};
  }
  const std::string_view payload =
      raw.substr(kPrefix.size(), raw.size() - kPrefix.size() - kSuffix.size());
  if (payload.empty()) {
    return SentinelResult{SentinelStatus::kDecoded, std::string_view(), ""};
  }
  if (payload.size() % 4 != 0) {
    return invalid("invalid base64: length not a multiple of 4");
  }

  // Padding: only in the last quantum, at most two `=`, and only at its end.
  size_t pad = 0;
  if (payload.back() == '=') {
    pad = payload[payload.size() - 2] == '=' ? 2 : 1;
  }
  const size_t out_len = payload.size() / 4 * 3 - pad;
  const size_t body_len = payload.size() - pad;  // symbols that must be in the alphabet

  // Validate everything before taking arena space, so a malformed value costs none.
  for (size_t i = 0; i < body_len; ++i) {
    if (sym(payload[i]) == kBad) {
      return invalid(payload[i] == '=' ? "invalid base64: misplaced padding"
                                       : "invalid base64: character outside the alphabet");
    }
  }
  // Canonical form (RFC 4648 §3.5): the bits of the last symbol that fall beyond the
  // decoded bytes must be zero. Otherwise several header byte strings decode to the same
  // value, and anything keyed on the raw header (a route or policy matcher, a log line, a
  // cache) could disagree with what the decoded value — the one compared to the body —
  // says. Rejecting them keeps raw ↔ decoded one-to-one.
  if (pad == 2 && (sym(payload[body_len - 1]) & 0x0f) != 0) {
    return invalid("invalid base64: non-canonical trailing bits");
  }
  if (pad == 1 && (sym(payload[body_len - 1]) & 0x03) != 0) {
    return invalid("invalid base64: non-canonical trailing bits");
  }

  char* out = arena.allocate(out_len);
  if (out == nullptr) {
    return invalid("header values too large");
  }
  size_t o = 0;
  size_t i = 0;
  for (; i + 4 <= body_len; i += 4) {
    const uint32_t n = (uint32_t{sym(payload[i])} << 18) | (uint32_t{sym(payload[i + 1])} << 12) |
                       (uint32_t{sym(payload[i + 2])} << 6) | uint32_t{sym(payload[i + 3])};
    out[o++] = static_cast<char>(n >> 16);
    out[o++] = static_cast<char>((n >> 8) & 0xff);
    out[o++] = static_cast<char>(n & 0xff);
  }
  if (pad != 0) {
    uint32_t n = (uint32_t{sym(payload[i])} << 18) | (uint32_t{sym(payload[i + 1])} << 12);
    if (pad == 1) {
      n |= uint32_t{sym(payload[i + 2])} << 6;
    }
    out[o++] = static_cast<char>(n >> 16);
    if (pad == 1) {
      out[o++] = static_cast<char>((n >> 8) & 0xff);
    }
  }
  const std::string_view decoded(out, o);
  if (!core::isValidUtf8(decoded)) {
    return invalid("decoded value is not UTF-8");
  }
  return SentinelResult{SentinelStatus::kDecoded, decoded, ""};
}

bool needsSentinel(std::string_view value) noexcept {
  if (value.empty()) {
    return false;  // sent as a present, empty header (SEP table)
  }
  for (char ch : value) {
    const auto c = static_cast<unsigned char>(ch);
    if (c < 0x20 || c >= 0x7f) {  // controls (incl. HTAB), DEL, non-ASCII
      return true;
    }
  }
  if (value.front() == ' ' || value.back() == ' ') {
    return true;
  }
  // Item 50 literally: starts with the prefix and ends with the suffix. This includes the
  // overlapping `=?base64?=` that decodeSentinel reads as a literal; encoding it anyway is
  // always safe and keeps lenient decoders elsewhere from misreading it.
  return value.starts_with(kPrefix) && value.ends_with(kSuffix);
}

std::string encodeSentinel(std::string_view value) {
  std::string out;
  out.reserve(kPrefix.size() + (value.size() + 2) / 3 * 4 + kSuffix.size());
  out.append(kPrefix);
  size_t i = 0;
  for (; i + 3 <= value.size(); i += 3) {
    const uint32_t n = (uint32_t{static_cast<unsigned char>(value[i])} << 16) |
                       (uint32_t{static_cast<unsigned char>(value[i + 1])} << 8) |
                       uint32_t{static_cast<unsigned char>(value[i + 2])};
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(kAlphabet[(n >> 6) & 63]);
    out.push_back(kAlphabet[n & 63]);
  }
  const size_t rest = value.size() - i;
  if (rest != 0) {
    uint32_t n = uint32_t{static_cast<unsigned char>(value[i])} << 16;
    if (rest == 2) {
      n |= uint32_t{static_cast<unsigned char>(value[i + 1])} << 8;
    }
    out.push_back(kAlphabet[(n >> 18) & 63]);
    out.push_back(kAlphabet[(n >> 12) & 63]);
    out.push_back(rest == 2 ? kAlphabet[(n >> 6) & 63] : '=');
    out.push_back('=');
  }
  out.append(kSuffix);
  return out;
}

}  // namespace gw::mcp
