// CIDR parsing and matching (see cidr.h).

#include "gateway/core/cidr.h"

#include <arpa/inet.h>

#include <cstring>

namespace gw::core {

bool parseIp(std::string_view text, IpAddress& out) noexcept {
  char buf[INET6_ADDRSTRLEN + 1];
  if (text.empty() || text.size() >= sizeof(buf)) {
    return false;
  }
  std::memcpy(buf, text.data(), text.size());
  buf[text.size()] = '\0';
  out = IpAddress{};
  if (inet_pton(AF_INET, buf, out.bytes.data()) == 1) {
    return true;
  }
  if (inet_pton(AF_INET6, buf, out.bytes.data()) == 1) {
    out.v6 = true;
    return true;
  }
  return false;
}

namespace {

// ::ffff:a.b.c.d → a.b.c.d; anything else unchanged.
IpAddress unmapped(const IpAddress& ip) noexcept {
  static constexpr uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (!ip.v6 || std::memcmp(ip.bytes.data(), kMapped, sizeof(kMapped)) != 0) {
    return ip;
  }
  IpAddress v4;
  std::memcpy(v4.bytes.data(), ip.bytes.data() + 12, 4);
  return v4;
}

bool prefixEqual(const IpAddress& a, const IpAddress& b, unsigned prefix) noexcept {
  const unsigned full = prefix / 8;
  if (std::memcmp(a.bytes.data(), b.bytes.data(), full) != 0) {
    return false;
  }
  const unsigned rest = prefix % 8;
  if (rest == 0) {
    return true;
  }
  const auto mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a.bytes[full] & mask) == (b.bytes[full] & mask);
}

}  // namespace

bool Cidr::contains(const IpAddress& ip) const noexcept {
  const IpAddress a = unmapped(ip);
  return a.v6 == base.v6 && prefixEqual(a, base, prefix);
}

bool parseCidr(std::string_view text, Cidr& out) noexcept {
  const size_t slash = text.find('/');
  if (!parseIp(text.substr(0, slash), out.base)) {
    return false;
  }
  const unsigned max = out.base.v6 ? 128 : 32;
  unsigned prefix = max;
  if (slash != std::string_view::npos) {
    std::string_view digits = text.substr(slash + 1);
    if (digits.empty() || digits.size() > 3) {
      return false;
    }
    prefix = 0;
    for (char c : digits) {
      if (c < '0' || c > '9') {
        return false;
      }
      prefix = prefix * 10 + static_cast<unsigned>(c - '0');
    }
    if (prefix > max) {
      return false;
    }
  }
  out.prefix = static_cast<uint8_t>(prefix);
  // Host bits must be zero.
  IpAddress zero = out.base;
  const unsigned bytes = max / 8;
  for (unsigned bit = prefix; bit < max; ++bit) {
    zero.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80u >> (bit % 8)));
  }
  return std::memcmp(zero.bytes.data(), out.base.bytes.data(), bytes) == 0;
}

}  // namespace gw::core
