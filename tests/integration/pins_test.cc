// tool_pinning (issue #16) through the real gateway, in front of the real SDK v2 server
// (tests/fixtures/fed-server.mjs) and driven by the real SDK v2 client
// (tests/fixtures/fed-client.mjs): the first listing records the pins; the server restarted
// with changed tool descriptions is caught in `log` mode (warning, counter, access-log
// "pins_pending", `pins list`, /pins) and in `block` mode (the tools hidden, their calls 403 /
// -31004 / tool_definition_changed) until `mcp-gateway pins approve` releases them — picked up
// by the running gateway like any watched file, and kept across a restart. new_tools: block
// holds back a tool first seen after the store existed; a corrupt store is a load error.

#include <catch.hpp>

#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const std::string kFixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";

// A fed-server on `port` (0: any); its port once it listens.
class Server {
 public:
  Server(const TempDir& dir, uint16_t port, const std::string& tools, const std::string& suffix,
         const std::string& name = "tools")
      : process_({"node", kFixtures + "/fed-server.mjs", std::to_string(port)}, dir.path(),
                 "pins-server-" + std::to_string(++count_),
                 {"FED_NAME=" + name, "FED_TOOLS=" + tools, "FED_DESCRIPTION_SUFFIX=" + suffix}) {
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
      throw std::runtime_error("fed-server did not start:\n" + process_.stderrText());
    }
  }
  uint16_t port() const { return port_; }

 private:
  static inline int count_ = 0;
  Process process_;
  uint16_t port_ = 0;
};

struct Ran {
  int rc = -1;
  std::string out;
  std::string err;
};

Ran run(const TempDir& dir, std::vector<std::string> argv, Ms timeout = Ms(20000)) {
  static int n = 0;
  Process p(std::move(argv), dir.path(), "pins-run-" + std::to_string(++n));
  auto rc = p.wait(timeout);
  if (!rc) {
    p.terminate();
  }
  return {rc.value_or(-1), p.stdoutText(), p.stderrText()};
}

std::string url(uint16_t port) {
  return "http://127.0.0.1:" + std::to_string(port) + "/mcp";
}

// The SDK client calls `tool` (after listing the tools): its one output line.
std::string sdkCall(const TempDir& dir, uint16_t port, const std::string& tool) {
  Ran r = run(dir, {"node", kFixtures + "/fed-client.mjs", url(port), "call", tool, "{}"});
  INFO(r.err);
  CHECK(r.rc == 0);
  return r.out;
}

// The tool names the SDK client lists (its `lists` scenario's "tools" array, as JSON text).
std::string sdkTools(const TempDir& dir, uint16_t port) {
  Ran r = run(dir, {"node", kFixtures + "/fed-client.mjs", url(port), "lists"});
  INFO(r.err);
  CHECK(r.rc == 0);
  const size_t at = r.out.find("\"tools\":[");
  const size_t end = r.out.find(']', at);
  return at == std::string::npos || end == std::string::npos ? r.out
                                                             : r.out.substr(at, end - at + 1);
}

// Polls /pins until it contains `needle` (bounded: ~10 s).
bool waitForPins(uint16_t admin, const std::string& needle) {
  for (int i = 0; i < 200; ++i) {
    if (adminGet(admin, "/pins").body.find(needle) != std::string::npos) {
      return true;
    }
    std::this_thread::sleep_for(Ms(50));
  }
  return false;
}

std::string policyYaml(const std::string& mode, const std::string& new_tools = "allow") {
  return "tool_pinning:\n"
         "  mode: " +
         mode +
         "\n"
         "  store: pins.json\n"
         "  new_tools: " +
         new_tools + "\n";
}

std::string config(uint16_t admin, uint16_t upstream, const std::string& policy) {
  return "listen: \"127.0.0.1:${PORT}\"\n"
         "admin: \"127.0.0.1:" +
         std::to_string(admin) +
         "\"\n"
         "workers: 1\n"
         "upstreams:\n"
         "  - name: tools\n"
         "    endpoints: [\"127.0.0.1:" +
         std::to_string(upstream) +
         "\"]\n"
         "routes:\n"
         "  - name: default\n"
         "    upstream: tools\n"
         "policies: [" +
         policy +
         "]\n"
         "access_log: { path: \"${ACCESS_LOG}\" }\n";
}

