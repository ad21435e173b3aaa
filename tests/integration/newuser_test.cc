// What tripped up a new user (issue 13 item 5), through the real mcp-gateway binary:
// credential forwarding without policy files (what the upstream gets, /config and /explain
// agree), a streamed answer whose final JSON-RPC response was delivered before the client
// closed (logged `complete`, not `client_closed`), the missing-version 400's data.supported,
// and the command line: --help/-h/help, and the messages for an unreadable config file and an
// unknown upstream name.

#include <catch.hpp>

#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

std::string field(const std::string& json, std::string_view key) {
  return jsonToken(json, key).value_or("<absent>");
}

// The access-log lines written so far (waits up to 3 s until there are at least `want`).
std::vector<std::string> accessLines(const Gateway& gw, size_t want) {
  std::vector<std::string> lines;
  waitFor(
      [&] {
        lines = fileLines(gw.accessLogPath());
        return lines.size() >= want;
      },
      Ms(3000));
  return lines;
}

struct Run {
  int rc = -1;
  std::string out;
  std::string err;
};

// Runs the gateway binary with `args` to completion (≤ 10 s).
Run runBinary(const std::vector<std::string>& args) {
  TempDir dir;
  std::vector<std::string> argv{GW_BINARY};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, dir.path(), "cli");
  auto rc = p.wait(Ms(10000));
  Run r;
  r.rc = rc.value_or(-1);
  r.out = p.stdoutText();
  r.err = p.stderrText();
  return r;
}

}  // namespace

// ---- 1. credentials without policy files -------------------------------------------------

TEST_CASE(
    "newuser: Authorization forwarding is what /config and /explain say, with and "
    "without policy files",
    "[newuser][credentials]") {
  struct Case {
    const char* what;
    bool policy_file;
    bool forwards;
    const char* source;
  };
  const Case cases[] = {
      {"no policy files: the gateway checks nothing, the upstream gets the credential", false, true,
       "no_policies"},
      {"a policy file: the credential stops at the gateway", true, false, "default"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    RawUpstream up(RawUpstream::respond(200, kOkBody));
    TempDir dir;
    GatewayConfig cfg;
    cfg.upstream_endpoints = {up.address()};
    cfg.extra_yaml = "admin: 127.0.0.1:0\n";
    if (c.policy_file) {
      std::string pol = dir.file("policy.yaml");
      REQUIRE(writeFile(pol, "default: allow\n"));
      cfg.extra_yaml += "policies: [" + pol + "]\n";
    }
    Gateway gw(cfg);
    const uint16_t admin = gw.adminPort();
    REQUIRE(waitFor([&] { return canConnect(admin); }, Ms(3000)));

    // What really happens.
    Response r = fetch(gw.port(), mcpPost(toolsCallBody(), "Authorization: Bearer tok-123\r\n"));
    CHECK(r.status == 200);
    REQUIRE(up.waitForRequests(1, Ms(2000)));
    CHECK(up.requests()[0].hasHeader("Authorization") == c.forwards);
    if (c.forwards) {
      CHECK(up.requests()[0].header("Authorization").value_or("") == "Bearer tok-123");
    }

    const std::string want = std::string("\"forward_credentials\":") +
                             (c.forwards ? "true" : "false") +
                             ",\"forward_credentials_source\":\"" + c.source + "\"";
    // /config: the route's entry shows the value that applies and why.
    Response cfg_json = adminGet(admin, "/config");
    INFO(cfg_json.body);
    CHECK(cfg_json.status == 200);
    CHECK(cfg_json.body.find(want) != std::string::npos);
    // /explain: the same request, the same decision.
    Response ex = adminGet(admin, "/explain?method=tools/call&name=echo&token=tok-123");
    INFO(ex.body);
    CHECK(ex.status == 200);
    CHECK(ex.body.find(want) != std::string::npos);
  }
}

// ---- 2. a streamed answer delivered before the client closed ----------------------------

TEST_CASE(
    "newuser: a client that closes after the final JSON-RPC response of an SSE answer "
    "ends the request complete, before it client_closed",
    "[newuser][sse]") {
  struct Case {
    const char* what;
    std::string last_event;  // what the stream carries last before the client closes
    const char* outcome;
  };
  const std::vector<Case> cases = {
      {"result, jsonrpc first (Python SDK order)",
       "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":[]}}\n\n", "complete"},
      {"result first (TS SDK order)",
       "data: {\"result\":{\"content\":[]},\"jsonrpc\":\"2.0\",\"id\":1}\n\n", "complete"},
      {"error response",
       "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"error\":{\"code\":-32603,"
       "\"message\":\"boom\"}}\n\n",
       "complete"},
      {"response with an event type, an id and CRLF lines",
       "event: message\r\nid: 7\r\ndata: {\"jsonrpc\":\"2.0\",\"id\":1,\r\ndata: "
       "\"result\":{}}\r\n\r\n",
       "complete"},
      {"only a progress notification so far",
       "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\",\"params\":{"
       "\"progressToken\":1,\"progress\":1}}\n\n",
       "client_closed"},
      {"a server request (method and id, no result)",
       "data: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"elicitation/create\",\"params\":{}}\n\n",
       "client_closed"},
      {"half of the response event",
       "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":", "client_closed"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    RawUpstream up([&](UpstreamConn& conn) {
      if (!conn.readRequest()) {
        return;
      }
      conn.send(sseHead() + chunk(": hello\n\n") +
                chunk("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\","
                      "\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n") +
                chunk(c.last_event));
      conn.waitPeerClose(Ms(5000));  // never sends the terminating chunk
    });
    GatewayConfig cfg;
    cfg.upstream_endpoints = {up.address()};
    Gateway gw(cfg);
    {
      Client cl(gw.port());
      REQUIRE(cl.send(mcpPost(toolsCallBody())));
      auto head = cl.readHead();
      REQUIRE(head);
      CHECK(head->status == 200);
      std::string tail = c.last_event.substr(c.last_event.size() - 4);
      REQUIRE(cl.readBodyUntil(tail, Ms(3000)));
    }  // the client closes without waiting for the end of the stream
    auto lines = accessLines(gw, 1);
    REQUIRE(lines.size() == 1);
    INFO(lines[0]);
    CHECK(field(lines[0], "outcome") == "\"" + std::string(c.outcome) + "\"");
    CHECK(field(lines[0], "status") == "200");  // the status that was relayed, either way
    // Either way the upstream connection is closed at once (never pooled mid-stream).
    CHECK(waitFor([&] { return up.peerCloses().size() == 1; }, Ms(2000)));
  }
}

