// The MCP header contract of the real mcp-gateway binary (issue 3): routing on decoded Mcp-*
// headers, the answers the gateway makes itself (405/403/415/400 with JSON-RPC codes), the
// version gate and legacy passthrough, verify mode in front of the non-validating raw server
// and the real SDK v2 server, and the SDK v2 client end to end. Every rejection is also checked
// not to have reached an upstream (RawUpstream request counts, or `upstream: null` in the
// access log when the upstream is a node fixture).

#include <catch.hpp>

#include <filesystem>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const std::string kFixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";
constexpr char kVersion[] = "2026-07-28";

void requireFixtures() {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
}

// A node fixture server (mcp-server.mjs or raw-mcp-server.mjs) on an ephemeral port; port()
// once it printed `LISTENING <port>`.
class NodeServer {
 public:
  NodeServer(const TempDir& dir, const std::string& script, std::vector<std::string> env = {})
      : process_({"node", kFixtures + "/" + script, "0"}, dir.path(), script, std::move(env)) {
    auto deadline = Clock::now() + Ms(10000);
    while (Clock::now() < deadline) {
      std::string out = process_.stdoutText();
      size_t pos = out.find("LISTENING ");
      if (pos != std::string::npos && out.find('\n', pos) != std::string::npos) {
        port_ = static_cast<uint16_t>(std::stoi(out.substr(pos + 10)));
        return;
      }
      if (!process_.running()) {
        break;
      }
      std::this_thread::sleep_for(Ms(20));
    }
    throw std::runtime_error(script + " did not print LISTENING; stderr:\n" +
                             process_.stderrText());
  }
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  Process& process() { return process_; }

 private:
  Process process_;
  uint16_t port_ = 0;
};

// Gateway YAML: `mcp_extra` lines go under `mcp:` (indented by the caller), `upstreams` and
// `routes` are the list items.
std::string gatewayConfig(const std::string& mcp_extra, const std::string& upstreams,
                          const std::string& routes) {
  return "listen: 127.0.0.1:${PORT}\n"
         "workers: 1\n"
         "access_log:\n"
         "  path: ${ACCESS_LOG}\n"
         "mcp:\n"
         "  protocol_versions: [2026-07-28]\n" +
         mcp_extra + "upstreams:\n" + upstreams + "routes:\n" + routes;
}

std::string oneUpstream(const std::string& address) {
  return "  - name: main\n    endpoints: [" + address + "]\n";
}

const char kDefaultRoute[] = "  - name: default\n    upstream: main\n";

// A JSON-RPC body. `id` is the raw JSON token ("" = notification, no id member); `members` are
// extra params members without braces; `_meta` carries the protocol version `version`.
std::string rpc(std::string_view method, std::string_view id, std::string_view members = "",
                std::string_view version = kVersion) {
  std::string b = R"({"jsonrpc":"2.0",)";
  if (!id.empty()) {
    b += "\"id\":" + std::string(id) + ",";
  }
  b += "\"method\":\"" + std::string(method) + "\",\"params\":{";
  if (!members.empty()) {
    b += std::string(members) + ",";
  }
  b += R"("_meta":{"io.modelcontextprotocol/protocolVersion":")" + std::string(version) + "\"}}}";
  return b;
}

// The usual 2026-07-28 POST headers: JSON, the version, Mcp-Method (when not empty), Mcp-Name
// (when not empty), then `extra` ("Name: value\r\n" lines).
std::string mcpHeaders(std::string_view method, std::string_view name = "",
                       std::string_view extra = "") {
  std::string h =
      "Content-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n"
      "MCP-Protocol-Version: 2026-07-28\r\n";
  if (!method.empty()) {
    h += "Mcp-Method: " + std::string(method) + "\r\n";
  }
  if (!name.empty()) {
    h += "Mcp-Name: " + std::string(name) + "\r\n";
  }
  h += extra;
  return h;
}

