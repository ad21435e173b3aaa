// downstream::ClientCounts, the per-address connection counter behind
// limits.max_connections_per_client (issue 12 item 9): the limit is per address and exact,
// 0 means no limit, a slot given back is reusable, and IPv4 and IPv6 addresses never share a
// count even when their first bytes agree.

#include <catch.hpp>

#include <string>
#include <vector>

#include "gateway/core/cidr.h"
#include "gateway/downstream/client_counts.h"

using gw::core::IpAddress;
using gw::downstream::ClientCounts;

namespace {

IpAddress ip(const std::string& text) {
  IpAddress a;
  REQUIRE(gw::core::parseIp(text, a));
  return a;
}

}  // namespace

TEST_CASE(
    "client counts: an address holds at most `limit` slots, 0 is no limit (issue 12 "
    "item 9, max_connections_per_client)",
    "[downstream][edge]") {
  struct Row {
    const char* addr;
    uint32_t limit;
  };
  const Row rows[] = {{"127.0.0.1", 1}, {"127.0.0.1", 3},   {"10.0.0.7", 256},
                      {"::1", 2},       {"2001:db8::1", 5}, {"::ffff:127.0.0.1", 4}};
  for (const Row& row : rows) {
    INFO(row.addr << " limit " << row.limit);
    ClientCounts counts;
    IpAddress a = ip(row.addr);
    for (uint32_t i = 0; i < row.limit; ++i) {
      CHECK(counts.tryAcquire(a, row.limit));
    }
    CHECK(counts.count(a) == row.limit);
    // Beyond the limit: refused, and the refusal takes nothing.
    CHECK_FALSE(counts.tryAcquire(a, row.limit));
    CHECK_FALSE(counts.tryAcquire(a, row.limit));
    CHECK(counts.count(a) == row.limit);
    // One slot back: exactly one more fits.
    counts.release(a);
    CHECK(counts.tryAcquire(a, row.limit));
    CHECK_FALSE(counts.tryAcquire(a, row.limit));
    // All back: the address is forgotten.
    for (uint32_t i = 0; i < row.limit; ++i) {
      counts.release(a);
    }
    CHECK(counts.count(a) == 0);
  }

  ClientCounts unlimited;
  IpAddress a = ip("192.0.2.1");
  for (int i = 0; i < 1000; ++i) {
    REQUIRE(unlimited.tryAcquire(a, 0));
  }
  CHECK(unlimited.count(a) == 1000);
}

TEST_CASE(
    "client counts: addresses never share a count, IPv4 and IPv6 kept apart, a stray "
    "release does not underflow (issue 12 item 9)",
    "[downstream][edge]") {
  ClientCounts counts;
  // 1.2.3.4 and 0102:0304:: have the same first four bytes; ::ffff:1.2.3.4 is another family.
  const std::vector<std::string> addrs = {
      "1.2.3.4", "1.2.3.5", "102:304::", "::ffff:1.2.3.4", "::1", "127.0.0.1"};
  for (const std::string& s : addrs) {
    INFO(s);
    CHECK(counts.tryAcquire(ip(s), 1));
  }
  for (const std::string& s : addrs) {
    INFO(s);
    CHECK(counts.count(ip(s)) == 1);
    CHECK_FALSE(counts.tryAcquire(ip(s), 1));
  }
  // A release for an address holding nothing changes nothing (no wrap to 2^32-1).
  counts.release(ip("198.51.100.9"));
  CHECK(counts.count(ip("198.51.100.9")) == 0);
  CHECK(counts.tryAcquire(ip("198.51.100.9"), 1));
  CHECK_FALSE(counts.tryAcquire(ip("198.51.100.9"), 1));
}
