// Issue #26 item 6: every client with every server, on ONE federated route. Behind it, servers
// of both eras: server-everything (npm, 2025 only), tests/fixtures/mcp-server.mjs in 2026-only
// mode (MCP_LEGACY=reject) and the same fixture in dual-era mode (MCP_LEGACY=sessions, its
// names suffixed `_dual` so that `names: keep` hides none of them). In front: the SDK v2 client
// (tests/fixtures/mcp-client.mjs, scenario `matrix`) in legacy, auto and pinned modes and the
// Inspector CLI 2.12 in its legacy, auto and modern eras, each its own caller (API key).
//
// Each combination is checked in named groups (the INFO line says which):
//   era        the client ended up in the era the combination is meant to exercise
//   lists      the sorted tool, prompt and resource names are the same for every client
//   targets    a tool, a prompt and a resource of every server answered
//   decisions  the deny rule and the 2/min limit gave every client the same outcomes
//   access-log the gateway logged the same (name, status, outcome) sequence per caller
//   upstream   a denied call never reached a server
// Then: a 2025-only upstream restarted behind the federated route (its session lost) is
// initialized again without a client of either era seeing an error.
//

#include <catch.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/era_fixtures.h"
#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

// The string values of `key` in the objects of the first array in `json` (depth 4 in
// {"result":{"tools":[{...}]}}), sorted and comma-joined: the names an Inspector list printed.
std::string itemKeys(const std::string& json, const std::string& key) {
  std::vector<std::string> found;
  int depth = 0;
  bool in_string = false;
  std::string current;
  std::optional<std::string> last_key;  // the string just read at depth 4, if a key
  bool want_value = false;
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (in_string) {
      if (c == '\\' && i + 1 < json.size()) {
        current += json[++i];
      } else if (c == '"') {
        in_string = false;
        if (depth == 4 && want_value) {
          found.push_back(current);
          want_value = false;
        } else if (depth == 4) {
          last_key = current;
        }
      } else {
        current += c;
      }
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        current.clear();
        break;
      case '{':
      case '[':
        ++depth;
        want_value = false;
        break;
      case '}':
      case ']':
        --depth;
        break;
      case ':':
        want_value = depth == 4 && last_key == key;
        last_key.reset();
        break;
      case ',':
        want_value = false;
        last_key.reset();
        break;
      default:
        break;
    }
  }
  std::sort(found.begin(), found.end());
  std::string out;
  for (const std::string& f : found) {
    out += (out.empty() ? "" : ",") + f;
  }
  return out;
}

// --- the servers --------------------------------------------------------------------------------

// The matrix's three servers, started in this order: server-everything, the fixture in
// 2026-only mode and the fixture in dual-era mode (names suffixed `_dual`).
struct Servers {
  explicit Servers(const TempDir& dir)
      : everything(dir), modern(dir, "modern", "reject"), dual(dir, "dual", "sessions", "_dual") {}
  EverythingServer everything;
  FixtureServer modern;
  FixtureServer dual;
};

// --- what every client does ----------------------------------------------------------------------

struct Call {
  std::string name;
  std::string args_json;  // a JSON object
};

struct PromptGet {
  std::string name;
  std::string arg;  // "" or the one required argument, given the value "x"
};