// ---- 3. the missing-version 400 names the supported versions ------------------------------

TEST_CASE("newuser: a POST without MCP-Protocol-Version gets data.supported (legacy: reject)",
          "[newuser][version]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  Gateway gw(
      "listen: 127.0.0.1:${PORT}\n"
      "mcp:\n"
      "  legacy: reject\n"
      "  protocol_versions: [\"2026-07-28\"]\n"
      "upstreams:\n"
      "  - name: main\n"
      "    endpoints: [" +
      up.address() +
      "]\n"
      "routes:\n"
      "  - name: default\n"
      "    upstream: main\n"
      "access_log:\n"
      "  path: ${ACCESS_LOG}\n");
  // Every spelling of "no version": absent, or only a different Mcp-* header.
  const std::string variants[] = {
      "Mcp-Method: tools/list\r\n",
      "",
      "Mcp-Method: initialize\r\n",
  };
  for (const std::string& extra : variants) {
    INFO(extra);
    std::string body = R"({"jsonrpc":"2.0","id":5,"method":"tools/list","params":{}})";
    Response r =
        fetch(gw.port(),
              "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
              "Content-Type: application/json\r\n"
              "Accept: application/json, text/event-stream\r\n" +
                  extra + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    INFO(r.head << r.body);
    CHECK(r.status == 400);
    CHECK(field(r.body, "code") == "-32020");
    CHECK(r.body.find(R"("data":{"supported":["2026-07-28"]})") != std::string::npos);
  }
  // None of them reached the upstream: a marker is the first request there.
  REQUIRE(forwardMarker(gw.port(), up));
  CHECK(up.acceptCount() == 1);
  CHECK(up.requestCount() == 1);
}

// ---- 4. the command line ----------------------------------------------------------------

TEST_CASE("newuser: --help, -h and help print the usage on stdout and exit 0", "[newuser][cli]") {
  for (const char* arg : {"--help", "-h", "help"}) {
    INFO(arg);
    Run r = runBinary({arg});
    CHECK(r.rc == 0);
    CHECK(r.out.rfind("usage: mcp-gateway run -c FILE", 0) == 0);
    CHECK(r.out.find("mcp-gateway help") != std::string::npos);
    CHECK(r.err.empty());
  }
  // Usage errors still go to stderr with exit 2.
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{}, {"bogus"}, {"--helpme"}, {"run"}, {"check", "-c"}}) {
    Run r = runBinary(args);
    CHECK(r.rc == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("usage: mcp-gateway", 0) == 0);
  }
}

TEST_CASE("newuser: check names why a config file cannot be read, and a near upstream name",
          "[newuser][cli]") {
  TempDir dir;
  std::string missing = dir.file("nope.yaml");
  Run r = runBinary({"check", "-c", missing});
  CHECK(r.rc == 1);
  CHECK(r.err.find(missing + ":0:0: cannot read config file: No such file or directory\n") !=
        std::string::npos);

  Run d = runBinary({"check", "-c", dir.path()});
  CHECK(d.rc == 1);
  CHECK(d.err.find(dir.path() + ":0:0: cannot read config file: Is a directory\n") !=
        std::string::npos);

  std::string config = dir.file("gateway.yaml");
  REQUIRE(writeFile(config,
                    "listen: 127.0.0.1:8080\n"
                    "upstreams:\n"
                    "  - name: weather\n"
                    "    endpoints: [127.0.0.1:9000]\n"
                    "routes:\n"
                    "  - name: default\n"
                    "    upstream: waether\n"));
  Run u = runBinary({"check", "-c", config});
  CHECK(u.rc == 1);
  CHECK(u.err.find(config + ":7:15: route 'default' names unknown upstream 'waether'; did you mean "
                            "'weather'?\n") != std::string::npos);
}
