// mcp-gateway command line: run | check | explain | pins | healthcheck | version | help. No logic
// beyond dispatch (`pins` is pins/command.cc).

#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <malloc.h>

#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>

#include "gateway/filters/explain.h"
#include "gateway/filters/snapshot.h"
#include "gateway/pins/command.h"
#include "gateway/server/config_check.h"
#include "gateway/server/healthcheck.h"
#include "gateway/server/server.h"
#include "gateway/settings/settings.h"

namespace {

constexpr const char* kUsage =
    "usage: mcp-gateway run -c FILE [--ports-file PATH]\n"
    "                                    run the gateway; with --ports-file, write PATH once\n"
    "                                    every listener is bound: `listen PORT`, one\n"
    "                                    `listenerN PORT` per listener and `admin PORT`\n"
    "                                    (port 0 in FILE: the one chosen)\n"
    "       mcp-gateway check -c FILE    validate FILE (and the files it names); exit 1 on error;\n"
    "                                    warn about an upstream no route uses and a federated\n"
    "                                    route's endpoint it cannot reach now\n"
    "       mcp-gateway explain -c FILE --method M [--name N] [--param Name=value]...\n"
    "                  [--header 'Name: value']... [--token T] [--version V] [--body JSON]\n"
    "                  [--server NAME | --host H --path P]\n"
    "                                    print what the gateway would do with that request\n"
    "       mcp-gateway pins list -c FILE [--server NAME] [--json]\n"
    "                                    the tool pins and the changes awaiting approval\n"
    "       mcp-gateway pins approve -c FILE [--server NAME]\n"
    "                  (--upstream U --tool T | --upstream U --all | --all)\n"
    "                                    approve pending tool definitions (rewrites the store)\n"
    "       mcp-gateway healthcheck [--port N]\n"
    "                                    exit 0 when 127.0.0.1:N/healthz answers 200 (N: the\n"
    "                                    GW_ADMIN_PORT environment variable, else 9901)\n"
    "       mcp-gateway version          print the version\n"
    "       mcp-gateway help             print this text (also -h, --help)\n";

// How long `check` waits, in all, for the endpoints of federated routes to accept a connection.
constexpr std::chrono::milliseconds kCheckProbeTimeout{1000};

int usage() {
  std::fputs(kUsage, stderr);
  return 2;
}

// Asked for: the usage goes to stdout and it is not an error (as GNU tools do with --help).
int help() {
  std::fputs(kUsage, stdout);
  return 0;
}

// Reads -c FILE, for run --ports-file PATH (when ports_file is not null) and, for explain, the
// request's inputs. False on anything else.
bool parseArgs(int argc, char** argv, std::string& path, gw::filters::ExplainInput* in,
               std::string* ports_file) {
  for (int i = 2; i < argc; ++i) {
    std::string_view a = argv[i];
    if (i + 1 >= argc) {
      return false;
    }
    std::string_view v = argv[++i];
    std::string error;
    bool ok = true;
    if (a == "-c" || a == "--config") {
      path = v;
    } else if (a == "--ports-file" && ports_file != nullptr && !v.empty()) {
      *ports_file = v;
    } else if (in == nullptr) {
      return false;
    } else if (a == "--param") {
      size_t eq = v.find('=');
      ok = eq != std::string_view::npos &&
           gw::filters::addExplainField("param." + std::string(v.substr(0, eq)), v.substr(eq + 1),
                                        *in, error);
    } else if (a == "--header") {
      size_t colon = v.find(':');
      std::string_view value = colon == std::string_view::npos ? "" : v.substr(colon + 1);
      while (!value.empty() && value.front() == ' ') {
        value.remove_prefix(1);
      }
      ok = colon != std::string_view::npos &&
           gw::filters::addExplainField("header." + std::string(v.substr(0, colon)), value, *in,
                                        error);
    } else if (a.starts_with("--")) {
      ok = gw::filters::addExplainField(a.substr(2), v, *in, error);
    } else {
      ok = false;
    }
    if (!ok) {
      if (!error.empty()) {
        std::fprintf(stderr, "%s\n", error.c_str());
      }
      return false;
    }
  }
  return !path.empty() && (in == nullptr || !in->method.empty() || in->body);
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

// `healthcheck [--port N]`: 0 healthy, 1 not (reason on stderr), 2 usage.
int healthcheck(int argc, char** argv) {
  const char* port_text = std::getenv("GW_ADMIN_PORT");
  if (argc == 4 && std::string_view(argv[2]) == "--port") {
    port_text = argv[3];
  } else if (argc != 2) {
    return usage();
  }
  std::string_view text = port_text != nullptr && *port_text != '\0' ? port_text : "9901";
  unsigned port = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), port);
  if (ec != std::errc() || end != text.data() + text.size() || port == 0 || port > 65535) {
    std::fprintf(stderr, "mcp-gateway healthcheck: bad port '%.*s'\n",
                 static_cast<int>(text.size()), text.data());
    return 2;
  }
  std::string error;
  if (!gw::server::probeHealth(static_cast<uint16_t>(port), std::chrono::seconds(2), error)) {
    std::fprintf(stderr, "mcp-gateway healthcheck: 127.0.0.1:%u: %s\n", port, error.c_str());
    return 1;
  }
  return 0;
}

