// The admin listener and the explain command of the real mcp-gateway binary (issue 6):
// /explain and `mcp-gateway explain` against what the same requests really get, /metrics
// values after a known sequence of requests (counts, buckets, rejection counters, the
// tool-name cap, reload counters for SIGHUP and for a watched file), /config redaction.
// Everything on 127.0.0.1, ports chosen at run time.

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch.hpp>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kKey[] = "admin-test-key-alice";
constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

std::string policyYaml() {
  return "identity:\n"
         "  api_keys:\n"
         "    - subject: alice\n"
         "      key_sha256: \"" +
         sha256Hex(kKey) +
         "\"\n"
         "      groups: [dev]\n"
         "  anonymous: allow\n"
         "rules:\n"
         "  - name: no-deletes\n"
         "    match: { method: tools/call, name: \"delete_*\" }\n"
         "    action: deny\n"
         "default: allow\n"
         "rate_limits:\n"
         "  - name: scarce\n"
         "    match: { method: tools/call, name: limited }\n"
         "    key: [name]\n"
         "    rate: 2/h\n";
}

std::string configYaml(const std::string& upstream, const std::string& policy_path,
                       uint16_t admin_port, const std::string& extra = "") {
  return "listen: 127.0.0.1:${PORT}\n"
         "admin: 127.0.0.1:" +
         std::to_string(admin_port) +
         "\n"
         "workers: 2\n"
         "upstreams:\n"
         "  - name: backend\n"
         "    endpoints: [" +
         upstream +
         "]\n"
         "routes:\n"
         "  - name: weather\n"
         "    match: { method: tools/call, name: get_weather }\n"
         "    upstream: backend\n"
         "  - name: default\n"
         "    upstream: backend\n"
         "policies: [" +
         policy_path +
         "]\n"
         "access_log: { path: \"${ACCESS_LOG}\" }\n" +
         extra;
}

std::string call(std::string_view tool, std::string_view extra_headers = "") {
  std::string body = R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":")" +
                     std::string(tool) + R"(","arguments":{}}})";
  return mcpPost(body, extra_headers, tool);
}

std::string bearer(std::string_view token) {
  return "Authorization: Bearer " + std::string(token) + "\r\n";
}

// A gateway with policyYaml() and an admin listener, in front of one upstream answering
// kOkBody; `extra` is appended to the config.
struct AdminGateway {
  explicit AdminGateway(const std::string& extra = "")
      : gw(configYaml(up.address(), policyFile(dir), 0, extra)), admin(gw.adminPort()) {}
  static std::string policyFile(const TempDir& d) {
    writeFile(d.file("policy.yaml"), policyYaml());
    return d.file("policy.yaml");
  }
  RawUpstream up{RawUpstream::respond(200, kOkBody)};
  TempDir dir;
  Gateway gw;
  uint16_t admin;  // the port the gateway chose
};

Response adminPost(uint16_t port, const std::string& target, const std::string& body) {
  return fetch(port, "POST " + target +
                         " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n"
                         "Content-Type: application/json\r\nContent-Length: " +
                         std::to_string(body.size()) + "\r\n\r\n" + body);
}

std::string field(const std::string& json, std::string_view key) {
  return jsonToken(json, key).value_or("<absent>");
}

// Polls /metrics until `series` has `want` (bounded: ~10 s; CI machines run two suites'
// worth of processes at once).
bool waitForSample(uint16_t admin, const std::string& series, double want) {
  for (int i = 0; i < 200; ++i) {
    if (sample(adminGet(admin, "/metrics").body, series) == want) {
      return true;
    }
    std::this_thread::sleep_for(Ms(50));
  }
  return false;
}

struct CliResult {
  int rc = -1;
  std::string out;
  std::string err;
};

CliResult runExplain(TempDir& dir, const std::string& config,
                     const std::vector<std::string>& args) {
  std::vector<std::string> argv{GW_BINARY, "explain", "-c", config};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, dir.path(), "explain");
  auto rc = p.wait(Ms(5000));
  REQUIRE(rc);
  return {*rc, p.stdoutText(), p.stderrText()};
}

std::string runExplainCli(TempDir& dir, const std::string& config,
                          const std::vector<std::string>& args) {
  CliResult r = runExplain(dir, config, args);
  CHECK(r.rc == 0);
  return r.out;
}

}  // namespace