// The route's view of the three servers under `names` (keep | prefix), the targets every client
// reaches and the policy steps every client runs.
struct Matrix {
  std::string names;
  std::string n(const std::string& upstream, const std::string& name) const {
    return names == "prefix" ? upstream + "__" + name : name;
  }
  std::vector<Call> tools() const {
    return {{n("everything", "get-sum"), R"({"a":1,"b":2})"},
            {n("modern", "weather_get"), R"({"city":"Paris"})"},
            {n("dual", "weather_get_dual"), R"({"city":"Oslo"})"}};
  }
  std::vector<PromptGet> prompts() const {
    return {{n("everything", "simple-prompt"), ""},
            {n("modern", "greet"), "name"},
            {n("dual", "greet_dual"), "name"}};
  }
  std::vector<std::string> resources() const {
    return {"demo://resource/static/document/features.md", "fixture://readme",
            "fixture://readme_dual"};
  }
  // What the targets answer, in order (a substring of each first text).
  std::vector<std::string> texts() const {
    return {"3",        "sunny in Paris",    "sunny in Oslo",  "simple prompt", "Hello, x",
            "Hello, x", "Everything Server", "fixture readme", "fixture readme"};
  }
  // Denied: the modern fixture's delete_everything, server-everything's get-env. Limited:
  // server-everything's echo (the first upstream owns `echo` under `keep`), 2/min per caller.
  std::string denied1() const { return n("modern", "delete_everything"); }
  std::string denied2() const { return n("everything", "get-env"); }
  std::string limited() const { return n("everything", "echo"); }
  std::vector<Call> steps() const {
    return {{denied1(), "{}"},
            {denied2(), "{}"},
            {limited(), R"({"message":"a"})"},
            {limited(), R"({"message":"b"})"},
            {limited(), R"({"message":"c"})"}};
  }
  std::string summary() const { return "403/-31004|403/-31004|ok|ok|429/-31005"; }
  std::vector<std::string> log() const {
    return {denied1() + " 403 policy_denied none", denied2() + " 403 policy_denied none",
            limited() + " 200 complete up", limited() + " 200 complete up",
            limited() + " 429 rate_limited none"};
  }
};

std::string callsJson(const std::vector<Call>& calls) {
  std::string j = "[";
  for (const Call& c : calls) {
    j += (j.size() > 1 ? "," : "");
    j += R"({"name":")" + c.name + R"(","arguments":)" + c.args_json + "}";
  }
  return j + "]";
}

std::string targetsJson(const Matrix& m) {
  std::string prompts = "[";
  for (const PromptGet& p : m.prompts()) {
    prompts += (prompts.size() > 1 ? "," : "");
    prompts += R"({"name":")" + p.name + R"(","arguments":{)" +
               (p.arg.empty() ? "" : "\"" + p.arg + "\":\"x\"") + "}}";
  }
  std::string resources = "[";
  for (const std::string& r : m.resources()) {
    resources += (resources.size() > 1 ? "," : "") + std::string("\"") + r + "\"";
  }
  return R"({"tools":)" + callsJson(m.tools()) + R"(,"prompts":)" + prompts + R"(],"resources":)" +
         resources + "]}";
}

// --- the policy ----------------------------------------------------------------------------------

// API keys: caller `c` presents `tok-c`. The deny rule and the limit name the tools as the
// route shows them.
std::string policyYaml(const Matrix& m, const std::vector<std::string>& callers) {
  std::string y = apiKeysYaml(callers);
  y += "  anonymous: allow\n"
       "visibility: all\n"
       "rules:\n"
       "  - name: block-deletes\n"
       "    match: { method: tools/call, name: \"" +
       m.n("modern", "delete_*") +
       "\" }\n"
       "    action: deny\n"
       "  - name: block-env\n"
       "    match: { method: tools/call, name: \"" +
       m.denied2() +
       "\" }\n"
       "    action: deny\n"
       "default: allow\n"
       "rate_limits:\n"
       "  - name: echo-2-per-min\n"
       "    match: { method: tools/call, name: \"" +
       m.limited() +
       "\" }\n"
       "    key: [subject, name]\n"
       "    rate: 2/min\n"
       "    burst: 2\n";
  return y;
}

// One federated route over `upstreams` (name, endpoint, era), legacy passthrough, the policy.
std::string federatedYaml(const std::vector<std::vector<std::string>>& upstreams,
                          const std::string& names, const std::string& policy_path) {
  std::string y =
      "listen: \"127.0.0.1:${PORT}\"\n"
      "workers: 1\n"
      "mcp:\n"
      "  legacy: passthrough\n"
      "upstreams:\n";
  std::string list;
  for (const auto& u : upstreams) {
    y += "  - name: " + u[0] + "\n    endpoints: [\"" + u[1] + "\"]\n    era: " + u[2] +
         "\n    connect_timeout: 2s\n    response_timeout: 10s\n";
    list += (list.empty() ? "" : ", ") + u[0];
  }
  y += "routes:\n  - name: default\n    upstreams: [" + list + "]\n    names: " + names + "\n";
  y += "policies: [\"" + policy_path + "\"]\n";
  y += "access_log: { path: \"${ACCESS_LOG}\" }\n";
  return y;
}

// --- clients -------------------------------------------------------------------------------------

