// Issue #13 items 1-2: legacy (2025-era) traffic is inspected and held to the same policy as
// modern traffic. Under `mcp.legacy: passthrough` (the default) a POST without a trusted
// MCP-Protocol-Version is read and parsed; its method, name and annotated arguments route it
// and decide rules, limits, the access log and metrics exactly as a modern request's headers
// do. Driven through the real binary in front of the raw upstream and the real SDK v2
// server (MCP_LEGACY=stateless: it answers 2025-era requests). Every refusal also proves the
// upstream saw nothing.

#include <catch.hpp>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const std::string kFixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";

constexpr char kPolicy[] =
    "rules:\n"
    "  - name: block-deletes\n"
    "    match: { method: tools/call, name: \"delete_*\" }\n"
    "    action: deny\n"
    "  - name: eu-only\n"
    "    match: { method: tools/call, params: { Region: \"us-*\" } }\n"
    "    action: deny\n"
    "default: allow\n"
    "rate_limits:\n"
    "  - name: scarce\n"
    "    match: { method: tools/call, name: limited }\n"
    "    key: [name]\n"
    "    rate: 2/min\n";

constexpr char kOk[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

// A tools/list result annotating execute_sql's `region` as Mcp-Param-Region.
constexpr char kToolsList[] =
    R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"execute_sql","inputSchema":)"
    R"({"type":"object","properties":{"region":{"type":"string","x-mcp-header":"Region"},)"
    R"("query":{"type":"string"}}}}]}})";

// The config: one upstream `main`, a default route, the policy file, an admin listener when
// `admin` (on a port the gateway chooses: Gateway::adminPort).
std::string config(const std::string& upstream, const std::string& policy_path, bool admin,
                   const std::string& mcp = "") {
  std::string y = "listen: 127.0.0.1:${PORT}\nworkers: 1\n";
  if (admin) {
    y += "admin: 127.0.0.1:0\n";
  }
  y += "access_log:\n  path: ${ACCESS_LOG}\n";
  if (!mcp.empty()) {
    y += "mcp:\n" + mcp;
  }
  y += "upstreams:\n  - name: main\n    endpoints: [" + upstream +
       "]\nroutes:\n  - name: default\n    upstream: main\n";
  if (!policy_path.empty()) {
    y += "policies: [" + policy_path + "]\n";
  }
  return y;
}

std::string policyFile(const TempDir& dir, const std::string& text = kPolicy) {
  writeFile(dir.file("policy.yaml"), text);
  return dir.file("policy.yaml");
}

std::string callBody(std::string_view tool, std::string_view args = "{}", int id = 1) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":")" + std::string(tool) + R"(","arguments":)" +
         std::string(args) + "}}";
}

// A 2025-era POST: no MCP-Protocol-Version (or `version` when given), no Mcp-* headers.
std::string legacyPost(std::string_view body, std::string_view extra = "") {
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\n" +
         std::string(extra) + "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         std::string(body);
}

// The same call as a 2026-07-28 client sends it (headers mirror the body).
std::string modernCall(std::string_view tool, int id = 1, std::string_view extra = "") {
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                     R"(,"method":"tools/call","params":{"name":")" + std::string(tool) +
                     R"(","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":)"
                     R"("2026-07-28"}}})";
  return mcpPost(body, extra, tool);
}

std::string token(const Response& r, std::string_view key) {
  return jsonToken(r.body, key).value_or("<absent>");
}

std::string field(const std::string& line, std::string_view key) {
  return jsonToken(line, key).value_or("<absent>");
}

class LogReader {
 public:
  explicit LogReader(const Gateway& gw) : path_(gw.accessLogPath()) {}
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

// The SDK v2 server fixture answering 2025-era requests (stateless).
class LegacySdkServer {
 public:
  explicit LegacySdkServer(const TempDir& dir)
      : process_({"node", kFixtures + "/mcp-server.mjs", "0"}, dir.path(), "mcp-server-legacy",
                 {"MCP_LEGACY=stateless", "MCP_RESPONSE_MODE=json"}) {
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
    throw std::runtime_error("mcp-server.mjs did not print LISTENING; stderr:\n" +
                             process_.stderrText());
  }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  Process& process() { return process_; }

 private:
  Process process_;
  uint16_t port_ = 0;
};

}  // namespace