// glibc gives memory back to the kernel whenever more than 128 KiB is free at the top of a
// heap. A proxy allocates and frees read blocks, request state and buffers in waves, so the
// top of the heap empties and refills many times a second: brk, page faults and zeroed pages
// for nothing (measured: 21k vs 34k req/s, system time 1.6x, under the same load). Each heap
// keeps 1 MiB free at its top instead (what one worker's requests in flight use). A worker's
// heap (not the main one) is trimmed by another rule: whenever more than M_TRIM_THRESHOLD is
// free at its top, the pages are dropped (MADV_DONTNEED) and fault back in zeroed on the next
// answer — 35-50 page faults and up to 2x the CPU per relayed 300 KB tools/list, measured. Each
// heap gives back only what exceeds 8 MiB free instead (a burst of large answers).
// Setting M_TOP_PAD also fixes glibc's mmap threshold at 128 KiB, so every larger block — a
// merged or filtered list, a verify buffer — was a fresh mapping faulted in page by page
// (13 % of an uncached federated list's time, measured); blocks up to 1 MiB come from the
// heaps instead (larger ones, rare, still map and go back at once).
void tuneAllocator() {
  mallopt(M_TOP_PAD, 1024 * 1024);
  mallopt(M_TRIM_THRESHOLD, 8 * 1024 * 1024);
  mallopt(M_MMAP_THRESHOLD, 1024 * 1024);
}

}  // namespace

int main(int argc, char** argv) {
  tuneAllocator();
  if (argc < 2) {
    return usage();
  }
  std::string_view cmd = argv[1];
  if (cmd == "help" || cmd == "--help" || cmd == "-h") {
    return help();
  }
  if (cmd == "version" || cmd == "--version") {
    std::printf("mcp-gateway %s (MCP 2026-07-28 Streamable HTTP)\n", GW_VERSION);
    return 0;
  }
  if (cmd == "healthcheck") {
    return healthcheck(argc, argv);
  }
  if (cmd == "pins") {
    const int rc = gw::pins::command(argc, argv, load);
    return rc == 2 ? usage() : rc;
  }
  std::string path;
  std::string ports_file;
  gw::filters::ExplainInput input;
  bool is_explain = cmd == "explain";
  if ((cmd != "run" && cmd != "check" && !is_explain) ||
      !parseArgs(argc, argv, path, is_explain ? &input : nullptr,
                 cmd == "run" ? &ports_file : nullptr)) {
    return usage();
  }
  auto snap = load(path);
  if (!snap) {
    return 1;
  }
  if (is_explain) {
    // No bucket state outside a running gateway: local limits answer "allowed": null.
    auto answer = gw::filters::explain(*snap, input, nullptr);
    if (!answer) {
      std::fprintf(stderr, "mcp-gateway explain: %s\n", answer.error().message.c_str());
      return 2;  // the inputs cannot make a request: a usage error
    }
    std::printf("%s\n", answer->c_str());
    return 0;
  }
  if (cmd == "check") {
    // Warnings go to stderr beside errors; they never change the exit status.
    const size_t warnings =
        gw::server::printCheckWarnings(*snap->settings, path, kCheckProbeTimeout, stderr);
    if (warnings == 0) {
      std::printf("%s: ok\n", path.c_str());
    } else {
      std::printf("%s: ok, %zu warning%s\n", path.c_str(), warnings, warnings == 1 ? "" : "s");
    }
    return 0;
  }
  auto logger = spdlog::stderr_color_mt("gateway");
  spdlog::set_default_logger(logger);
  spdlog::set_pattern("%Y-%m-%dT%H:%M:%S.%e %^%l%$ %v");
  spdlog::set_level(spdlog::level::from_str(snap->settings->log_level));
  gw::server::Server server(snap, path);
  server.setPortsFile(std::move(ports_file));
  return server.run();
}
