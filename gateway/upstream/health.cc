// upstream/: shared endpoint health (health.h).

#include "gateway/upstream/health.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "gateway/core/clock.h"

namespace gw::upstream {

namespace {

constexpr int64_t kMaxEjectionNs = std::chrono::nanoseconds(std::chrono::minutes(5)).count();

}  // namespace

void EndpointState::noteFailure(int64_t unix_now, std::string why) {
  std::lock_guard lock(mu_);
  last_failure_unix_ = unix_now;
  last_failure_ = std::move(why);
}

std::pair<int64_t, std::string> EndpointState::lastFailure() const {
  std::lock_guard lock(mu_);
  return {last_failure_unix_, last_failure_};
}

std::vector<std::shared_ptr<EndpointState>> UpstreamState::endpoints() const {
  std::lock_guard lock(mu_);
  return endpoints_;
}

void UpstreamState::setEndpoints(std::vector<std::shared_ptr<EndpointState>> e) {
  std::lock_guard lock(mu_);
  endpoints_ = std::move(e);
}

bool UpstreamState::anyUsable(int64_t now) const {
  std::lock_guard lock(mu_);
  return std::any_of(endpoints_.begin(), endpoints_.end(),
                     [now](const auto& e) { return e->usable(now); });
}

namespace {

void roll(UpstreamState& u, int64_t now) noexcept {
  const int64_t start = u.window_start.load(std::memory_order_relaxed);
  if (now - start >= 1'000'000'000) {
    u.window_start.store(now, std::memory_order_relaxed);
    u.window_requests.store(0, std::memory_order_relaxed);
    u.window_retries.store(0, std::memory_order_relaxed);
  }
}

}  // namespace

void UpstreamState::noteRequest(int64_t now) noexcept {
  roll(*this, now);
  window_requests.fetch_add(1, std::memory_order_relaxed);
}

bool UpstreamState::admitRetry(int64_t now, uint32_t percent) noexcept {
  roll(*this, now);
  const uint64_t allowed = std::max<uint64_t>(
      3, uint64_t{window_requests.load(std::memory_order_relaxed)} * percent / 100);
  if (window_retries.load(std::memory_order_relaxed) >= allowed) {
    return false;
  }
  window_retries.fetch_add(1, std::memory_order_relaxed);
  return true;
}

HealthRegistry& HealthRegistry::instance() {
  static HealthRegistry r;
  return r;
}

std::shared_ptr<UpstreamState> HealthRegistry::upstream(const settings::Upstream& up) {
  std::lock_guard lock(mu_);
  std::shared_ptr<UpstreamState>& u = upstreams_[up.name];
  if (!u) {
    u = std::make_shared<UpstreamState>();
    u->name = up.name;
  }
  std::vector<std::shared_ptr<EndpointState>> eps;
  bool same = true;
  const auto current = u->endpoints();
  same = current.size() == up.endpoints.size();
  for (size_t i = 0; i < up.endpoints.size(); ++i) {
    std::shared_ptr<EndpointState>& e = endpoints_[up.name + "|" + up.endpoints[i].text];
    if (!e) {
      e = std::make_shared<EndpointState>();
      e->upstream = up.name;
      e->endpoint = up.endpoints[i].text;
    }
    same = same && current[i] == e;
    eps.push_back(e);
  }
  if (!same) {
    u->setEndpoints(std::move(eps));
  }
  return u;
}

std::shared_ptr<UpstreamState> HealthRegistry::find(std::string_view name) const {
  std::lock_guard lock(mu_);
  auto it = upstreams_.find(std::string(name));
  return it != upstreams_.end() ? it->second : nullptr;
}

std::vector<std::shared_ptr<UpstreamState>> HealthRegistry::all() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<UpstreamState>> out;
  for (const auto& [name, u] : upstreams_) {
    out.push_back(u);
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a->name < b->name; });
  return out;
}

void HealthRegistry::clear() {
  std::lock_guard lock(mu_);
  upstreams_.clear();
  endpoints_.clear();
}