TEST_CASE("legacy: a deny rule stops a legacy tools/call exactly as a modern one", "[legacy]") {
  TempDir dir;
  RawUpstream up(RawUpstream::respond(200, kOk));
  Gateway gw(config(up.address(), policyFile(dir), false));
  LogReader log(gw);

  Response modern = fetch(gw.port(), modernCall("delete_all", 5));
  log.next();
  for (const std::string& extra :
       {std::string(""), std::string("MCP-Protocol-Version: 2025-06-18\r\n"),
        std::string("MCP-Protocol-Version: 2025-03-26\r\nMcp-Session-Id: s-1\r\n"),
        // an untrusted version's headers say something harmless: they are not believed
        std::string("MCP-Protocol-Version: 2025-06-18\r\nMcp-Method: tools/list\r\n"),
        std::string("Transfer-Encoding: chunked\r\n")}) {
    INFO("extra headers: " << extra);
    std::string body = callBody("delete_all", "{}", 5);
    std::string req = extra.find("chunked") != std::string::npos
                          ? "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                            "application/json\r\n" +
                                extra + "\r\n" + chunk(body.substr(0, 10)) +
                                chunk(body.substr(10)) + chunk("")
                          : legacyPost(body, extra);
    Response old = fetch(gw.port(), req);
    INFO(old.head << old.body);
    CHECK(old.status == modern.status);
    CHECK(old.status == 403);
    CHECK(token(old, "code") == token(modern, "code"));
    CHECK(token(old, "code") == "-31004");
    CHECK(token(old, "id") == "5");
    CHECK(old.body == modern.body);
    std::string line = log.next();
    CHECK(field(line, "outcome") == "\"policy_denied\"");
    CHECK(field(line, "mcp_method") == "\"tools/call\"");
    CHECK(field(line, "mcp_name") == "\"delete_all\"");
    CHECK(field(line, "legacy") == "true");
    CHECK(field(line, "view") == "\"body\"");
    CHECK(field(line, "policy_rule") == "\"block-deletes\"");
    CHECK(field(line, "upstream") == "null");
  }
  CHECK(up.requestCount() == 0);

  // An allowed legacy call goes through byte for byte, nothing added.
  const std::string body = callBody("get_weather", R"({"city":"Paris \u00e9"})", 9);
  // The session id as the gateway hands it out (endpoint token . server id, issue 13 item 3).
  const std::string sid = gatewaySessionToken("main", up.address()) + ".s-9";
  Response ok = fetch(gw.port(), legacyPost(body, "Mcp-Session-Id: " + sid + "\r\n"));
  CHECK(ok.status == 200);
  REQUIRE(up.waitForRequests(1, Ms(2000)));
  RecordedRequest got = up.requests().at(0);
  INFO(got.head);
  CHECK(got.body == body);
  CHECK_FALSE(got.hasHeader("Mcp-Method"));
  CHECK_FALSE(got.hasHeader("Mcp-Name"));
  CHECK_FALSE(got.hasHeader("MCP-Protocol-Version"));
  CHECK(got.headerValues("Mcp-Session-Id") == std::vector<std::string>{"s-9"});
  std::string line = log.next();
  CHECK(field(line, "mcp_method") == "\"tools/call\"");
  CHECK(field(line, "mcp_name") == "\"get_weather\"");
  CHECK(field(line, "trusted") == "false");
  CHECK(field(line, "legacy") == "true");
  CHECK(field(line, "view") == "\"body\"");
  CHECK(field(line, "outcome") == "\"complete\"");
}