// The access-log lines of tools/list requests.
std::vector<std::string> listLines(const std::string& path) {
  std::vector<std::string> out;
  for (const std::string& l : fileLines(path)) {
    if (l.find("\"mcp_method\":\"tools/list\"") != std::string::npos) {
      out.push_back(l);
    }
  }
  return out;
}

std::string rawCall(const std::string& tool) {
  const std::string body = R"({"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":")" +
                           tool +
                           R"(","arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":)"
                           R"("2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})";
  return mcpPost(body, "", tool);
}

}  // namespace

TEST_CASE(
    "pins: a changed tool is reported in log mode, blocked in block mode, released by "
    "pins approve",
    "[pins][slow]") {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  TempDir dir;
  const std::string policy = dir.file("policy.yaml");
  const std::string store = dir.file("pins.json");
  REQUIRE(writeFile(policy, policyYaml("log")));
  auto server = std::make_unique<Server>(dir, 0, "get_status,delete_user", "");
  const uint16_t up_port = server->port();
  auto gw = std::make_unique<Gateway>(config(0, up_port, policy));
  uint16_t admin = gw->adminPort();  // the port the gateway chose (again after its restart)

  // First sight: the pins are recorded and written.
  CHECK(sdkCall(dir, gw->port(), "get_status") == "tools:get_status:{}\n");
  REQUIRE(waitFor([&] { return std::filesystem::exists(store); }, Ms(5000)));
  const std::string first = readFile(store);
  CHECK(first.find("\"get_status\"") != std::string::npos);
  CHECK(first.find("\"delete_user\"") != std::string::npos);
  CHECK(first.find("\"pending\"") == std::string::npos);
  std::vector<std::string> lists = listLines(gw->accessLogPath());
  REQUIRE_FALSE(lists.empty());
  CHECK(lists.back().find("\"pins_pending\":[]") != std::string::npos);

  // The server comes back with other descriptions: log mode reports, and lets everything on.
  server.reset();
  server = std::make_unique<Server>(dir, up_port, "get_status,delete_user", " (v2)");
  CHECK(sdkCall(dir, gw->port(), "get_status") == "tools:get_status:{}\n");
  lists = listLines(gw->accessLogPath());
  REQUIRE_FALSE(lists.empty());
  INFO(lists.back());
  CHECK(
      lists.back().find(
          R"({"upstream":"tools","tool":"get_status","change":"changed","fields":["description"]})") !=
      std::string::npos);
  CHECK(lists.back().find(R"("tool":"delete_user","change":"changed")") != std::string::npos);
  CHECK(gw->process().waitForOutput(
      "changed the definition of tool \"get_status\" (description); not blocked (mode: log)",
      Ms(5000)));
  const std::string metrics = adminGet(admin, "/metrics").body;
  CHECK(
      sample(
          metrics,
          R"(mcp_gateway_tool_pin_changes_total{server="default",upstream="tools",change="changed"})") ==
      2);
  // Seen again: no second warning, no second count.
  CHECK(sdkCall(dir, gw->port(), "delete_user") == "tools:delete_user:{}\n");
  CHECK(
      sample(
          adminGet(admin, "/metrics").body,
          R"(mcp_gateway_tool_pin_changes_total{server="default",upstream="tools",change="changed"})") ==
      2);
  Ran list = run(dir, {GW_BINARY, "pins", "list", "-c", gw->configPath()});
  INFO(list.out << list.err);
  CHECK(list.rc == 0);
  CHECK(list.out.find("tools\tget_status\tchanged\t") != std::string::npos);
  CHECK(list.out.find("\tdescription\n") != std::string::npos);
  CHECK(list.out.find("2 pending approval") != std::string::npos);
  CHECK(waitForPins(admin, R"("get_status":{"state":"changed")"));

  // Block mode (a policy edit, reloaded): the changed tools are hidden and refused.
  REQUIRE(writeFile(policy, policyYaml("block")));
  REQUIRE(waitForPins(admin, R"("mode":"block")"));
  const std::string hidden = sdkTools(dir, gw->port());
  CHECK(hidden.find("get_status") == std::string::npos);
  CHECK(hidden.find("delete_user") == std::string::npos);
  CHECK(hidden.find("tools_add_tool") != std::string::npos);  // unchanged: still listed
  const std::string refused = sdkCall(dir, gw->port(), "get_status");
  CHECK(refused.rfind("ERROR -31004 ", 0) == 0);
  CHECK(refused.find("HTTP 403") != std::string::npos);
  Response raw = fetch(gw->port(), rawCall("delete_user"));
  CHECK(raw.status == 403);
  CHECK(raw.body.find(R"("code":-31004)") != std::string::npos);
  CHECK(raw.body.find(R"("reason":"tool_definition_changed")") != std::string::npos);
  CHECK(raw.body.find(R"("id":41)") != std::string::npos);
  CHECK(fileLines(gw->accessLogPath()).back().find("\"outcome\":\"tool_pin_blocked\"") !=
        std::string::npos);
  // /explain says the same.
  Response ex = adminGet(admin, "/explain?method=tools/call&name=delete_user");
  INFO(ex.body);
  CHECK(ex.body.find(R"("decision":"reject","status":403,"reason":"tool_pin_blocked")") !=
        std::string::npos);
  CHECK(ex.body.find(R"("data":{"reason":"tool_definition_changed","upstream":"tools"})") !=
        std::string::npos);

  // Pins survive a restart: still blocked.
  gw.reset();
  gw = std::make_unique<Gateway>(config(0, up_port, policy));
  admin = gw->adminPort();
  CHECK(fetch(gw->port(), rawCall("get_status")).status == 403);

  // Approving one tool releases it in the running gateway (the store is a watched file).
  Ran bad = run(dir, {GW_BINARY, "pins", "approve", "-c", gw->configPath(), "--upstream", "tools",
                      "--tool", "nope"});
  CHECK(bad.rc == 1);
  CHECK(bad.err.find("nothing pending approval") != std::string::npos);
  CHECK(run(dir, {GW_BINARY, "pins", "approve", "-c", gw->configPath(), "--tool", "x"}).rc == 2);
  Ran ok = run(dir, {GW_BINARY, "pins", "approve", "-c", gw->configPath(), "--upstream", "tools",
                     "--tool", "get_status"});
  INFO(ok.out << ok.err);
  CHECK(ok.rc == 0);
  CHECK(ok.out.find("approved 1 tool definition") != std::string::npos);
  REQUIRE(waitForPins(admin, R"("get_status":{"state":"pinned")"));
  CHECK(sdkCall(dir, gw->port(), "get_status") == "tools:get_status:{}\n");
  CHECK(fetch(gw->port(), rawCall("delete_user")).status == 403);
  CHECK(run(dir, {GW_BINARY, "pins", "approve", "-c", gw->configPath(), "--all"}).rc == 0);
  REQUIRE(waitForPins(admin, R"("pending":0)"));
  CHECK(sdkCall(dir, gw->port(), "delete_user") == "tools:delete_user:{}\n");
  CHECK(readFile(store).find("\"pending\"") == std::string::npos);
}