TEST_CASE("admin: /explain and the explain command answer what real requests get",
          "[admin][explain]") {
  AdminGateway fixture;
  auto& [up, dir, gw, admin] = fixture;
  std::string config_path = dir.file("gateway.yaml");
  writeFile(config_path, expand(gw.configText(), {}));

  struct Case {
    const char* what;
    std::string tool;
    std::string token;  // "" = anonymous
    int status;         // what the real request gets
    const char* route;
    const char* reason;  // explain's reason (null when forwarded)
  };
  std::vector<Case> cases = {
      {"forwarded on its route", "get_weather", kKey, 200, "\"weather\"", "null"},
      {"forwarded on the default route", "echo", "", 200, "\"default\"", "null"},
      {"denied by a rule", "delete_all", kKey, 403, "\"default\"", "\"policy_denied\""},
      {"bad API key", "echo", "not-the-key", 401, "\"default\"", "\"auth_invalid\""},
  };
  for (const Case& c : cases) {
    DYNAMIC_SECTION(c.what) {
      std::string query = "/explain?method=tools/call&name=" + c.tool +
                          (c.token.empty() ? "" : "&token=" + c.token);
      Response ex = adminGet(admin, query);
      REQUIRE(ex.status == 200);
      CHECK(ex.header("Content-Type").value_or("") == "application/json");
      Response real = fetch(gw.port(), call(c.tool, c.token.empty() ? "" : bearer(c.token)));
      CHECK(real.status == c.status);
      CHECK(field(ex.body, "decision") == (c.status == 200 ? "\"forward\"" : "\"reject\""));
      CHECK(field(ex.body, "status") == (c.status == 200 ? "null" : std::to_string(c.status)));
      CHECK(field(ex.body, "reason") == c.reason);
      CHECK(field(ex.body, "route") == c.route);
      if (c.status != 200) {
        // The JSON-RPC error code the client got is the one explain names.
        CHECK(field(ex.body, "code") == field(real.body, "code"));
      }

      std::vector<std::string> args{"--method", "tools/call", "--name", c.tool};
      if (!c.token.empty()) {
        args.insert(args.end(), {"--token", c.token});
      }
      std::string cli = runExplainCli(dir, config_path, args);
      CHECK(field(cli, "decision") == field(ex.body, "decision"));
      CHECK(field(cli, "status") == field(ex.body, "status"));
      CHECK(field(cli, "route") == field(ex.body, "route"));
      CHECK(field(cli, "policy_rule") == field(ex.body, "policy_rule"));
    }
  }

  SECTION("explain peeks at rate-limit buckets without spending them") {
    for (int i = 0; i < 5; ++i) {
      Response ex = adminPost(admin, "/explain", R"({"method":"tools/call","name":"limited"})");
      REQUIRE(ex.status == 200);
      CHECK(field(ex.body, "decision") == "\"forward\"");
      CHECK(field(ex.body, "allowed") == "true");
    }
    CHECK(fetch(gw.port(), call("limited")).status == 200);
    CHECK(fetch(gw.port(), call("limited")).status == 200);
    Response ex = adminPost(admin, "/explain", R"({"method":"tools/call","name":"limited"})");
    CHECK(field(ex.body, "decision") == "\"reject\"");
    CHECK(field(ex.body, "status") == "429");
    CHECK(field(ex.body, "allowed") == "false");
    CHECK(fetch(gw.port(), call("limited")).status == 429);
    // The command has no bucket state: it says which limit applies, not its verdict.
    std::string cli =
        runExplainCli(dir, config_path, {"--method", "tools/call", "--name", "limited"});
    CHECK(field(cli, "decision") == "\"forward\"");
    CHECK(field(cli, "allowed") == "null");
    CHECK(cli.find("\"name\":\"scarce\"") != std::string::npos);
  }

  SECTION("params and headers reach the stages; bad input gets 400 with a reason") {
    Response ex = adminPost(admin, "/explain",
                            R"({"method":"tools/call","name":"get_weather",)"
                            R"("params":{"Region":"eu-west1"},"headers":{"Origin":"http://x"}})");
    CHECK(field(ex.body, "status") == "403");
    CHECK(field(ex.body, "reason") == "\"origin_forbidden\"");
    Response bad = adminGet(admin, "/explain?colour=blue");
    CHECK(bad.status == 400);
    CHECK(bad.body.find("unknown explain input 'colour'") != std::string::npos);
    CHECK(adminPost(admin, "/explain", "[1,2]").status == 400);
    CHECK(adminPost(admin, "/explain", "{\"method\":7}").status == 400);
    CHECK(adminGet(admin, "/explain").status == 400);
    CHECK(adminPost(admin, "/metrics", "{}").status == 405);
    CHECK(adminGet(admin, "/nope").status == 404);
  }

  SECTION("inputs that cannot make a request are 400s for /explain and exit 2 for the command") {
    struct Bad {
      const char* what;
      std::string json;               // POST /explain body
      std::vector<std::string> args;  // the same for the command
      const char* error;
    };
    const std::string big(40000, 'a');  // over max_header_bytes (32 KiB)
    std::vector<Bad> bads = {
        {"a param name that is not a header token",
         R"({"method":"tools/call","name":"echo","params":{"Bad Name":"x"}})",
         {"--method", "tools/call", "--name", "echo", "--param", "Bad Name=x"},
         "param name 'Bad Name' is not a header token"},
        {"a header value with a line break",
         R"({"method":"tools/call","name":"echo","headers":{"X-Trace":"a\r\nInjected: 1"}})",
         {"--method", "tools/call", "--name", "echo", "--header", "X-Trace: a\r\nInjected: 1"},
         "header 'X-Trace' has an invalid name or value"},
        {"a head over the limits",
         R"({"method":"tools/call","name":"echo","headers":{"X-Big":")" + big + R"("}})",
         {"--method", "tools/call", "--name", "echo", "--header", "X-Big: " + big},
         "the request would be refused before the pipeline"},
    };
    for (const Bad& b : bads) {
      INFO(b.what);
      Response ex = adminPost(admin, "/explain", b.json);
      CHECK(ex.status == 400);
      CHECK(ex.header("Content-Type").value_or("") == "application/json");
      // The shape every other /explain 400 has: one "error" member, nothing else.
      CHECK(ex.body.rfind("{\"error\":\"", 0) == 0);
      CHECK(ex.body.find(b.error) != std::string::npos);
      CHECK(ex.body.find("decision") == std::string::npos);
      CHECK(ex.body.ends_with("\"}\n"));
      CliResult cli = runExplain(dir, config_path, b.args);
      CHECK(cli.rc == 2);
      CHECK(cli.out.empty());
      CHECK(cli.err.find(b.error) != std::string::npos);
    }
    // The shape of the other 400s, for comparison.
    Response unknown = adminGet(admin, "/explain?colour=blue");
    CHECK(unknown.body.rfind("{\"error\":\"", 0) == 0);
    CHECK(unknown.body.ends_with("\"}\n"));
    // A rejection is an answer, not an input error: 200 for /explain, exit 0 for the command.
    Response rejected = adminGet(admin, "/explain?method=tools/call&name=delete_all");
    CHECK(rejected.status == 200);
    CHECK(field(rejected.body, "decision") == "\"reject\"");
    CliResult cli =
        runExplain(dir, config_path, {"--method", "tools/call", "--name", "delete_all"});
    CHECK(cli.rc == 0);
    CHECK(field(cli.out, "decision") == "\"reject\"");
  }

  SECTION("query keys and values are percent-decoded; malformed escapes are 400s") {
    Response ex = adminGet(admin, "/explain?%6Dethod=tools%2Fcall&na%6De=get%5Fweather");
    REQUIRE(ex.status == 200);
    CHECK(field(ex.body, "route") == "\"weather\"");
    CHECK(field(ex.body, "mcp_name") == "\"get_weather\"");
    Response param = adminGet(admin, "/explain?method=tools/call&name=echo&param.Bad%20Name=x");
    CHECK(param.status == 400);
    CHECK(param.body.find("param name 'Bad Name'") != std::string::npos);
    for (const char* target :
         {"/explain?method=tools/call&name=get%2", "/explain?method=tools/call&name=get%zzx",
          "/explain?me%xthod=tools/call", "/explain?method=tools/call&name%="}) {
      INFO(target);
      Response bad = adminGet(admin, target);
      CHECK(bad.status == 400);
      CHECK(bad.body.find("malformed %-escape") != std::string::npos);
    }
  }
  CHECK(up.requestCount() <= 5);  // explain never reached the upstream
}

TEST_CASE("admin: /metrics after a known sequence of requests", "[admin][metrics]") {
  AdminGateway fixture("metrics: { max_tool_names: 3 }\nwatch_files: false\n");
  auto& [up, dir, gw, admin] = fixture;

  for (int i = 0; i < 3; ++i) {
    REQUIRE(fetch(gw.port(), call("get_weather")).status == 200);
  }
  REQUIRE(fetch(gw.port(), call("delete_all")).status == 403);
  REQUIRE(fetch(gw.port(), call("echo", bearer("wrong"))).status == 401);
  // Duplicate Mcp-Name: a header-contract rejection before any route.
  REQUIRE(fetch(gw.port(), call("echo", "Mcp-Name: echo\r\n")).status == 400);
  // Rejected requests take no slot of the tool-name cap (3), however many names they try.
  for (int i = 0; i < 5; ++i) {
    REQUIRE(fetch(gw.port(), call("junk_" + std::to_string(i), bearer("wrong"))).status == 401);
  }
  // So forwarded ones get them: get_weather, tool_four, tool_five; tool_six folds into "other".
  REQUIRE(fetch(gw.port(), call("tool_four")).status == 200);
  REQUIRE(fetch(gw.port(), call("tool_five")).status == 200);
  REQUIRE(fetch(gw.port(), call("tool_six")).status == 200);

  const std::string ok =
      "{server=\"default\",route=\"weather\",mcp_method_name=\"tools/"
      "call\",gen_ai_tool_name=\"get_weather\","
      "http_response_status_code=\"200\",error_type=\"\"";
  REQUIRE(waitForSample(admin, "mcp_server_operation_duration_seconds_count" + ok + "}", 3));
  Response m = adminGet(admin, "/metrics");
  REQUIRE(m.status == 200);
  CHECK(m.header("Content-Type").value_or("").rfind("text/plain; version=0.0.4", 0) == 0);
  const std::string& t = m.body;
  // Buckets are cumulative and end in +Inf = count; a loopback answer is under 10 ms... or
  // at least under 300 s.
  CHECK(sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"+Inf\"}") == 3);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"300\"}") == 3);
  double low = sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"0.01\"}");
  CHECK((low >= 0 && low <= 3));
  CHECK(sample(t, "mcp_server_operation_duration_seconds_sum" + ok + "}") > 0);
  CHECK(
      sample(t,
             "mcp_client_operation_duration_seconds_count{server=\"default\",upstream=\"backend\","
             "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"get_weather\","
             "error_type=\"\"}") == 3);
  CHECK(sample(t,
               "mcp_server_operation_duration_seconds_count{server=\"default\",route=\"default\","
               "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"other\","
               "http_response_status_code=\"403\",error_type=\"policy_denied\"}") == 1);
  CHECK(sample(t,
               "mcp_server_operation_duration_seconds_count{server=\"default\",route=\"default\","
               "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"other\","
               "http_response_status_code=\"401\",error_type=\"auth_invalid\"}") == 6);
  for (const char* tool : {"tool_four", "tool_five"}) {
    CHECK(
        sample(
            t,
            std::string(
                "mcp_server_operation_duration_seconds_count{server=\"default\",route=\"default\","
                "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"") +
                tool + "\",http_response_status_code=\"200\",error_type=\"\"}") == 1);
  }
  CHECK(sample(t,
               "mcp_server_operation_duration_seconds_count{server=\"default\",route=\"default\","
               "mcp_method_name=\"tools/call\",gen_ai_tool_name=\"other\","
               "http_response_status_code=\"200\",error_type=\"\"}") == 1);
  CHECK(t.find("delete_all") == std::string::npos);
  CHECK(t.find("junk_") == std::string::npos);
  CHECK(t.find("tool_six") == std::string::npos);
  CHECK(sample(t, "mcp_gateway_rejections_total{server=\"default\",reason=\"policy_denied\"}") ==
        1);
  CHECK(sample(t, "mcp_gateway_rejections_total{server=\"default\",reason=\"auth_invalid\"}") == 6);
  CHECK(sample(t, "mcp_gateway_rejections_total{server=\"default\",reason=\"header_invalid\"}") ==
        1);
  CHECK(sample(t, "mcp_gateway_connections_accepted_total") >= 14);  // + the harness's probe
  CHECK(sample(t, "mcp_gateway_received_bytes_total") > 14 * 200);
  CHECK(sample(t, "mcp_gateway_sent_bytes_total") > 5 * 100);
  CHECK(sample(t, "mcp_gateway_active_sse_streams") == 0);
  CHECK(sample(t, "mcp_gateway_draining") == 0);
  CHECK(sample(t, "mcp_gateway_config_reloads_total{result=\"success\"}") == 0);

  // SIGHUP reloads are counted; a larger tool-name cap applies at once; an invalid file is a
  // failure and the old settings stay.
  std::string file = field(adminGet(admin, "/config").body, "source_file");
  REQUIRE(file.size() > 2);
  file = file.substr(1, file.size() - 2);
  std::string raised = readFile(file);
  REQUIRE(raised.find("max_tool_names: 3") != std::string::npos);
  raised.replace(raised.find("max_tool_names: 3"), 17, "max_tool_names: 4");
  REQUIRE(writeFile(file, raised));
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  CHECK(waitForSample(admin, "mcp_gateway_config_reloads_total{result=\"success\"}", 1));
  REQUIRE(fetch(gw.port(), call("tool_six")).status == 200);
  REQUIRE(fetch(gw.port(), call("tool_seven")).status == 200);
  const std::string six =
      "mcp_server_operation_duration_seconds_count{server=\"default\",route=\"default\",mcp_method_"
      "name=\"tools/"
      "call\",gen_ai_tool_name=\"tool_six\",http_response_status_code=\"200\",error_type=\"\"}";
  CHECK(waitForSample(admin, six, 1));
  CHECK(adminGet(admin, "/metrics").body.find("tool_seven") == std::string::npos);
  REQUIRE(writeFile(file, readFile(file) + "bogus_key: 1\n"));
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  CHECK(waitForSample(admin, "mcp_gateway_config_reloads_total{result=\"failure\"}", 1));
  CHECK(gw.process().waitForOutput("unknown key 'bogus_key'", Ms(2000)));
  CHECK(fetch(gw.port(), call("get_weather")).status == 200);
  CHECK(fetch(gw.port(), call("delete_all")).status == 403);
}

