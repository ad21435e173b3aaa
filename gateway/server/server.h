#pragma once
// server/: the process around the request path — worker threads with their listeners,
// accept limits and connection reaping, drain on SIGTERM/SIGINT, reload on SIGHUP or a
// watched file change, and the `mcp-gateway healthcheck` probe.
// The process: worker threads (one event_base each, SO_REUSEPORT listener each), the
// signal loop on the main thread (SIGTERM/SIGINT drain, SIGHUP reload), and the admin
// listener. main.cc builds a Server from a validated Settings and calls run().

#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gateway/filters/snapshot.h"
#include "gateway/proxy/proxy_context.h"
#include "gateway/server/watcher.h"
#include "gateway/settings/settings.h"

namespace gw::server {

class Worker;

class Server {
 public:
  Server(std::shared_ptr<const filters::Snapshot> snapshot, std::string config_path);
  ~Server();

  // Binds, starts the workers and the admin listener, and blocks until a drain completes.
  // Returns the process exit code (0 after a clean drain; 1 when start-up failed).
  int run();

  proxy::Shared& shared() noexcept { return shared_; }
  // A file run() writes once every listener is bound: one `NAME PORT` line each (`listen`,
  // and `admin` when there is one), so a config may name port 0 and its user still find the
  // ports. Written atomically (rename); left in place at exit. Empty: none.
  void setPortsFile(std::string path) { ports_file_ = std::move(path); }

 private:
  void reload();
  void watchFiles();
  void beginDrain();
  void onDrainTick();
  [[noreturn]] void exitNow(int sig);

  std::string config_path_;
  std::string ports_file_;
  proxy::Shared shared_;
  std::vector<std::unique_ptr<Worker>> workers_;
  event_base* main_base_ = nullptr;
  std::unique_ptr<FileWatcher> watcher_;
  // The admin listener was bound to a non-loopback address at start: until a restart, a
  // reload must keep admin_auth (whatever the file now says about `admin`).
  bool admin_exposed_ = false;
  std::chrono::steady_clock::time_point drain_deadline_{};
  bool drain_started_ = false;
  std::chrono::steady_clock::time_point drain_started_at_{};
  int drain_signal_ = 0;  // the signal that started the drain
};

}  // namespace gw::server
