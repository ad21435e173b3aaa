// settings/: what the gateway does when upstreams fail — upstreams[].health_check (active
// checks), outlier_detection (passive ejection), circuit_breaker (requests in flight) and
// retry (safe retries). Each key with its range; a mistake is a load error at its place.

#include <algorithm>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/settings/loader.h"

namespace gw::settings {

namespace {

constexpr std::string_view kHealthKeys[] = {
    "probe", "path", "interval", "timeout", "unhealthy_threshold", "healthy_threshold"};
constexpr std::string_view kProbes[] = {"mcp", "http", "tcp"};
constexpr std::string_view kOutlierKeys[] = {"consecutive_failures", "ejection_time",
                                             "max_ejection_percent"};
constexpr std::string_view kBreakerKeys[] = {"max_requests", "max_pending"};
constexpr std::string_view kRetryKeys[] = {"attempts", "on",     "methods",
                                           "tools",    "budget", "backoff"};
constexpr std::string_view kRetryTools[] = {"none", "read_only", "idempotent"};

constexpr uint32_t kMaxThreshold = 100;
constexpr uint32_t kMaxAttempts = 5;

}  // namespace

void Loader::walkHealthCheck(const Entry& he, Upstream& u) {
  HealthCheck h;
  const size_t before = errorCount();
  std::vector<Entry> es = entries(he.value, he.key_node.Mark(), kHealthKeys, he.path);
  if (!he.value.IsMap() && !he.value.IsNull()) {
    return;
  }
  auto range = [&](const Entry& e, Duration& d, Duration lo, Duration hi, const char* text) {
    if (readDuration(e, d) && (d < lo || d > hi)) {
      error(valueMark(e), "'" + e.path + "' must be " + text);
    }
  };
  auto threshold = [&](const Entry& e, uint32_t& out) {
    if (readUint32(e, out) && (out == 0 || out > kMaxThreshold)) {
      error(valueMark(e), "'" + e.path + "' must be 1 to 100");
    }
  };
  for (const Entry& e : es) {
    if (e.key == "probe") {
      size_t i = 0;
      if (readChoice(e, kProbes, i)) {
        h.probe = static_cast<HealthCheck::Probe>(i);
      }
    } else if (e.key == "path") {
      if (readPath(e, h.path) && find(es, "probe") != nullptr &&
          h.probe != HealthCheck::Probe::kHttp) {
        error(e.key_node.Mark(), "'" + e.path + "' applies only to probe: http");
      }
    } else if (e.key == "interval") {
      range(e, h.interval, std::chrono::seconds(1), std::chrono::hours(1), "1s to 1h");
    } else if (e.key == "timeout") {
      range(e, h.timeout, std::chrono::milliseconds(10), std::chrono::minutes(1), "10ms to 1m");
    } else if (e.key == "unhealthy_threshold") {
      threshold(e, h.unhealthy_threshold);
    } else if (e.key == "healthy_threshold") {
      threshold(e, h.healthy_threshold);
    }
  }
  if (errorCount() == before && h.timeout >= h.interval) {
    error(valueMark(he), "'" + he.path + ".timeout' must be shorter than its interval");
  }
  if (errorCount() == before) {
    u.health_check = h;
  }
}

void Loader::walkOutlierDetection(const Entry& oe, Upstream& u) {
  OutlierDetection o;
  const size_t before = errorCount();
  for (const Entry& e : entries(oe.value, oe.key_node.Mark(), kOutlierKeys, oe.path)) {
    if (e.key == "consecutive_failures") {
      // 0: passive ejection off.
      if (readUint32(e, o.consecutive_failures) && o.consecutive_failures > 1000) {
        error(valueMark(e), "'" + e.path + "' must be 0 (off) to 1000");
      }
    } else if (e.key == "ejection_time") {
      if (readDuration(e, o.ejection_time) && (o.ejection_time < std::chrono::seconds(1) ||
                                               o.ejection_time > std::chrono::minutes(5))) {
        error(valueMark(e), "'" + e.path + "' must be 1s to 5m");
      }
    } else if (e.key == "max_ejection_percent") {
      if (readUint32(e, o.max_ejection_percent) && o.max_ejection_percent > 100) {
        error(valueMark(e), "'" + e.path + "' must be 0 to 100");
      }
    }
  }
  if (errorCount() == before) {
    u.outlier_detection = o;
  }
}

void Loader::walkCircuitBreaker(const Entry& ce, Upstream& u) {
  CircuitBreaker c;
  const size_t before = errorCount();
  for (const Entry& e : entries(ce.value, ce.key_node.Mark(), kBreakerKeys, ce.path)) {
    uint32_t& dst = e.key == "max_requests" ? c.max_requests : c.max_pending;
    if (readUint32(e, dst) && (dst == 0 || dst > 1000000)) {
      error(valueMark(e), "'" + e.path + "' must be 1 to 1000000");
    }
  }
  if (errorCount() == before) {
    u.circuit_breaker = c;
  }
}

void Loader::walkRetry(const Entry& re, Upstream& u) {
  Retry r;
  const size_t before = errorCount();
  for (const Entry& e : entries(re.value, re.key_node.Mark(), kRetryKeys, re.path)) {
    if (e.key == "attempts") {
      if (readUint32(e, r.attempts) && (r.attempts == 0 || r.attempts > kMaxAttempts)) {
        error(valueMark(e), "'" + e.path + "' must be 1 (no retry) to 5");
      }
    } else if (e.key == "on") {
      std::vector<std::string> on;
      std::vector<YAML::Node> nodes;
      if (!readStringList(e, on, &nodes)) {
        continue;
      }
      r.on_connect_failure = r.on_reset = r.on_timeout = false;
      r.on_status.clear();
      for (size_t i = 0; i < on.size(); ++i) {
        const std::string& v = on[i];
        if (v == "connect_failure") {
          r.on_connect_failure = true;
        } else if (v == "reset") {
          r.on_reset = true;
        } else if (v == "timeout") {
          r.on_timeout = true;
        } else if (v == "502" || v == "503" || v == "504") {
          r.on_status.push_back(std::stoi(v));
        } else {
          error(nodes[i].Mark(), "'" + e.path + "[" + std::to_string(i) + "]': '" + v +
                                     "' is not one of connect_failure, reset, timeout, 502, "
                                     "503, 504");
        }
      }
    } else if (e.key == "methods") {
      std::vector<YAML::Node> nodes;
      if (readStringList(e, r.methods, &nodes)) {
        for (size_t i = 0; i < r.methods.size(); ++i) {
          if (r.methods[i] == "tools/call") {
            error(nodes[i].Mark(), "'" + e.path + "[" + std::to_string(i) +
                                       "]': tools/call is retried only through 'tools' "
                                       "(read_only or idempotent), never for every tool");
          } else if (r.methods[i].rfind("notifications/", 0) == 0) {
            error(nodes[i].Mark(),
                  "'" + e.path + "[" + std::to_string(i) + "]': notifications are never retried");
          }
        }
      }
    } else if (e.key == "tools") {
      size_t i = 0;
      if (readChoice(e, kRetryTools, i)) {
        r.tools = static_cast<Retry::Tools>(i);
      }
    } else if (e.key == "budget") {
      std::string v;
      if (readNonEmptyString(e, v)) {
        int pct = -1;
        if (v.size() >= 2 && v.back() == '%' &&
            std::all_of(v.begin(), v.end() - 1, [](char c) { return c >= '0' && c <= '9'; }) &&
            v.size() <= 4) {
          pct = std::stoi(v.substr(0, v.size() - 1));
        }
        if (pct < 0 || pct > 100) {
          error(valueMark(e), "'" + e.path + "' must be a percentage, 0% to 100%, not '" + v + "'");
        } else {
          r.budget_percent = static_cast<uint32_t>(pct);
        }
      }
    } else if (e.key == "backoff") {
      if (readDuration(e, r.backoff) &&
          (r.backoff < Duration::zero() || r.backoff > std::chrono::milliseconds(250))) {
        error(valueMark(e), "'" + e.path + "' must be 0 to 250ms");
      }
    }
  }
  if (errorCount() == before) {
    u.retry = std::move(r);
  }
}

}  // namespace gw::settings