struct ComboRun {
  Combo combo;
  std::string tool_names;
  std::string prompt_names;
  std::string resource_names;
  std::string targets;             // one word per target, `|`-joined
  std::vector<std::string> texts;  // SDK only: the targets' first texts
  std::string summary;             // one word per policy step
  std::string output;              // everything the client printed
};

// The `texts` array of the matrix scenario's line: its strings, in order.
std::vector<std::string> textsOf(const std::string& out) {
  std::vector<std::string> texts;
  const size_t at = out.find("\"texts\":[");
  if (at == std::string::npos) {
    return texts;
  }
  size_t i = at + 9;
  while (i < out.size() && out[i] != ']') {
    if (out[i] == '"') {
      std::string s;
      for (++i; i < out.size() && out[i] != '"'; ++i) {
        if (out[i] == '\\' && i + 1 < out.size()) {
          ++i;
          s += out[i] == 'n' ? '\n' : out[i];
        } else {
          s += out[i];
        }
      }
      texts.push_back(s);
    } else if (out.compare(i, 4, "null") == 0) {
      texts.emplace_back("null");
      i += 3;
    }
    ++i;
  }
  return texts;
}

ComboRun runSdk(const TempDir& dir, const std::string& url, const Combo& c, const Matrix& m) {
  Ran r = run(dir,
              sdkArgv(dir, url, c.mode, "matrix", c.caller(),
                      {"MCP_TARGETS=" + targetsJson(m), "MCP_STEPS=" + callsJson(m.steps())}),
              "sdk-" + c.mode);
  ComboRun cr{c, "", "", "", "", {}, "", r.out + r.err};
  if (r.code != 0) {
    cr.summary = "client failed (exit " + std::to_string(r.code) + ")";
    return cr;
  }
  cr.tool_names = unquote(jsonToken(r.out, "toolNames"));
  cr.prompt_names = unquote(jsonToken(r.out, "promptNames"));
  cr.resource_names = unquote(jsonToken(r.out, "resourceNames"));
  cr.targets = unquote(jsonToken(r.out, "targets"));
  cr.texts = textsOf(r.out);
  cr.summary = unquote(jsonToken(r.out, "summary"));
  return cr;
}

// The Inspector CLI: one process per request (it connects, runs one method, exits); the
// limited tool is one `--load` process making its three calls one after the other.
ComboRun runInspector(const TempDir& dir, const std::string& url, const Combo& c, const Matrix& m) {
  const std::vector<std::string> base = inspectorArgv(dir, url, c.mode, c.caller());
  ComboRun cr{c, "", "", "", "", {}, "", ""};
  int n = 0;
  auto inspect = [&](std::vector<std::string> args) {
    std::vector<std::string> argv = base;
    argv.insert(argv.end(), args.begin(), args.end());
    Ran r = run(dir, argv, "inspector-" + c.mode + "-" + std::to_string(n++));
    cr.output += r.out + r.err;
    return r;
  };
  // One word as the SDK scenario's summarize() makes it.
  auto word = [](const Ran& r) -> std::string {
    if (r.code == 0 && r.out.find("\"result\"") != std::string::npos) {
      return r.out.find("\"isError\":true") != std::string::npos ? "tool_error" : "ok";
    }
    // The error envelope on stderr: {"error":{"code":"...","message":"...","status":403}}
    std::optional<std::string> status = jsonToken(r.err, "status");
    return (status ? *status : "") + "/" + rpcCodeIn(r.err);
  };
  auto join = [](std::string& into, const std::string& w) {
    into += (into.empty() ? "" : "|") + w;
  };

  cr.tool_names = itemKeys(inspect({"--method", "tools/list"}).out, "name");
  cr.prompt_names = itemKeys(inspect({"--method", "prompts/list"}).out, "name");
  cr.resource_names = itemKeys(inspect({"--method", "resources/list"}).out, "uri");
  for (const Call& t : m.tools()) {
    Ran r =
        inspect({"--method", "tools/call", "--tool-name", t.name, "--tool-args-json", t.args_json});
    join(cr.targets, word(r));
    cr.texts.push_back(r.out);
  }
  for (const PromptGet& p : m.prompts()) {
    std::vector<std::string> args = {"--method", "prompts/get", "--prompt-name", p.name};
    if (!p.arg.empty()) {
      args.push_back("--prompt-args");
      args.push_back(p.arg + "=x");
    }
    Ran r = inspect(args);
    join(cr.targets, word(r));
    cr.texts.push_back(r.out);
  }
  for (const std::string& uri : m.resources()) {
    Ran r = inspect({"--method", "resources/read", "--uri", uri});
    join(cr.targets, word(r));
    cr.texts.push_back(r.out);
  }
  for (const std::string& denied : {m.denied1(), m.denied2()}) {
    join(
        cr.summary,
        word(inspect({"--method", "tools/call", "--tool-name", denied, "--tool-args-json", "{}"})));
  }
  // {"result":{..."ok":2,..."errors":1,..."errorMessages":[{"message":"...429...-31005..."}]}}
  Ran load =
      inspect({"--method", "tools/call", "--tool-name", m.limited(), "--tool-args-json",
               R"({"message":"a"})", "--load", "--load-requests", "3", "--load-concurrency", "1"});
  const std::string ok = unquote(jsonToken(load.out, "ok"));
  const std::string errors = unquote(jsonToken(load.out, "errors"));
  if (load.code != 0) {
    join(cr.summary, "load failed (exit " + std::to_string(load.code) + ")");
  } else if (ok == "2" && errors == "1" && load.out.find("HTTP 429") != std::string::npos) {
    // --load reports counts, not order; the access log proves the order.
    join(cr.summary, "ok|ok|429/" + rpcCodeIn(load.out));
  } else {
    join(cr.summary, "load ok=" + ok + " errors=" + errors + " code=" + rpcCodeIn(load.out));
  }
  return cr;
}