TEST_CASE("legacy: a 2/min limit admits exactly 2 calls, legacy and modern share the bucket",
          "[legacy]") {
  TempDir dir;
  RawUpstream up(RawUpstream::respond(200, kOk));
  Gateway gw(config(up.address(), policyFile(dir), false));
  std::vector<int> statuses;
  for (int i = 0; i < 4; ++i) {
    statuses.push_back(fetch(gw.port(), legacyPost(callBody("limited", "{}", i))).status);
  }
  CHECK(statuses == std::vector<int>{200, 200, 429, 429});
  Response again = fetch(gw.port(), modernCall("limited", 7));
  CHECK(again.status == 429);
  CHECK(token(again, "code") == "-31005");
  Response last = fetch(gw.port(), legacyPost(callBody("limited", "{}", 8)));
  CHECK(last.status == 429);
  CHECK(token(last, "id") == "8");
  CHECK(last.header("Retry-After").has_value());
  CHECK(up.requestCount() == 2);
  // Other tools are not limited.
  CHECK(fetch(gw.port(), legacyPost(callBody("free"))).status == 200);

  // Expect: 100-continue does not let a legacy call skip its limit (it waits for the body).
  TempDir dir2;
  RawUpstream up2(RawUpstream::respond(200, kOk));
  Gateway gw2(config(up2.address(), policyFile(dir2), false));
  std::vector<int> expect;
  for (int i = 0; i < 3; ++i) {
    const std::string body = callBody("limited", "{}", i);
    Client c(gw2.port());
    REQUIRE(
        c.send("POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
               "Expect: 100-continue\r\nContent-Length: " +
               std::to_string(body.size()) + "\r\n\r\n"));
    auto cont = c.readResponse(Ms(3000));
    REQUIRE(cont);
    CHECK(cont->status == 100);
    REQUIRE(c.send(body));
    auto r = c.readResponse(Ms(3000));
    REQUIRE(r);
    expect.push_back(r->status);
  }
  CHECK(expect == std::vector<int>{200, 200, 429});
  CHECK(up2.requestCount() == 2);
}

TEST_CASE("legacy: a params rule applies through annotations learned from a legacy tools/list",
          "[legacy]") {
  // The tools/list answer as JSON and as an SSE stream: learning sees both.
  const bool sse = GENERATE(false, true);
  INFO("answer as " << (sse ? "SSE" : "JSON"));
  TempDir dir;
  RawUpstream up(
      sse ? RawUpstream::respond(200, std::string("event: message\ndata: ") + kToolsList + "\n\n",
                                 "text/event-stream")
          : RawUpstream::respond(200, kToolsList));
  Gateway gw(config(up.address(), policyFile(dir), false));
  const std::string us = callBody("execute_sql", R"({"region":"us-east1","query":"q"})", 3);
  // Nothing learned yet: no Region param, the rule cannot apply (as a modern call without it).
  CHECK(fetch(gw.port(), legacyPost(us)).status == 200);
  // A legacy tools/list: the gateway learns execute_sql's annotation from the answer.
  CHECK(fetch(gw.port(), legacyPost(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})")).status ==
        200);
  REQUIRE(up.waitForRequests(2, Ms(2000)));
  Response denied = fetch(gw.port(), legacyPost(us));
  INFO(denied.body);
  CHECK(denied.status == 403);
  CHECK(token(denied, "code") == "-31004");
  CHECK(denied.body.find("\"rule\":\"eu-only\"") != std::string::npos);
  CHECK(up.requestCount() == 2);
  CHECK(fetch(gw.port(), legacyPost(callBody("execute_sql", R"({"region":"eu-west1"})"))).status ==
        200);
  // The same call in header mode gets the same answer.
  std::string body = R"({"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":)"
                     R"("execute_sql","arguments":{"region":"us-east1","query":"q"},"_meta":)"
                     R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  CHECK(fetch(gw.port(), mcpPost(body, "Mcp-Param-Region: us-east1\r\n", "execute_sql")).status ==
        403);
}

TEST_CASE("legacy: batches are checked element by element and refused whole", "[legacy]") {
  TempDir dir;
  RawUpstream up(RawUpstream::respond(200, kOk));
  Gateway gw(config(up.address(), policyFile(dir), false));
  LogReader log(gw);
  const std::string bad = "[" + callBody("echo", "{}", 1) + "," +
                          R"({"jsonrpc":"2.0","method":"notifications/progress"},)" +
                          callBody("delete_all", "{}", 2) + "]";
  Response r = fetch(gw.port(), legacyPost(bad));
  INFO(r.body);
  CHECK(r.status == 403);
  CHECK(token(r, "code") == "-31004");
  CHECK(token(r, "id") == "2");
  CHECK(field(log.next(), "outcome") == "\"policy_denied\"");
  CHECK(up.requestCount() == 0);

  // A batch whose calls would pass the limit one by one but not together is refused whole.
  const std::string three = "[" + callBody("limited", "{}", 1) + "," +
                            callBody("limited", "{}", 2) + "," + callBody("limited", "{}", 3) + "]";
  CHECK(fetch(gw.port(), legacyPost(three)).status == 429);
  log.next();
  CHECK(up.requestCount() == 0);
  // ...and spends nothing: the two calls the limit allows still pass, then the third is 429.
  CHECK(fetch(gw.port(), legacyPost(callBody("limited", "{}", 4))).status == 200);
  CHECK(fetch(gw.port(), legacyPost(callBody("limited", "{}", 5))).status == 200);
  CHECK(fetch(gw.port(), legacyPost(callBody("limited", "{}", 6))).status == 429);
  REQUIRE(up.waitForRequests(2, Ms(2000)));
  log.next();
  log.next();
  log.next();

  const std::string good =
      "[" + callBody("echo", "{}", 1) + "," + R"({"jsonrpc":"2.0","id":"s","result":{}}])";
  CHECK(fetch(gw.port(), legacyPost(good)).status == 200);
  REQUIRE(up.waitForRequests(3, Ms(2000)));
  CHECK(up.requests().at(2).body == good);
  std::string line = log.next();
  CHECK(field(line, "mcp_method") == "\"tools/call\"");
  CHECK(field(line, "mcp_name") == "\"echo\"");
}

