// policy/ loader through config::Walker: a typo'd key gets the same "did you mean" hint as in
// gateway.yaml, duplicate keys (top level, nested, and names in claims/params maps) are
// reported with the line of the first, and redis.address takes a host name resolved at load.

#include <stdlib.h>

#include <catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "gateway/policy/policy.h"

namespace gw::policy {
namespace {

using namespace std::chrono_literals;

constexpr const char* kFile = "/tmp/policy-loader-test.yaml";

std::string dump(const std::vector<settings::Diagnostic>& errors) {
  std::string out;
  for (const settings::Diagnostic& d : errors) {
    out += d.str() + "\n";
  }
  return out;
}

std::vector<settings::Diagnostic> loadErrors(const std::string& yaml) {
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::loadString(yaml, kFile, errors);
  CHECK(set == nullptr);
  return errors;
}

// True when some diagnostic sits at line:column and its message contains `text`.
bool hasError(const std::vector<settings::Diagnostic>& errors, int line, int column,
              const std::string& text) {
  for (const settings::Diagnostic& d : errors) {
    if (d.line == line && d.column == column && d.message.find(text) != std::string::npos) {
      return true;
    }
  }
  return false;
}

TEST_CASE("policy loader: a typo'd key gets a did-you-mean hint, at every level", "[policy]") {
  struct Case {
    const char* yaml;
    int line;
    int column;
    const char* message;  // the whole message
  };
  const Case cases[] = {
      {"rulez: []\n", 1, 1, "unknown key 'rulez'; did you mean 'rules'?"},
      {"rules:\n  - name: a\n    acton: deny\n", 3, 5,
       "unknown key 'rules[0].acton'; did you mean 'action'?"},
      {"identity:\n  anonymus: deny\n", 2, 3,
       "unknown key 'identity.anonymus'; did you mean 'anonymous'?"},
      {"rules:\n  - name: a\n    match: { methd: x }\n    action: deny\n", 3, 14,
       "unknown key 'rules[0].match.methd'; did you mean 'method'?"},
      {"redis: { adress: 127.0.0.1:6379 }\n", 1, 10,
       "unknown key 'redis.adress'; did you mean 'address'?"},
  };
  for (const Case& c : cases) {
    INFO(c.yaml);
    auto errors = loadErrors(c.yaml);
    INFO(dump(errors));
    REQUIRE(!errors.empty());
    CHECK(errors[0].line == c.line);
    CHECK(errors[0].column == c.column);
    CHECK(errors[0].message == c.message);
  }
  // Nothing near: the allowed keys instead of a guess.
  auto errors = loadErrors("tenant: acme\n");
  INFO(dump(errors));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].str() == std::string(kFile) +
                               ":1:1: unknown key 'tenant' (expected one of: identity, rules, "
                               "default, rate_limits, redis, visibility, tool_pinning)");
}

TEST_CASE("policy loader: duplicate keys are reported with the line of the first", "[policy]") {
  const std::string yaml =
      "default: allow\n"                                 // 1
      "rules:\n"                                         // 2
      "  - name: a\n"                                    // 3
      "    action: deny\n"                               // 4
      "    action: allow\n"                              // 5
      "  - name: b\n"                                    // 6
      "    match:\n"                                     // 7
      "      claims: { tenant: acme, tenant: other }\n"  // 8
      "      params: { Region: eu, region: us }\n"       // 9
      "    action: deny\n"                               // 10
      "identity:\n"                                      // 11
      "  api_keys:\n"                                    // 12
      "    - subject: ci\n"                              // 13
      "      subject: bot\n"                             // 14
      "      key_sha256: " +
      std::string(64, 'a') + "\n" +  // 15
      "default: deny\n";             // 16
  auto errors = loadErrors(yaml);
  INFO(dump(errors));
  CHECK(errors.size() == 5);
  CHECK(hasError(errors, 16, 1, "duplicate key 'default' (first at line 1)"));
  CHECK(hasError(errors, 5, 5, "duplicate key 'rules[0].action' (first at line 4)"));
  CHECK(hasError(errors, 14, 7, "duplicate key 'identity.api_keys[0].subject' (first at line 13)"));
  CHECK(hasError(errors, 8, 31,
                 "'rules[1].match.claims': 'tenant' is listed twice (first at line 8)"));
  // Param names compare ignoring case, as the Mcp-Param-{Name} fields they match.
  CHECK(hasError(errors, 9, 29,
                 "'rules[1].match.params': 'region' is listed twice (first at line 9; names "
                 "ignore case)"));
}

