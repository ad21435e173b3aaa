// mcp-gateway command line: run | check | version. No logic beyond dispatch.

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <string_view>

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

gw::settings::LoadResult load(const std::string& path) {
  gw::settings::LoadResult r = gw::settings::loadFile(path);
  for (const auto& d : r.errors) {
    std::fprintf(stderr, "%s\n", d.str().c_str());
  }
  return r;
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
  gw::settings::LoadResult r = load(path);
  if (!r.errors.empty()) {
    std::fprintf(stderr, "%s: %zu error%s\n", path.c_str(), r.errors.size(),
                 r.errors.size() == 1 ? "" : "s");
    return 1;
  }
  if (cmd == "check") {
    std::printf("%s: ok\n", path.c_str());
    return 0;
  }
  auto logger = spdlog::stderr_color_mt("gateway");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(r.settings->log_level));
  gw::server::Server server(r.settings, path);
  return server.run();
}
