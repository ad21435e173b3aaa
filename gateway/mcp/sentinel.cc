// Base64 sentinel codec for MCP header values (spec items 48-53). Called by the header
// contract (contract.cc) for Mcp-Name and every Mcp-Param-*; decoded bytes live in the
// per-connection ValueArena, so decoding allocates nothing.

#include "gateway/mcp/sentinel.h"

#include "gateway/core/base64.h"
#include "gateway/core/utf8.h"

namespace gw::mcp {

namespace {

constexpr std::string_view kPrefix = "=?base64?";
constexpr std::string_view kSuffix = "?=";
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
  const core::Base64Check check =
      core::base64Check(payload, core::Base64Alphabet::kStandard, core::Base64Padding::kRequired);
  switch (check.error) {
    case core::Base64Error::kNone:
      break;
    case core::Base64Error::kLength:
      return invalid("invalid base64: length not a multiple of 4");
    case core::Base64Error::kMisplacedPadding:
      return invalid("invalid base64: misplaced padding");
    case core::Base64Error::kAlphabet:
      return invalid("invalid base64: character outside the alphabet");
    case core::Base64Error::kNonCanonical:
      // Canonical form (RFC 4648 §3.5): otherwise several header byte strings decode to the
      // same value, and anything keyed on the raw header (a route or policy matcher, a log
      // line, a cache) could disagree with what the decoded value — the one compared to the
      // body — says. Rejecting them keeps raw ↔ decoded one-to-one.
      return invalid("invalid base64: non-canonical trailing bits");
  }
  // Validated before taking arena space, so a malformed value costs none.
  char* out = arena.allocate(check.decoded_size);
  if (out == nullptr) {
    return invalid("header values too large");
  }
  core::base64DecodeChecked(payload, core::Base64Alphabet::kStandard, out);
  const std::string_view decoded(out, check.decoded_size);
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
  core::appendBase64(out, value, core::Base64Alphabet::kStandard, core::Base64Padding::kRequired);
  out.append(kSuffix);
  return out;
}

}  // namespace gw::mcp
