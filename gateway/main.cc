// mcp-gateway command line: run | check | version. No logic beyond dispatch.

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

#include "gateway/filters/snapshot.h"
#include "gateway/server/server.h"
#include "gateway/settings/settings.h"

namespace {

constexpr const char* kUsage =
    "usage: mcp-gateway run -c FILE      run the gateway\n"
    "       mcp-gateway check -c FILE    validate FILE (and the files it names); exit 1 on error\n"
    "       mcp-gateway version          print the version\n";

int usage() {
  std::fputs(kUsage, stderr);
  return 2;
}

bool configPath(int argc, char** argv, std::string& path) {
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if ((a == "-c" || a == "--config") && i + 1 < argc) {
      path = argv[++i];
    } else {
      return false;
    }
  }
  return !path.empty();
}

// The config file and the policy files it names, validated whole; errors go to stderr.
std::shared_ptr<const gw::filters::Snapshot> load(const std::string& path) {
  std::vector<gw::settings::Diagnostic> errors;
  auto snap = gw::filters::Snapshot::load(path, nullptr, errors);
  for (const auto& d : errors) {
    std::fprintf(stderr, "%s\n", d.str().c_str());
  }
  if (!snap) {
    std::fprintf(stderr, "%s: %zu error%s\n", path.c_str(), errors.size(),
                 errors.size() == 1 ? "" : "s");
  }
  return snap;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    return usage();
  }
  std::string_view cmd = argv[1];
  if (cmd == "version" || cmd == "--version") {
    std::printf("mcp-gateway %s (MCP 2026-07-28 Streamable HTTP)\n", GW_VERSION);
    return 0;
  }
  std::string path;
  if ((cmd != "run" && cmd != "check") || !configPath(argc, argv, path)) {
    return usage();
  }
  auto snap = load(path);
  if (!snap) {
    return 1;
  }
  if (cmd == "check") {
    std::printf("%s: ok\n", path.c_str());
    return 0;
  }
  auto logger = spdlog::stderr_color_mt("gateway");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(snap->settings->log_level));
  gw::server::Server server(snap, path);
  return server.run();
}