TEST_CASE("policy loader: redis.address takes a host name, resolved at load", "[policy][redis]") {
  std::vector<settings::Diagnostic> errors;
  auto set = PolicySet::loadString("redis: { address: localhost:6379 }\n", kFile, errors);
  INFO(dump(errors));
  REQUIRE(set != nullptr);
  const RedisSettings& r = set->redis();
  CHECK(r.present);
  // What the Redis client gets is numeric (from /etc/hosts: 127.0.0.1 or ::1 by machine).
  CHECK((r.host == "127.0.0.1" || r.host == "::1"));
  CHECK(r.port == 6379);
  CHECK(r.address == "localhost:6379");

  errors.clear();
  set = PolicySet::loadString("redis: { address: \"[::1]:6380\" }\n", kFile, errors);
  REQUIRE(set != nullptr);
  CHECK(set->redis().host == "::1");
  CHECK(set->redis().port == 6380);
  CHECK(set->redis().address == "[::1]:6380");
}

TEST_CASE("policy loader: a redis.address that does not resolve is a load error",
          "[policy][redis]") {
  // .invalid never resolves (RFC 6761); bound the lookup as the settings test does.
  ::setenv("RES_OPTIONS", "timeout:1 attempts:1", 0);
  auto start = std::chrono::steady_clock::now();
  auto errors = loadErrors("redis:\n  address: no-such-host.invalid:6379\n");
  auto took = std::chrono::steady_clock::now() - start;
  INFO(dump(errors));
  REQUIRE(errors.size() == 1);
  const std::string prefix =
      std::string(kFile) + ":2:12: 'redis.address': cannot resolve 'no-such-host.invalid': ";
  CHECK(errors[0].str().rfind(prefix, 0) == 0);
  CHECK(errors[0].str().size() > prefix.size());  // gai_strerror's text follows
  CHECK(took < 10s);

  struct Case {
    const char* yaml;
    const char* message;
  };
  const Case cases[] = {
      {"redis: { address: nowhere }\n",
       "'redis.address': invalid address 'nowhere' (expected IPv4:port, [IPv6]:port or "
       "hostname:port, port 0-65535)"},
      {"redis: { address: 127.0.0.1:0 }\n",
       "'redis.address': port 0 is not a valid destination in '127.0.0.1:0'"},
      {"redis: { address: [a, b] }\n", "'redis.address' must be an address (host:port)"},
      {"redis: { address: 127.0.0.1:6379, on_error: retry }\n",
       "'redis.on_error' must be local, allow or deny, not 'retry'"},
      {"redis: { address: 127.0.0.1:6379, timeout: 0 }\n",
       "'redis.timeout' must be greater than 0"},
      {"redis: { address: 127.0.0.1:6379, timeout: 50 }\n",
       "'redis.timeout': invalid duration '50' (needs a unit"},
  };
  for (const Case& c : cases) {
    INFO(c.yaml);
    auto es = loadErrors(c.yaml);
    INFO(dump(es));
    REQUIRE(es.size() == 1);
    CHECK(es[0].message.find(c.message) != std::string::npos);
  }
}

TEST_CASE("policy loader: hermetic test load resolves no redis host name", "[policy][redis]") {
  std::vector<settings::Diagnostic> errors;
  settings::setHermeticLoadForTesting(true);
  auto named = PolicySet::loadString("redis: { address: localhost:6379 }\n", kFile, errors);
  auto literal = PolicySet::loadString("redis: { address: 127.0.0.1:6379 }\n", kFile, errors);
  settings::setHermeticLoadForTesting(false);
  CHECK(named == nullptr);
  CHECK(literal != nullptr);
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message ==
        "'redis.address': cannot resolve 'localhost': name resolution is off (hermetic test load)");
}

}  // namespace
}  // namespace gw::policy