// A request on /mcp: `verb`, Host, `headers`, and Content-Length when there is a body or the
// verb is POST.
std::string request(std::string_view verb, std::string_view headers, std::string_view body) {
  std::string r =
      std::string(verb) + " /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + std::string(headers);
  if (!body.empty() || verb == "POST") {
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  r += "\r\n";
  r += body;
  return r;
}

std::string post(std::string_view headers, std::string_view body) {
  return request("POST", headers, body);
}

std::string token(const Response& r, std::string_view key) {
  return jsonToken(r.body, key).value_or("<absent>");
}

// Reads the access log one line per finished request, in order.
class LogReader {
 public:
  explicit LogReader(const Gateway& gw) : path_(gw.accessLogPath()) {}
  // The next request's line (waits up to 3 s for it to be written).
  std::string next() {
    auto deadline = Clock::now() + Ms(3000);
    while (Clock::now() < deadline) {
      auto lines = fileLines(path_);
      if (lines.size() > seen_) {
        return lines[seen_++];
      }
      std::this_thread::sleep_for(Ms(10));
    }
    FAIL("no access log line #" << seen_ + 1 << " in " << path_);
    return {};
  }

 private:
  std::string path_;
  size_t seen_ = 0;
};

std::string field(const std::string& line, std::string_view key) {
  return jsonToken(line, key).value_or("<absent>");
}

// A 2026-07-28 JSON answer naming the upstream, so the client side can tell who answered.
UpstreamScript answerAs(const std::string& who) {
  return RawUpstream::respond(200, R"({"jsonrpc":"2.0","id":1,"result":{"up":")" + who + "\"}}");
}

}  // namespace

// ---- 1. routing ------------------------------------------------------------------------------

TEST_CASE("mcp: routes by method glob / decoded Mcp-Name / decoded param / header / default",
          "[mcp][routing]") {
  RawUpstream a(answerAs("a"));
  RawUpstream b(answerAs("b"));
  std::string upstreams = "  - name: a\n    endpoints: [" + a.address() +
                          "]\n  - name: b\n    endpoints: [" + b.address() + "]\n";
  std::string routes =
      "  - name: by-method\n    match: { method: \"prompts/*\" }\n    upstream: a\n"
      "  - name: by-name\n    match: { method: tools/call, name: \"weather_*\" }\n"
      "    upstream: a\n"
      "  - name: by-param\n    match: { params: { region: \"eu-*\" } }\n    upstream: a\n"
      "  - name: by-header\n    match: { headers: { X-Canary: \"1\" } }\n    upstream: a\n"
      "  - name: default\n    upstream: b\n";
  Gateway gw(gatewayConfig("", upstreams, routes));
  LogReader log(gw);

  struct Case {
    const char* what;
    std::string method;
    std::string name;
    std::string extra;
    const char* up;
    const char* route;
  };
  const std::vector<Case> cases = {
      {"method glob", "prompts/list", "", "", "a", "by-method"},
      {"method outside the glob", "tools/list", "", "", "b", "default"},
      {"base64 Mcp-Name decoding to weather_get", "tools/call", "=?base64?d2VhdGhlcl9nZXQ=?=", "",
       "a", "by-name"},
      {"plain Mcp-Name weather_get", "tools/call", "weather_get", "", "a", "by-name"},
      {"base64 Mcp-Name decoding to echo", "tools/call", "=?base64?ZWNobw==?=", "", "b", "default"},
      {"Mcp-Param-Region eu-west1 (config says `region`)", "tools/call", "echo",
       "Mcp-Param-Region: eu-west1\r\n", "a", "by-param"},
      {"param name in another case", "tools/call", "echo", "mcp-param-REGION: eu-central2\r\n", "a",
       "by-param"},
      {"base64 param decoding to eu-north1", "tools/call", "echo",
       "Mcp-Param-Region: =?base64?ZXUtbm9ydGgx?=\r\n", "a", "by-param"},
      {"param outside the glob", "tools/call", "echo", "Mcp-Param-Region: us-east1\r\n", "b",
       "default"},
      {"plain header", "tools/list", "", "X-Canary: 1\r\n", "a", "by-header"},
      {"plain header, other value", "tools/list", "", "X-Canary: 2\r\n", "b", "default"},
  };
  int id = 100;
  for (const Case& c : cases) {
    INFO("case: " << c.what);
    size_t a_before = a.requestCount();
    size_t b_before = b.requestCount();
    std::string members = c.name.empty() ? "" : R"("name":"weather_get")";
    std::string body = rpc(c.method, std::to_string(++id), members);
    Response r = fetch(gw.port(), post(mcpHeaders(c.method, c.name, c.extra), body));
    INFO("response: " << r.head << r.body);
    CHECK(r.status == 200);
    CHECK(r.body.find(std::string("\"up\":\"") + c.up + "\"") != std::string::npos);
    RawUpstream& hit = std::string(c.up) == "a" ? a : b;
    RawUpstream& miss = std::string(c.up) == "a" ? b : a;
    size_t hit_before = std::string(c.up) == "a" ? a_before : b_before;
    size_t miss_before = std::string(c.up) == "a" ? b_before : a_before;
    REQUIRE(hit.waitForRequests(hit_before + 1, Ms(2000)));
    CHECK(hit.requestCount() == hit_before + 1);
    CHECK(miss.requestCount() == miss_before);
    RecordedRequest got = hit.requests().back();
    INFO("upstream received:\n" << got.head);
    CHECK(got.body == body);
    if (!c.name.empty()) {
      // The upstream gets the original bytes, sentinel and all.
      CHECK(got.headerValues("Mcp-Name") == std::vector<std::string>{c.name});
    }
    std::string line = log.next();
    INFO("access log: " << line);
    CHECK(field(line, "route") == "\"" + std::string(c.route) + "\"");
    if (c.name == "=?base64?d2VhdGhlcl9nZXQ=?=") {
      CHECK(field(line, "mcp_name") == "\"weather_get\"");  // decoded, never raw
    }
  }
}

