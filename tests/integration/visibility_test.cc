// visibility: filter (issue #16) through the real gateway in front of real SDK v2 servers
// (tests/fixtures/fed-server.mjs): two callers with different identities get different
// tools/list answers, and each caller's list is exactly what it can call — every listed tool
// is not refused with 403, every hidden one is — on a plain route and on a federated one
// (names: prefix), with cacheScope "private" and the access log's list_hidden.

#include <catch.hpp>

#include <csignal>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const std::string kFixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";

class Server {
 public:
  Server(const TempDir& dir, const std::string& name, const std::string& tools)
      : process_({"node", kFixtures + "/fed-server.mjs", "0"}, dir.path(), "vis-" + name,
                 {"FED_NAME=" + name, "FED_TOOLS=" + tools}) {
    auto deadline = Clock::now() + Ms(10000);
    while (Clock::now() < deadline && port_ == 0) {
      std::string out = process_.stdoutText();
      size_t pos = out.find("LISTENING ");
      if (pos != std::string::npos && out.find('\n', pos) != std::string::npos) {
        port_ = static_cast<uint16_t>(std::stoi(out.substr(pos + 10)));
        break;
      }
      if (!process_.running()) {
        break;
      }
      std::this_thread::sleep_for(Ms(20));
    }
    if (port_ == 0) {
      throw std::runtime_error("fed-server " + name + " did not start:\n" + process_.stderrText());
    }
  }
  uint16_t port() const { return port_; }

 private:
  Process process_;
  uint16_t port_ = 0;
};

constexpr char kMeta[] = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                         R"("io.modelcontextprotocol/clientCapabilities":{}})";

std::string post(const std::string& method, const std::string& name, const std::string& key,
                 const std::string& route, int id) {
  std::string params = name.empty() ? std::string("{") + kMeta + "}"
                                    : R"({"name":")" + name + R"(","arguments":{},)" + kMeta + "}";
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
                     R"(","params":)" + params + "}";
  std::string r =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n"
      "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: " +
      method + "\r\n";
  if (!name.empty()) {
    r += "Mcp-Name: " + name + "\r\n";
  }
  r += "Authorization: Bearer " + key + "\r\nX-Route: " + route + "\r\n";
  r += "Content-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" + body;
  return r;
}

// The tool names of a tools/list answer body (JSON; `"name":"…"` members of the items,
// before the result's _meta).
std::set<std::string> toolNames(const std::string& body) {
  std::set<std::string> out;
  size_t pos = body.find("\"tools\"");
  const size_t stop = body.find("\"_meta\"");  // serverInfo has a "name" too
  while (pos != std::string::npos) {
    pos = body.find("{\"name\":\"", pos);
    if (pos == std::string::npos || pos > stop) {
      break;
    }
    pos += 9;
    const size_t end = body.find('"', pos);
    out.insert(body.substr(pos, end - pos));
  }
  return out;
}

constexpr char kAliceKey[] = "alice-visibility-key";
constexpr char kBobKey[] = "bob-visibility-key";

std::string policyYaml() {
  return "identity:\n"
         "  api_keys:\n"
         "    - subject: alice\n"
         "      key_sha256: \"" +
         sha256Hex(kAliceKey) +
         "\"\n"
         "      groups: [dev]\n"
         "    - subject: bob\n"
         "      key_sha256: \"" +
         sha256Hex(kBobKey) +
         "\"\n"
         "      groups: [ops]\n"
         "  anonymous: deny\n"
         "rules:\n"
         "  - name: deletes-need-ops\n"
         "    match: { method: tools/call, name: \"*delete_*\" }\n"
         "    unless: { groups: [ops] }\n"
         "    action: deny\n"
         "  - name: admin-is-bob\n"
         "    match: { method: tools/call, name: \"*admin_*\" }\n"
         "    unless: { subject: bob }\n"
         "    action: deny\n"
         "  - name: no-eu-sql\n"
         "    match: { method: tools/call, name: \"*execute_sql\", params: { Region: \"eu-*\" } }\n"
         "    action: deny\n";
}