bool reportFailure(UpstreamState& u, EndpointState& e, const settings::Upstream& up, int64_t now) {
  const settings::OutlierDetection& o = up.outlier_detection;
  const uint32_t n = e.consecutive.fetch_add(1, std::memory_order_relaxed) + 1;
  if (o.consecutive_failures == 0 || n < o.consecutive_failures ||
      e.ejected_until.load(std::memory_order_relaxed) > now) {
    return false;
  }
  // max_ejection_percent: ejected endpoints stay under it (one may always go).
  const auto eps = u.endpoints();
  size_t ejected = 0;
  for (const auto& other : eps) {
    ejected += other->ejected_until.load(std::memory_order_relaxed) > now ? 1 : 0;
  }
  if (ejected > 0 &&
      (ejected + 1) * 100 > static_cast<size_t>(o.max_ejection_percent) * eps.size()) {
    return false;
  }
  if (ejected == 0 && o.max_ejection_percent == 0) {
    return false;
  }
  const uint32_t times = e.ejections.fetch_add(1, std::memory_order_relaxed);
  int64_t span = std::chrono::nanoseconds(o.ejection_time).count();
  for (uint32_t i = 0; i < times && span < kMaxEjectionNs; ++i) {
    span *= 2;
  }
  span = std::min(span, kMaxEjectionNs);
  e.ejected_until.store(now + span, std::memory_order_relaxed);
  e.consecutive.store(0, std::memory_order_relaxed);
  e.ejected_total.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void noteEndpointFailure(UpstreamState& u, EndpointState& e, const settings::Upstream& up,
                         int64_t now, std::string why) {
  const auto unix_now =
      std::chrono::duration_cast<std::chrono::seconds>(core::wallNow().time_since_epoch()).count();
  if (reportFailure(u, e, up, now)) {
    const int64_t left = e.ejected_until.load(std::memory_order_relaxed) - now;
    spdlog::warn("upstream '{}' endpoint {} ejected for {} s after {} failed answers (last: {})",
                 e.upstream, e.endpoint, (left + 999'999'999) / 1'000'000'000,
                 up.outlier_detection.consecutive_failures, why);
  }
  e.noteFailure(unix_now, std::move(why));
}

void reportSuccess(EndpointState& e) noexcept {
  if (e.consecutive.load(std::memory_order_relaxed) != 0) {
    e.consecutive.store(0, std::memory_order_relaxed);
  }
  if (e.ejections.load(std::memory_order_relaxed) != 0) {
    e.ejections.store(0, std::memory_order_relaxed);
  }
}

int retryAfterSeconds(const UpstreamState& u, const settings::Upstream& up, int64_t now) {
  int64_t best = -1;
  for (const auto& e : u.endpoints()) {
    const int64_t until = e->ejected_until.load(std::memory_order_relaxed);
    int64_t wait = until > now ? until - now : 0;
    if (!e->healthy.load(std::memory_order_relaxed) && up.health_check) {
      wait = std::max<int64_t>(wait, std::chrono::nanoseconds(up.health_check->interval).count());
    }
    best = best < 0 ? wait : std::min(best, wait);
  }
  const int64_t s = (std::max<int64_t>(best, 0) + 999'999'999) / 1'000'000'000;
  return static_cast<int>(std::clamp<int64_t>(s, 1, 300));
}

bool endEjectionOnProbe(EndpointState& e, int64_t now) noexcept {
  if (!e.healthy.load() || e.ejected_until.load() <= now) {
    return false;
  }
  e.ejected_until.store(0);
  e.consecutive.store(0);
  return true;
}

bool reportProbe(EndpointState& e, const settings::HealthCheck& hc, bool ok) {
  if (ok) {
    e.probe_failed = 0;
    ++e.probe_ok;
    if (!e.healthy.load() && e.probe_ok >= hc.healthy_threshold) {
      e.healthy.store(true);
      e.came_up.fetch_add(1, std::memory_order_relaxed);
      return true;
    }
    return false;
  }
  e.probe_ok = 0;
  ++e.probe_failed;
  if (e.healthy.load() && e.probe_failed >= hc.unhealthy_threshold) {
    e.healthy.store(false);
    e.went_down.fetch_add(1, std::memory_order_relaxed);
    return true;
  }
  return false;
}

}  // namespace gw::upstream
