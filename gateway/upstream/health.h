#pragma once
// upstream/: what the gateway knows of each upstream endpoint's health, shared by every
// worker and the health checker, and surviving reloads (keyed by upstream name and endpoint
// as written):
// - active health (upstreams[].health_check): down after unhealthy_threshold failed probes
//   in a row, up after healthy_threshold good ones (server/health_checker.h probes);
// - passive ejection (upstreams[].outlier_detection): consecutive_failures failed answers in
//   a row (connect failures, resets, timeouts, 502/503/504) eject the endpoint for
//   ejection_time, doubled on each ejection that follows a return without a success between
//   (up to 5 minutes), never more than max_ejection_percent of the upstream's endpoints at
//   once (one may always go, as Envoy allows);
// - requests in flight and waiting for a new connection per upstream (circuit_breaker).
// An endpoint is usable when it is up and not ejected. Times are steady nanoseconds.

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gateway/settings/settings.h"

namespace gw::upstream {

struct EndpointState {
  std::string upstream;
  std::string endpoint;                   // as written in the config
  std::atomic<bool> healthy{true};        // active checks (true without them)
  std::atomic<int64_t> ejected_until{0};  // steady ns; ≤ now: not ejected
  std::atomic<uint32_t> consecutive{0};   // failed answers in a row
  std::atomic<uint32_t> ejections{0};     // ejections without a success between
  std::atomic<int64_t> in_flight{0};      // requests on it now
  std::atomic<uint64_t> ejected_total{0};
  std::atomic<uint64_t> went_down{0};  // active checks: transitions to down
  std::atomic<uint64_t> came_up{0};    // and back up
  // The health checker's run of results (its thread only).
  uint32_t probe_ok = 0;
  uint32_t probe_failed = 0;

  bool usable(int64_t now) const noexcept {
    return healthy.load(std::memory_order_relaxed) &&
           ejected_until.load(std::memory_order_relaxed) <= now;
  }
  // The last failure (admin view): when, and why in a few words.
  void noteFailure(int64_t unix_now, std::string why);
  std::pair<int64_t, std::string> lastFailure() const;

 private:
  mutable std::mutex mu_;
  int64_t last_failure_unix_ = 0;
  std::string last_failure_;
};

struct UpstreamState {
  std::string name;
  std::atomic<int64_t> in_flight{0};  // requests to it now, all workers
  std::atomic<int64_t> pending{0};    // requests waiting for a new connection
  std::atomic<uint64_t> overflows{0};
  // retry.budget: requests and retries in the current one-second window.
  std::atomic<int64_t> window_start{0};
  std::atomic<uint32_t> window_requests{0};
  std::atomic<uint32_t> window_retries{0};
  // A request to this upstream at `now` (counted against the retry budget).
  void noteRequest(int64_t now) noexcept;
  // Whether a retry fits the budget at `now` (at most `percent` of this second's requests, and
  // at least 3 per second); counted when it does.
  bool admitRetry(int64_t now, uint32_t percent) noexcept;

  // The endpoints of the running configuration, in order.
  std::vector<std::shared_ptr<EndpointState>> endpoints() const;
  void setEndpoints(std::vector<std::shared_ptr<EndpointState>> e);
  // Whether some endpoint is usable at `now`.
  bool anyUsable(int64_t now) const;

 private:
  mutable std::mutex mu_;
  std::vector<std::shared_ptr<EndpointState>> endpoints_;
};

class HealthRegistry {
 public:
  static HealthRegistry& instance();
  // The state of `up` with its endpoints as configured now (made on first use).
  std::shared_ptr<UpstreamState> upstream(const settings::Upstream& up);
  std::shared_ptr<UpstreamState> find(std::string_view name) const;
  // Every upstream seen (admin views, readiness).
  std::vector<std::shared_ptr<UpstreamState>> all() const;
  void clear();  // tests

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::shared_ptr<UpstreamState>> upstreams_;
  std::unordered_map<std::string, std::shared_ptr<EndpointState>> endpoints_;  // "up|endpoint"
};

// Passive outlier detection. A failed answer from `e` (of `u`, configured as `up`) at `now`;
// true when it ejected the endpoint (logged once by the caller).
bool reportFailure(UpstreamState& u, EndpointState& e, const settings::Upstream& up, int64_t now);
// reportFailure, with the failure noted on the endpoint and an ejection logged (warning).
void noteEndpointFailure(UpstreamState& u, EndpointState& e, const settings::Upstream& up,
                         int64_t now, std::string why);
// A good answer (any status but 502/503/504): the run of failures ends.
void reportSuccess(EndpointState& e) noexcept;
// An answer's status as an outlier event: true for 502, 503, 504.
inline bool failedStatus(int status) noexcept {
  return status == 502 || status == 503 || status == 504;
}

// Retry-After for a request no endpoint of `u` could take at `now`: the seconds until the
// first ejection ends (an endpoint only down by its health check: the check's interval),
// 1 to 300.
int retryAfterSeconds(const UpstreamState& u, const settings::Upstream& up, int64_t now);

// Active health: one probe's result at `now`; true when the endpoint changed state.
bool reportProbe(EndpointState& e, const settings::HealthCheck& hc, bool ok);
// After a passing probe: an endpoint the health check holds up, but ejected by outlier
// detection, is taken back at once (as Envoy's successful_active_health_check_uneject_host):
// a restarted server need not wait out its ejection. True when it ended an ejection.
bool endEjectionOnProbe(EndpointState& e, int64_t now) noexcept;

}  // namespace gw::upstream