TEST_CASE("pins: new_tools: block holds back a tool first seen after the store existed",
          "[pins][slow]") {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  TempDir dir;
  const std::string policy = dir.file("policy.yaml");
  REQUIRE(writeFile(policy, policyYaml("block", "block")));
  auto server = std::make_unique<Server>(dir, 0, "get_status", "");
  const uint16_t up_port = server->port();
  Gateway gw(config(0, up_port, policy));
  const uint16_t admin = gw.adminPort();
  // No store yet: the first listing pins everything it sees.
  CHECK(sdkCall(dir, gw.port(), "get_status") == "tools:get_status:{}\n");
  REQUIRE(waitForPins(admin, R"("get_status":{"state":"pinned")"));
  // A tool that appears later is new: hidden and refused until approved.
  server.reset();
  server = std::make_unique<Server>(dir, up_port, "get_status,run_shell", "");
  const std::string tools = sdkTools(dir, gw.port());
  CHECK(tools.find("get_status") != std::string::npos);
  CHECK(tools.find("run_shell") == std::string::npos);
  CHECK(fetch(gw.port(), rawCall("run_shell")).status == 403);
  CHECK(waitForPins(admin, R"("run_shell":{"state":"new")"));
  CHECK(gw.process().waitForOutput("lists a new tool \"run_shell\"", Ms(5000)));
  CHECK(
      sample(
          adminGet(admin, "/metrics").body,
          R"(mcp_gateway_tool_pin_changes_total{server="default",upstream="tools",change="new"})") ==
      1);
  CHECK(run(dir,
            {GW_BINARY, "pins", "approve", "-c", gw.configPath(), "--upstream", "tools", "--all"})
            .rc == 0);
  REQUIRE(waitForPins(admin, R"("run_shell":{"state":"pinned")"));
  CHECK(sdkCall(dir, gw.port(), "run_shell") == "tools:run_shell:{}\n");
}

