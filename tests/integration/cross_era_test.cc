// Issue #13 item 6: real MCP clients of both eras, through the real gateway, held to one
// policy. Behind the gateway: the SDK v2 fixture server in dual-era mode
// (tests/fixtures/mcp-server.mjs, MCP_LEGACY=sessions: 2026-07-28 stateless + 2025 sessions) and
// @modelcontextprotocol/server-everything (a 2025-only, session-keeping server), each as TWO
// processes behind one upstream with two endpoints. Clients: the SDK v2 client
// (tests/fixtures/mcp-client.mjs) in `legacy`, `auto` and pinned-2026-07-28 modes, and the MCP
// Inspector CLI 2.12 (`--protocol-era legacy|auto|modern`), all on the fixtures' Node 22.
//
// Each test checks named assertion groups (the INFO line says which):
//   era        the client negotiated the era the combination is meant to exercise
//   decisions  the client saw the same outcome sequence as every other client/era
//   access-log the gateway logged the same (name, status, outcome) sequence per caller
//   upstream   a refused call never reached a server
//   sessions   a 2025 session stays on the endpoint that created it (replica, restart)
//
// One policy for all: deny `delete_*` and `get-env`, deny execute_sql with Region `eu-*` (a
// param bound through the tool's x-mcp-header annotation), and a 2/min limit on echo per
// caller (callers are told apart by API key, so every combination starts with a fresh bucket).

#include <catch.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/era_fixtures.h"
#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

// --- the one policy ----------------------------------------------------------------------------

// API keys: caller `c` presents `tok-c`; every combination is its own caller.
std::string policyYaml(const std::vector<std::string>& callers) {
  std::string y = apiKeysYaml(callers);
  // visibility: all — this test compares call decisions across eras, so every client must
  // see (and call) the denied tools; with the default `filter` a client that trusts its
  // tools/list would not even try them (tests/integration/visibility_test.cc covers that).
  y += "  anonymous: allow\n"
       "visibility: all\n"
       "rules:\n"
       "  - name: block-deletes\n"
       "    match: { method: tools/call, name: \"delete_*\" }\n"
       "    action: deny\n"
       "  - name: block-env\n"
       "    match: { method: tools/call, name: get-env }\n"
       "    action: deny\n"
       "  - name: no-eu-sql\n"
       "    match: { method: tools/call, name: execute_sql, params: { Region: \"eu-*\" } }\n"
       "    action: deny\n"
       "default: allow\n"
       "rate_limits:\n"
       "  - name: echo-2-per-min\n"
       "    match: { method: tools/call, name: echo }\n"
       "    key: [subject, name]\n"
       "    rate: 2/min\n"
       "    burst: 2\n";
  return y;
}

// Gateway YAML template (${PORT}/${ACCESS_LOG} left for Gateway) for one upstream with the
// backends' endpoints, two workers, legacy passthrough and the policy file.
std::string gatewayTemplate(const std::vector<std::string>& endpoints,
                            const std::string& policy_path) {
  GatewayConfig cfg;
  cfg.upstream_endpoints = endpoints;
  cfg.workers = 2;
  cfg.extra_yaml = "policies: [" + policy_path + "]\n";
  std::string y = gatewayYaml(cfg);
  size_t pos = y.find("mcp:\n");
  y.insert(pos + 5, "  legacy: passthrough\n");
  return y;
}

// --- the scenario --------------------------------------------------------------------------------

struct Call {
  std::string name;
  std::string args_json;  // a JSON object
  int times = 1;          // >1: the limited tool, called back to back
};

// What a client must see, per server: the call list and the outcome words (see summarize in
// mcp-client.mjs) and access-log entries `name status outcome upstream|none`.
struct Scenario {
  std::vector<Call> calls;
  std::string summary;
  std::vector<std::string> log;
};