// Every combination at once, each in its own thread and temp dir; Catch2 assertions stay on
// the calling thread.
std::vector<ComboRun> runAll(const std::string& url, const std::vector<Combo>& combos,
                             const Matrix& m) {
  std::vector<ComboRun> runs(combos.size());
  runConcurrently(
      combos.size(),
      [&](size_t i, const TempDir& dir) {
        runs[i] = combos[i].client == "sdk" ? runSdk(dir, url, combos[i], m)
                                            : runInspector(dir, url, combos[i], m);
      },
      [&](size_t i, const std::string& what) {
        runs[i] = {combos[i], "", "", "", "", {}, "harness error: " + what, ""};
      });
  return runs;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const std::string& s : v) {
    out += (out.empty() ? "" : "|") + s;
  }
  return out;
}

}  // namespace

namespace {

// The matrix under `names` (keep | prefix): three servers, one federated route, six clients.
void checkMatrix(const std::string& names) {
  requireFixtures();
  INFO("names: " << names);
  const Matrix m{names};
  TempDir dir;
  writeFile(dir.file("policy.yaml"), policyYaml(m, callersOf(kCombos)));
  Servers servers(dir);
  auto& [everything, modern, dual] = servers;
  // server-everything first: it owns `echo` under `keep` (the fixtures' is hidden).
  Gateway gw(federatedYaml({{"everything", everything.endpoint(), "auto"},
                            {"modern", modern.endpoint(), "auto"},
                            {"dual", dual.endpoint(), "auto"}},
                           names, dir.file("policy.yaml")));
  const std::string url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/mcp";

  std::vector<ComboRun> runs = runAll(url, kCombos, m);
  INFO("gateway stderr:\n" << gw.process().stderrText());

  // The reference lists: the pinned SDK client's. Every server contributes to each.
  const ComboRun& ref = runs[2];
  REQUIRE(ref.combo.caller() == "sdk-pin");
  {
    INFO("group lists: the reference (sdk-pin) lists every server's items\n" << ref.output);
    for (const Call& t : m.tools()) {
      CHECK(("," + ref.tool_names + ",").find("," + t.name + ",") != std::string::npos);
    }
    for (const PromptGet& p : m.prompts()) {
      CHECK(("," + ref.prompt_names + ",").find("," + p.name + ",") != std::string::npos);
    }
    for (const std::string& r : m.resources()) {
      CHECK(("," + ref.resource_names + ",").find("," + r + ",") != std::string::npos);
    }
    // Under keep, the hidden duplicates: one `echo` (server-everything's), one fixture://readme.
    CHECK(countOf("," + ref.tool_names + ",", "," + m.n("everything", "echo") + ",") == 1);
  }
  const std::vector<std::string> texts = m.texts();
  for (const ComboRun& r : runs) {
    INFO("combination " << r.combo.caller() << "\nclient output:\n" << r.output);
    checkEra(gw, r.combo, r.output);
    {
      INFO("group lists: the same sorted names as sdk-pin");
      CHECK(r.tool_names == ref.tool_names);
      CHECK(r.prompt_names == ref.prompt_names);
      CHECK(r.resource_names == ref.resource_names);
    }
    {
      INFO("group targets: a tool, a prompt and a resource of every server");
      CHECK(r.targets == "ok|ok|ok|ok|ok|ok|ok|ok|ok");
      REQUIRE(r.texts.size() == texts.size());
      for (size_t i = 0; i < texts.size(); ++i) {
        INFO("target " << i << " answered: " << r.texts[i]);
        CHECK(r.texts[i].find(texts[i]) != std::string::npos);
      }
    }
    {
      INFO("group decisions: the deny rule and the limit, one word per call");
      CHECK(r.summary == m.summary());
    }
    {
      INFO("group access-log: the gateway's view of the caller's policy steps");
      const std::vector<std::string> expected = m.log();
      const std::vector<std::string> log = waitToolCallLog(gw, r.combo.caller(), expected.size(),
                                                           {m.denied1(), m.denied2(), m.limited()});
      CHECK(joined(log) == joined(expected));
    }
  }
  {
    const std::string traces = modern.process().stderrText() + dual.process().stderrText();
    INFO("group upstream: a denied call never reached a server\nfixtures:\n" << traces);
    CHECK(countOf(traces, "TOOL delete_everything") == 0);
    CHECK(countOf(modern.process().stderrText(), "TOOL weather_get") == kCombos.size());
    CHECK(countOf(dual.process().stderrText(), "TOOL weather_get") == kCombos.size());
  }
  // No upstream was left out of a merged list or the merged server/discover.
  CHECK(gw.process().stderrText().find("left out of") == std::string::npos);
}

}  // namespace