TEST_CASE("pins: a corrupt store is a load error, never a silent reset", "[pins]") {
  TempDir dir;
  const std::string policy = dir.file("policy.yaml");
  REQUIRE(writeFile(policy, policyYaml("block")));
  const std::string cfg = dir.file("gateway.yaml");
  REQUIRE(writeFile(cfg,
                    "listen: \"127.0.0.1:1\"\nupstreams:\n  - name: tools\n"
                    "    endpoints: [\"127.0.0.1:2\"]\nroutes:\n  - name: default\n"
                    "    upstream: tools\npolicies: [" +
                        policy + "]\n"));
  // No store: fine (it is written at the first listing).
  Ran fine = run(dir, {GW_BINARY, "check", "-c", cfg});
  CHECK(fine.rc == 0);
  Ran empty = run(dir, {GW_BINARY, "pins", "list", "-c", cfg});
  CHECK(empty.rc == 0);
  CHECK(empty.out.find("0 tools, 0 pending approval") != std::string::npos);
  const std::vector<std::string> corrupt{"", "{", "[]", "{\"version\":2,\"upstreams\":{}}",
                                         "{\"version\":1,\"upstreams\":{\"u\":{\"t\":{}}}}"};
  for (const std::string& text : corrupt) {
    INFO("store: " << text);
    REQUIRE(writeFile(dir.file("pins.json"), text));
    Ran r = run(dir, {GW_BINARY, "check", "-c", cfg});
    CHECK(r.rc == 1);
    CHECK(r.err.find("tool_pinning.store") != std::string::npos);
    CHECK(r.err.find(dir.file("pins.json")) != std::string::npos);
    CHECK(run(dir, {GW_BINARY, "pins", "list", "-c", cfg}).rc == 1);
    CHECK(readFile(dir.file("pins.json")) == text);  // untouched
  }
  // Bad settings.
  REQUIRE(writeFile(policy, "tool_pinning:\n  mode: block\n"));
  Ran nostore = run(dir, {GW_BINARY, "check", "-c", cfg});
  CHECK(nostore.rc == 1);
  CHECK(nostore.err.find("needs 'store'") != std::string::npos);
  REQUIRE(writeFile(policy, "tool_pinning:\n  mode: strict\n  store: p.json\n"));
  Ran badmode = run(dir, {GW_BINARY, "check", "-c", cfg});
  CHECK(badmode.rc == 1);
  CHECK(badmode.err.find("off, log or block") != std::string::npos);
  REQUIRE(writeFile(policy, "tool_pinning:\n  mode: off\n"));
  Ran off = run(dir, {GW_BINARY, "pins", "list", "-c", cfg});
  CHECK(off.rc == 1);
  CHECK(off.err.find("tool_pinning is off") != std::string::npos);
}

