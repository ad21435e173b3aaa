// Base64 and base64url codec (see base64.h).

#include "gateway/core/base64.h"

#include <array>

namespace gw::core {

namespace {

constexpr char kStandard[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
constexpr char kUrl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

constexpr uint8_t kBad = 0xff;  // not in the alphabet (includes '=': padding is positional)

constexpr std::array<uint8_t, 256> makeDecodeTable(const char (&alphabet)[65]) {
  std::array<uint8_t, 256> t{};
  for (auto& v : t) {
    v = kBad;
  }
  for (uint8_t i = 0; i < 64; ++i) {
    t[static_cast<unsigned char>(alphabet[i])] = i;
  }
  return t;
}
constexpr std::array<uint8_t, 256> kDecodeStandard = makeDecodeTable(kStandard);
constexpr std::array<uint8_t, 256> kDecodeUrl = makeDecodeTable(kUrl);

const std::array<uint8_t, 256>& decodeTable(Base64Alphabet a) noexcept {
  return a == Base64Alphabet::kUrl ? kDecodeUrl : kDecodeStandard;
}

}  // namespace

bool isBase64Symbol(char c, Base64Alphabet alphabet) noexcept {
  return decodeTable(alphabet)[static_cast<unsigned char>(c)] != kBad;
}

Base64Check base64Check(std::string_view in, Base64Alphabet alphabet,
                        Base64Padding padding) noexcept {
  const auto& table = decodeTable(alphabet);
  size_t pad = 0;
  size_t decoded = 0;
  if (padding == Base64Padding::kRequired) {
    if (in.size() % 4 != 0) {
      return {Base64Error::kLength, 0};
    }
    if (!in.empty() && in.back() == '=') {
      pad = in[in.size() - 2] == '=' ? 2 : 1;
    }
    decoded = in.size() / 4 * 3 - pad;
  } else {
    if (in.size() % 4 == 1) {
      return {Base64Error::kLength, 0};
    }
    decoded = in.size() / 4 * 3 + (in.size() % 4 == 0 ? 0 : in.size() % 4 - 1);
  }
  const size_t body = in.size() - pad;  // symbols that must be in the alphabet
  for (size_t i = 0; i < body; ++i) {
    if (table[static_cast<unsigned char>(in[i])] == kBad) {
      return {padding == Base64Padding::kRequired && in[i] == '=' ? Base64Error::kMisplacedPadding
                                                                  : Base64Error::kAlphabet,
              0};
    }
  }
  // A short last quantum: 2 symbols carry 1 byte and 4 spare bits, 3 carry 2 and 2 spare.
  const uint8_t spare = body % 4 == 2 ? 0x0f : body % 4 == 3 ? 0x03 : 0;
  if (spare != 0 && (table[static_cast<unsigned char>(in[body - 1])] & spare) != 0) {
    return {Base64Error::kNonCanonical, 0};
  }
  return {Base64Error::kNone, decoded};
}

void base64DecodeChecked(std::string_view in, Base64Alphabet alphabet, char* out) noexcept {
  const auto& table = decodeTable(alphabet);
  uint32_t acc = 0;
  int bits = 0;
  size_t o = 0;
  for (const char c : in) {
    if (c == '=') {
      break;
    }
    acc = (acc << 6) | table[static_cast<unsigned char>(c)];
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out[o++] = static_cast<char>((acc >> bits) & 0xff);
    }
  }
}

bool base64Decode(std::string_view in, Base64Alphabet alphabet, Base64Padding padding,
                  std::string& out) {
  out.clear();
  const Base64Check check = base64Check(in, alphabet, padding);
  if (check.error != Base64Error::kNone) {
    return false;
  }
  out.resize(check.decoded_size);
  base64DecodeChecked(in, alphabet, out.data());
  return true;
}

void appendBase64(std::string& out, std::string_view bytes, Base64Alphabet alphabet,
                  Base64Padding padding) {
  const char* sym = alphabet == Base64Alphabet::kUrl ? kUrl : kStandard;
  out.reserve(out.size() + (bytes.size() + 2) / 3 * 4);
  const auto byte = [&](size_t i) { return uint32_t{static_cast<unsigned char>(bytes[i])}; };
  size_t i = 0;
  for (; i + 3 <= bytes.size(); i += 3) {
    const uint32_t n = (byte(i) << 16) | (byte(i + 1) << 8) | byte(i + 2);
    out.push_back(sym[(n >> 18) & 63]);
    out.push_back(sym[(n >> 12) & 63]);
    out.push_back(sym[(n >> 6) & 63]);
    out.push_back(sym[n & 63]);
  }
  const size_t rest = bytes.size() - i;
  if (rest == 0) {
    return;
  }
  uint32_t n = byte(i) << 16;
  if (rest == 2) {
    n |= byte(i + 1) << 8;
  }
  out.push_back(sym[(n >> 18) & 63]);
  out.push_back(sym[(n >> 12) & 63]);
  if (rest == 2) {
    out.push_back(sym[(n >> 6) & 63]);
  }
  if (padding == Base64Padding::kRequired) {
    out.append(rest == 2 ? 1 : 2, '=');
  }
}

}  // namespace gw::core
