#include "tests/integration/era_fixtures.h"

#include <catch.hpp>

#include <algorithm>
#include <exception>
#include <filesystem>
#include <thread>

namespace gw::itest {

void requireFiles(const std::vector<std::string>& files) {
  for (const std::string& f : files) {
    if (!std::filesystem::exists(f)) {
      FAIL(f << " is missing: run scripts/setup.sh (npm ci in tests/fixtures)");
    }
  }
}

void requireFixtures() {
  requireFiles({kNode22, kInspector, kEverything});
}

std::string unquote(std::optional<std::string> token) {
  if (!token) {
    return "<absent>";
  }
  std::string t = *token;
  if (t.size() >= 2 && t.front() == '"' && t.back() == '"') {
    return t.substr(1, t.size() - 2);
  }
  return t;
}

std::string rpcCodeIn(const std::string& text) {
  for (size_t pos = text.find("code"); pos != std::string::npos; pos = text.find("code", pos + 4)) {
    size_t i = pos + 4;
    while (i < text.size() && (text[i] == '"' || text[i] == '\\')) {
      ++i;
    }
    if (i >= text.size() || text[i] != ':') {
      continue;
    }
    ++i;
    if (i + 1 < text.size() && text[i] == '-' && text[i + 1] >= '0' && text[i + 1] <= '9') {
      size_t j = i + 1;
      while (j < text.size() && text[j] >= '0' && text[j] <= '9') {
        ++j;
      }
      return text.substr(i, j - i);
    }
  }
  return "";
}

Ran run(const TempDir& dir, std::vector<std::string> argv, const std::string& name) {
  Process p(std::move(argv), dir.path(), name);
  auto code = p.wait(kClientTimeout);
  Ran r;
  if (!code) {
    p.terminate();
  } else {
    r.code = *code;
  }
  r.out = p.stdoutText();
  r.err = p.stderrText();
  return r;
}

std::vector<std::string> sdkArgv(const TempDir& dir, const std::string& url,
                                 const std::string& mode, const std::string& scenario,
                                 const std::string& caller, std::vector<std::string> env) {
  std::vector<std::string> argv = {"/usr/bin/env", "HOME=" + dir.path(), "MCP_CLIENT_MODE=" + mode};
  if (!caller.empty()) {
    argv.push_back("MCP_TOKEN=tok-" + caller);
  }
  for (auto& e : env) {
    argv.push_back(std::move(e));
  }
  for (std::string a : {kNode22, kFixtures + "/mcp-client.mjs", url, scenario}) {
    argv.push_back(std::move(a));
  }
  return argv;
}

std::vector<std::string> inspectorArgv(const TempDir& dir, const std::string& url,
                                       const std::string& era, const std::string& caller) {
  std::vector<std::string> argv = {"/usr/bin/env",
                                   "HOME=" + dir.path(),
                                   "MCP_CATALOG_PATH=" + dir.file("inspector-catalog.json"),
                                   "MCP_CLIENT_CONFIG_PATH=" + dir.file("inspector-client.json"),
                                   kNode22,
                                   kInspector,
                                   "--cli",
                                   url,
                                   "--transport",
                                   "http"};
  if (!era.empty()) {
    argv.insert(argv.end(), {"--protocol-era", era});
  }
  argv.insert(argv.end(), {"--format", "json", "--connect-timeout", "15000"});
  if (!caller.empty()) {
    argv.insert(argv.end(), {"--header", "Authorization: Bearer tok-" + caller});
  }
  return argv;
}

namespace {

std::vector<std::string> fixtureArgv(const std::string& mode, const std::string& suffix,
                                     uint16_t port, const std::string& script) {
  std::vector<std::string> argv = {"/usr/bin/env", "MCP_LEGACY=" + mode, "MCP_TRACE=1"};
  if (!suffix.empty()) {
    argv.push_back("MCP_NAME_SUFFIX=" + suffix);
  }
  argv.insert(argv.end(), {kNode22, kFixtures + "/" + script, std::to_string(port)});
  return argv;
}

}  // namespace

FixtureServer::FixtureServer(const TempDir& dir, const std::string& name, const std::string& mode,
                             const std::string& suffix, uint16_t port, const std::string& script)
    : process_(fixtureArgv(mode, suffix, port, script), dir.path(), name) {
  port_ = fixturePort(process_);
}

std::vector<std::string> callersOf(const std::vector<Combo>& combos) {
  std::vector<std::string> callers;
  for (const Combo& c : combos) {
    callers.push_back(c.caller());
  }
  return callers;
}

std::string apiKeysYaml(const std::vector<std::string>& callers) {
  std::string y = "identity:\n  api_keys:\n";
  for (const std::string& c : callers) {
    y += "    - subject: " + c + "\n      key_sha256: \"" + sha256Hex("tok-" + c) + "\"\n";
  }
  return y;
}

void runConcurrently(size_t n, const std::function<void(size_t, const TempDir&)>& body,
                     const std::function<void(size_t, const std::string&)>& on_error) {
  std::vector<std::unique_ptr<TempDir>> dirs;
  for (size_t i = 0; i < n; ++i) {
    dirs.push_back(std::make_unique<TempDir>());
  }
  std::vector<std::thread> threads;
  for (size_t i = 0; i < n; ++i) {
    threads.emplace_back([&, i] {
      try {
        body(i, *dirs[i]);
      } catch (const std::exception& e) {
        on_error(i, e.what());
      }
    });
  }
  for (auto& t : threads) {
    t.join();
  }
}

std::vector<std::string> callerLines(const Gateway& gw, const std::string& caller) {
  std::vector<std::string> out;
  for (const std::string& line : fileLines(gw.accessLogPath())) {
    if (line.find("\"subject\":\"" + caller + "\"") != std::string::npos) {
      out.push_back(line);
    }
  }
  return out;
}

std::vector<std::string> toolCallLog(const Gateway& gw, const std::string& caller,
                                     const std::vector<std::string>& names) {
  std::vector<std::string> out;
  for (const std::string& line : callerLines(gw, caller)) {
    const std::string name = unquote(jsonToken(line, "mcp_name"));
    if (unquote(jsonToken(line, "mcp_method")) != "tools/call" ||
        (!names.empty() && std::find(names.begin(), names.end(), name) == names.end())) {
      continue;
    }
    out.push_back(name + " " + unquote(jsonToken(line, "status")) + " " +
                  unquote(jsonToken(line, "outcome")) + " " +
                  (unquote(jsonToken(line, "upstream")) == "null" ? "none" : "up"));
  }
  return out;
}

std::vector<std::string> waitToolCallLog(const Gateway& gw, const std::string& caller, size_t want,
                                         const std::vector<std::string>& names) {
  std::vector<std::string> log;
  waitFor(
      [&] {
        log = toolCallLog(gw, caller, names);
        return log.size() >= want;
      },
      Ms(2000));
  return log;
}

std::string loggedEra(const Gateway& gw, const std::string& caller) {
  bool modern = false;
  bool any = false;
  for (const std::string& line : callerLines(gw, caller)) {
    any = true;
    if (unquote(jsonToken(line, "mcp_version")) == "2026-07-28" &&
        unquote(jsonToken(line, "mcp_method")) != "server/discover") {
      modern = true;
    }
  }
  if (!any) {
    return "no requests logged";
  }
  return modern ? "modern" : "legacy";
}

void checkEra(const Gateway& gw, const Combo& combo, const std::string& output) {
  INFO("group era: expected " << combo.era);
  CHECK(loggedEra(gw, combo.caller()) == combo.era);
  if (combo.client == "sdk") {
    CHECK(output.find("\"era\":\"" + combo.era + "\"") != std::string::npos);
  }
}

}  // namespace gw::itest