TEST_CASE("era-matrix: servers of both eras on one federated route (names: keep), every client",
          "[era-matrix][bridge][federation][slow]") {
  checkMatrix("keep");
}

TEST_CASE("era-matrix: servers of both eras on one federated route (names: prefix), every client",
          "[era-matrix][bridge][federation][slow]") {
  checkMatrix("prefix");
}

TEST_CASE("era-matrix: a 2025-only upstream restarted behind a federated route",
          "[era-matrix][bridge][federation][slow]") {
  requireFixtures();
  TempDir dir;
  const Matrix m{"prefix"};
  writeFile(dir.file("policy.yaml"), policyYaml(m, {"unused"}));
  FixtureServer modern(dir, "modern", "reject");
  auto legacy = std::make_unique<FixtureServer>(dir, "legacy-1", "only", "_old");
  const uint16_t port = legacy->port();
  Gateway gw(
      federatedYaml({{"modern", modern.endpoint(), "auto"}, {"legacy", legacy->endpoint(), "auto"}},
                    "prefix", dir.file("policy.yaml")));
  const std::string url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/mcp";
  const std::string targets =
      R"({"tools":[{"name":"legacy__weather_get_old","arguments":{"city":"Rome"}}],)"
      R"("prompts":[{"name":"legacy__greet_old","arguments":{"name":"x"}}],)"
      R"("resources":["fixture://readme_old"]})";
  const std::string call = R"([{"name":"legacy__weather_get_old","arguments":{"city":"Oslo"}}])";

  // A legacy client opens its session with the gateway (kept open across the restart); the
  // auto and pinned clients hold none.
  Ran open =
      run(dir, sdkArgv(dir, url, "legacy", "session-open", "", {"MCP_STEPS=" + call}), "open");
  INFO("session-open: " << open.out << open.err);
  REQUIRE(open.code == 0);
  CHECK(unquote(jsonToken(open.out, "summary")) == "ok");
  const std::string session = unquote(jsonToken(open.out, "sessionId"));
  const std::string version = unquote(jsonToken(open.out, "version"));
  for (const std::string mode : {"auto", "pin"}) {
    Ran r = run(dir, sdkArgv(dir, url, mode, "matrix", "", {"MCP_TARGETS=" + targets}),
                "before-" + mode);
    INFO("before the restart, " << mode << ": " << r.out << r.err);
    CHECK(r.code == 0);
    CHECK(unquote(jsonToken(r.out, "targets")) == "ok|ok|ok");
  }
  const std::string traces1 = legacy->process().stderrText();
  CHECK(countOf(traces1, "SESSION_NEW ") >= 1);

  // The server restarts on the same port: every session it held is gone.
  legacy->process().terminate();
  legacy.reset();
  legacy = std::make_unique<FixtureServer>(dir, "legacy-2", "only", "_old", port);

  Ran resumed = run(dir,
                    sdkArgv(dir, url, "legacy", "session-resume", "",
                            {"MCP_STEPS=" + call, "MCP_SESSION_ID=" + session,
                             "MCP_PROTOCOL_VERSION=" + version}),
                    "resume");
  INFO("gateway stderr:\n" << gw.process().stderrText());
  INFO("session-resume (legacy client, its gateway session from before): " << resumed.out
                                                                           << resumed.err);
  CHECK(resumed.code == 0);
  CHECK(unquote(jsonToken(resumed.out, "summary")) == "ok");
  CHECK(unquote(jsonToken(resumed.out, "deleted")) == "ok");
  for (const std::string mode : {"legacy", "auto", "pin"}) {
    Ran r = run(dir, sdkArgv(dir, url, mode, "matrix", "", {"MCP_TARGETS=" + targets}),
                "after-" + mode);
    INFO("after the restart, " << mode << ": " << r.out << r.err);
    CHECK(r.code == 0);
    CHECK(unquote(jsonToken(r.out, "targets")) == "ok|ok|ok");
    CHECK(r.out.find("sunny in Rome") != std::string::npos);
  }
  const std::string traces2 = legacy->process().stderrText();
  INFO("restarted server: " << traces2);
  // Initialized again: the worker's shared session (lists, the modern clients' calls), and
  // one session of its own for each 2025-era client that calls (the resumed one, the new
  // one; a client's stream shares its session). Each session held before the restart is
  // missed once: the shared one and the resumed client's.
  CHECK(countOf(traces2, "SESSION_NEW ") >= 1);
  CHECK(countOf(traces2, "SESSION_NEW ") <= 3);
  CHECK(countOf(traces2, "TOOL weather_get") == 4);
  CHECK(countOf(traces2, "SESSION_MISS") <= 2);
}

