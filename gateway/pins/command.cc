// pins/: the `mcp-gateway pins list|approve` command (see command.h). Linked into the
// binary, not into gw_pins: it reads the whole settings snapshot (filters/), which the pure
// pins/ library must not depend on.

#include "gateway/pins/command.h"

#include <chrono>
#include <cstdio>
#include <string>
#include <string_view>

#include "gateway/mcp/jsonrpc.h"
#include "gateway/pins/book.h"
#include "gateway/pins/pins.h"

namespace gw::pins {

namespace {

constexpr int kUsage = 2;

// Tool names come from upstreams: printed JSON-escaped (no control character reaches a
// terminal).
std::string printable(std::string_view s) {
  std::string out;
  mcp::appendJsonEscaped(out, s);
  return out;
}

}  // namespace

int command(int argc, char** argv, SnapshotLoader load) {
  if (argc < 3) {
    return kUsage;
  }
  const std::string_view sub = argv[2];
  if (sub != "list" && sub != "approve") {
    return kUsage;
  }
  std::string path;
  std::string server;
  std::string upstream;
  std::string tool;
  bool all = false;
  bool json = false;
  for (int i = 3; i < argc; ++i) {
    const std::string_view a = argv[i];
    if (a == "--all" && sub == "approve") {
      all = true;
    } else if (a == "--json" && sub == "list") {
      json = true;
    } else if (i + 1 < argc && (a == "-c" || a == "--config")) {
      path = argv[++i];
    } else if (i + 1 < argc && a == "--server") {
      server = argv[++i];
    } else if (i + 1 < argc && a == "--upstream" && sub == "approve") {
      upstream = argv[++i];
    } else if (i + 1 < argc && a == "--tool" && sub == "approve") {
      tool = argv[++i];
    } else {
      return kUsage;
    }
  }
  const bool one = !upstream.empty() && !tool.empty() && !all;
  const bool whole_upstream = !upstream.empty() && tool.empty() && all;
  const bool everything = upstream.empty() && tool.empty() && all;
  if (path.empty() || (sub == "approve" && !one && !whole_upstream && !everything)) {
    return kUsage;
  }
  auto root = load(path);
  if (!root) {
    return 1;
  }
  // servers: the named server's pins (--server; not needed with one server).
  const filters::Snapshot* snap = root.get();
  if (!server.empty() || !root->servers.empty()) {
    snap = !server.empty()             ? root->server(server)
           : root->servers.size() == 1 ? root->servers.front().get()
                                       : nullptr;
    if (snap == nullptr) {
      std::fprintf(stderr, "mcp-gateway pins: %s\n",
                   server.empty() ? "several servers: name one with --server NAME"
                                  : ("no server '" + server + "'").c_str());
      return 1;
    }
  }
  const policy::ToolPinning& cfg = snap->policy->toolPinning();
  if (cfg.mode == policy::ToolPinning::Mode::kOff) {
    std::fprintf(stderr, "mcp-gateway pins: tool_pinning is off in the policy files of %s\n",
                 path.c_str());
    return 1;
  }
  Store store;
  bool existed = false;
  std::string error;
  // An approval is read, made and written under the store's lock: a gateway sharing the file
  // merges it before its own next write instead of overwriting it.
  FileLock lock;
  if (sub == "approve" && !lock.acquire(cfg.store, std::chrono::seconds(10), error)) {
    std::fprintf(stderr, "mcp-gateway pins: %s\n", error.c_str());
    return 1;
  }
  if (!Store::load(cfg.store, store, existed, error)) {
    std::fprintf(stderr, "mcp-gateway pins: %s\n", error.c_str());
    return 1;
  }
  if (sub == "list") {
    if (json) {
      std::printf("%s\n", storeJson(store, cfg).c_str());
      return 0;
    }
    size_t count = 0;
    for (const auto& [up, tools] : store.upstreams()) {
      for (const auto& [name, e] : tools) {
        ++count;
        const char* state = !e.pending ? "pinned" : e.pending->is_new ? "new" : "changed";
        std::string changed;
        if (e.pending && e.pin) {
          for (std::string_view f : changedFields(e.pin->def, e.pending->def)) {
            changed += changed.empty() ? "" : ",";
            changed += f;
          }
        }
        std::printf("%s\t%s\t%s\t%s\t%s\n", printable(up).c_str(), printable(name).c_str(), state,
                    e.pending ? e.pending->since.c_str() : e.pin->since.c_str(), changed.c_str());
      }
    }
    std::printf("%zu tool%s, %zu pending approval (%s%s)\n", count, count == 1 ? "" : "s",
                store.pendingCount(), cfg.store.c_str(), existed ? "" : ": not written yet");
    return 0;
  }
  const std::string now = utcNow();
  const size_t n = one              ? store.approve(upstream, tool, now)
                   : whole_upstream ? store.approveUpstream(upstream, now)
                                    : store.approveAll(now);
  if (n == 0) {
    std::fprintf(stderr, "mcp-gateway pins: nothing pending approval%s%s%s%s in %s\n",
                 upstream.empty() ? "" : " for upstream ", printable(upstream).c_str(),
                 tool.empty() ? "" : ", tool ", printable(tool).c_str(), cfg.store.c_str());
    return 1;
  }
  if (!store.save(cfg.store, error)) {
    std::fprintf(stderr, "mcp-gateway pins: %s\n", error.c_str());
    return 1;
  }
  std::printf("approved %zu tool definition%s in %s\n", n, n == 1 ? "" : "s", cfg.store.c_str());
  return 0;
}

}  // namespace gw::pins