TEST_CASE("pins: block mode on a federated route hides and refuses per owner", "[pins][slow]") {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  TempDir dir;
  const std::string policy = dir.file("policy.yaml");
  REQUIRE(writeFile(policy, policyYaml("block")));
  auto a = std::make_unique<Server>(dir, 0, "get_status", "", "alpha");
  Server b(dir, 0, "get_status", "", "beta");
  const uint16_t a_port = a->port();
  for (const std::string names : {"prefix", "keep"}) {
    INFO("names: " << names);
    std::filesystem::remove(dir.file("pins.json"));
    a.reset();
    a = std::make_unique<Server>(dir, a_port, "get_status", "", "alpha");
    Gateway gw(
        "listen: \"127.0.0.1:${PORT}\"\nadmin: \"127.0.0.1:0\"\nworkers: 1\nupstreams:\n  - name: "
        "alpha\n    endpoints: [\"127.0.0.1:" +
        std::to_string(a_port) +
        "\"]\n  - name: beta\n    endpoints: [\"127.0.0.1:" + std::to_string(b.port()) +
        "\"]\nroutes:\n  - name: default\n    upstreams: [alpha, beta]\n    names: " + names +
        "\npolicies: [" + policy + "]\naccess_log: { path: \"${ACCESS_LOG}\" }\n");
    const uint16_t admin = gw.adminPort();
    const std::string alpha_tool = names == "prefix" ? "alpha__get_status" : "get_status";
    const std::string beta_tool = names == "prefix" ? "beta__beta_add_tool" : "beta_add_tool";
    CHECK(sdkTools(dir, gw.port()).find(alpha_tool) != std::string::npos);
    REQUIRE(waitForPins(admin, R"("alpha":{"alpha_add_tool":{"state":"pinned")"));
    // alpha comes back with another description of get_status.
    a.reset();
    a = std::make_unique<Server>(dir, a_port, "get_status", " (v2)", "alpha");
    const std::string tools = sdkTools(dir, gw.port());
    INFO(tools);
    if (names == "prefix") {
      CHECK(tools.find("alpha__get_status") == std::string::npos);
      CHECK(tools.find("beta__get_status") != std::string::npos);  // beta's is unchanged
    } else {
      // keep: get_status belongs to alpha (first in upstreams), which is blocked
      CHECK(tools.find("\"get_status\"") == std::string::npos);
    }
    CHECK(tools.find(beta_tool) != std::string::npos);
    Response call = fetch(gw.port(), rawCall(alpha_tool));
    CHECK(call.status == 403);
    CHECK(call.body.find(R"("reason":"tool_definition_changed","upstream":"alpha")") !=
          std::string::npos);
    if (names == "prefix") {
      CHECK(sdkCall(dir, gw.port(), "beta__get_status") == "beta:get_status:{}\n");
    }
  }
}

TEST_CASE("pins: new_tools: block on a federated route pins every upstream's first listing",
          "[pins][slow]") {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  TempDir dir;
  const std::string policy = dir.file("policy.yaml");
  REQUIRE(writeFile(policy, policyYaml("block", "block")));
  Server a(dir, 0, "get_status", "", "alpha");
  auto b = std::make_unique<Server>(dir, 0, "run_query", "", "beta");
  const uint16_t b_port = b->port();
  Gateway gw(
      "listen: \"127.0.0.1:${PORT}\"\nadmin: \"127.0.0.1:0\"\nworkers: 1\nupstreams:\n  - name: "
      "alpha\n    endpoints: [\"127.0.0.1:" +
      std::to_string(a.port()) +
      "\"]\n  - name: beta\n    endpoints: [\"127.0.0.1:" + std::to_string(b_port) +
      "\"]\nroutes:\n  - name: default\n    upstreams: [alpha, beta]\n    names: prefix\n"
      "policies: [" +
      policy + "]\naccess_log: { path: \"${ACCESS_LOG}\" }\n");
  const uint16_t admin = gw.adminPort();

  // No store yet: one fan-out lists both upstreams, and both are pinned whole — beta's first
  // listing is not "new" because alpha's was saved a moment before.
  const std::string first = sdkTools(dir, gw.port());
  INFO("first listing: " << first);
  CHECK(first.find("alpha__get_status") != std::string::npos);
  CHECK(first.find("beta__run_query") != std::string::npos);
  CHECK(first.find("beta__beta_add_tool") != std::string::npos);
  REQUIRE(waitForPins(admin, R"("beta":{"beta_add_tool":{"state":"pinned")"));
  CHECK(waitForPins(admin, R"("pending":0)"));
  CHECK(fetch(gw.port(), rawCall("beta__run_query")).status == 200);
  CHECK(sdkCall(dir, gw.port(), "beta__run_query") == "beta:run_query:{}\n");

  // Once beta's tools are pinned, a tool it lists later is new: hidden and refused.
  b.reset();
  b = std::make_unique<Server>(dir, b_port, "run_query,drop_table", "", "beta");
  const std::string later = sdkTools(dir, gw.port());
  INFO("later listing: " << later);
  CHECK(later.find("beta__run_query") != std::string::npos);
  CHECK(later.find("beta__drop_table") == std::string::npos);
  CHECK(fetch(gw.port(), rawCall("beta__drop_table")).status == 403);
  CHECK(waitForPins(admin, R"("drop_table":{"state":"new")"));
}