// ---- 2. method, Origin, media type -----------------------------------------------------------

TEST_CASE("mcp: 405 for GET and DELETE / 403 for a foreign Origin / 415 for text/plain",
          "[mcp][transport]") {
  RawUpstream up(answerAs("main"));
  Gateway gw(gatewayConfig("  allowed_origins: [\"http://good.example\"]\n",
                           oneUpstream(up.address()), kDefaultRoute));

  SECTION("GET and DELETE get 405, Allow: POST and a -31002 body") {
    for (const char* verb : {"GET", "DELETE"}) {
      INFO("verb: " << verb);
      Response r = fetch(gw.port(), request(verb,
                                            "Accept: text/event-stream\r\n"
                                            "MCP-Protocol-Version: 2026-07-28\r\n"
                                            "Mcp-Session-Id: s-1\r\n",
                                            ""));
      INFO(r.head << r.body);
      CHECK(r.status == 405);
      CHECK(r.header("Allow") == "POST");
      CHECK(r.header("Content-Type") == "application/json");
      CHECK(token(r, "code") == "-31002");
      CHECK(token(r, "id") == "null");
      CHECK(token(r, "jsonrpc") == "\"2.0\"");
    }
    CHECK(up.requestCount() == 0);
  }

  SECTION("a foreign Origin gets 403 -31003 without an id member; the allowed one passes") {
    std::string body = rpc("tools/list", "3");
    Response bad = fetch(
        gw.port(), post(mcpHeaders("tools/list", "", "Origin: http://evil.example\r\n"), body));
    INFO(bad.head << bad.body);
    CHECK(bad.status == 403);
    CHECK(token(bad, "code") == "-31003");
    CHECK(bad.body.find("\"id\"") == std::string::npos);
    CHECK(up.requestCount() == 0);

    Response good = fetch(
        gw.port(), post(mcpHeaders("tools/list", "", "Origin: http://good.example\r\n"), body));
    INFO(good.head << good.body);
    CHECK(good.status == 200);
    CHECK(good.body.find("\"up\":\"main\"") != std::string::npos);
    REQUIRE(up.waitForRequests(1, Ms(2000)));
    CHECK(up.requests().at(0).header("Origin") == "http://good.example");
  }

  SECTION("Content-Type text/plain gets 415 -31007 with the id") {
    std::string body = rpc("tools/list", "4");
    std::string headers =
        "Content-Type: text/plain\r\n"
        "Accept: application/json, text/event-stream\r\n"
        "MCP-Protocol-Version: 2026-07-28\r\n"
        "Mcp-Method: tools/list\r\n";
    Response r = fetch(gw.port(), post(headers, body));
    INFO(r.head << r.body);
    CHECK(r.status == 415);
    CHECK(token(r, "code") == "-31007");
    CHECK(token(r, "id") == "4");
    CHECK(up.requestCount() == 0);
  }
}

// ---- 3. protocol version -------------------------------------------------------------------