TEST_CASE(
    "era-matrix: a 2025 Inspector on a federated route whose first upstream has no logging "
    "capability",
    "[era-matrix][bridge][federation][slow]") {
  requireFixtures();
  TempDir dir;
  const Matrix m{"prefix"};
  writeFile(dir.file("policy.yaml"), policyYaml(m, {"inspector-legacy"}));
  Servers servers(dir);
  auto& [everything, modern, dual] = servers;
  // The matrix's route with the 2026-only fixture first: it declares no `logging`;
  // server-everything does, so the merged initialize result offers it and the Inspector sends
  // logging/setLevel.
  Gateway gw(federatedYaml({{"modern", modern.endpoint(), "auto"},
                            {"everything", everything.endpoint(), "auto"},
                            {"dual", dual.endpoint(), "auto"}},
                           "prefix", dir.file("policy.yaml")));
  const std::string url = "http://127.0.0.1:" + std::to_string(gw.port()) + "/mcp";
  TempDir cdir;
  ComboRun r = runInspector(cdir, url, {"inspector", "legacy", "legacy"}, m);
  INFO("client output:\n"
       << r.output << "\ngateway stderr:\n"
       << gw.process().stderrText() << "\nthe first logging/setLevel in the access log:\n"
       << waitLogLine(gw, "logging/setLevel"));
  // logging/setLevel (no 2026-07-28 method, and the first upstream has no logging) is
  // answered {} by the gateway; were it sent on, the Inspector would give up on a 404.
  CHECK(r.tool_names.find("modern__weather_get") != std::string::npos);
  CHECK(r.targets == "ok|ok|ok|ok|ok|ok|ok|ok|ok");
  CHECK(r.summary == m.summary());
}
