// settings/: upstreams[].headers — fields set on every request to an upstream, ${VAR} expanded
// from the environment at load ($$ for a literal '$'), names checked (HTTP tokens, no
// hop-by-hop, framing or Mcp-* field, each once ignoring case), values free of CR, LF and NUL;
// messages never show a value; /config shows the names with the values redacted.

#include <stdlib.h>

#include <catch.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/filters/config_json.h"
#include "gateway/settings/settings.h"
#include "tests/unit/policy/test_util.h"
#include "tests/unit/settings/load_util.h"

namespace gw::settings {
namespace {

using test::dump;
using test::hasError;

// One upstream whose `headers:` block (line 4) has `lines` (each "      Name: value\n")
// starting at line 5.
std::string withHeaders(std::string_view lines) {
  std::string y =
      "upstreams:\n"                       // 1
      "  - name: remote\n"                 // 2
      "    endpoints: [127.0.0.1:9443]\n"  // 3
      "    headers:\n";                    // 4
  y += lines;
  y += "  - name: other\n    endpoints: [127.0.0.1:9444]\n";
  return y;
}

// Sets an environment variable for one test; restores the previous state after.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (const char* old = ::getenv(name)) {
      old_ = old;
    }
    if (value != nullptr) {
      ::setenv(name, value, 1);
    } else {
      ::unsetenv(name);
    }
  }
  ~EnvVar() {
    if (old_) {
      ::setenv(name_, old_->c_str(), 1);
    } else {
      ::unsetenv(name_);
    }
  }
  EnvVar(const EnvVar&) = delete;
  EnvVar& operator=(const EnvVar&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST_CASE("headers: ${VAR} comes from the environment, $$ is a literal $", "[settings][headers]") {
  EnvVar token("GW_TEST_REMOTE_TOKEN", "s3cr3t-t0ken");
  EnvVar tenant("GW_TEST_TENANT", "acme");
  LoadResult r = loadString(withHeaders("      Authorization: \"Bearer ${GW_TEST_REMOTE_TOKEN}\"\n"
                                        "      X-Tenant: \"${GW_TEST_TENANT}/${GW_TEST_TENANT}\"\n"
                                        "      X-Price: \"$$5 and $${NOT_A_VAR}\"\n"
                                        "      x-plain: plain value\twith a tab\n"
                                        "      X-Empty: \"\"\n"),
                            "/t/gw.yaml");
  INFO(dump(r));
  REQUIRE(r.settings);
  const Upstream& u = r.settings->upstreams.at(0);
  using Pair = std::pair<std::string, std::string>;
  const std::vector<Pair> want = {
      {"Authorization", "Bearer s3cr3t-t0ken"},
      {"X-Tenant", "acme/acme"},
      {"X-Price", "$5 and ${NOT_A_VAR}"},
      {"x-plain", "plain value\twith a tab"},
      {"X-Empty", ""},
  };
  CHECK(u.headers == want);
  CHECK(r.settings->upstreams.at(1).headers.empty());  // other upstreams get nothing
}

TEST_CASE("headers: a reload expands the variables again", "[settings][headers]") {
  const std::string text = withHeaders("      Authorization: \"Bearer ${GW_TEST_ROTATED}\"\n");
  EnvVar v("GW_TEST_ROTATED", "first-token");
  LoadResult first = loadString(text, "/t/gw.yaml");
  REQUIRE(first.settings);
  ::setenv("GW_TEST_ROTATED", "second-token", 1);
  LoadResult second = loadString(text, "/t/gw.yaml");
  REQUIRE(second.settings);
  CHECK(first.settings->upstreams[0].headers[0].second == "Bearer first-token");
  CHECK(second.settings->upstreams[0].headers[0].second == "Bearer second-token");
}

TEST_CASE("headers: bad expansions and values are load errors at the value, without it",
          "[settings][headers]") {
  EnvVar unset("GW_TEST_UNSET_VAR", nullptr);
  EnvVar empty("GW_TEST_EMPTY_VAR", "");
  EnvVar lf("GW_TEST_LF_VAR", "secret-value\n");
  EnvVar cr("GW_TEST_CR_VAR", "secret\rvalue");
  EnvVar ctl("GW_TEST_CTL_VAR", "secret\x01value");
  struct Case {
    const char* line;
    int column;
    const char* message;
  };
  const Case cases[] = {
      {"      Authorization: \"Bearer ${GW_TEST_UNSET_VAR}\"\n", 22,
       "'upstreams[0].headers.Authorization': environment variable 'GW_TEST_UNSET_VAR' is not "
       "set"},
      {"      Authorization: \"Bearer ${GW_TEST_EMPTY_VAR}\"\n", 22,
       "environment variable 'GW_TEST_EMPTY_VAR' is empty"},
      {"      X-A: \"cost: 5$\"\n", 12, "a '$' must start ${VAR} (write $$ for a literal '$')"},
      {"      X-A: $HOME\n", 12, "a '$' must start ${VAR}"},
      {"      X-A: \"${HOME\"\n", 12, "'${' without a closing '}'"},
      {"      X-A: \"${}\"\n", 12, "'${}' is not a variable name"},
      {"      X-A: \"${1X}\"\n", 12, "'${1X}' is not a variable name"},
      {"      X-A: \"${A-B}\"\n", 12, "'${A-B}' is not a variable name"},
      {"      X-A: \"Bearer ${GW_TEST_LF_VAR}\"\n", 12,
       "the value (after expanding ${GW_TEST_LF_VAR}) contains LF; a header value cannot hold "
       "CR, LF, NUL or other control characters (a value read from a file with its trailing "
       "newline?)"},
      {"      X-A: \"${GW_TEST_CR_VAR}\"\n", 12, "contains CR"},
      {"      X-A: \"${GW_TEST_CTL_VAR}\"\n", 12, "contains a control character"},
      {"      X-A: \"secret\\r\\nX-Injected: 1\"\n", 12, "the value contains CR; a header value"},
      {"      X-A: \"secret\\nvalue\"\n", 12, "contains LF"},
      {"      X-A: \"secret\\0value\"\n", 12, "contains NUL"},
      {"      X-A: \"secret\\x7fvalue\"\n", 12, "contains a control character"},
      {"      X-A: [a, b]\n", 12, "'upstreams[0].headers.X-A' must be a string"},
      {"      X-A:\n", 7, "'upstreams[0].headers.X-A' must be a string"},
  };
  for (const Case& c : cases) {
    LoadResult r = loadString(withHeaders(c.line), "/t/gw.yaml");
    INFO(c.line);
    INFO(dump(r));
    CHECK_FALSE(r.settings);
    REQUIRE(r.errors.size() == 1);
    const Diagnostic& d = r.errors[0];
    CHECK(d.file == "/t/gw.yaml");
    CHECK(d.line == 5);
    CHECK(d.column == c.column);
    CHECK(d.message.find(c.message) != std::string::npos);
    CHECK(d.message.find("secret") == std::string::npos);  // never a value
  }
}

TEST_CASE("headers: names must be tokens, settable, and given once", "[settings][headers]") {
  struct Case {
    const char* line;
    const char* message;
  };
  const Case cases[] = {
      {"      \"Bad Name\": x\n", "'Bad Name' is not a header name (an HTTP token"},
      {"      \"X-A:\": x\n", "'X-A:' is not a header name"},
      {"      \"\": x\n", "'' is not a header name"},
      {"      Connection: close\n", "'Connection' cannot be set: it is a hop-by-hop or framing"},
      {"      keep-alive: x\n", "'keep-alive' cannot be set"},
      {"      Transfer-Encoding: chunked\n", "'Transfer-Encoding' cannot be set"},
      {"      CONTENT-LENGTH: 5\n", "'CONTENT-LENGTH' cannot be set"},
      {"      Host: example.com\n",
       "'Host' cannot be set: it is a hop-by-hop or framing field "
       "the gateway writes itself (use 'host_header')"},
      {"      TE: trailers\n", "'TE' cannot be set"},
      {"      Trailer: x\n", "'Trailer' cannot be set"},
      {"      Upgrade: h2c\n", "'Upgrade' cannot be set"},
      {"      Proxy-Connection: x\n", "'Proxy-Connection' cannot be set"},
      {"      Expect: 100-continue\n", "'Expect' cannot be set"},
      {"      Mcp-Method: tools/call\n",
       "'Mcp-Method' cannot be set: Mcp-* and MCP-Protocol-Version fields describe the client's "
       "request"},
      {"      MCP-Protocol-Version: 2026-07-28\n", "'MCP-Protocol-Version' cannot be set"},
      {"      mcp-session-id: x\n", "'mcp-session-id' cannot be set"},
      {"      Mcp-Param-Region: eu\n", "'Mcp-Param-Region' cannot be set"},
  };
  for (const Case& c : cases) {
    LoadResult r = loadString(withHeaders(c.line), "/t/gw.yaml");
    INFO(c.line);
    INFO(dump(r));
    CHECK_FALSE(r.settings);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].line == 5);
    CHECK(r.errors[0].column == 7);
    CHECK(r.errors[0].message.find("'upstreams[0].headers': ") == 0);
    CHECK(r.errors[0].message.find(c.message) != std::string::npos);
  }
  LoadResult dup = loadString(withHeaders("      Authorization: a\n"    // 5
                                          "      X-B: b\n"              // 6
                                          "      authorization: c\n"),  // 7
                              "/t/gw.yaml");
  INFO(dump(dup));
  REQUIRE(dup.errors.size() == 1);
  CHECK(dup.errors[0].str() ==
        "/t/gw.yaml:7:7: 'upstreams[0].headers': 'authorization' is listed twice (first at line "
        "5; names ignore case)");
  for (const char* bad : {"    headers: [a]\n", "    headers: x\n", "    headers:\n"}) {
    LoadResult r = loadString(
        "upstreams:\n  - name: remote\n    endpoints: [127.0.0.1:9443]\n" + std::string(bad),
        "/t/gw.yaml");
    INFO(bad);
    INFO(dump(r));
    CHECK_FALSE(r.settings);
    CHECK(dump(r).find("/t/gw.yaml:4:") == 0);
    CHECK(dump(r).find("'upstreams[0].headers' must be a mapping of header names to values") !=
          std::string::npos);
  }
}

TEST_CASE("/config shows header names with their values redacted", "[settings][headers]") {
  EnvVar token("GW_TEST_REMOTE_TOKEN", "s3cr3t-t0ken");
  policy::test::TempDir dir;
  std::vector<Diagnostic> errors;
  auto snap = filters::Snapshot::load(
      dir.write("gateway.yaml",
                withHeaders("      Authorization: \"Bearer ${GW_TEST_REMOTE_TOKEN}\"\n"
                            "      X-Tenant: acme\n")),
      nullptr, errors);
  REQUIRE(snap);
  std::string json = filters::configJson(*snap);
  INFO(json);
  CHECK(json.find("\"headers\":{\"Authorization\":\"<redacted>\",\"X-Tenant\":\"<redacted>\"}") !=
        std::string::npos);
  CHECK(json.find("\"name\":\"other\"") != std::string::npos);
  CHECK(json.find("\"headers\":{}") != std::string::npos);  // the other upstream
  CHECK(json.find("s3cr3t") == std::string::npos);
  CHECK(json.find("acme") == std::string::npos);
}

}  // namespace
}  // namespace gw::settings
