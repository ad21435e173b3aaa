// Several MCP servers on one gateway (issue #27, `servers:`): a request goes to the server
// whose endpoint is its path and whose hosts take its Host (exact before wildcard before
// any); no match is a JSON-RPC 404, never forwarded. Each server has its own routes,
// identity (a token for one server's resource is refused by another; its own metadata
// document and challenges), and rate-limit buckets. Raw upstreams stand for the servers so
// the test sees which request reached which.

#include <signal.h>

#include <atomic>
#include <catch.hpp>
#include <ctime>
#include <functional>
#include <regex>
#include <string>
#include <thread>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

bool has(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

// A 2026-07-28 server that names itself in every answer (its tool `<name>_tool`).
UpstreamScript namedServer(const std::string& name) {
  return [name](UpstreamConn& c) {
    while (auto req = c.readRequest(Ms(15000))) {
      const std::string body =
          R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":")" + name +
          R"(_tool","inputSchema":{"type":"object"}}],"content":[{"type":"text","text":"from )" +
          name + R"("}],"resultType":"complete"}})";
      if (!c.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body)) {
        return;
      }
    }
  };
}

std::string post(const std::string& path, const std::string& host, const std::string& method,
                 const std::string& name = "", const std::string& extra = "") {
  std::string params = name.empty() ? "{}" : R"({"name":")" + name + R"(","arguments":{}})";
  const std::string body =
      R"({"jsonrpc":"2.0","id":7,"method":")" + method + R"(","params":)" + params + "}";
  std::string r = "POST " + path + " HTTP/1.1\r\nHost: " + host +
                  "\r\nContent-Type: application/json\r\nAccept: application/json, "
                  "text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " +
                  method + "\r\n";
  if (!name.empty()) {
    r += "Mcp-Name: " + name + "\r\n";
  }
  return r + extra + "Connection: close\r\nContent-Length: " + std::to_string(body.size()) +
         "\r\n\r\n" + body;
}

constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";  // 32 bytes

std::string jwt(const std::string& aud) {
  const long long now = static_cast<long long>(std::time(nullptr));
  return hs256Token(kSecret, "k1",
                    R"({"iss":"https://idp.example.com","aud":")" + aud +
                        R"(","sub":"user-1","exp":)" + std::to_string(now + 600) + "}");
}

}  // namespace

TEST_CASE("servers: a request goes to the server its path and Host select", "[servers]") {
  RawUpstream a(namedServer("a"));
  RawUpstream b(namedServer("b"));
  RawUpstream c(namedServer("c"));
  RawUpstream d(namedServer("d"));
  Gateway gw(R"(listen: "127.0.0.1:${PORT}"
workers: 1
access_log: { path: "${ACCESS_LOG}" }
upstreams:
  - { name: a, endpoints: ["${A}"] }
  - { name: b, endpoints: ["${B}"] }
  - { name: c, endpoints: ["${C}"] }
  - { name: d, endpoints: ["${D}"] }
servers:
  - name: github
    endpoint: /github/mcp
    hosts: [mcp.example.com]
    routes: [ { name: all, upstream: a } ]
  - name: jira
    endpoint: /jira/mcp
    routes: [ { name: all, upstream: b } ]
  - name: internal-wild
    endpoint: /mcp
    hosts: ["*.internal.example"]
    routes: [ { name: all, upstream: c } ]
  - name: internal-exact
    endpoint: /mcp
    hosts: [api.internal.example]
    routes: [ { name: all, upstream: d } ]
)",
             {{"A", a.address()}, {"B", b.address()}, {"C", c.address()}, {"D", d.address()}});

  struct Case {
    std::string path, host, want;  // want: the server's name in the answer, "" for a 404
  };
  const Case cases[] = {
      {"/github/mcp", "mcp.example.com", "a"},
      {"/github/mcp", "MCP.Example.COM:8443", "a"},  // case and port do not matter
      {"/github/mcp", "other.example.com", ""},      // not one of its hosts
      {"/jira/mcp", "anything.example", "b"},        // no hosts: any
      {"/jira/mcp", "127.0.0.1", "b"},
      {"/mcp", "x.internal.example", "c"},    // wildcard
      {"/mcp", "a.b.internal.example", "c"},  // any depth under it
      {"/mcp", "api.internal.example", "d"},  // exact before wildcard
      {"/mcp", "internal.example", ""},       // the wildcard needs a label before it
      {"/mcp", "mcp.example.com", ""},
      {"/other/mcp", "mcp.example.com", ""},
      {"/github/mcp/", "mcp.example.com", ""},  // paths are exact
      {"/GITHUB/mcp", "mcp.example.com", ""},
  };
  for (const Case& k : cases) {
    INFO(k.path << " Host: " << k.host);
    Response r = fetch(gw.port(), post(k.path, k.host, "tools/call", "x_tool"));
    INFO(r.head << r.body);
    if (k.want.empty()) {
      CHECK(r.status == 404);
      CHECK(has(r.head, "application/json"));
      CHECK(has(r.body, R"("code":-32600)"));
      CHECK(has(r.body, "no MCP server at this path"));
    } else {
      CHECK(r.status == 200);
      CHECK(has(r.body, "from " + k.want));
    }
  }
  // A 404 is never forwarded: each upstream got exactly the requests meant for it.
  CHECK(a.requestCount() == 2);
  CHECK(b.requestCount() == 2);
  CHECK(c.requestCount() == 2);
  CHECK(d.requestCount() == 1);

  // The access log names the server (null for a request no server took).
  const std::string log = readFile(gw.accessLogPath());
  CHECK(has(log, R"("server":"github")"));
  CHECK(has(log, R"("server":"internal-exact")"));
  CHECK(has(log, R"("server":null)"));
}