TEST_CASE("legacy: an unparseable body gets 400 -32700 and the upstream sees nothing", "[legacy]") {
  TempDir dir;
  RawUpstream up(RawUpstream::respond(200, kOk));
  Gateway gw(config(up.address(), policyFile(dir), false));
  LogReader log(gw);
  struct Case {
    std::string body;
    const char* code;
    const char* id;
  };
  const std::vector<Case> cases = {
      {"not json", "-32700", "null"},
      {R"({"jsonrpc":"2.0","id":1,"method":"tools/call")", "-32700", "null"},
      {"\xEF\xBB\xBF" + callBody("echo"), "-32700", "null"},
      {R"({"jsonrpc":"2.0","id":7,"method":5})", "-32600", "7"},
      {R"({"jsonrpc":"2.0","id":"d","method":"tools/call","params":{"name":"echo","name":"delete_all"}})",
       "-32600", "\"d\""},
      {R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":["delete_all"]}})",
       "-32600", "8"},
      {"[]", "-32600", "null"},
      {"[1,2]", "-32600", "null"},
      {"42", "-32600", "null"},
  };
  for (const Case& c : cases) {
    INFO(c.body);
    Response r = fetch(gw.port(), legacyPost(c.body));
    INFO(r.body);
    CHECK(r.status == 400);
    CHECK(token(r, "code") == c.code);
    CHECK(token(r, "id") == c.id);
    CHECK(r.header("Content-Type").value_or("") == "application/json");
    CHECK(field(log.next(), "upstream") == "null");
  }
  CHECK(up.requestCount() == 0);

  // Nothing in the config looks at the view: the body goes on unchanged (the server answers).
  TempDir dir2;
  RawUpstream up2(RawUpstream::respond(200, kOk));
  Gateway plain(config(up2.address(), "", false));
  LogReader log2(plain);
  CHECK(fetch(plain.port(), legacyPost("not json")).status == 200);
  REQUIRE(up2.waitForRequests(1, Ms(2000)));
  CHECK(up2.requests().at(0).body == "not json");
  std::string line = log2.next();
  CHECK(field(line, "view") == "\"none\"");
  CHECK(field(line, "mcp_method") == "null");
}

TEST_CASE("legacy: GET and DELETE keep passthrough, legacy: reject still refuses", "[legacy]") {
  TempDir dir;
  RawUpstream up(RawUpstream::respond(200, kOk));
  Gateway gw(config(up.address(), policyFile(dir), false));
  LogReader log(gw);
  const std::string sid = gatewaySessionToken("main", up.address()) + ".s-1";
  Response g = fetch(gw.port(),
                     "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: "
                     "text/event-stream\r\nMcp-Session-Id: " +
                         sid + "\r\n\r\n");
  CHECK(g.status == 200);
  std::string line = log.next();
  CHECK(field(line, "legacy") == "true");
  CHECK(field(line, "view") == "\"none\"");
  Response d = fetch(gw.port(),
                     "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                     "Mcp-Session-Id: " +
                         sid + "\r\n\r\n");
  CHECK(d.status == 200);
  CHECK(up.requestCount() == 2);

  TempDir dir2;
  RawUpstream up2(RawUpstream::respond(200, kOk));
  Gateway strict(config(up2.address(), policyFile(dir2), false, "  legacy: reject\n"));
  Response r = fetch(strict.port(), legacyPost(callBody("echo")));
  CHECK(r.status == 400);
  CHECK(token(r, "code") == "-32020");
  CHECK(up2.requestCount() == 0);
}