TEST_CASE("mcp: version gate rejects missing and unsupported versions with the request id",
          "[mcp][version]") {
  RawUpstream up(answerAs("main"));
  // legacy: reject is no longer the default (issue #13): this test is about it.
  Gateway gw(gatewayConfig("  legacy: reject\n", oneUpstream(up.address()), kDefaultRoute));
  LogReader log(gw);

  std::string no_version =
      "Content-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n"
      "Mcp-Method: tools/list\r\n";
  Response missing = fetch(gw.port(), post(no_version, rpc("tools/list", "7")));
  INFO(missing.head << missing.body);
  CHECK(missing.status == 400);
  CHECK(token(missing, "code") == "-32020");
  CHECK(token(missing, "id") == "7");
  CHECK(field(log.next(), "outcome") == "\"version_missing\"");

  Response old = fetch(gw.port(), post(no_version + "MCP-Protocol-Version: 1900-01-01\r\n",
                                       rpc("tools/list", "\"req-8\"", "", "1900-01-01")));
  INFO(old.head << old.body);
  CHECK(old.status == 400);
  CHECK(token(old, "code") == "-32022");
  CHECK(token(old, "id") == "\"req-8\"");
  CHECK(old.body.find(R"("data":{"supported":["2026-07-28"],"requested":"1900-01-01"})") !=
        std::string::npos);
  std::string line = log.next();
  CHECK(field(line, "outcome") == "\"version_unsupported\"");
  CHECK(field(line, "upstream") == "null");

  CHECK(up.requestCount() == 0);
}

TEST_CASE("mcp: legacy passthrough sends untrusted POST and GET to the legacy route",
          "[mcp][version]") {
  RawUpstream modern(answerAs("modern"));
  RawUpstream old(answerAs("old"));
  std::string upstreams = "  - name: modern\n    endpoints: [" + modern.address() +
                          "]\n  - name: old\n    endpoints: [" + old.address() + "]\n";
  // The legacy route's match is for trusted traffic; untrusted traffic lands there anyway.
  std::string routes =
      "  - name: legacy\n    match: { headers: { X-Old: \"1\" } }\n"
      "    upstream: old\n    legacy: true\n"
      "  - name: default\n    upstream: modern\n";
  Gateway gw(gatewayConfig("  legacy: passthrough\n", upstreams, routes));
  LogReader log(gw);

  // A 2025-era POST: no version header, a session id. Since issue 13 the client holds the
  // gateway's wrapped form of the server's id (`<endpoint token>.<id>`, session_test.cc); the
  // upstream gets the server's own id back.
  const std::string wrapped = gatewaySessionToken("old", old.address()) + ".sess-Abc_123";
  std::string body = R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}})";
  Response p = fetch(gw.port(), post("Content-Type: application/json\r\n"
                                     "Accept: application/json, text/event-stream\r\n"
                                     "Mcp-Session-Id: " +
                                         wrapped + "\r\n",
                                     body));
  INFO(p.head << p.body);
  CHECK(p.status == 200);
  CHECK(p.body.find("\"up\":\"old\"") != std::string::npos);
  REQUIRE(old.waitForRequests(1, Ms(2000)));
  CHECK(old.requests().at(0).requestLine() == "POST /mcp HTTP/1.1");
  CHECK(old.requests().at(0).headerValues("Mcp-Session-Id") ==
        std::vector<std::string>{"sess-Abc_123"});
  CHECK(old.requests().at(0).body == body);
  std::string line = log.next();
  CHECK(field(line, "trusted") == "false");
  CHECK(field(line, "route") == "\"legacy\"");

  // A 2025-era GET (the standalone SSE stream) goes through too.
  Response g = fetch(gw.port(), request("GET",
                                        "Accept: text/event-stream\r\n"
                                        "Mcp-Session-Id: " +
                                            wrapped +
                                            "\r\n"
                                            "Last-Event-ID: ev-9\r\n",
                                        ""));
  INFO(g.head << g.body);
  CHECK(g.status == 200);
  REQUIRE(old.waitForRequests(2, Ms(2000)));
  RecordedRequest got = old.requests().at(1);
  INFO("legacy upstream received:\n" << got.head);
  CHECK(got.requestLine() == "GET /mcp HTTP/1.1");
  CHECK(got.headerValues("Mcp-Session-Id") == std::vector<std::string>{"sess-Abc_123"});
  CHECK(got.header("Last-Event-ID") == "ev-9");
  log.next();

  // An untrusted version's Mcp-* headers are not used for routing.
  Response u =
      fetch(gw.port(), post("Content-Type: application/json\r\n"
                            "MCP-Protocol-Version: 2025-06-18\r\nMcp-Method: tools/list\r\n",
                            body));
  CHECK(u.status == 200);
  CHECK(u.body.find("\"up\":\"old\"") != std::string::npos);
  log.next();

  // Trusted traffic still takes the normal routes.
  Response m = fetch(gw.port(), post(mcpHeaders("tools/list"), rpc("tools/list", "2")));
  CHECK(m.status == 200);
  CHECK(m.body.find("\"up\":\"modern\"") != std::string::npos);
  line = log.next();
  CHECK(field(line, "trusted") == "true");
  CHECK(field(line, "route") == "\"default\"");
  CHECK(old.requestCount() == 3);
  CHECK(modern.requestCount() == 1);
}

