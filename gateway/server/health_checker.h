#pragma once
// server/: active health checks (upstreams[].health_check) — one thread beside the workers,
// its own event_base and the gateway's outbound HTTP client. Every endpoint of every upstream
// with a health_check in the running configuration is probed every `interval` (the first
// probe at a random point of the first interval, later ones ±10 % so endpoints do not line
// up), one probe in flight per endpoint, `timeout` each:
// - mcp: POST of a 2026-07-28 `ping` to the upstream's path (MCP-Protocol-Version,
//   Mcp-Method: ping); healthy on a 200 whose body holds a JSON-RPC result;
// - http: GET `path`; healthy on 2xx;
// - tcp: a TCP connect; healthy once connected.
// Results go to the shared endpoint state (upstream/health.h): down after
// unhealthy_threshold failures in a row, up after healthy_threshold successes; each change
// is logged once (warning down, info up).

#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "gateway/settings/settings.h"

namespace gw::server {

class HealthChecker {
 public:
  // `current` gives the running configuration's upstreams (called on the checker's thread).
  explicit HealthChecker(std::function<std::shared_ptr<const settings::Settings>()> current);
  ~HealthChecker();
  HealthChecker(const HealthChecker&) = delete;
  HealthChecker& operator=(const HealthChecker&) = delete;

  bool start(std::string& error);
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
};

}  // namespace gw::server