TEST_CASE("admin: a watched config file reloads itself, a broken one is counted and ignored",
          "[admin][reload][slow]") {
  AdminGateway fixture;
  auto& [up, dir, gw, admin] = fixture;
  Response cfg = adminGet(admin, "/config");
  REQUIRE(cfg.status == 200);
  std::string file = field(cfg.body, "source_file");
  REQUIRE(file.size() > 2);
  file = file.substr(1, file.size() - 2);

  SECTION("policy file edits apply without SIGHUP") {
    REQUIRE(fetch(gw.port(), call("delete_all")).status == 403);
    std::string relaxed = policyYaml();
    relaxed.replace(relaxed.find("action: deny"), 12, "action: allow");
    REQUIRE(writeFile(dir.file("policy.yaml"), relaxed));
    REQUIRE(waitForSample(admin, "mcp_gateway_config_reloads_total{result=\"success\"}", 1));
    CHECK(fetch(gw.port(), call("delete_all")).status == 200);
  }

  SECTION("a broken config is counted as a failure and the old settings keep serving") {
    REQUIRE(writeFile(file, readFile(file) + "  bogus: [\n"));
    REQUIRE(waitForSample(admin, "mcp_gateway_config_reloads_total{result=\"failure\"}", 1));
    CHECK(gw.process().waitForOutput("reload failed; keeping the running configuration", Ms(2000)));
    CHECK(fetch(gw.port(), call("get_weather")).status == 200);
    CHECK(fetch(gw.port(), call("delete_all")).status == 403);
  }

  SECTION("an editor's write-and-rename is seen too") {
    std::string next = readFile(file);
    next.replace(next.find("name: get_weather"), 17, "name: get_forecast");
    REQUIRE(writeFile(file + ".tmp", next));
    REQUIRE(::rename((file + ".tmp").c_str(), file.c_str()) == 0);
    REQUIRE(waitForSample(admin, "mcp_gateway_config_reloads_total{result=\"success\"}", 1));
    Response ex = adminGet(admin, "/explain?method=tools/call&name=get_forecast");
    CHECK(field(ex.body, "route") == "\"weather\"");
  }

  SECTION("restart-only keys: /config shows the bound values and the file's as pending") {
    const std::string bound_listen = field(cfg.body, "listen");
    // The address as the file says it (the harness has the gateway choose its port).
    REQUIRE(bound_listen == "\"127.0.0.1:0\"");
    CHECK(cfg.body.find("restart_pending") == std::string::npos);
    std::string next = readFile(file);
    next.replace(next.find("127.0.0.1:0"), 11, "127.0.0.1:1");
    next.replace(next.find("workers: 2"), 10, "workers: 1");
    REQUIRE(writeFile(file, next));
    REQUIRE(waitForSample(admin, "mcp_gateway_config_reloads_total{result=\"success\"}", 1));
    Response now = adminGet(admin, "/config");
    CHECK(field(now.body, "listen") == bound_listen);
    CHECK(field(now.body, "workers") == "2");
    CHECK(now.body.find("\"restart_pending\":{\"listen\":\"127.0.0.1:1\",\"workers\":1}") !=
          std::string::npos);
    CHECK(fetch(gw.port(), call("get_weather")).status == 200);
  }
}

