// What tripped up a new user (issue 13 item 5), through the real mcp-gateway binary:
// credential forwarding without policy files (what the upstream gets, /config and /explain
// agree), a streamed answer whose final JSON-RPC response was delivered before the client
// closed (logged `complete`, not `client_closed`), the missing-version 400's data.supported,
// and the command line: --help/-h/help, and the messages for an unreadable config file and an
// unknown upstream name.
// Issue 26 item 5: the demo (scripts/demo.sh's server, config/gateway.yaml) serves default
// clients of both eras; `check` warns about an upstream no route uses and about a federated
// route's endpoint it cannot reach, and still exits 0; `run` logs the first at start and reload.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch.hpp>

#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/era_fixtures.h"
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

// ---- 5. the demo serves the default clients of both eras (issue 26 item 5) ---------------

namespace {

const std::string kSource = GW_SOURCE_DIR;

// Runs argv to completion (≤ 25 s, then killed: rc -1).
Run runFor(const TempDir& dir, std::vector<std::string> argv, const std::string& name) {
  Process p(std::move(argv), dir.path(), name);
  auto rc = p.wait(Ms(25000));
  if (!rc) {
    p.terminate();
  }
  return Run{rc.value_or(-1), p.stdoutText(), p.stderrText()};
}

// The environment scripts/demo.sh starts the demo server with: the NAME=value words before the
// node binary on the line that runs tests/fixtures/mcp-server.mjs.
std::vector<std::string> demoServerEnv() {
  std::istringstream lines(readFile(kSource + "/scripts/demo.sh"));
  std::string line;
  while (std::getline(lines, line)) {
    if (line.starts_with("#") || line.find("tests/fixtures/mcp-server.mjs") == std::string::npos) {
      continue;
    }
    std::vector<std::string> env;
    std::istringstream words(line);
    std::string w;
    while (words >> w) {
      const size_t eq = w.find('=');
      if (eq == std::string::npos || eq == 0 ||
          w.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ_0123456789") < eq) {
        break;
      }
      env.push_back(w);
    }
    return env;
  }
  FAIL("scripts/demo.sh runs no tests/fixtures/mcp-server.mjs");
  return {};
}

// The demo MCP server as scripts/demo.sh starts it, on an ephemeral port.
class DemoServer {
 public:
  explicit DemoServer(const TempDir& dir) {
    std::vector<std::string> argv{"/usr/bin/env"};
    for (const std::string& e : demoServerEnv()) {
      argv.push_back(e);
    }
    for (const std::string& a : {kNode22, kFixtures + "/mcp-server.mjs", std::string("0")}) {
      argv.push_back(a);
    }
    process_ = std::make_unique<Process>(argv, dir.path(), "demo-server");
    if (!process_->waitForOutput("LISTENING ", Ms(15000), true, false) ||
        !waitFor([&] { return process_->stdoutText().find('\n') != std::string::npos; },
                 Ms(1000))) {
      throw std::runtime_error("mcp-server.mjs did not listen; stderr:\n" + process_->stderrText());
    }
    const std::string out = process_->stdoutText();
    port_ = static_cast<uint16_t>(std::stoi(out.substr(out.find("LISTENING ") + 10)));
  }
  uint16_t port() const { return port_; }

 private:
  std::unique_ptr<Process> process_;
  uint16_t port_ = 0;
};

// config/gateway.yaml as shipped, with the addresses the test chose: the listener and admin on
// ephemeral ports, the demo upstream on the server's port, the access log in a file.
std::string demoConfig(uint16_t server_port) {
  std::string y = readFile(kSource + "/config/gateway.yaml");
  auto swap = [&](std::string_view from, const std::string& to) {
    const size_t pos = y.find(from);
    INFO("config/gateway.yaml no longer has `" << from << "`: adjust this test");
    REQUIRE(pos != std::string::npos);
    y.replace(pos, from.size(), to);
  };
  swap("listen: 127.0.0.1:8080", "listen: 127.0.0.1:${PORT}");
  swap("admin: 127.0.0.1:9901", "admin: 127.0.0.1:0");
  swap("endpoints: [127.0.0.1:3000]", "endpoints: [127.0.0.1:" + std::to_string(server_port) + "]");
  swap("path: \"-\"", "path: ${ACCESS_LOG}");
  return y;
}

}  // namespace