std::string writePolicy(const TempDir& dir) {
  REQUIRE(writeFile(dir.file("policy.yaml"), policyYaml()));
  return dir.file("policy.yaml");
}

// Two real SDK servers (ops: four tools, docs: two) behind one gateway: the plain route
// (default, ops) and a federated one (X-Route: fed, names: prefix), under policyYaml().
struct TwoServers {
  TwoServers()
      : gw(kYaml, {{"OPS", std::to_string(ops.port())},
                   {"DOCS", std::to_string(docs.port())},
                   {"POLICY", policy}}) {}
  static constexpr const char* kYaml = R"(listen: "127.0.0.1:${PORT}"
workers: 1
upstreams:
  - name: ops
    endpoints: ["127.0.0.1:${OPS}"]
  - name: docs
    endpoints: ["127.0.0.1:${DOCS}"]
routes:
  - name: fed
    match: { headers: { X-Route: fed } }
    upstreams: [ops, docs]
    names: prefix
  - name: default
    upstream: ops
policies: [${POLICY}]
access_log: { path: "${ACCESS_LOG}" }
)";
  TempDir dir;
  Server ops{dir, "ops", "execute_sql,get_status,delete_user,admin_reset"};
  Server docs{dir, "docs", "read_doc,delete_doc"};
  std::string policy = writePolicy(dir);
  Gateway gw;
};

}  // namespace

TEST_CASE("visibility: each caller's tools/list is exactly what it may call", "[visibility]") {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  TwoServers servers;
  Gateway& gw = servers.gw;

  struct Expect {
    const char* route;
    const char* key;
    std::set<std::string> tools;
  };
  const std::vector<Expect> cases{
      {"plain", kAliceKey, {"execute_sql", "get_status", "ops_add_tool"}},
      {"plain",
       kBobKey,
       {"execute_sql", "get_status", "delete_user", "admin_reset", "ops_add_tool"}},
      {"fed",
       kAliceKey,
       {"ops__execute_sql", "ops__get_status", "ops__ops_add_tool", "docs__read_doc",
        "docs__docs_add_tool"}},
      {"fed",
       kBobKey,
       {"ops__execute_sql", "ops__get_status", "ops__delete_user", "ops__admin_reset",
        "ops__ops_add_tool", "docs__read_doc", "docs__delete_doc", "docs__docs_add_tool"}},
  };
  std::map<std::string, std::set<std::string>> every;  // route → union of what anyone sees
  for (const Expect& e : cases) {
    every[e.route].insert(e.tools.begin(), e.tools.end());
  }
  int id = 1;
  for (const Expect& e : cases) {
    INFO("route " << e.route << ", caller " << (e.key == std::string(kAliceKey) ? "alice" : "bob"));
    Response list = fetch(gw.port(), post("tools/list", "", e.key, e.route, id++));
    INFO(list.head << list.body);
    REQUIRE(list.status == 200);
    CHECK(toolNames(list.body) == e.tools);
    CHECK(list.body.find(R"("cacheScope":"private")") != std::string::npos);
    // Every tool anyone sees: callable (not 403) exactly when this caller sees it.
    for (const std::string& tool : every[e.route]) {
      Response call = fetch(gw.port(), post("tools/call", tool, e.key, e.route, id++));
      INFO(tool << ": " << call.head << call.body);
      CHECK((call.status == 403) == (e.tools.count(tool) == 0));
    }
  }
  const std::string log = readFile(gw.accessLogPath());
  CHECK(log.find("\"list_hidden\":2") != std::string::npos);  // alice, plain
  CHECK(log.find("\"list_hidden\":3") != std::string::npos);  // alice, federated
  CHECK(log.find("\"list_hidden\":0") != std::string::npos);  // bob
}