// ---- 4. header contract -----------------------------------------------------------------------

TEST_CASE("mcp: header contract violations get 400 -32020 and never reach the upstream",
          "[mcp][contract]") {
  RawUpstream up(answerAs("main"));
  Gateway gw(gatewayConfig("", oneUpstream(up.address()), kDefaultRoute));

  struct Case {
    const char* what;
    std::string headers;
    std::string body;
    const char* id;
  };
  const std::vector<Case> cases = {
      {"Mcp-Method twice, other case", mcpHeaders("tools/list", "", "mcp-method: tools/list\r\n"),
       rpc("tools/list", "11"), "11"},
      {"Mcp-Name sentinel without padding", mcpHeaders("tools/call", "=?base64?SGVsbG8?="),
       rpc("tools/call", "12", R"("name":"Hello")"), "12"},
      {"tools/call without Mcp-Name", mcpHeaders("tools/call"),
       rpc("tools/call", "\"t-13\"", R"("name":"echo")"), "\"t-13\""},
      {"prompts/get without Mcp-Name", mcpHeaders("prompts/get"),
       rpc("prompts/get", "14", R"("name":"greet")"), "14"},
      {"comma list in Mcp-Method", mcpHeaders("tools/list, tools/call"), rpc("tools/list", "15"),
       "15"},
  };
  for (const Case& c : cases) {
    INFO("case: " << c.what);
    Response r = fetch(gw.port(), post(c.headers, c.body));
    INFO(r.head << r.body);
    CHECK(r.status == 400);
    CHECK(token(r, "code") == "-32020");
    CHECK(token(r, "id") == c.id);
  }
  CHECK(up.requestCount() == 0);

  SECTION("an unknown Mcp-Param-* header is forwarded byte-exact") {
    std::string extra =
        "mcp-param-FOO: x/y; z, w\r\n"
        "Mcp-Param-Bar: =?base64?SGVsbG8=?=\r\n";
    Response r = fetch(gw.port(), post(mcpHeaders("tools/call", "echo", extra),
                                       rpc("tools/call", "16", R"("name":"echo")")));
    CHECK(r.status == 200);
    REQUIRE(up.waitForRequests(1, Ms(2000)));
    RecordedRequest got = up.requests().at(0);
    INFO("upstream received:\n" << got.head);
    CHECK(got.head.find("\r\nmcp-param-FOO: x/y; z, w\r\n") != std::string::npos);
    CHECK(got.head.find("\r\nMcp-Param-Bar: =?base64?SGVsbG8=?=\r\n") != std::string::npos);
  }
}

// ---- 5. notifications without Mcp-Method ----------------------------------------------------

namespace {

const char kNotification[] =
    R"({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"x-1",)"
    R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
    R"("io.modelcontextprotocol/clientInfo":{"name":"itest","version":"1"},)"
    R"("io.modelcontextprotocol/clientCapabilities":{}}}})";

std::string noMethodHeaders() {
  return "Content-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\n"
         "MCP-Protocol-Version: 2026-07-28\r\n";
}

}  // namespace