Scenario sdkScenario() {
  return {{{"weather_get", R"({"city":"Paris"})"},
           {"delete_everything", "{}"},
           {"execute_sql", R"({"region":"us-west1","query":"SELECT 1"})"},
           {"execute_sql", R"({"region":"eu-west1","query":"SELECT 1"})"},
           {"echo", R"({"message":"hi"})", 3}},
          "ok|403/-31004|ok|403/-31004|ok|ok|429/-31005",
          {"weather_get 200 complete up", "delete_everything 403 policy_denied none",
           "execute_sql 200 complete up", "execute_sql 403 policy_denied none",
           "echo 200 complete up", "echo 200 complete up", "echo 429 rate_limited none"}};
}

Scenario everythingScenario() {
  return {{{"get-sum", R"({"a":1,"b":2})"}, {"get-env", "{}"}, {"echo", R"({"message":"hi"})", 3}},
          "ok|403/-31004|ok|ok|429/-31005",
          {"get-sum 200 complete up", "get-env 403 policy_denied none", "echo 200 complete up",
           "echo 200 complete up", "echo 429 rate_limited none"}};
}

std::string stepsJson(const std::vector<Call>& calls) {
  std::string j = "[";
  for (const Call& c : calls) {
    for (int i = 0; i < c.times; ++i) {
      j += (j.size() > 1 ? "," : "");
      j += R"({"name":")" + c.name + R"(","arguments":)" + c.args_json + "}";
    }
  }
  return j + "]";
}

struct ComboRun {
  Combo combo;
  std::string summary;  // the client's own view, one word per call
  std::string output;   // everything the client printed, for INFO
};

// The SDK v2 client: one process runs the whole call list on one connection.
ComboRun runSdk(const TempDir& dir, const std::string& url, const Combo& c, const Scenario& s) {
  Ran r =
      run(dir, sdkArgv(dir, url, c.mode, "policy", c.caller(), {"MCP_STEPS=" + stepsJson(s.calls)}),
          "sdk-" + c.mode);
  std::string summary = r.code == 0 ? unquote(jsonToken(r.out, "summary"))
                                    : "client failed (exit " + std::to_string(r.code) + ")";
  return {c, summary, r.out + r.err};
}

// The Inspector CLI: one process per call (it connects, lists tools, calls one tool, exits);
// the limited tool runs as one `--load` process making its calls one after the other.
ComboRun runInspector(const TempDir& dir, const std::string& url, const Combo& c,
                      const Scenario& s) {
  // The Inspector keeps a catalog and client config under HOME: keep them in the temp dir.
  std::vector<std::string> base = inspectorArgv(dir, url, c.mode, c.caller());
  base.insert(base.end(), {"--method", "tools/call"});
  std::vector<std::string> words;
  std::string output;
  int n = 0;
  for (const Call& call : s.calls) {
    std::vector<std::string> argv = base;
    for (const std::string& a :
         {std::string("--tool-name"), call.name, std::string("--tool-args-json"), call.args_json}) {
      argv.push_back(a);
    }
    if (call.times > 1) {
      for (const char* a : {"--load", "--load-requests", "3", "--load-concurrency", "1"}) {
        argv.emplace_back(a);
      }
    }
    Ran r = run(dir, argv, "inspector-" + c.mode + "-" + std::to_string(n++));
    output += r.out + r.err;
    if (call.times > 1) {
      // {"result":{..."ok":2,..."errors":1,..."errorMessages":[{"message":"...429...-31005..."}]}}
      std::string ok = unquote(jsonToken(r.out, "ok"));
      std::string errors = unquote(jsonToken(r.out, "errors"));
      std::string code = rpcCodeIn(r.out);
      if (r.code != 0) {
        words.push_back("load failed (exit " + std::to_string(r.code) + ")");
      } else if (std::to_string(call.times - 1) == ok && errors == "1" &&
                 r.out.find("HTTP 429") != std::string::npos) {
        // --load reports counts, not order; the access log proves the order.
        for (int i = 0; i + 1 < call.times; ++i) {
          words.emplace_back("ok");
        }
        words.push_back("429/" + code);
      } else {
        words.push_back("load ok=" + ok + " errors=" + errors + " code=" + code);
      }
    } else if (r.code == 0 && r.out.find("\"result\"") != std::string::npos) {
      words.emplace_back(r.out.find("\"isError\":true") != std::string::npos ? "tool_error" : "ok");
    } else {
      // The error envelope on stderr: {"error":{"code":"...","message":"...","status":403}}
      std::optional<std::string> status = jsonToken(r.err, "status");
      words.push_back((status ? *status : "") + "/" + rpcCodeIn(r.err));
    }
  }
  std::string summary;
  for (const std::string& w : words) {
    summary += (summary.empty() ? "" : "|") + w;
  }
  return {c, summary, output};
}