TEST_CASE("admin: /config shows the effective settings with secrets redacted", "[admin][config]") {
  AdminGateway fixture;
  auto& [up, dir, gw, admin] = fixture;
  Response cfg = adminGet(admin, "/config");
  REQUIRE(cfg.status == 200);
  CHECK(cfg.header("Content-Type").value_or("") == "application/json");
  const std::string& b = cfg.body;
  CHECK(field(b, "endpoint") == "\"/mcp\"");
  CHECK(field(b, "max_body_bytes") == "4194304");  // a default, filled in
  CHECK(b.find("\"name\":\"weather\"") != std::string::npos);
  CHECK(b.find("\"subject\":\"alice\"") != std::string::npos);
  CHECK(b.find("<redacted>") != std::string::npos);
  CHECK(b.find(kKey) == std::string::npos);
  CHECK(b.find(sha256Hex(kKey)) == std::string::npos);
  CHECK(field(b, "anonymous") == "\"allow\"");  // the setting's own words
  CHECK(b.find("\"rate\":\"2/h\",\"burst\":2,") != std::string::npos);
  CHECK(b.find("\"match\":{\"method\":\"tools/call\",\"name\":\"limited\"}") != std::string::npos);
  CHECK(adminGet(admin, "/readyz").status == 200);
  CHECK(adminGet(admin, "/healthz").body == "ok\n");
}