TEST_CASE("mcp: a notification without Mcp-Method is forwarded but a request is not",
          "[mcp][notification]") {
  SECTION("raw upstream: 202 relayed, body byte-exact; a request without Mcp-Method stopped") {
    RawUpstream up(RawUpstream::respond(202, ""));
    Gateway gw(gatewayConfig("", oneUpstream(up.address()), kDefaultRoute));
    Response n = fetch(gw.port(), post(noMethodHeaders(), kNotification));
    INFO(n.head << n.body);
    CHECK(n.status == 202);
    CHECK(n.body.empty());
    REQUIRE(up.waitForRequests(1, Ms(2000)));
    CHECK(up.requests().at(0).body == kNotification);
    CHECK_FALSE(up.requests().at(0).hasHeader("Mcp-Method"));

    Response r = fetch(gw.port(), post(noMethodHeaders(), rpc("tools/list", "21")));
    INFO(r.head << r.body);
    CHECK(r.status == 400);
    CHECK(token(r, "code") == "-32020");
    CHECK(token(r, "id") == "21");
    CHECK(up.requestCount() == 1);
  }

  SECTION("raw-mcp-server and the SDK server answer 202 through the gateway") {
    requireFixtures();
    TempDir dir;
    for (const char* script : {"raw-mcp-server.mjs", "mcp-server.mjs"}) {
      INFO("upstream: " << script);
      NodeServer server(dir, script);
      Gateway gw(gatewayConfig("", oneUpstream(server.address()), kDefaultRoute));
      LogReader log(gw);
      Response n = fetch(gw.port(), post(noMethodHeaders(), kNotification));
      INFO(n.head << n.body << "\nserver stderr: " << server.process().stderrText());
      CHECK(n.status == 202);
      CHECK(n.body.empty());
      CHECK(field(log.next(), "upstream") == "\"" + server.address() + "\"");

      Response r = fetch(gw.port(), post(noMethodHeaders(), rpc("tools/list", "22")));
      INFO(r.head << r.body);
      CHECK(r.status == 400);
      CHECK(token(r, "code") == "-32020");
      CHECK(token(r, "id") == "22");
      CHECK(r.body.find("Mcp-Method") != std::string::npos);
      CHECK(field(log.next(), "upstream") == "null");
    }
  }
}

// ---- 6. verify mode in front of the non-validating raw server ---------------------------------

