#pragma once
// IPv4/IPv6 address ranges (CIDR) for `trusted_proxies`. Pure: text in, values out; the
// settings loader parses them once, the request path only compares bytes.

#include <array>
#include <cstdint>
#include <string_view>

namespace gw::core {

// An IP address in network byte order; IPv4 is kept as IPv4 (not IPv4-mapped IPv6), but
// contains() treats ::ffff:a.b.c.d as a.b.c.d.
struct IpAddress {
  bool v6 = false;
  std::array<uint8_t, 16> bytes{};  // first 4 used for IPv4
};

// Parses an IPv4 dotted quad or an IPv6 literal (no brackets, no zone). False on anything else.
bool parseIp(std::string_view text, IpAddress& out) noexcept;

struct Cidr {
  IpAddress base;      // host bits cleared
  uint8_t prefix = 0;  // 0..32 (IPv4) or 0..128 (IPv6)

  bool contains(const IpAddress& ip) const noexcept;
};

// "10.0.0.0/8", "192.168.1.7" (= /32), "::1", "fd00::/8". Host bits set beyond the prefix
// ("10.1.2.3/8") are refused: a typo there would widen trust silently. False on anything else.
bool parseCidr(std::string_view text, Cidr& out) noexcept;

}  // namespace gw::core
