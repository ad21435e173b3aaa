// mode: audit (issue #16) through the real gateway, in front of a real SDK v2 server
// (tests/fixtures/fed-server.mjs) and driven by the real SDK v2 client
// (tests/fixtures/fed-client.mjs): an audit rule that would deny every call and an audit rate
// limit that would admit one call an hour let everything through, while the access log's
// "audit" field, mcp_gateway_policy_decisions_total, /explain and `mcp-gateway explain` show
// what enforcing them would have done. The same policy with `mode: enforce` then refuses
// exactly what audit mode said it would.

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

class Server {
 public:
  Server(const TempDir& dir, const std::string& name, const std::string& tools)
      : process_({"node", kFixtures + "/fed-server.mjs", "0"}, dir.path(), "audit-" + name,
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

struct Ran {
  int rc = -1;
  std::string out;
  std::string err;
};

Ran run(const TempDir& dir, std::vector<std::string> argv, const std::string& name,
        Ms timeout = Ms(20000)) {
  Process p(std::move(argv), dir.path(), name);
  auto rc = p.wait(timeout);
  if (!rc) {
    p.terminate();
  }
  return {rc.value_or(-1), p.stdoutText(), p.stderrText()};
}

// The SDK client's `call TOOL {}` scenario: lists the tools, then calls TOOL.
Ran sdkCall(const TempDir& dir, uint16_t port, const std::string& tool, int n) {
  return run(dir,
             {"node", kFixtures + "/fed-client.mjs",
              "http://127.0.0.1:" + std::to_string(port) + "/mcp", "call", tool, "{}"},
             "audit-client-" + std::to_string(n));
}

std::string decisions(const std::string& rule, const std::string& decision,
                      const std::string& mode) {
  return "mcp_gateway_policy_decisions_total{server=\"default\",rule=\"" + rule + "\",decision=\"" +
         decision + "\",mode=\"" + mode + "\"}";
}

// Access-log lines of one method (the log is written per request; bounded wait for `count`).
std::vector<std::string> logLines(const std::string& path, const std::string& method,
                                  size_t count) {
  std::vector<std::string> out;
  for (int i = 0; i < 100; ++i) {
    out.clear();
    for (const std::string& l : fileLines(path)) {
      if (l.find("\"mcp_method\":\"" + method + "\"") != std::string::npos) {
        out.push_back(l);
      }
    }
    if (out.size() >= count) {
      break;
    }
    std::this_thread::sleep_for(Ms(50));
  }
  return out;
}

std::string policyYaml(const std::string& mode) {
  return "rules:\n"
         "  - name: no-calls\n"
         "    mode: " +
         mode +
         "\n"
         "    match: { method: tools/call }\n"
         "    action: deny\n"
         "  - name: lists-ok\n"
         "    mode: " +
         mode +
         "\n"
         "    match: { method: tools/list }\n"
         "    action: allow\n"
         "rate_limits:\n"
         "  - name: one-call\n"
         "    mode: " +
         mode +
         "\n"
         "    match: { method: tools/call }\n"
         "    key: [method]\n"
         "    rate: 1/h\n";
}

std::string gatewayConfig(uint16_t admin, uint16_t upstream, const std::string& policy) {
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

}  // namespace

TEST_CASE(
    "audit: an audit rule and an audit limit let everything through and say what they "
    "would have done",
    "[audit][policy][slow]") {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  TempDir dir;
  Server server(dir, "tools", "get_status,delete_user");
  const std::string policy = dir.file("policy.yaml");
  REQUIRE(writeFile(policy, policyYaml("audit")));
  Gateway gw(gatewayConfig(0, server.port(), policy));
  const uint16_t admin = gw.adminPort();

  // Three SDK sessions, each listing the tools and calling one: every call goes through.
  const std::vector<std::string> tools{"get_status", "delete_user", "get_status"};
  for (size_t i = 0; i < tools.size(); ++i) {
    Ran r = sdkCall(dir, gw.port(), tools[i], static_cast<int>(i));
    INFO("call " << tools[i] << ": " << r.out << r.err);
    REQUIRE(r.rc == 0);
    CHECK(r.out == "tools:" + tools[i] + ":{}\n");
  }

  // The access log: every call would have been denied by no-calls; the limit would have
  // admitted the first call only. Lists name nothing (lists-ok would allow them).
  const std::vector<std::string> calls = logLines(gw.accessLogPath(), "tools/call", 3);
  REQUIRE(calls.size() == 3);
  CHECK(calls[0].find("\"audit\":[\"no-calls\"]") != std::string::npos);
  CHECK(calls[1].find("\"audit\":[\"no-calls\",\"one-call\"]") != std::string::npos);
  CHECK(calls[2].find("\"audit\":[\"no-calls\",\"one-call\"]") != std::string::npos);
  for (const std::string& l : calls) {
    INFO(l);
    CHECK(l.find("\"status\":200") != std::string::npos);
    CHECK(l.find("\"policy_rule\":\"default\"") != std::string::npos);
  }
  const std::vector<std::string> lists = logLines(gw.accessLogPath(), "tools/list", 3);
  REQUIRE(lists.size() >= 3);
  for (const std::string& l : lists) {
    INFO(l);
    CHECK(l.find("\"audit\":[]") != std::string::npos);
    CHECK(l.find("\"status\":200") != std::string::npos);
  }

  // /metrics counts each decision by rule, decision and mode.
  const std::string metrics = adminGet(admin, "/metrics").body;
  INFO(metrics);
  CHECK(sample(metrics, decisions("no-calls", "deny", "audit")) == 3);
  CHECK(sample(metrics, decisions("no-calls", "allow", "audit")) == -1);
  CHECK(sample(metrics, decisions("one-call", "allow", "audit")) == 1);
  CHECK(sample(metrics, decisions("one-call", "deny", "audit")) == 2);
  CHECK(sample(metrics, decisions("lists-ok", "allow", "audit")) ==
        static_cast<double>(lists.size()));
  CHECK(sample(metrics, decisions("default", "allow", "enforce")) >= 6);
  CHECK(sample(metrics, decisions("default", "deny", "enforce")) == -1);

  // /explain shows the audit decisions beside the enforced one; the limit is only peeked.
  for (int i = 0; i < 2; ++i) {
    Response ex = adminGet(admin, "/explain?method=tools/call&name=get_status");
    INFO(ex.body);
    REQUIRE(ex.status == 200);
    CHECK(jsonToken(ex.body, "decision").value_or("") == "\"forward\"");
    CHECK(ex.body.find(
              R"({"name":"no-calls","kind":"rule","decision":"deny","reason":"denied by rule"})") !=
          std::string::npos);
    CHECK(
        ex.body.find(
            R"({"name":"one-call","kind":"rate_limit","decision":"deny","reason":"rate limited"})") !=
        std::string::npos);
    CHECK(ex.body.find(R"("mode":"audit")") != std::string::npos);
  }
  // The command reads the config alone: it evaluates rules, not buckets (it has none).
  const std::string config = dir.file("gateway-copy.yaml");
  REQUIRE(writeFile(config, expand(gw.configText(), {})));
  Ran cli = run(
      dir, {GW_BINARY, "explain", "-c", config, "--method", "tools/call", "--name", "get_status"},
      "audit-explain", Ms(5000));
  INFO(cli.out << cli.err);
  CHECK(cli.rc == 0);
  CHECK(jsonToken(cli.out, "decision").value_or("") == "\"forward\"");
  CHECK(cli.out.find(R"({"name":"no-calls","kind":"rule","decision":"deny")") != std::string::npos);
  CHECK(cli.out.find(R"("kind":"rate_limit")") == std::string::npos);
  CHECK(cli.out.find(R"("backend":"local","mode":"audit","allowed":null)") != std::string::npos);
  Ran list_cli = run(dir, {GW_BINARY, "explain", "-c", config, "--method", "tools/list"},
                     "audit-explain-list", Ms(5000));
  CHECK(list_cli.rc == 0);
  CHECK(list_cli.out.find(R"("audit":[{"name":"lists-ok","kind":"rule","decision":"allow")") !=
        std::string::npos);
}

TEST_CASE("audit: the same policy enforced refuses exactly what audit mode reported",
          "[audit][policy][slow]") {
  if (!std::filesystem::exists(kFixtures + "/node_modules")) {
    FAIL("tests/fixtures/node_modules is missing: run scripts/setup.sh");
  }
  TempDir dir;
  Server server(dir, "tools", "get_status");
  const std::string policy = dir.file("policy.yaml");
  // Only the limit enforced (the deny rule would stop every call before the limit).
  REQUIRE(writeFile(policy,
                    "rate_limits:\n"
                    "  - name: one-call\n"
                    "    match: { method: tools/call }\n"
                    "    key: [method]\n"
                    "    rate: 1/h\n"));
  Gateway gw(gatewayConfig(0, server.port(), policy));
  const uint16_t admin = gw.adminPort();
  Ran first = sdkCall(dir, gw.port(), "get_status", 1);
  INFO(first.out << first.err);
  REQUIRE(first.rc == 0);
  CHECK(first.out == "tools:get_status:{}\n");
  Ran second = sdkCall(dir, gw.port(), "get_status", 2);
  INFO(second.out << second.err);
  REQUIRE(second.rc == 0);
  CHECK(second.out.rfind("ERROR ", 0) == 0);
  CHECK(second.out.find("HTTP 429") != std::string::npos);
  const std::string metrics = adminGet(admin, "/metrics").body;
  CHECK(sample(metrics, decisions("one-call", "allow", "enforce")) == 1);
  CHECK(sample(metrics, decisions("one-call", "deny", "enforce")) == 1);

  // The deny rule enforced: the SDK's call is refused with 403 and the rule's name is logged.
  REQUIRE(writeFile(policy, policyYaml("enforce")));
  Gateway gw2(gatewayConfig(0, server.port(), policy));
  const uint16_t admin2 = gw2.adminPort();
  Ran denied = sdkCall(dir, gw2.port(), "get_status", 3);
  INFO(denied.out << denied.err);
  REQUIRE(denied.rc == 0);
  CHECK(denied.out.rfind("ERROR ", 0) == 0);
  CHECK(denied.out.find("HTTP 403") != std::string::npos);
  const std::vector<std::string> calls = logLines(gw2.accessLogPath(), "tools/call", 1);
  REQUIRE(calls.size() == 1);
  CHECK(calls[0].find("\"policy_rule\":\"no-calls\"") != std::string::npos);
  CHECK(calls[0].find("\"audit\"") == std::string::npos);  // nothing in audit mode
  CHECK(sample(adminGet(admin2, "/metrics").body, decisions("no-calls", "deny", "enforce")) == 1);
}