TEST_CASE("mcp: verify mode rejects what the raw server would have accepted", "[mcp][verify]") {
  requireFixtures();
  TempDir dir;
  NodeServer server(dir, "raw-mcp-server.mjs");
  Gateway gw(gatewayConfig("  verify_body: true\n", oneUpstream(server.address()), kDefaultRoute));
  LogReader log(gw);

  struct Case {
    const char* what;
    std::string headers;
    std::string body;
    const char* code;
    const char* id;
  };
  const std::vector<Case> rejects = {
      {"Mcp-Method tools/list, body tools/call", mcpHeaders("tools/list"),
       rpc("tools/call", "31", R"("name":"echo","arguments":{"message":"x"})"), "-32020", "31"},
      {"Mcp-Name echo, body weather_get", mcpHeaders("tools/call", "echo"),
       rpc("tools/call", "32", R"("name":"weather_get","arguments":{})"), "-32020", "32"},
      {"_meta protocolVersion 2025-11-25", mcpHeaders("tools/list"),
       rpc("tools/list", "33", "", "2025-11-25"), "-32020", "33"},
      {"duplicate key", mcpHeaders("tools/list"),
       R"({"jsonrpc":"2.0","id":34,"method":"tools/list","method":"tools/list","params":)"
       R"({"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})",
       "-32600", "34"},
      {"batch", mcpHeaders("tools/list"), "[" + rpc("tools/list", "35") + "]", "-32600", "null"},
  };
  for (const Case& c : rejects) {
    INFO("case: " << c.what);
    Response r = fetch(gw.port(), post(c.headers, c.body));
    INFO(r.head << r.body);
    CHECK(r.status == 400);
    CHECK(token(r, "code") == c.code);
    CHECK(token(r, "id") == c.id);
    std::string line = log.next();
    INFO("access log: " << line);
    CHECK(field(line, "upstream") == "null");
    CHECK(field(line, "verify") == "\"on\"");
  }

  auto sqlCall = [&](int id, const std::string& args, const std::string& param_headers) {
    return post(
        mcpHeaders("tools/call", "execute_sql", param_headers),
        rpc("tools/call", std::to_string(id), R"("name":"execute_sql","arguments":)" + args));
  };
  const std::string args = R"({"region":"eu-west1","query":"select 1"})";

  // Before any tools/list the tool's annotations are unknown.
  Response early = fetch(gw.port(), sqlCall(40, args, "Mcp-Param-Region: us-east1\r\n"));
  INFO(early.head << early.body);
  CHECK(early.status == 200);
  std::string line = log.next();
  CHECK(field(line, "params") == "\"unverifiable\"");

  Response list = fetch(gw.port(), post(mcpHeaders("tools/list"), rpc("tools/list", "41")));
  CHECK(list.status == 200);
  CHECK(list.body.find("x-mcp-header") != std::string::npos);
  log.next();

  Response mismatch = fetch(gw.port(), sqlCall(42, args, "Mcp-Param-Region: us-east1\r\n"));
  INFO(mismatch.head << mismatch.body);
  CHECK(mismatch.status == 400);
  CHECK(token(mismatch, "code") == "-32020");
  CHECK(token(mismatch, "id") == "42");
  CHECK(mismatch.body.find("Mcp-Param-Region") != std::string::npos);
  line = log.next();
  CHECK(field(line, "upstream") == "null");

  Response missing = fetch(gw.port(), sqlCall(43, args, ""));
  INFO(missing.head << missing.body);
  CHECK(missing.status == 400);
  CHECK(token(missing, "code") == "-32020");
  CHECK(field(log.next(), "upstream") == "null");

  Response match = fetch(gw.port(), sqlCall(44, args, "Mcp-Param-Region: eu-west1\r\n"));
  INFO(match.head << match.body);
  CHECK(match.status == 200);
  CHECK(match.body.find("ran select 1 in eu-west1") != std::string::npos);
  line = log.next();
  INFO("access log: " << line);
  CHECK(field(line, "params") == "\"verified\"");
  CHECK(field(line, "upstream") == "\"" + server.address() + "\"");

  Response count =
      fetch(gw.port(), sqlCall(45, R"({"region":"eu-west1","count":42,"query":"select 2"})",
                               "Mcp-Param-Region: eu-west1\r\nMcp-Param-Count: 42.0\r\n"));
  INFO(count.head << count.body);
  CHECK(count.status == 200);
  CHECK(count.body.find("ran select 2 in eu-west1") != std::string::npos);
  CHECK(field(log.next(), "params") == "\"verified\"");

  Response count_bad =
      fetch(gw.port(), sqlCall(46, R"({"region":"eu-west1","count":42,"query":"select 3"})",
                               "Mcp-Param-Region: eu-west1\r\nMcp-Param-Count: 43\r\n"));
  INFO(count_bad.head << count_bad.body);
  CHECK(count_bad.status == 400);
  CHECK(token(count_bad, "code") == "-32020");
  CHECK(field(log.next(), "upstream") == "null");
}

// ---- 7. verify mode in front of the SDK server ----------------------------------------------

TEST_CASE("mcp: verify mode in front of the SDK server passes valid traffic and rejects mismatches",
          "[mcp][verify][sdk]") {
  requireFixtures();
  TempDir dir;
  NodeServer server(dir, "mcp-server.mjs", {"MCP_RESPONSE_MODE=json"});
  Gateway gw(gatewayConfig("  verify_body: true\n", oneUpstream(server.address()), kDefaultRoute));
  LogReader log(gw);

  auto call = [](int id, const std::string& header_name, const std::string& body_name) {
    std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                       R"(,"method":"tools/call","params":{"name":")" + body_name +
                       R"(","arguments":{"message":"hi via gateway"},)"
                       R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                       R"("io.modelcontextprotocol/clientInfo":{"name":"itest","version":"1"},)"
                       R"("io.modelcontextprotocol/clientCapabilities":{}}}})";
    return post(mcpHeaders("tools/call", header_name), body);
  };

  Response ok = fetch(gw.port(), call(51, "echo", "echo"));
  INFO(ok.head << ok.body << "\nserver stderr: " << server.process().stderrText());
  CHECK(ok.status == 200);
  CHECK(ok.body.find("hi via gateway") != std::string::npos);
  CHECK(field(log.next(), "upstream") == "\"" + server.address() + "\"");

  Response bad = fetch(gw.port(), call(52, "echo", "weather_get"));
  INFO(bad.head << bad.body);
  CHECK(bad.status == 400);
  CHECK(token(bad, "code") == "-32020");
  CHECK(token(bad, "id") == "52");
  // The gateway's wording, not the SDK's.
  CHECK(bad.body.find("Header mismatch: Mcp-Name header value 'echo' does not match body value "
                      "'weather_get'") != std::string::npos);
  CHECK(field(log.next(), "upstream") == "null");
}

