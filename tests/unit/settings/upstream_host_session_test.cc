// settings/: upstreams[].host_header (what Host the upstream receives; RFC 9110 §7.2 host[:port])
// and upstreams[].session_secret with the per-endpoint session tokens derived at load (MCP
// 2025-06-18 Session Management: legacy sessions kept on their endpoint), and how /config
// shows both.

#include <catch.hpp>
#include <string>
#include <string_view>

#include "gateway/filters/config_json.h"
#include "gateway/mcp/session.h"
#include "gateway/settings/settings.h"
#include "tests/unit/policy/test_util.h"
#include "tests/unit/settings/load_util.h"

namespace gw::settings {
namespace {

using test::dump;
using test::hasError;

std::string upstreamWith(std::string_view extra) {
  std::string y =
      "upstreams:\n"
      "  - name: main\n"
      "    endpoints: [127.0.0.1:9000, \"[::1]:9001\"]\n";
  y += extra;
  return y;
}

TEST_CASE("host_header: endpoint by default, client, or a literal host[:port]", "[settings]") {
  struct Case {
    const char* extra;
    HostHeader mode;
    const char* literal;
  };
  const Case cases[] = {
      {"", HostHeader::kEndpoint, ""},
      {"    host_header: endpoint\n", HostHeader::kEndpoint, ""},
      {"    host_header: client\n", HostHeader::kClient, ""},
      {"    host_header: mcp.internal\n", HostHeader::kLiteral, "mcp.internal"},
      {"    host_header: mcp.internal:8080\n", HostHeader::kLiteral, "mcp.internal:8080"},
      {"    host_header: \"10.0.0.1:80\"\n", HostHeader::kLiteral, "10.0.0.1:80"},
      {"    host_header: \"[::1]:8080\"\n", HostHeader::kLiteral, "[::1]:8080"},
      {"    host_header: \"[::1]\"\n", HostHeader::kLiteral, "[::1]"},
      {"    host_header: localhost\n", HostHeader::kLiteral, "localhost"},
      // The words are exact: another spelling is a literal host name.
      {"    host_header: Endpoint\n", HostHeader::kLiteral, "Endpoint"},
      {"    host_header: endpoint:80\n", HostHeader::kLiteral, "endpoint:80"},
  };
  for (const Case& c : cases) {
    LoadResult r = loadString(upstreamWith(c.extra), "/t/gw.yaml");
    INFO(c.extra);
    INFO(dump(r));
    REQUIRE(r.settings);
    const Upstream& u = r.settings->upstreams.at(0);
    CHECK(u.host_header == c.mode);
    CHECK(u.host_literal == c.literal);
  }
}

TEST_CASE("host_header: a literal that is not host[:port] is a load error (RFC 9110 §7.2)",
          "[settings]") {
  const char* bad[] = {
      "    host_header: \"\"\n",                  // empty
      "    host_header: \"a b\"\n",               // whitespace
      "    host_header: \"a\\r\\nX-Evil: 1\"\n",  // header injection
      "    host_header: \"a:\"\n",                // empty port
      "    host_header: \"a:0\"\n",               // port out of range
      "    host_header: \"a:65536\"\n",
      "    host_header: \"a:123456\"\n",
      "    host_header: \"user@a\"\n",  // userinfo
      "    host_header: \"a,b\"\n",     // a list
      "    host_header: \"a/b\"\n",     // a path
      "    host_header: \"::1\"\n",     // unbracketed IPv6
      "    host_header: \"[::1\"\n",
      "    host_header: \"a%20\"\n",  // percent-encoding
      "    host_header: \":80\"\n",   // empty host
      "    host_header: [a]\n",       // not a string
      "    host_header: { a: b }\n",
  };
  for (const char* extra : bad) {
    LoadResult r = loadString(upstreamWith(extra), "/t/gw.yaml");
    INFO(extra);
    INFO(dump(r));
    CHECK_FALSE(r.settings);
    bool found = false;
    for (const Diagnostic& d : r.errors) {
      found = found || d.message.find("host_header") != std::string::npos;
      CHECK(d.line >= 4);
    }
    CHECK(found);
  }
}

TEST_CASE("session tokens: one per endpoint, from the upstream name and the address as written",
          "[settings][session]") {
  LoadResult r = loadString(upstreamWith(""), "/t/gw.yaml");
  REQUIRE(r.settings);
  const Upstream& u = r.settings->upstreams.at(0);
  REQUIRE(u.session_tokens.size() == 2);
  CHECK(u.session_secret.empty());
  CHECK(u.session_tokens[0] == mcp::sessionToken("", "main", "127.0.0.1:9000"));
  CHECK(u.session_tokens[1] == mcp::sessionToken("", "main", "[::1]:9001"));
  CHECK(u.session_tokens[0] != u.session_tokens[1]);
  // A second load of the same text (another replica, a restart) agrees.
  LoadResult again = loadString(upstreamWith(""), "/other/gw.yaml");
  REQUIRE(again.settings);
  CHECK(again.settings->upstreams.at(0).session_tokens == u.session_tokens);
  // Adding an endpoint keeps the tokens of the others (their sessions stay valid).
  LoadResult more =
      loadString("upstreams:\n  - name: main\n    endpoints: [127.0.0.1:9002, 127.0.0.1:9000]\n",
                 "/t/gw.yaml");
  REQUIRE(more.settings);
  CHECK(more.settings->upstreams.at(0).session_tokens.at(1) == u.session_tokens[0]);
}

TEST_CASE("session_secret keys the tokens, and must not be empty", "[settings][session]") {
  LoadResult r = loadString(upstreamWith("    session_secret: hunter2\n"), "/t/gw.yaml");
  REQUIRE(r.settings);
  const Upstream& u = r.settings->upstreams.at(0);
  CHECK(u.session_secret == "hunter2");
  CHECK(u.session_tokens.at(0) == mcp::sessionToken("hunter2", "main", "127.0.0.1:9000"));
  CHECK(u.session_tokens.at(0) != mcp::sessionToken("", "main", "127.0.0.1:9000"));
  const char* bad[] = {"    session_secret: \"\"\n", "    session_secret: [a]\n"};
  for (const char* extra : bad) {
    LoadResult b = loadString(upstreamWith(extra), "/t/gw.yaml");
    INFO(extra);
    CHECK_FALSE(b.settings);
  }
}

TEST_CASE("/config shows host_header and redacts session_secret", "[settings][session]") {
  struct Case {
    const char* extra;
    const char* host;
    const char* secret;
  };
  const Case cases[] = {
      {"", "\"host_header\":\"endpoint\"", "\"session_secret\":null"},
      {"    host_header: client\n", "\"host_header\":\"client\"", "\"session_secret\":null"},
      {"    host_header: mcp.internal:8080\n    session_secret: hunter2\n",
       "\"host_header\":\"mcp.internal:8080\"", "\"session_secret\":\"<redacted>\""},
  };
  for (const Case& c : cases) {
    policy::test::TempDir dir;
    std::string path = dir.write("gateway.yaml", upstreamWith(c.extra));
    std::vector<Diagnostic> errors;
    auto snap = filters::Snapshot::load(path, nullptr, errors);
    REQUIRE(snap);
    std::string json = filters::configJson(*snap);
    INFO(json);
    CHECK(json.find(c.host) != std::string::npos);
    CHECK(json.find(c.secret) != std::string::npos);
    CHECK(json.find("hunter2") == std::string::npos);
  }
}

}  // namespace
}  // namespace gw::settings