TEST_CASE(
    "newuser: the demo (demo.sh's server, config/gateway.yaml) serves the default clients of "
    "both eras",
    "[newuser][demo][slow]") {
  requireFiles({kNode22, kInspector});
  TempDir dir;
  DemoServer server(dir);
  Gateway gw(demoConfig(server.port()));
  const std::string url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/mcp";

  // The SDK v2 client, in each negotiation mode: `legacy` is its default (a 2025 initialize
  // handshake, then Mcp-Session-Id), `auto` probes with server/discover, `pin` is 2026-07-28.
  struct Mode {
    const char* mode;
    const char* era;
  };
  std::string tools;
  for (const Mode& m : {Mode{"legacy", "legacy"}, Mode{"auto", "modern"}, Mode{"pin", "modern"}}) {
    Run r = runFor(dir,
                   {"/usr/bin/env", "HOME=" + dir.path(), std::string("MCP_CLIENT_MODE=") + m.mode,
                    R"(MCP_STEPS=[{"name":"echo","arguments":{"message":"hi"}}])", kNode22,
                    kFixtures + "/mcp-client.mjs", url, "policy"},
                   std::string("sdk-") + m.mode);
    INFO("SDK client, mode " << m.mode << ": rc " << r.rc << "\n" << r.out << r.err);
    REQUIRE(r.rc == 0);
    CHECK(field(r.out, "era") == std::string("\"") + m.era + "\"");
    CHECK(field(r.out, "summary") == "\"ok\"");  // the echo call answered
    CHECK(r.out.find(R"("text":"hi")") != std::string::npos);
    // Both eras list the same tools.
    const std::string n = field(r.out, "tools");
    CHECK(n != "0");
    if (tools.empty()) {
      tools = n;
    }
    CHECK(n == tools);
  }

  // The MCP Inspector CLI without --protocol-era (its default: legacy): one process per call.
  const std::vector<std::string> inspector = inspectorArgv(dir, url);
  std::vector<std::string> list = inspector;
  list.insert(list.end(), {"--method", "tools/list"});
  Run listed = runFor(dir, list, "inspector-list");
  INFO("Inspector tools/list: rc " << listed.rc << "\n" << listed.out << listed.err);
  CHECK(listed.rc == 0);
  CHECK(listed.out.find(R"("name":"echo")") != std::string::npos);
  std::vector<std::string> call = inspector;
  call.insert(call.end(), {"--method", "tools/call", "--tool-name", "echo", "--tool-args-json",
                           R"({"message":"hi"})"});
  Run called = runFor(dir, call, "inspector-call");
  INFO("Inspector tools/call: rc " << called.rc << "\n" << called.out << called.err);
  CHECK(called.rc == 0);
  CHECK(called.out.find("\"result\"") != std::string::npos);
  CHECK(called.out.find("\"isError\":true") == std::string::npos);

  // The gateway let both eras through (mcp.legacy: passthrough) and relayed the server's
  // answers: every echo call is logged 200 from the demo upstream, legacy and trusted alike.
  std::vector<std::string> lines = fileLines(gw.accessLogPath());
  int legacy_calls = 0;
  int modern_calls = 0;
  for (const std::string& l : lines) {
    if (field(l, "mcp_method") != "\"tools/call\"") {
      continue;
    }
    INFO(l);
    CHECK(field(l, "status") == "200");
    CHECK(field(l, "upstream") == "\"127.0.0.1:" + std::to_string(server.port()) + "\"");
    (field(l, "legacy") == "true" ? legacy_calls : modern_calls) += 1;
  }
  CHECK(legacy_calls == 2);  // the SDK client's default mode and the Inspector
  CHECK(modern_calls == 2);  // auto and pin
}

// ---- 6. check's warnings (issue 26 item 5) -----------------------------------------------

namespace {

// A port on 127.0.0.1 held by a socket that is bound but does not listen: a connect to it is
// refused for as long as this lives, and no other process can take the port meanwhile.
class RefusingPort {
 public:
  RefusingPort() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("RefusingPort: bind failed");
    }
    port_ = ntohs(a.sin_port);
  }
  ~RefusingPort() { ::close(fd_); }
  RefusingPort(const RefusingPort&) = delete;
  RefusingPort& operator=(const RefusingPort&) = delete;
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// A port on 127.0.0.1 that never answers a connect: a listener with a backlog of 0 whose one
// queue slot is taken by a connection nobody accepts, so the kernel drops every further SYN.
class SilentPort {
 public:
  SilentPort() {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(a);
    if (listen_fd_ < 0 || ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 ||
        ::listen(listen_fd_, 0) != 0 ||
        ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
      throw std::runtime_error("SilentPort: listen failed");
    }
    port_ = ntohs(a.sin_port);
    filler_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (filler_fd_ < 0 || ::connect(filler_fd_, reinterpret_cast<sockaddr*>(&a), len) != 0) {
      throw std::runtime_error("SilentPort: filler connect failed");
    }
  }
  ~SilentPort() {
    ::close(filler_fd_);
    ::close(listen_fd_);
  }
  SilentPort(const SilentPort&) = delete;
  SilentPort& operator=(const SilentPort&) = delete;
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int listen_fd_ = -1;
  int filler_fd_ = -1;
  uint16_t port_ = 0;
};

