// settings: `servers:` (issue #27) — each server a view of the top level with its own
// endpoint, hosts, routes, policies and mcp overrides; the errors a hand-edited file gets,
// each at its line and column; and filters::Snapshot::select, the choice of a server by
// path and Host (exact before wildcard before any).

#include <catch.hpp>
#include <string>
#include <vector>

#include "gateway/filters/snapshot.h"
#include "gateway/settings/settings.h"
#include "tests/unit/policy/test_util.h"
#include "tests/unit/settings/load_util.h"

namespace gw::settings {
namespace {

constexpr char kHead[] =
    "upstreams:\n"                       // 1
    "  - name: a\n"                      // 2
    "    endpoints: [127.0.0.1:9001]\n"  // 3
    "  - name: b\n"                      // 4
    "    endpoints: [127.0.0.1:9002]\n"  // 5
    "servers:\n";                        // 6

LoadResult load(const std::string& servers, const std::string& before = "") {
  return loadString(before + kHead + servers, "gw.yaml");
}

TEST_CASE("servers: each is a view of the top level with its own keys", "[servers]") {
  LoadResult r = load(
      "  - name: github\n"
      "    endpoint: /github/mcp\n"
      "    hosts: [MCP.Example.com, \"*.example.org\"]\n"
      "    routes: [ { name: all, upstream: a } ]\n"
      "    mcp: { verify_body: true, protocol_versions: [2026-07-28] }\n"
      "  - name: jira\n"
      "    endpoint: /jira/mcp\n"
      "    routes: [ { name: all, upstream: b } ]\n",
      "mcp: { allowed_hosts: [\"*\"], sse_keepalive: 5s }\nlimits: { max_headers: 50 }\n");
  INFO(test::dump(r));
  REQUIRE(r.settings);
  const Settings& s = *r.settings;
  REQUIRE(s.servers.size() == 2);
  CHECK(s.routes.empty());
  const Settings& gh = *s.servers[0];
  CHECK(gh.server_name == "github");
  CHECK(gh.named_server);
  CHECK(gh.endpoint == "/github/mcp");
  CHECK(gh.hosts == std::vector<std::string>{"mcp.example.com", "*.example.org"});
  CHECK(gh.mcp.verify_body);
  CHECK(gh.mcp.allowed_hosts == std::vector<std::string>{"*"});  // inherited
  CHECK(gh.mcp.sse_keepalive == std::chrono::seconds(5));
  CHECK(gh.limits.max_headers == 50);
  REQUIRE(gh.routes.size() == 1);
  CHECK(gh.routes[0].upstream_index == 0);
  CHECK(gh.upstreams.size() == 2);  // shared, at the same indexes
  const Settings& jira = *s.servers[1];
  CHECK_FALSE(jira.mcp.verify_body);
  CHECK(jira.hosts.empty());
  CHECK(jira.routes[0].upstream_index == 1);
}

TEST_CASE("servers: what a hand-edited file gets wrong, each at its place", "[servers]") {
  struct Case {
    const char* what;
    std::string before;
    std::string servers;
    int line, column;
    const char* message;
  };
  const Case cases[] = {
      {"a top-level key a server replaces", "endpoint: /mcp\n",
       "  - name: x\n    routes: [ { name: r, upstream: a } ]\n", 1, 1,
       "top-level 'endpoint' cannot be used with 'servers'"},
      {"top-level routes", "routes: [ { name: r, upstream: a } ]\n",
       "  - name: x\n    routes: [ { name: r, upstream: a } ]\n", 1, 1,
       "top-level 'routes' cannot be used with 'servers'"},
      {"a bad name", "", "  - name: Git Hub\n", 7, 11, "must be 1 to 64 of a-z, 0-9"},
      {"a long name", "", "  - name: " + std::string(65, 'a') + "\n", 7, 11, "must be 1 to 64"},
      {"no name", "", "  - endpoint: /x\n", 7, 5, "has no 'name'"},
      {"a duplicate name", "", "  - name: x\n    endpoint: /a\n  - name: x\n    endpoint: /b\n", 9,
       11, "duplicate server name 'x'"},
      {"the same path for any host", "",
       "  - name: x\n    endpoint: /mcp\n  - name: y\n    endpoint: /mcp\n", 10, 15,
       "endpoint /mcp is already served by server 'x' for any host"},
      {"the same path for one host", "",
       "  - name: x\n    hosts: [h.example]\n  - name: y\n    hosts: [H.example, i.example]\n", 9,
       5, "endpoint /mcp is already served by server 'x' for host h.example"},
      {"the same wildcard", "",
       "  - name: x\n    hosts: [\"*.e.com\"]\n  - name: y\n    hosts: [\"*.e.com\"]\n", 9, 5,
       "for host *.e.com"},
      {"a host with a port", "", "  - name: x\n    hosts: [h.example:443]\n", 8, 13,
       "must be a host name"},
      {"a host with a path", "", "  - name: x\n    hosts: [h.example/x]\n", 8, 13,
       "must be a host name"},
      {"a bare wildcard", "", "  - name: x\n    hosts: [\"*\"]\n", 8, 13, "must be a host name"},
      {"a host named twice", "", "  - name: x\n    hosts: [h.example, H.EXAMPLE]\n", 8, 24,
       "names host 'h.example' twice"},
      {"an mcp key no server may set", "", "  - name: x\n    mcp: { allowed_hosts: [x] }\n", 8, 12,
       "unknown key 'servers[0].mcp.allowed_hosts'"},
      {"an unknown key", "", "  - name: x\n    upstreams: [a]\n", 8, 5,
       "unknown key 'servers[0].upstreams'"},
      {"a route naming no upstream", "", "  - name: x\n    routes: [ { name: r, upstream: c } ]\n",
       8, 36, "route 'r' names unknown upstream 'c'"},
      {"a relative endpoint", "", "  - name: x\n    endpoint: mcp\n", 8, 15,
       "must be a path starting with '/'"},
      {"an empty list", "", "  []\n", 7, 3, "'servers' must be a list of at least one server"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    LoadResult r = load(c.servers, c.before);
    INFO(test::dump(r));
    CHECK_FALSE(r.settings);
    const int line = c.line + (c.before.empty() ? 0 : 1);
    CHECK((test::hasError(r, line, c.column, c.message) ||
           (c.line == 1 && test::hasError(r, 1, c.column, c.message))));
  }
}

TEST_CASE("servers: an upstream no server's route names is warned about", "[servers]") {
  LoadResult r = load("  - name: x\n    routes: [ { name: r, upstream: a } ]\n");
  REQUIRE(r.settings);
  REQUIRE(r.settings->warnings.size() == 1);
  CHECK(r.settings->warnings[0].line == 4);
  CHECK(r.settings->warnings[0].message.find("upstream 'b' is not used") != std::string::npos);
}

}  // namespace
}  // namespace gw::settings

namespace gw::filters {
namespace {

TEST_CASE("servers: select by path, then Host — exact, wildcard, any", "[servers]") {
  policy::test::TempDir dir;
  const std::string path =
      dir.write("gw.yaml",
                "upstreams:\n  - name: a\n    endpoints: [127.0.0.1:9001]\n"
                "servers:\n"
                "  - { name: any, endpoint: /mcp, routes: [ { name: r, upstream: a } ] }\n"
                "  - { name: wild, endpoint: /mcp, hosts: [\"*.example.com\"] }\n"
                "  - { name: exact, endpoint: /mcp, hosts: [api.example.com, 10.0.0.1] }\n"
                "  - { name: other, endpoint: /other/mcp, hosts: [api.example.com] }\n");
  std::vector<settings::Diagnostic> errors;
  auto root = Snapshot::load(path, nullptr, errors);
  REQUIRE(root);
  REQUIRE(root->servers.size() == 4);
  auto name = [&](std::string_view host, std::string_view p) -> std::string {
    const Snapshot* s = root->select(host, p);
    return s == nullptr ? "-" : s->name();
  };
  CHECK(name("api.example.com", "/mcp") == "exact");
  CHECK(name("API.EXAMPLE.COM:443", "/mcp") == "exact");
  CHECK(name("10.0.0.1:8080", "/mcp") == "exact");
  CHECK(name("x.example.com", "/mcp") == "wild");
  CHECK(name("a.b.example.com", "/mcp") == "wild");
  CHECK(name("example.com", "/mcp") == "any");
  CHECK(name("xexample.com", "/mcp") == "any");
  CHECK(name("", "/mcp") == "any");
  CHECK(name("[::1]:8080", "/mcp") == "any");
  CHECK(name("api.example.com", "/other/mcp") == "other");
  CHECK(name("x.example.com", "/other/mcp") == "-");
  CHECK(name("api.example.com", "/other/mcp/") == "-");
  CHECK(name("api.example.com", "/nothing") == "-");
  CHECK(name("api.example.com", "/.well-known/oauth-protected-resource") == "-");
  CHECK(root->server("wild") == root->select("x.example.com", "/mcp"));
  CHECK(root->server("nope") == nullptr);
  CHECK(root->everyServer().size() == 4);
}

TEST_CASE("servers: select among the servers of the listener a request came in on",
          "[servers][listeners]") {
  policy::test::TempDir dir;
  const std::string path =
      dir.write("gw.yaml",
                "listeners:\n"
                "  - { address: 127.0.0.1:18443, servers: [public] }\n"
                "  - { address: 127.0.0.1:18080 }\n"
                "upstreams:\n  - name: a\n    endpoints: [127.0.0.1:9001]\n"
                "servers:\n"
                "  - { name: public, endpoint: /mcp, routes: [ { name: r, upstream: a } ] }\n"
                "  - { name: inside, endpoint: /mcp, hosts: [inside.example] }\n"
                "  - { name: admin, endpoint: /admin/mcp }\n");
  std::vector<settings::Diagnostic> errors;
  auto root = Snapshot::load(path, nullptr, errors);
  for (const auto& e : errors) {
    UNSCOPED_INFO(e.str());
  }
  REQUIRE(root);
  auto name = [&](std::string_view host, std::string_view p, size_t listener) -> std::string {
    const Snapshot* s = root->select(host, p, listener);
    return s == nullptr ? "-" : s->name();
  };
  CHECK(name("inside.example", "/mcp", 0) == "public");  // `inside` is not on listener 0
  CHECK(name("inside.example", "/mcp", 1) == "inside");
  CHECK(name("other", "/mcp", 1) == "public");
  CHECK(name("x", "/admin/mcp", 0) == "-");
  CHECK(name("x", "/admin/mcp", 1) == "admin");
  CHECK(name("x", "/mcp", 64) == "-");  // no such listener
}

TEST_CASE("servers: each server's resource is its endpoint, and a pins store is one server's",
          "[servers][oauth]") {
  policy::test::TempDir dir;
  dir.write("good.yaml",
            "identity:\n  api_keys: []\n  resource_metadata:\n"
            "    resource: https://mcp.example.com/a/mcp\n"
            "    authorization_servers: [https://idp.example.com]\n");
  dir.write("wrong.yaml",
            "identity:\n  api_keys: []\n  resource_metadata:\n"
            "    resource: https://mcp.example.com/mcp\n"
            "    authorization_servers: [https://idp.example.com]\n");
  dir.write("pins.yaml", "tool_pinning:\n  mode: log\n  store: pins.json\n");
  auto load = [&](const std::string& a_policy, const std::string& b_policy) {
    const std::string path =
        dir.write("gw.yaml",
                  "upstreams:\n  - name: u\n    endpoints: [127.0.0.1:9001]\nservers:\n"
                  "  - { name: a, endpoint: /a/mcp, routes: [ { name: r, upstream: u } ],\n"
                  "      policies: [" +
                      a_policy +
                      "] }\n"
                      "  - { name: b, endpoint: /b/mcp, routes: [ { name: r, upstream: u } ],\n"
                      "      policies: [" +
                      b_policy + "] }\n");
    std::vector<settings::Diagnostic> errors;
    auto root = Snapshot::load(path, nullptr, errors);
    std::string text;
    for (const auto& e : errors) {
      text += e.str() + "\n";
    }
    return std::make_pair(root, text);
  };
  auto [ok, none] = load("good.yaml", "pins.yaml");
  INFO(none);
  CHECK(ok);
  auto [wrong, why] = load("wrong.yaml", "pins.yaml");
  CHECK_FALSE(wrong);
  CHECK(why.find("wrong.yaml:3:1: identity.resource_metadata.resource "
                 "'https://mcp.example.com/mcp' of server 'a' must have the server's endpoint "
                 "/a/mcp as its path") != std::string::npos);
  auto [shared, store] = load("pins.yaml", "pins.yaml");
  CHECK_FALSE(shared);
  CHECK(store.find("is already the store of server 'a'; each server needs its own") !=
        std::string::npos);
}

TEST_CASE("servers: without `servers:` the root is the one server", "[servers]") {
  policy::test::TempDir dir;
  const std::string path = dir.write("gw.yaml",
                                     "upstreams:\n  - name: a\n    endpoints: [127.0.0.1:9001]\n"
                                     "routes: [ { name: r, upstream: a } ]\n");
  std::vector<settings::Diagnostic> errors;
  auto root = Snapshot::load(path, nullptr, errors);
  REQUIRE(root);
  CHECK(root->servers.empty());
  CHECK(root->name() == "default");
  CHECK(root->select("any", "/anything") == root.get());
  CHECK(root->server("default") == root.get());
  CHECK_FALSE(root->settings->named_server);
}

}  // namespace
}  // namespace gw::filters

namespace gw::filters {
namespace {

TEST_CASE("servers: config/examples/servers.yaml loads with its policy files", "[servers]") {
  std::vector<settings::Diagnostic> errors;
  auto root = Snapshot::load(GW_SOURCE_DIR "/config/examples/servers.yaml", nullptr, errors);
  for (const auto& e : errors) {
    UNSCOPED_INFO(e.str());
  }
  REQUIRE(root);
  REQUIRE(root->servers.size() == 3);
  CHECK(root->select("mcp.example.com", "/github/mcp") == root->server("github"));
  CHECK(root->select("mcp.example.com", "/jira/mcp") == root->server("jira"));
  CHECK(root->select("a.internal.example.com:8080", "/mcp") == root->server("internal"));
  CHECK(root->server("github")->policy->requiresAuth());
  CHECK_FALSE(root->server("jira")->policy->requiresAuth());
}

}  // namespace
}  // namespace gw::filters

namespace gw::settings {
namespace {

TEST_CASE("listeners: each an address, optional TLS and its servers", "[servers][listeners]") {
  LoadResult r = loadString(
      "listeners:\n"
      "  - address: 127.0.0.1:8443\n"
      "    servers: [b]\n"
      "  - address: 127.0.0.1:8080\n"
      "upstreams:\n  - { name: u, endpoints: [127.0.0.1:9001] }\n"
      "servers:\n"
      "  - { name: a, endpoint: /a, routes: [ { name: r, upstream: u } ] }\n"
      "  - { name: b, endpoint: /b, routes: [ { name: r, upstream: u } ] }\n",
      "gw.yaml");
  INFO(test::dump(r));
  REQUIRE(r.settings);
  const Settings& s = *r.settings;
  REQUIRE(s.listeners.size() == 2);
  CHECK(s.listen.text == "127.0.0.1:8443");  // `listen` is the first listener's
  CHECK(s.servers[0]->listener_mask == 0b10);
  CHECK(s.servers[1]->listener_mask == 0b11);

  // Without `listeners:`, the one `listen`.
  LoadResult plain = loadString(
      "listen: 127.0.0.1:8081\nupstreams:\n  - { name: u, endpoints: [127.0.0.1:9001] }\n"
      "routes: [ { name: r, upstream: u } ]\n",
      "gw.yaml");
  REQUIRE(plain.settings);
  REQUIRE(plain.settings->listeners.size() == 1);
  CHECK(plain.settings->listeners[0].address.text == "127.0.0.1:8081");
  CHECK(plain.settings->listener_mask == ~uint64_t{0});
}

TEST_CASE("listeners: what a hand-edited file gets wrong", "[servers][listeners]") {
  struct Case {
    const char* what;
    std::string yaml;
    int line, column;
    const char* message;
  };
  const std::string tail =
      "upstreams:\n  - { name: u, endpoints: [127.0.0.1:9001] }\n"
      "routes: [ { name: r, upstream: u } ]\n";
  const Case cases[] = {
      {"listen beside listeners",
       "listen: 127.0.0.1:1\nlisteners:\n  - address: 127.0.0.1:2\n" + tail, 1, 1,
       "top-level 'listen' cannot be used with 'listeners'"},
      {"tls beside listeners",
       "tls: { cert: a, key: b }\nlisteners:\n  - address: 127.0.0.1:2\n" + tail, 1, 1,
       "top-level 'tls' cannot be used with 'listeners'"},
      {"no address", "listeners:\n  - servers: [default]\n" + tail, 2, 5, "has no 'address'"},
      {"the same address twice",
       "listeners:\n  - address: 127.0.0.1:2\n  - address: 127.0.0.1:2\n" + tail, 3, 14,
       "127.0.0.1:2 is already a listener's address"},
      {"an unknown server", "listeners:\n  - address: 127.0.0.1:2\n    servers: [defualt]\n" + tail,
       3, 15, "names unknown server 'defualt'; did you mean 'default'?"},
      {"an empty list", "listeners: []\n" + tail, 1, 12,
       "'listeners' must be a list of at least one listener"},
      {"an unknown key", "listeners:\n  - address: 127.0.0.1:2\n    port: 3\n" + tail, 3, 5,
       "unknown key 'listeners[0].port'"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    LoadResult r = loadString(c.yaml, "gw.yaml");
    INFO(test::dump(r));
    CHECK_FALSE(r.settings);
    CHECK(test::hasError(r, c.line, c.column, c.message));
  }
}

}  // namespace
}  // namespace gw::settings
