// core::parseCidr / Cidr::contains: the `trusted_proxies` ranges.

#include <catch.hpp>

#include <string_view>

#include "gateway/core/cidr.h"

namespace {

using gw::core::Cidr;
using gw::core::IpAddress;

bool inRange(std::string_view cidr, std::string_view ip) {
  Cidr c;
  IpAddress a;
  REQUIRE(gw::core::parseCidr(cidr, c));
  REQUIRE(gw::core::parseIp(ip, a));
  return c.contains(a);
}

}  // namespace

TEST_CASE("cidr: valid ranges parse, bad ones do not", "[cidr]") {
  for (std::string_view ok : {"10.0.0.0/8", "127.0.0.1", "0.0.0.0/0", "192.168.1.0/24", "::1",
                              "fd00::/8", "::/0", "2001:db8::/32", "10.1.2.3/32"}) {
    Cidr c;
    INFO(ok);
    CHECK(gw::core::parseCidr(ok, c));
  }
  for (std::string_view bad :
       {"", "10.0.0.0/", "10.0.0.0/33", "::/129", "10.1.2.3/8", "10.0.0.0/8/8", "10.0.0",
        "1.2.3.4.5", "localhost", "10.0.0.0/-1", "10.0.0.0/ 8", " 10.0.0.0/8", "fe80::1%eth0",
        "[::1]", "10.0.0.0/0x8", "10.0.0.0/0008"}) {
    Cidr c;
    INFO(bad);
    CHECK_FALSE(gw::core::parseCidr(bad, c));
  }
}

TEST_CASE("cidr: contains compares the prefix bits, IPv4-mapped IPv6 counts as IPv4", "[cidr]") {
  CHECK(inRange("10.0.0.0/8", "10.255.1.2"));
  CHECK_FALSE(inRange("10.0.0.0/8", "11.0.0.1"));
  CHECK(inRange("192.168.1.0/25", "192.168.1.127"));
  CHECK_FALSE(inRange("192.168.1.0/25", "192.168.1.128"));
  CHECK(inRange("127.0.0.1", "127.0.0.1"));
  CHECK_FALSE(inRange("127.0.0.1", "127.0.0.2"));
  CHECK(inRange("0.0.0.0/0", "8.8.8.8"));
  CHECK_FALSE(inRange("0.0.0.0/0", "::1"));
  CHECK(inRange("::1", "::1"));
  CHECK(inRange("fd00::/8", "fd12:3456::1"));
  CHECK_FALSE(inRange("fd00::/8", "fe80::1"));
  CHECK(inRange("10.0.0.0/8", "::ffff:10.1.2.3"));
  CHECK_FALSE(inRange("::/0", "127.0.0.1"));
}