// `mcp-gateway check -c FILE` on `yaml` written to FILE in `dir`.
Run checkYaml(const TempDir& dir, const std::string& yaml) {
  REQUIRE(writeFile(dir.file("gateway.yaml"), yaml));
  return runBinary({"check", "-c", dir.file("gateway.yaml")});
}

size_t warningLines(const std::string& text) {
  size_t n = 0;
  for (size_t pos = text.find(": warning: "); pos != std::string::npos;
       pos = text.find(": warning: ", pos + 1)) {
    ++n;
  }
  return n;
}

std::string unusedMessage(const std::string& upstream) {
  return "warning: upstream '" + upstream +
         "' is not used by any route (none names it in 'upstream' or 'upstreams'): it gets no "
         "requests\n";
}

}  // namespace

TEST_CASE(
    "newuser: check warns about an upstream no route uses, at its name, and exits 0 (a use "
    "as a route's upstream or in a federated route's upstreams counts)",
    "[newuser][cli][check]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  // Upstream i's name is on line 3 + 2i, column 11.
  auto config = [&](const std::vector<std::string>& names, const std::string& default_route) {
    std::string y = "listen: 127.0.0.1:8080\nupstreams:\n";
    for (const std::string& n : names) {
      y += "  - name: " + n + "\n    endpoints: [" + up.address() + "]\n";
    }
    return y +
           "routes:\n"
           "  - name: tools\n"
           "    match: { method: \"tools/*\" }\n"
           "    upstreams: [fed_a, fed_b]\n" +
           default_route;
  };
  struct Case {
    const char* what;
    std::vector<std::string> upstreams;
    std::string default_route;
    std::vector<std::string> warnings;  // "line:column: warning: message"
  };
  const Case cases[] = {
      {"plain used only as `upstream:`, fed_a and fed_b only in a federated `upstreams:`",
       {"plain", "fed_a", "fed_b"},
       "  - name: default\n    upstream: plain\n",
       {}},
      {"a spare upstream",
       {"plain", "fed_a", "fed_b", "spare"},
       "  - name: default\n    upstream: plain\n",
       {"9:11: " + unusedMessage("spare")}},
      {"plain unused: both routes are federated",
       {"plain", "fed_a", "fed_b"},
       "  - name: default\n    upstreams: [fed_b, fed_a]\n",
       {"3:11: " + unusedMessage("plain")}},
  };
  for (const Case& c : cases) {
    TempDir dir;
    const std::string file = dir.file("gateway.yaml");
    Run r = checkYaml(dir, config(c.upstreams, c.default_route));
    INFO(c.what << ": rc " << r.rc << "\nstdout:\n" << r.out << "stderr:\n" << r.err);
    CHECK(r.rc == 0);
    CHECK(warningLines(r.err) == c.warnings.size());
    for (const std::string& w : c.warnings) {
      CHECK(r.err.find(file + ":" + w) != std::string::npos);
    }
    if (c.warnings.empty()) {
      CHECK(r.out == file + ": ok\n");
      CHECK(r.err.empty());
    } else {
      CHECK(r.out == file + ": ok, 1 warning\n");
    }
  }
}