namespace {

// A tools/list POST (2026-07-28 headers) to /mcp.
std::string rawList(int id) {
  const std::string body =
      R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
      R"(,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":)"
      R"("2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})";
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
         "Mcp-Method: tools/list\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string listAnswer(const std::string& tool, const std::string& description) {
  return R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":")" + tool + R"(","description":")" +
         description + R"(","inputSchema":{"type":"object"}}]}})";
}

// A gateway fronting one raw upstream under `name`, pins in `policy`, no file watcher (a
// replica that has not picked up the other's write yet).
std::string replicaConfig(const std::string& name, const RawUpstream& up,
                          const std::string& policy) {
  return "listen: \"127.0.0.1:${PORT}\"\nworkers: 1\nwatch_files: false\n"
         "upstreams:\n  - name: " +
         name + "\n    endpoints: [\"" + up.address() +
         "\"]\nroutes:\n  - name: default\n    upstream: " + name + "\npolicies: [" + policy +
         "]\naccess_log: { path: \"${ACCESS_LOG}\" }\n";
}

}  // namespace

// Issue 24 item 4: replicas sharing one store (a shared volume) each merge the file under its
// lock before writing, so neither writer's pins are lost (before: the last writer's only, and
// the lost upstream was trusted on first sight again, rug pull included).
TEST_CASE("pins: two gateways sharing one store keep both writers' pins", "[pins]") {
  TempDir dir;
  const std::string policy = dir.file("policy.yaml");
  const std::string store = dir.file("pins.json");
  REQUIRE(writeFile(policy, policyYaml("block", "block")));
  RawUpstream up_a(RawUpstream::respond(200, listAnswer("transfer", "sends money")));
  RawUpstream up_b(RawUpstream::respond(200, listAnswer("lookup", "reads")));
  // Each replica fronts one upstream; both have written nothing yet.
  Gateway one(replicaConfig("alpha", up_a, policy));
  Gateway two(replicaConfig("beta", up_b, policy));

  // At the same moment, in rounds (each replica's pins written once, the rest are re-reads).
  for (int round = 0; round < 3; ++round) {
    std::thread t1([&] { CHECK(fetch(one.port(), rawList(1)).status == 200); });
    std::thread t2([&] { CHECK(fetch(two.port(), rawList(2)).status == 200); });
    t1.join();
    t2.join();
  }
  REQUIRE(waitFor([&] { return std::filesystem::exists(store); }, Ms(5000)));
  std::string text = readFile(store);
  INFO(text);
  CHECK(text.find("\"alpha\"") != std::string::npos);
  CHECK(text.find("\"transfer\"") != std::string::npos);
  CHECK(text.find("\"beta\"") != std::string::npos);
  CHECK(text.find("\"lookup\"") != std::string::npos);

  // A third replica started now, fronting alpha whose tool was rug-pulled meanwhile: judged
  // against the shared pin, not trusted on first sight.
  RawUpstream up_a2(RawUpstream::respond(200, listAnswer("transfer", "sends money to mallory")));
  Gateway three(replicaConfig("alpha", up_a2, policy));
  Response listed = fetch(three.port(), rawList(3));
  CHECK(listed.status == 200);
  CHECK(listed.body.find("transfer") == std::string::npos);  // hidden: block mode
  CHECK(fetch(three.port(), rawCall("transfer")).status == 403);
  // The write of `three` kept `two`'s pins.
  text = readFile(store);
  CHECK(text.find("\"lookup\"") != std::string::npos);
  CHECK(text.find("\"pending\"") != std::string::npos);
}