TEST_CASE("visibility: all relays lists untouched", "[visibility]") {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  TempDir dir;
  Server ops(dir, "ops", "get_status,delete_user");
  const std::string policy = dir.file("policy.yaml");
  REQUIRE(writeFile(policy, "visibility: all\n" + policyYaml()));
  Gateway gw(R"(listen: "127.0.0.1:${PORT}"
workers: 1
upstreams:
  - name: ops
    endpoints: ["127.0.0.1:${OPS}"]
routes:
  - name: default
    upstream: ops
policies: [${POLICY}]
access_log: { path: "${ACCESS_LOG}" }
)",
             {{"OPS", std::to_string(ops.port())}, {"POLICY", policy}});
  Response list = fetch(gw.port(), post("tools/list", "", kAliceKey, "plain", 1));
  REQUIRE(list.status == 200);
  CHECK(toolNames(list.body) == std::set<std::string>{"get_status", "delete_user", "ops_add_tool"});
  CHECK(list.body.find(R"("cacheScope":"private")") != std::string::npos);  // the server's own
  CHECK(readFile(gw.accessLogPath()).find("list_hidden") == std::string::npos);
  Response call = fetch(gw.port(), post("tools/call", "delete_user", kAliceKey, "plain", 2));
  CHECK(call.status == 403);  // listed, still denied: visibility is not policy
}

// Issue #30: a filtered answer is made once per list and visibility set, then reused — the
// same list to alternating callers, each time with its own id, is exactly each caller's,
// on a plain route and a federated one; after a policy reload that changes one caller's set,
// that caller's answer changes and the other's does not.
TEST_CASE("visibility: a list made for one caller is reused for its set only, never another's",
          "[visibility][slow]") {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  TwoServers servers;
  Gateway& gw = servers.gw;
  const std::string& policy = servers.policy;
  const std::set<std::string> alice_plain{"execute_sql", "get_status", "ops_add_tool"};
  const std::set<std::string> bob_plain{"execute_sql", "get_status", "delete_user", "admin_reset",
                                        "ops_add_tool"};
  const std::set<std::string> alice_fed{"ops__execute_sql", "ops__get_status", "ops__ops_add_tool",
                                        "docs__read_doc", "docs__docs_add_tool"};
  const std::set<std::string> bob_fed{"ops__execute_sql", "ops__get_status",    "ops__delete_user",
                                      "ops__admin_reset", "ops__ops_add_tool",  "docs__read_doc",
                                      "docs__delete_doc", "docs__docs_add_tool"};
  int id = 100;
  auto check = [&](const char* route, const char* key, const std::set<std::string>& tools) {
    const int my_id = id++;
    Response list = fetch(gw.port(), post("tools/list", "", key, route, my_id));
    INFO("route " << route << ", key " << key << ": " << list.head << list.body);
    REQUIRE(list.status == 200);
    CHECK(toolNames(list.body) == tools);
    const std::string id_member = "\"id\":" + std::to_string(my_id);
    const size_t at = list.body.find(id_member);
    REQUIRE(at != std::string::npos);
    CHECK((list.body[at + id_member.size()] == ',' || list.body[at + id_member.size()] == '}'));
    CHECK(list.body.find(R"("cacheScope":"private")") != std::string::npos);
  };
  for (int round = 0; round < 4; ++round) {
    check("plain", kAliceKey, alice_plain);
    check("plain", kBobKey, bob_plain);
    check("fed", kBobKey, bob_fed);
    check("fed", kAliceKey, alice_fed);
  }
  // Alice joins ops: deletes become hers to see; admin stays Bob's.
  std::string next = policyYaml();
  next.replace(next.find("groups: [dev]"), 13, "groups: [dev, ops]");
  REQUIRE(writeFile(policy, next));
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  REQUIRE(gw.process().waitForOutput("reloaded", Ms(10000)));
  const std::set<std::string> alice_plain2{"execute_sql", "get_status", "delete_user",
                                           "ops_add_tool"};
  const std::set<std::string> alice_fed2{
      "ops__execute_sql", "ops__get_status",  "ops__delete_user",   "ops__ops_add_tool",
      "docs__read_doc",   "docs__delete_doc", "docs__docs_add_tool"};
  for (int round = 0; round < 2; ++round) {
    check("plain", kAliceKey, alice_plain2);
    check("plain", kBobKey, bob_plain);
    check("fed", kAliceKey, alice_fed2);
    check("fed", kBobKey, bob_fed);
  }
}