// Runs every combination at once (each in its own thread, each its own caller and bucket);
// returns when all are done. Catch2 assertions stay on the calling thread.
std::vector<ComboRun> runAll(const std::string& url, const std::vector<Combo>& combos,
                             const Scenario& s) {
  std::vector<ComboRun> runs(combos.size());
  runConcurrently(
      combos.size(),
      [&](size_t i, const TempDir& dir) {
        runs[i] = combos[i].client == "sdk" ? runSdk(dir, url, combos[i], s)
                                            : runInspector(dir, url, combos[i], s);
      },
      [&](size_t i, const std::string& what) {
        runs[i] = {combos[i], "harness error: " + what, ""};
      });
  return runs;
}

// The checks every policy test makes, one INFO'd group at a time.
void checkDecisions(const Gateway& gw, const std::vector<ComboRun>& runs, const Scenario& s) {
  for (const ComboRun& r : runs) {
    INFO("combination " << r.combo.caller() << "\nclient output:\n" << r.output);
    checkEra(gw, r.combo, r.output);
    {
      INFO("group decisions: the client's own view, one word per call");
      CHECK(r.summary == s.summary);
    }
    {
      INFO("group access-log: the gateway's view of the caller's tools/call requests");
      const std::vector<std::string> log = waitToolCallLog(gw, r.combo.caller(), s.log.size());
      CHECK(log == s.log);
    }
  }
}

std::string serverStderr(std::vector<std::unique_ptr<Backend>>& backends) {
  std::string all;
  for (auto& b : backends) {
    all += b->process().stderrText();
  }
  return all;
}

}  // namespace

// --- decisions: the dual-era SDK server
// ------------------------------------------------------------

TEST_CASE(
    "cross-era: every SDK client mode and Inspector era gets the same decisions from the "
    "dual-era SDK server",
    "[cross-era][slow]") {
  requireFixtures();
  TempDir dir;
  const std::vector<Combo>& combos = kCombos;
  writeFile(dir.file("policy.yaml"), policyYaml(callersOf(combos)));
  std::vector<std::unique_ptr<Backend>> servers;
  servers.push_back(std::make_unique<FixtureServer>(dir, "sdk-a", "sessions"));
  servers.push_back(std::make_unique<FixtureServer>(dir, "sdk-b", "sessions"));
  Gateway gw(
      gatewayTemplate({servers[0]->endpoint(), servers[1]->endpoint()}, dir.file("policy.yaml")));
  std::string url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/mcp";

  Scenario s = sdkScenario();
  std::vector<ComboRun> runs = runAll(url, combos, s);
  INFO("gateway stderr:\n" << gw.process().stderrText());
  checkDecisions(gw, runs, s);

  std::string traces = serverStderr(servers);
  INFO("server stderr:\n" << traces);
  {
    INFO("group upstream: refused calls never reached a server; allowed ones did, once each");
    CHECK(countOf(traces, "TOOL delete_everything") == 0);
    CHECK(countOf(traces, "TOOL execute_sql") == combos.size());
    CHECK(countOf(traces, "TOOL echo") == 2 * combos.size());
    CHECK(countOf(traces, "TOOL weather_get") == combos.size());
  }
  {
    INFO("group sessions: no 2025 request reached an endpoint that does not hold its session");
    CHECK(countOf(traces, "SESSION_MISS") == 0);
  }
}

// --- decisions: server-everything (2025 only)
// ------------------------------------------------------