TEST_CASE("servers: each server is its own protected resource, with its own limits",
          "[servers][oauth]") {
  RawUpstream a(namedServer("a"));
  RawUpstream b(namedServer("b"));
  TempDir dir;
  REQUIRE(writeFile(dir.file("jwks.json"),
                    R"({"keys":[{"kty":"oct","kid":"k1","k":")" + base64Url(kSecret) + R"("}]})"));
  for (const std::string name : {"github", "jira"}) {
    REQUIRE(writeFile(dir.file(name + ".yaml"),
                      "identity:\n"
                      "  jwt:\n"
                      "    issuer: https://idp.example.com\n"
                      "    keys_file: jwks.json\n"
                      "  resource_metadata:\n"
                      "    resource: https://mcp.example.com/" +
                          name +
                          "/mcp\n"
                          "    authorization_servers: [https://idp.example.com]\n"
                          "  anonymous: deny\n"
                          "default: allow\n"
                          "rate_limits:\n"
                          "  - name: calls\n"
                          "    match: { method: tools/call }\n"
                          "    key: [name]\n"
                          "    rate: 1/h\n"));
  }
  Gateway gw(R"(listen: "127.0.0.1:${PORT}"
workers: 1
upstreams:
  - { name: a, endpoints: ["${A}"] }
  - { name: b, endpoints: ["${B}"] }
servers:
  - name: github
    endpoint: /github/mcp
    routes: [ { name: all, upstream: a } ]
    policies: ["${DIR}/github.yaml"]
  - name: jira
    endpoint: /jira/mcp
    routes: [ { name: all, upstream: b } ]
    policies: ["${DIR}/jira.yaml"]
)",
             {{"A", a.address()}, {"B", b.address()}, {"DIR", dir.path()}});
  const std::string github_token =
      "Authorization: Bearer " + jwt("https://mcp.example.com/github/mcp") + "\r\n";
  const std::string jira_token =
      "Authorization: Bearer " + jwt("https://mcp.example.com/jira/mcp") + "\r\n";

  // A token minted for one server opens that server only.
  Response ok =
      fetch(gw.port(), post("/github/mcp", "mcp.example.com", "tools/call", "t", github_token));
  INFO(ok.head << ok.body << gw.process().stderrText());
  CHECK(ok.status == 200);
  CHECK(has(ok.body, "from a"));
  Response cross =
      fetch(gw.port(), post("/jira/mcp", "mcp.example.com", "tools/call", "t", github_token));
  INFO(cross.head << cross.body);
  CHECK(cross.status == 401);
  const std::string challenge = cross.header("WWW-Authenticate").value_or("");
  CHECK(has(challenge, "invalid_token"));
  CHECK(has(challenge, "https://mcp.example.com/.well-known/oauth-protected-resource/jira/mcp"));
  CHECK(b.requestCount() == 0);

  // Limits of the same name are two buckets: one call per hour on each server.
  Response again =
      fetch(gw.port(), post("/github/mcp", "mcp.example.com", "tools/call", "t", github_token));
  CHECK(again.status == 429);
  Response jira =
      fetch(gw.port(), post("/jira/mcp", "mcp.example.com", "tools/call", "t", jira_token));
  INFO(jira.head << jira.body);
  CHECK(jira.status == 200);
  CHECK(has(jira.body, "from b"));

  // Each server's metadata document at its path-inserted well-known URI; the root form
  // names no server when two on the host have one.
  auto get = [&](const std::string& target) {
    return fetch(gw.port(), "GET " + target +
                                " HTTP/1.1\r\nHost: mcp.example.com\r\nConnection: close\r\n\r\n");
  };
  Response gh = get("/.well-known/oauth-protected-resource/github/mcp");
  CHECK(gh.status == 200);
  CHECK(has(gh.body, R"("resource":"https://mcp.example.com/github/mcp")"));
  Response jm = get("/.well-known/oauth-protected-resource/jira/mcp");
  CHECK(jm.status == 200);
  CHECK(has(jm.body, R"("resource":"https://mcp.example.com/jira/mcp")"));
  CHECK(get("/.well-known/oauth-protected-resource").status == 404);
  CHECK(get("/.well-known/oauth-protected-resource/other/mcp").status == 404);
}

TEST_CASE("servers: the root well-known form names the one server with metadata",
          "[servers][oauth]") {
  RawUpstream a(namedServer("a"));
  TempDir dir;
  REQUIRE(writeFile(dir.file("github.yaml"),
                    "identity:\n"
                    "  api_keys: []\n"
                    "  resource_metadata:\n"
                    "    resource: https://mcp.example.com/github/mcp\n"
                    "    authorization_servers: [https://idp.example.com]\n"));
  Gateway gw(R"(listen: "127.0.0.1:${PORT}"
workers: 1
upstreams:
  - { name: a, endpoints: ["${A}"] }
servers:
  - name: github
    endpoint: /github/mcp
    routes: [ { name: all, upstream: a } ]
    policies: ["${DIR}/github.yaml"]
  - name: open
    endpoint: /open/mcp
    routes: [ { name: all, upstream: a } ]
)",
             {{"A", a.address()}, {"DIR", dir.path()}});
  Response r = fetch(gw.port(),
                     "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: "
                     "mcp.example.com\r\nConnection: close\r\n\r\n");
  INFO(r.head << r.body << gw.process().stderrText());
  CHECK(r.status == 200);
  CHECK(has(r.body, R"("resource":"https://mcp.example.com/github/mcp")"));
}

TEST_CASE("servers: the admin endpoints and reload see each server", "[servers][admin]") {
  RawUpstream a(namedServer("a"));
  RawUpstream b(namedServer("b"));
  TempDir dir;
  REQUIRE(writeFile(dir.file("deny.yaml"),
                    "rules:\n"
                    "  - name: no-deletes\n"
                    "    match: { method: tools/call, name: \"delete_*\" }\n"
                    "    action: deny\n"
                    "default: allow\n"));
  const std::string head = R"(listen: "127.0.0.1:${PORT}"
admin: "127.0.0.1:0"
workers: 1
upstreams:
  - { name: a, endpoints: ["${A}"] }
  - { name: b, endpoints: ["${B}"] }
servers:
  - name: strict
    endpoint: /strict/mcp
    routes: [ { name: all, upstream: a } ]
    policies: ["${DIR}/deny.yaml"]
  - name: open
    endpoint: /open/mcp
    routes: [ { name: all, upstream: b } ]
)";
  Gateway gw(head, {{"A", a.address()}, {"B", b.address()}, {"DIR", dir.path()}});
  const uint16_t admin = gw.adminPort();

  Response config = adminGet(admin, "/config");
  CHECK(config.status == 200);
  CHECK(has(config.body, R"("servers":[{"name":"strict","endpoint":"/strict/mcp")"));
  CHECK(has(config.body, R"({"name":"open","endpoint":"/open/mcp")"));

  // explain asks one server: by name, or by host and path as a request is selected.
  Response strict = adminGet(admin, "/explain?method=tools/call&name=delete_x&server=strict");
  INFO(strict.body);
  CHECK(strict.status == 200);
  CHECK(has(strict.body, R"("decision":"reject")"));
  Response open = adminGet(admin, "/explain?method=tools/call&name=delete_x&path=/open/mcp");
  INFO(open.body);
  CHECK(open.status == 200);
  CHECK(has(open.body, R"("decision":"forward")"));
  Response none = adminGet(admin, "/explain?method=tools/call&name=x");
  CHECK(none.status == 400);
  CHECK(has(none.body, "strict, open"));
  CHECK(adminGet(admin, "/explain?method=tools/call&server=nope").status == 400);
  CHECK(adminGet(admin, "/federation?server=open").status == 200);
  CHECK(adminGet(admin, "/pins?server=strict").status == 200);
  CHECK(adminGet(admin, "/pins").status == 400);

  // The rule holds on its server only.
  CHECK(fetch(gw.port(), post("/strict/mcp", "h", "tools/call", "delete_x")).status == 403);
  CHECK(fetch(gw.port(), post("/open/mcp", "h", "tools/call", "delete_x")).status == 200);

  // Every request metric names the server.
  const std::string m = adminGet(admin, "/metrics").body;
  CHECK(has(m, R"(mcp_gateway_rejections_total{server="strict",reason="policy_denied"} 1)"));
  CHECK(has(m, R"(mcp_server_operation_duration_seconds_count{server="open",route="all",)"));
  CHECK(has(m, R"(mcp_client_operation_duration_seconds_count{server="open",upstream="b",)"));
  CHECK(has(m, R"(mcp_gateway_policy_decisions_total{server="strict",rule="no-deletes",)"));
  CHECK_FALSE(has(m, R"(server="default")"));

  // A reload adds a server (and keeps the others).
  REQUIRE(writeFile(gw.configPath(),
                    std::regex_replace(gw.configText(), std::regex("servers:\n"),
                                       "servers:\n  - name: added\n    endpoint: /added/mcp\n"
                                       "    routes: [ { name: all, upstream: b } ]\n")));
  REQUIRE(kill(gw.pid(), SIGHUP) == 0);
  bool added = false;
  for (int i = 0; i < 50 && !added; ++i) {
    added = fetch(gw.port(), post("/added/mcp", "h", "tools/call", "t")).status == 200;
    if (!added) {
      std::this_thread::sleep_for(Ms(100));
    }
  }
  CHECK(added);
  CHECK(fetch(gw.port(), post("/strict/mcp", "h", "tools/call", "delete_x")).status == 403);
}

TEST_CASE("servers: a reload adds and removes servers under load, no request fails",
          "[servers][reload]") {
  RawUpstream a(namedServer("a"));
  const std::string one = R"(listen: "127.0.0.1:${PORT}"
workers: 2
upstreams:
  - { name: a, endpoints: ["${A}"] }
servers:
  - name: one
    endpoint: /one/mcp
    routes: [ { name: all, upstream: a } ]
)";
  Gateway gw(one, {{"A", a.address()}});
  const std::string with_two =
      gw.configText() +
      "  - name: two\n    endpoint: /two/mcp\n    routes: [ { name: all, upstream: a } ]\n";
  std::atomic<bool> stop{false};
  std::atomic<int> ok{0};
  std::atomic<int> failed{0};
  std::thread load([&] {
    const auto deadline = Clock::now() + Ms(30000);
    for (int i = 0; i < 5000 && !stop && Clock::now() < deadline; ++i) {
      const int status = fetch(gw.port(), post("/one/mcp", "h", "tools/call", "t")).status;
      (status == 200 ? ok : failed).fetch_add(1);
    }
  });
  auto waitFor = [](const std::function<bool()>& done) {
    for (int i = 0; i < 100 && !done(); ++i) {
      std::this_thread::sleep_for(Ms(50));
    }
    return done();
  };
  auto served = [&](const std::string& path) {
    return fetch(gw.port(), post(path, "h", "tools/call", "t")).status == 200;
  };
  CHECK(waitFor([&] { return ok.load() >= 20; }));
  for (int round = 0; round < 3; ++round) {
    REQUIRE(writeFile(gw.configPath(), with_two));
    REQUIRE(kill(gw.pid(), SIGHUP) == 0);
    CHECK(waitFor([&] { return served("/two/mcp"); }));
    REQUIRE(writeFile(gw.configPath(), gw.configText()));
    REQUIRE(kill(gw.pid(), SIGHUP) == 0);
    CHECK(waitFor([&] { return !served("/two/mcp"); }));
  }
  const int before = ok.load();
  CHECK(waitFor([&] { return ok.load() >= before + 20; }));
  stop = true;
  load.join();
  INFO(gw.process().stderrText());
  CHECK(failed.load() == 0);
  CHECK(ok.load() > 40);
}