TEST_CASE("legacy: metrics label legacy calls by method and tool", "[legacy]") {
  TempDir dir;
  RawUpstream up(RawUpstream::respond(200, kOk));
  Gateway gw(config(up.address(), policyFile(dir), true));
  const uint16_t admin = gw.adminPort();
  REQUIRE(fetch(gw.port(), legacyPost(callBody("get_weather"))).status == 200);
  REQUIRE(fetch(gw.port(), legacyPost(callBody("delete_all"))).status == 403);
  const std::string ok =
      "mcp_server_operation_duration_seconds_count{server=\"default\",route=\"default\","
      "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"get_weather\","
      "http_response_status_code=\"200\",error_type=\"\"}";
  double n = -1;
  for (int i = 0; i < 60 && n != 1; ++i) {
    n = sample(adminGet(admin, "/metrics").body, ok);
    if (n != 1) {
      std::this_thread::sleep_for(Ms(50));
    }
  }
  CHECK(n == 1);
  const std::string text = adminGet(admin, "/metrics").body;
  INFO(text);
  // A refused call admits no new tool name (metrics cap): it is counted as "other".
  CHECK(text.find("mcp_method_name=\"tools/call\",gen_ai_tool_name=\"other\","
                  "http_response_status_code=\"403\"") != std::string::npos);
}

TEST_CASE("legacy: the real SDK v2 server in 2025 mode behind the same policy", "[legacy][sdk]") {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  TempDir dir;
  LegacySdkServer server(dir);
  Gateway gw(config(
      server.address(),
      policyFile(dir, std::string(kPolicy) + "  - name: no-echo-spam\n"
                                             "    match: { method: tools/call, name: echo }\n"
                                             "    key: [name]\n"
                                             "    rate: 2/min\n"),
      0));
  LogReader log(gw);
  const std::string init =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
      R"("capabilities":{},"clientInfo":{"name":"itest","version":"1"}}})";
  Response i = fetch(gw.port(), legacyPost(init));
  INFO(i.head << i.body << "\nserver stderr: " << server.process().stderrText());
  REQUIRE(i.status == 200);
  CHECK(i.body.find("\"protocolVersion\"") != std::string::npos);
  CHECK(field(log.next(), "mcp_method") == "\"initialize\"");

  const std::string v = "MCP-Protocol-Version: 2025-06-18\r\n";
  // tools/list in the 2025 era: the answer teaches the gateway execute_sql's annotations.
  Response list =
      fetch(gw.port(), legacyPost(R"({"jsonrpc":"2.0","id":1,"method":"tools/list"})", v));
  INFO(list.body);
  REQUIRE(list.status == 200);
  CHECK(list.body.find("x-mcp-header") != std::string::npos);
  log.next();

  Response us = fetch(
      gw.port(), legacyPost(callBody("execute_sql", R"({"region":"us-east1","query":"q"})", 2), v));
  INFO(us.body);
  CHECK(us.status == 403);
  CHECK(token(us, "code") == "-31004");
  CHECK(field(log.next(), "upstream") == "null");
  Response eu = fetch(
      gw.port(), legacyPost(callBody("execute_sql", R"({"region":"eu-west1","query":"q"})", 3), v));
  INFO(eu.body);
  CHECK(eu.status == 200);
  CHECK(eu.body.find("ran q in eu-west1") != std::string::npos);
  log.next();

  // The per-tool limit: exactly two echo calls reach the server.
  std::vector<int> statuses;
  for (int k = 0; k < 3; ++k) {
    Response e = fetch(gw.port(), legacyPost(callBody("echo", R"({"message":"hi"})", 10 + k), v));
    statuses.push_back(e.status);
    if (e.status == 200) {
      CHECK(e.body.find("\"hi\"") != std::string::npos);
    }
    log.next();
  }
  CHECK(statuses == std::vector<int>{200, 200, 429});
  // A deny rule: the legacy call gets what a modern one gets.
  Response del = fetch(gw.port(), legacyPost(callBody("delete_all", "{}", 20), v));
  CHECK(del.status == 403);
  CHECK(token(del, "code") == "-31004");
  CHECK(field(log.next(), "upstream") == "null");
  // Garbage never reaches the server.
  Response bad = fetch(gw.port(), legacyPost("{nope", v));
  CHECK(bad.status == 400);
  CHECK(token(bad, "code") == "-32700");
  CHECK(field(log.next(), "upstream") == "null");
}