TEST_CASE(
    "newuser: check warns about a federated route's endpoint it cannot reach, and exits 0 (a "
    "plain route is not probed)",
    "[newuser][cli][check]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  RefusingPort closed;
  const std::string head =
      "listen: 127.0.0.1:8080\n"
      "upstreams:\n"
      "  - name: weather\n"
      "    endpoints: [" +
      up.address() +
      "]\n"
      "  - name: files\n"
      "    endpoints: [" +
      up.address() + ", " + closed.address() +
      "]\n"
      "routes:\n";
  struct Case {
    const char* what;
    std::string routes;
    std::vector<std::string> warnings;  // after "FILE:0:0: warning: "
  };
  const std::string files_down = "upstream 'files' endpoint " + closed.address() +
                                 " cannot be reached now (Connection refused); until it can, its "
                                 "tools, prompts and resources are missing from the route's lists";
  const Case cases[] = {
      {"one federated route",
       "  - name: default\n    upstreams: [weather, files]\n",
       {"federated route 'default': " + files_down}},
      {"two federated routes share the upstream: each is named",
       "  - name: tools\n    match: { method: \"tools/*\" }\n    upstreams: [files, weather]\n"
       "  - name: default\n    upstreams: [weather, files]\n",
       {"federated route 'tools': " + files_down, "federated route 'default': " + files_down}},
      {"a plain route: its 502 says it; not probed",
       "  - name: tools\n    match: { method: \"tools/*\" }\n    upstream: files\n"
       "  - name: default\n    upstream: weather\n",
       {}},
  };
  for (const Case& c : cases) {
    TempDir dir;
    const std::string file = dir.file("gateway.yaml");
    Run r = checkYaml(dir, head + c.routes);
    INFO(c.what << ": rc " << r.rc << "\nstdout:\n" << r.out << "stderr:\n" << r.err);
    CHECK(r.rc == 0);
    CHECK(warningLines(r.err) == c.warnings.size());
    size_t at = 0;
    for (const std::string& w : c.warnings) {
      const size_t pos = r.err.find(file + ":0:0: warning: " + w + "\n", at);
      CHECK(pos != std::string::npos);  // in route order
      at = pos == std::string::npos ? at : pos + 1;
    }
    CHECK(r.err.find("'weather'") == std::string::npos);
    if (c.warnings.empty()) {
      CHECK(r.out == file + ": ok\n");
    } else {
      CHECK(r.out == file + ": ok, " + std::to_string(c.warnings.size()) + " warning" +
                         (c.warnings.size() == 1 ? "" : "s") + "\n");
    }
  }
  // The probe connects and sends nothing: the upstream saw connections, never a request.
  CHECK(up.requestCount() == 0);
}

TEST_CASE(
    "newuser: check's probe of federated routes is bounded in total: silent endpoints are "
    "reported after one second, all together",
    "[newuser][cli][check][slow]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  SilentPort silent_a;
  SilentPort silent_b;
  TempDir dir;
  const std::string file = dir.file("gateway.yaml");
  const auto t0 = Clock::now();
  Run r = checkYaml(dir,
                    "listen: 127.0.0.1:8080\n"
                    "upstreams:\n"
                    "  - name: weather\n"
                    "    endpoints: [" +
                        silent_a.address() + ", " + up.address() +
                        "]\n"
                        "  - name: files\n"
                        "    endpoints: [" +
                        silent_b.address() +
                        "]\n"
                        "routes:\n"
                        "  - name: default\n"
                        "    upstreams: [weather, files]\n");
  const long long ms = msBetween(t0, Clock::now());
  INFO("rc " << r.rc << " after " << ms << " ms\nstdout:\n" << r.out << "stderr:\n" << r.err);
  CHECK(r.rc == 0);
  CHECK(ms >= 1000);
  CHECK(ms < 4000);  // one second for both, not one each, plus the process's own start
  CHECK(warningLines(r.err) == 2);
  for (const auto& [upstream, address] :
       {std::pair{std::string("weather"), silent_a.address()}, {"files", silent_b.address()}}) {
    CHECK(r.err.find(file + ":0:0: warning: federated route 'default': upstream '" + upstream +
                     "' endpoint " + address +
                     " cannot be reached now (no answer within 1000 ms)") != std::string::npos);
  }
  CHECK(r.out == file + ": ok, 2 warnings\n");
}

TEST_CASE("newuser: run logs an upstream no route uses at start and at every reload",
          "[newuser][check]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  const std::string spare = "  - name: spare\n    endpoints: [" + up.address() + "]\n";
  Gateway gw(
      "listen: 127.0.0.1:${PORT}\n"
      "upstreams:\n"
      "  - name: main\n"
      "    endpoints: [" +
      up.address() + "]\n" + spare +
      "routes:\n"
      "  - name: default\n"
      "    upstream: main\n"
      "access_log:\n"
      "  path: ${ACCESS_LOG}\n"
      "watch_files: false\n");
  CHECK(gw.process().waitForOutput(
      "warning " + gw.configPath() + ":5:11: upstream 'spare' is not used by any route", Ms(3000),
      false, true));
  // The gateway serves all the same.
  CHECK(fetch(gw.port(), mcpPost(toolsCallBody())).status == 200);

  std::string text = gw.configText();
  text.insert(text.find(spare), "  - name: spare2\n    endpoints: [" + up.address() + "]\n");
  REQUIRE(writeFile(gw.configPath(), text));
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  INFO(gw.process().stderrText());
  CHECK(gw.process().waitForOutput("reloaded ", Ms(3000), false, true));
  CHECK(gw.process().waitForOutput(
      "warning reload: " + gw.configPath() + ":5:11: upstream 'spare2' is not used", Ms(3000),
      false, true));
  CHECK(gw.process().stderrText().find("reload: " + gw.configPath() + ":7:11: upstream 'spare'") !=
        std::string::npos);
}