// ---- 8. the SDK v2 client end to end ------------------------------------------------------------

TEST_CASE("mcp: the SDK v2 client completes through the gateway in header and verify mode",
          "[mcp][sdk][slow]") {
  requireFixtures();
  TempDir dir;
  NodeServer server(dir, "mcp-server.mjs");
  for (bool verify : {false, true}) {
    INFO("verify_body: " << verify);
    Gateway gw(gatewayConfig(verify ? "  verify_body: true\n" : "", oneUpstream(server.address()),
                             kDefaultRoute));
    Process client({"node", kFixtures + "/mcp-client.mjs",
                    "http://127.0.0.1:" + std::to_string(gw.port()) + "/mcp", "basic"},
                   dir.path(), verify ? "client-verify" : "client-header");
    auto code = client.wait(Ms(12000));
    std::string out = client.stdoutText();
    INFO("client stdout: " << out << "\nclient stderr: " << client.stderrText()
                           << "\ngateway access log:\n"
                           << readFile(gw.accessLogPath()));
    CHECK(code == std::optional<int>(0));
    CHECK(out.find("\"ok\":true") != std::string::npos);
    CHECK(out.find("\"progress\":3") != std::string::npos);
    if (verify) {
      // The client's traffic really was checked: some tools/call was verified against the
      // schema learned from its own tools/list.
      CHECK(readFile(gw.accessLogPath()).find("\"params\":\"verified\"") != std::string::npos);
    }
  }
}

// ---- 9. schemas learned from a tools/list answered as SSE -------------------------------------

TEST_CASE("mcp: verify mode learns x-mcp-header schemas from a tools/list streamed as SSE",
          "[mcp][verify][sdk]") {
  requireFixtures();
  TempDir dir;
  NodeServer server(dir, "mcp-server.mjs", {"MCP_RESPONSE_MODE=sse"});
  Gateway gw(gatewayConfig("  verify_body: true\n", oneUpstream(server.address()), kDefaultRoute));
  LogReader log(gw);
  const std::string meta = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                           R"("io.modelcontextprotocol/clientCapabilities":{}})";
  auto sql = [&](int id, const std::string& region_header) {
    std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                       R"(,"method":"tools/call","params":{"name":"execute_sql",)"
                       R"("arguments":{"region":"eu-west1","query":"select 1"},)" +
                       meta + "}}";
    return post(mcpHeaders("tools/call", "execute_sql", region_header), body);
  };

  Response list = fetch(
      gw.port(), post(mcpHeaders("tools/list"), R"({"jsonrpc":"2.0","id":60,"method":"tools/list",)"
                                                R"("params":{)" +
                                                    meta + "}}"));
  INFO(list.head << list.body << "\nserver stderr: " << server.process().stderrText());
  REQUIRE(list.status == 200);
  CHECK(list.header("content-type").value_or("").find("text/event-stream") != std::string::npos);
  CHECK(list.body.find("x-mcp-header") != std::string::npos);
  log.next();

  // Known now: the gateway itself rejects the mismatching param, before the upstream.
  Response bad = fetch(gw.port(), sql(61, "Mcp-Param-Region: us-east1\r\n"));
  INFO(bad.head << bad.body);
  CHECK(bad.status == 400);
  CHECK(token(bad, "code") == "-32020");
  CHECK(bad.body.find("Mcp-Param-Region") != std::string::npos);
  std::string line = log.next();
  INFO("access log: " << line);
  CHECK(field(line, "upstream") == "null");

  Response good = fetch(gw.port(), sql(62, "Mcp-Param-Region: eu-west1\r\n"));
  INFO(good.head << good.body);
  CHECK(good.status == 200);
  CHECK(good.body.find("ran select 1 in eu-west1") != std::string::npos);
  CHECK(field(log.next(), "params") == "\"verified\"");
}