TEST_CASE("cross-era: SDK client and Inspector CLI get the same decisions from server-everything",
          "[cross-era][slow]") {
  requireFixtures();
  TempDir dir;
  // The gateway bridges a 2025-only server for 2026-07-28 clients (upstreams[].era: auto, the
  // default; tests/integration/bridge_test.cc): `auto` and pinned clients end up modern,
  // legacy ones keep their own 2025 sessions — and every one gets the same decisions.
  const std::vector<Combo>& combos = kCombos;
  writeFile(dir.file("policy.yaml"), policyYaml(callersOf(combos)));
  std::vector<std::unique_ptr<Backend>> servers;
  servers.push_back(std::make_unique<EverythingServer>(dir, "everything-a"));
  servers.push_back(std::make_unique<EverythingServer>(dir, "everything-b"));
  Gateway gw(
      gatewayTemplate({servers[0]->endpoint(), servers[1]->endpoint()}, dir.file("policy.yaml")));
  std::string url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/mcp";

  Scenario s = everythingScenario();
  std::vector<ComboRun> runs = runAll(url, combos, s);
  INFO("gateway stderr:\n" << gw.process().stderrText());
  checkDecisions(gw, runs, s);
}

// --- sessions: a second replica and a restart ----------------------------------------------------

namespace {

struct OpenSession {
  std::string id;       // as the client holds it (the gateway's wrapped id once item 3 lands)
  std::string version;  // negotiated 2025 revision
  std::string output;
};

OpenSession openSession(const TempDir& dir, const std::string& url, const std::string& steps,
                        const std::string& name) {
  Ran r = run(dir, sdkArgv(dir, url, "legacy", "session-open", "", {"MCP_STEPS=" + steps}), name);
  return {unquote(jsonToken(r.out, "sessionId")), unquote(jsonToken(r.out, "version")),
          r.out + r.err};
}

// Continues `s` through url: the calls, then DELETE. Returns the client's JSON line.
std::string resumeSession(const TempDir& dir, const std::string& url, const OpenSession& s,
                          const std::string& steps, const std::string& name) {
  Ran r = run(dir,
              sdkArgv(dir, url, "legacy", "session-resume", "",
                      {"MCP_STEPS=" + steps, "MCP_SESSION_ID=" + s.id,
                       "MCP_PROTOCOL_VERSION=" + s.version}),
              name);
  return r.out + r.err;
}

// The standalone GET stream of a 2025 session, through the gateway on `port`: its status (200
// when the session's own endpoint answered; the other endpoint says 404 or 400).
int getStream(uint16_t port, const OpenSession& s) {
  Client c(port);
  std::string req =
      "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
      "Mcp-Session-Id: " +
      s.id + "\r\nMCP-Protocol-Version: " + s.version + "\r\n\r\n";
  if (!c.send(req)) {
    return -1;
  }
  auto head = c.readHead(Ms(5000));
  return head ? head->status : -1;
}

// Opens sessions through replica A, then continues each through replica B (same config,
// another port) and, after A is stopped and started again, through the restarted A.
void checkSessionsSurvive(std::vector<std::unique_ptr<Backend>>& servers,
                          const std::string& allowed_steps, bool traced) {
  TempDir dir;
  writeFile(dir.file("policy.yaml"), policyYaml({"unused"}));
  std::string tmpl =
      gatewayTemplate({servers[0]->endpoint(), servers[1]->endpoint()}, dir.file("policy.yaml"));
  auto a = std::make_unique<Gateway>(tmpl);
  Gateway b(tmpl);
  auto url = [](const Gateway& g) {
    return "http://127.0.0.1:" + std::to_string(g.port()) + "/mcp";
  };

  // Several sessions, so that both endpoints hold some (round robin over two endpoints).
  constexpr int kSessions = 3;
  std::vector<OpenSession> viaA;
  for (int i = 0; i < kSessions; ++i) {
    viaA.push_back(openSession(dir, url(*a), allowed_steps, "open-a-" + std::to_string(i)));
  }
  for (int i = 0; i < kSessions; ++i) {
    const OpenSession& s = viaA[static_cast<size_t>(i)];
    INFO("group sessions: session " << i << " opened through replica A, continued through B\n"
                                    << "open output: " << s.output);
    bool opened = s.output.find("\"summary\":\"ok\"") != std::string::npos;
    CHECK(opened);
    if (!opened) {
      continue;
    }
    // 200: the session's endpoint opened the stream (409: it still holds the one the client
    // opened after `initialized`); the other endpoint would say 404 (SDK) or 400 (everything).
    int get = getStream(b.port(), s);
    CHECK((get == 200 || get == 409));
    std::string out = resumeSession(dir, url(b), s, allowed_steps, "resume-b-" + std::to_string(i));
    INFO("resume output: " << out << "\nreplica B stderr: " << b.process().stderrText());
    CHECK(out.find("\"summary\":\"ok\"") != std::string::npos);
    CHECK(out.find("\"deleted\":\"ok\"") != std::string::npos);
  }

  // Restart: sessions opened through A, A stopped, a new A (same config) continues them.
  std::vector<OpenSession> beforeRestart;
  for (int i = 0; i < kSessions; ++i) {
    beforeRestart.push_back(
        openSession(dir, url(*a), allowed_steps, "open-r-" + std::to_string(i)));
  }
  a->process().terminate();
  a = std::make_unique<Gateway>(tmpl);
  for (int i = 0; i < kSessions; ++i) {
    const OpenSession& s = beforeRestart[static_cast<size_t>(i)];
    INFO("group sessions: session " << i << " opened before a gateway restart, continued after\n"
                                    << "open output: " << s.output);
    bool opened = s.output.find("\"summary\":\"ok\"") != std::string::npos;
    CHECK(opened);
    if (!opened) {
      continue;
    }
    std::string out =
        resumeSession(dir, url(*a), s, allowed_steps, "resume-r-" + std::to_string(i));
    INFO("resume output: " << out << "\nrestarted gateway stderr: " << a->process().stderrText());
    CHECK(out.find("\"summary\":\"ok\"") != std::string::npos);
    CHECK(out.find("\"deleted\":\"ok\"") != std::string::npos);
  }

  if (traced) {
    // Every tool call of a session ran on the endpoint that created it.
    INFO("group sessions: each session's calls ran where it was created");
    for (auto& srv : servers) {
      std::string err = srv->process().stderrText();
      INFO("server stderr:\n" << err);
      CHECK(countOf(err, "SESSION_MISS") == 0);
      for (size_t pos = err.find("SESSION_NEW "); pos != std::string::npos;
           pos = err.find("SESSION_NEW ", pos + 12)) {
        std::string id = err.substr(pos + 12, err.find('\n', pos) - pos - 12);
        // open: 1 call; resume: 1 call → 2 calls with this server's session id, here.
        CHECK(countOf(err, " " + id + "\n") == 3);  // SESSION_NEW line + 2 TOOL lines
      }
    }
  }
}

}  // namespace

TEST_CASE(
    "cross-era: 2025 sessions on the dual-era SDK server survive a second replica and a "
    "gateway restart",
    "[cross-era][slow]") {
  requireFixtures();
  TempDir dir;
  std::vector<std::unique_ptr<Backend>> servers;
  servers.push_back(std::make_unique<FixtureServer>(dir, "sdk-a", "sessions"));
  servers.push_back(std::make_unique<FixtureServer>(dir, "sdk-b", "sessions"));
  checkSessionsSurvive(servers, R"([{"name":"weather_get","arguments":{"city":"Oslo"}}])", true);
}

TEST_CASE(
    "cross-era: 2025 sessions on server-everything survive a second replica and a gateway "
    "restart",
    "[cross-era][slow]") {
  requireFixtures();
  TempDir dir;
  std::vector<std::unique_ptr<Backend>> servers;
  servers.push_back(std::make_unique<EverythingServer>(dir, "everything-a"));
  servers.push_back(std::make_unique<EverythingServer>(dir, "everything-b"));
  checkSessionsSurvive(servers, R"([{"name":"get-sum","arguments":{"a":1,"b":2}}])", false);
}
