// Unit tests for settings/ value grammars: durations, sizes, addresses.

#include <catch.hpp>
#include <cstdint>
#include <string>

#include "gateway/settings/settings.h"

namespace gw::settings {
namespace {

TEST_CASE("parseDuration accepts units and a bare zero", "[settings]") {
  struct Case {
    const char* text;
    int64_t ms;
  };
  const Case cases[] = {
      {"0", 0},       {"0s", 0},       {"250ms", 250},   {"1ms", 1},     {"10s", 10000},
      {"5m", 300000}, {"1h", 3600000}, {"90m", 5400000}, {"007s", 7000}, {"24h", 86400000},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    Duration d{-1};
    REQUIRE(parseDuration(c.text, d));
    CHECK(d.count() == c.ms);
  }
}

TEST_CASE("parseDuration rejects everything else", "[settings]") {
  const char* bad[] = {"",
                       "10",
                       "1",
                       "-1s",
                       "+1s",
                       "1.5s",
                       "s",
                       "ms",
                       "10 s",
                       " 10s",
                       "10s ",
                       "10S",
                       "10sec",
                       "1d",
                       "1m30s",
                       "10us",
                       "0x10s",
                       "99999999999999999999s",
                       "9999999999999999h"};
  for (const char* text : bad) {
    INFO(text);
    Duration d{1234};
    CHECK_FALSE(parseDuration(text, d));
    CHECK(d.count() == 1234);  // untouched on failure
  }
}

TEST_CASE("parseSize accepts bytes and binary/decimal units", "[settings]") {
  struct Case {
    const char* text;
    uint64_t bytes;
  };
  const Case cases[] = {
      {"0", 0},
      {"512", 512},
      {"8KiB", 8192},
      {"4MiB", 4u * 1024 * 1024},
      {"1GiB", 1024ull * 1024 * 1024},
      {"10KB", 10000},
      {"3MB", 3000000},
      {"2GB", 2000000000ull},
      {"18446744073709551615", UINT64_MAX},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    uint64_t v = 1;
    REQUIRE(parseSize(c.text, v));
    CHECK(v == c.bytes);
  }
}

TEST_CASE("parseSize rejects everything else", "[settings]") {
  const char* bad[] = {"",
                       "KiB",
                       "-1",
                       "1.5MiB",
                       "8kib",
                       "8K",
                       "8 KiB",
                       "8KiB ",
                       "8B",
                       "1TiB",
                       "0x10",
                       "18446744073709551616",
                       "17179869184GiB"};
  for (const char* text : bad) {
    INFO(text);
    uint64_t v = 77;
    CHECK_FALSE(parseSize(text, v));
  }
}

TEST_CASE("parseAddress accepts IPv4, bracketed IPv6 and host names", "[settings]") {
  struct Case {
    const char* text;
    const char* host;
    uint16_t port;
    const char* ip;  // "" for a name: the loader resolves it
  };
  const Case cases[] = {
      {"127.0.0.1:8080", "127.0.0.1", 8080, "127.0.0.1"},
      {"0.0.0.0:0", "0.0.0.0", 0, "0.0.0.0"},
      {"[::1]:8080", "::1", 8080, "::1"},
      {"[::]:65535", "::", 65535, "::"},
      {"[fe80::1:2]:9", "fe80::1:2", 9, "fe80::1:2"},
      {"localhost:80", "localhost", 80, ""},
      {"mcp-server:3000", "mcp-server", 3000, ""},
      {"Redis.Cache-1.svc.cluster.local:6379", "Redis.Cache-1.svc.cluster.local", 6379, ""},
      {"3com.example:1", "3com.example", 1, ""},
      {"a:1", "a", 1, ""},
  };
  for (const Case& c : cases) {
    INFO(c.text);
    Address a;
    REQUIRE(parseAddress(c.text, a));
    CHECK(a.host == c.host);
    CHECK(a.port == c.port);
    CHECK(a.text == c.text);
    CHECK(a.ip == c.ip);
  }
}

TEST_CASE("parseAddress host names: label and total length limits", "[settings]") {
  std::string label63(63, 'a');
  std::string label64(64, 'a');
  Address a;
  CHECK(parseAddress(label63 + ".example:80", a));
  CHECK_FALSE(parseAddress(label64 + ".example:80", a));
  // 4 labels of 63 + 3 dots = 255 characters; trimmed to exactly 253 and to 254.
  std::string name = label63 + "." + label63 + "." + label63 + "." + label63;
  CHECK_FALSE(parseAddress(name + ":80", a));
  CHECK(parseAddress(name.substr(0, 253) + ":80", a));
  CHECK(a.host.size() == 253);
  CHECK_FALSE(parseAddress(name.substr(0, 254) + ":80", a));
}

TEST_CASE("parseAddress rejects bad hosts and ports", "[settings]") {
  const char* bad[] = {"",
                       "127.0.0.1",
                       "127.0.0.1:",
                       ":8080",
                       "127.0.0.1:65536",
                       "127.0.0.1:99999999",
                       "127.0.0.1:-1",
                       "127.0.0.1:80a",
                       "127.0.0.1: 80",
                       "256.0.0.1:80",
                       "::1:80",
                       "[::1]",
                       "[::1]80",
                       "[::1:80",
                       "[127.0.0.1]:80",
                       "localhost",
                       "garbage",
                       "-mcp:80",
                       "mcp-:80",
                       "mcp-.example:80",
                       "a..b:80",
                       ".example:80",
                       "example.:80",
                       "mcp_server:80",
                       "mcp server:80",
                       "xn--caf\xc3\xa9:80",
                       "host/path:80",
                       "127.1:80",
                       "0x7f000001:80",
                       "2130706433:80",
                       "1.2.3.4.5:80",
                       ":80"};
  for (const char* text : bad) {
    INFO(text);
    Address a;
    CHECK_FALSE(parseAddress(text, a));
  }
}

TEST_CASE("Diagnostic::str and Settings::upstreamIndex", "[settings]") {
  Diagnostic d{"conf/gw.yaml", 3, 7, "unknown key 'x'"};
  CHECK(d.str() == "conf/gw.yaml:3:7: unknown key 'x'");
  Settings s;
  s.upstreams.resize(2);
  s.upstreams[0].name = "a";
  s.upstreams[1].name = "b";
  CHECK(s.upstreamIndex("a") == 0);
  CHECK(s.upstreamIndex("b") == 1);
  CHECK(s.upstreamIndex("c") == -1);
  CHECK(s.upstreamIndex("") == -1);
}

}  // namespace
}  // namespace gw::settings