TEST_CASE("admin: the healthcheck command exits 0 only while /healthz answers 200",
          "[admin][healthcheck]") {
  AdminGateway fixture;
  auto& [up, dir, gw, admin] = fixture;
  REQUIRE(adminGet(admin, "/healthz").status == 200);
  auto run = [&](std::vector<std::string> args, std::vector<std::string> env = {}) {
    std::vector<std::string> argv{GW_BINARY, "healthcheck"};
    argv.insert(argv.end(), args.begin(), args.end());
    Process p(argv, dir.path(), "healthcheck", std::move(env));
    auto rc = p.wait(Ms(5000));
    REQUIRE(rc);
    return CliResult{*rc, p.stdoutText(), p.stderrText()};
  };
  CliResult ok = run({"--port", std::to_string(admin)});
  CHECK(ok.rc == 0);
  CHECK(ok.err.empty());
  // The port from the environment (what the image's HEALTHCHECK uses).
  CHECK(run({}, {"GW_ADMIN_PORT=" + std::to_string(admin)}).rc == 0);
  // The data listener is not the admin listener: /healthz there is an MCP-endpoint 404.
  CliResult wrong = run({"--port", std::to_string(gw.port())});
  CHECK(wrong.rc == 1);
  CHECK(wrong.err.find("status 404") != std::string::npos);
  ClosedPort closed;
  CliResult refused = run({"--port", std::to_string(closed.port())});
  CHECK(refused.rc == 1);
  CHECK(refused.err.find("Connection refused") != std::string::npos);
  CHECK(run({"--port", "0"}).rc == 2);
  CHECK(run({"--port", "99999"}).rc == 2);
  CHECK(run({"extra"}).rc == 2);
}

TEST_CASE("admin: a gateway that cannot bind its listener exits 1 at once, admin included",
          "[admin]") {
  // Something else holds the data port (without SO_REUSEPORT, so the gateway cannot share it).
  int holder = ::socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(holder >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(holder, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  REQUIRE(::listen(holder, 4) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(::getsockname(holder, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  TempDir dir;
  std::string config = dir.file("gateway.yaml");
  REQUIRE(writeFile(config,
                    "listen: 127.0.0.1:" + std::to_string(ntohs(a.sin_port)) +
                        "\nadmin: 127.0.0.1:0\nworkers: 2\nupstreams:\n  - name: u\n    endpoints: "
                        "[127.0.0.1:1]\nroutes:\n  - name: d\n    upstream: u\n"));
  Process p({GW_BINARY, "run", "-c", config}, dir.path(), "bindfail");
  auto rc = p.wait(Ms(5000));  // the admin thread, started first, is stopped too
  ::close(holder);
  REQUIRE(rc);
  CHECK(*rc == 1);
  CHECK(p.stderrText().find("cannot listen on") != std::string::npos);
}
