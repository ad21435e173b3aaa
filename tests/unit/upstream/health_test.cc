// upstream/: shared endpoint health (issue #29) — passive ejection with its doubling time and
// its percent cap, the return, active health thresholds, Retry-After, and the settings that
// drive them (every key, every range).

#include <catch.hpp>
#include <chrono>
#include <string>

#include "gateway/settings/settings.h"
#include "gateway/upstream/health.h"
#include "tests/unit/settings/load_util.h"

namespace gw::upstream {
namespace {

constexpr int64_t kSecond = 1'000'000'000;

settings::Upstream upstreamWith(size_t endpoints) {
  settings::Upstream up;
  up.name = "u" + std::to_string(endpoints);
  for (size_t i = 0; i < endpoints; ++i) {
    settings::Address a;
    a.text = "10.0.0." + std::to_string(i + 1) + ":3000";
    up.endpoints.push_back(a);
  }
  return up;
}

TEST_CASE("health: consecutive failures eject, the time doubles, a success resets",
          "[upstream][health]") {
  HealthRegistry::instance().clear();
  settings::Upstream up = upstreamWith(1);
  auto u = HealthRegistry::instance().upstream(up);
  auto e = u->endpoints().at(0);
  int64_t now = 100 * kSecond;
  for (int i = 0; i < 4; ++i) {
    CHECK_FALSE(reportFailure(*u, *e, up, now));
  }
  CHECK(e->usable(now));
  // The fifth: ejected for 30 s (one endpoint of one may always go).
  CHECK(reportFailure(*u, *e, up, now));
  CHECK_FALSE(e->usable(now));
  CHECK_FALSE(u->anyUsable(now + 29 * kSecond));
  CHECK(e->usable(now + 30 * kSecond));
  CHECK(retryAfterSeconds(*u, up, now) == 30);
  // Back, and failing again without a success between: 60 s.
  now += 31 * kSecond;
  for (int i = 0; i < 4; ++i) {
    reportFailure(*u, *e, up, now);
  }
  CHECK(reportFailure(*u, *e, up, now));
  CHECK_FALSE(e->usable(now + 59 * kSecond));
  CHECK(e->usable(now + 60 * kSecond));
  // Doubling stops at 5 minutes.
  for (int round = 0; round < 6; ++round) {
    now += 301 * kSecond;
    for (int i = 0; i < 5; ++i) {
      reportFailure(*u, *e, up, now);
    }
  }
  CHECK_FALSE(e->usable(now + 299 * kSecond));
  CHECK(e->usable(now + 300 * kSecond));
  // A success ends the run: the next ejection is 30 s again.
  now += 301 * kSecond;
  reportSuccess(*e);
  for (int i = 0; i < 5; ++i) {
    reportFailure(*u, *e, up, now);
  }
  CHECK(e->usable(now + 30 * kSecond));
  CHECK(e->ejected_total.load() == 9);
}

TEST_CASE("health: a passing health check ends an ejection once the check holds it up",
          "[upstream][health]") {
  HealthRegistry::instance().clear();
  settings::Upstream up = upstreamWith(1);
  settings::HealthCheck hc;
  hc.unhealthy_threshold = 1;
  hc.healthy_threshold = 2;
  auto u = HealthRegistry::instance().upstream(up);
  auto e = u->endpoints().at(0);
  const int64_t now = 100 * kSecond;
  // Not ejected: nothing to end.
  CHECK_FALSE(endEjectionOnProbe(*e, now));
  for (int i = 0; i < 5; ++i) {
    reportFailure(*u, *e, up, now);
  }
  REQUIRE_FALSE(e->usable(now + kSecond));
  // The server stopped: the check takes it down as well.
  CHECK(reportProbe(*e, hc, false));
  CHECK_FALSE(endEjectionOnProbe(*e, now + kSecond));  // down: the ejection stands
  // Started again: the first good probe does not bring it up (threshold 2), the ejection
  // stands; the second does, and ends the ejection 28 s early.
  CHECK_FALSE(reportProbe(*e, hc, true));
  CHECK_FALSE(endEjectionOnProbe(*e, now + kSecond));
  CHECK_FALSE(e->usable(now + 2 * kSecond));
  CHECK(reportProbe(*e, hc, true));
  CHECK(endEjectionOnProbe(*e, now + 2 * kSecond));
  CHECK(e->usable(now + 2 * kSecond));
  CHECK(e->consecutive.load() == 0);
  // An ejection that already ran out is not "ended" again.
  CHECK_FALSE(endEjectionOnProbe(*e, now + 3 * kSecond));
}

TEST_CASE("health: max_ejection_percent caps the endpoints out at once", "[upstream][health]") {
  HealthRegistry::instance().clear();
  settings::Upstream up = upstreamWith(4);  // 50 %: two of four
  auto u = HealthRegistry::instance().upstream(up);
  const auto eps = u->endpoints();
  const int64_t now = 10 * kSecond;
  auto fiveFailures = [&](size_t i) {
    bool ejected = false;
    for (int k = 0; k < 5; ++k) {
      ejected = reportFailure(*u, *eps[i], up, now) || ejected;
    }
    return ejected;
  };
  CHECK(fiveFailures(0));
  CHECK(fiveFailures(1));
  CHECK_FALSE(fiveFailures(2));  // a third would be 75 %
  CHECK(eps[2]->usable(now));
  CHECK(u->anyUsable(now));
  // consecutive_failures: 0 turns ejection off; max_ejection_percent: 0 too.
  HealthRegistry::instance().clear();
  up.outlier_detection.consecutive_failures = 0;
  u = HealthRegistry::instance().upstream(up);
  for (int k = 0; k < 50; ++k) {
    CHECK_FALSE(reportFailure(*u, *u->endpoints()[0], up, now));
  }
  up.outlier_detection.consecutive_failures = 5;
  up.outlier_detection.max_ejection_percent = 0;
  for (int k = 0; k < 10; ++k) {
    CHECK_FALSE(reportFailure(*u, *u->endpoints()[1], up, now));
  }
}

TEST_CASE("health: active checks need their thresholds both ways", "[upstream][health]") {
  HealthRegistry::instance().clear();
  settings::Upstream up = upstreamWith(1);
  settings::HealthCheck hc;  // 3 down, 2 up
  auto u = HealthRegistry::instance().upstream(up);
  auto e = u->endpoints().at(0);
  CHECK_FALSE(reportProbe(*e, hc, false));
  CHECK_FALSE(reportProbe(*e, hc, false));
  CHECK_FALSE(reportProbe(*e, hc, true));  // the run is broken
  CHECK_FALSE(reportProbe(*e, hc, false));
  CHECK_FALSE(reportProbe(*e, hc, false));
  CHECK(reportProbe(*e, hc, false));  // third in a row: down
  CHECK_FALSE(e->usable(0));
  up.health_check = hc;
  CHECK(retryAfterSeconds(*u, up, 0) == 10);  // the interval
  CHECK_FALSE(reportProbe(*e, hc, true));
  CHECK(reportProbe(*e, hc, true));  // second in a row: up
  CHECK(e->usable(0));
  // The state survives a reload (same upstream and endpoint), and follows a changed list.
  auto again = HealthRegistry::instance().upstream(up);
  CHECK(again->endpoints().at(0) == e);
  settings::Upstream moved = upstreamWith(2);
  moved.name = up.name;
  CHECK(HealthRegistry::instance().upstream(moved)->endpoints().size() == 2);
}

}  // namespace
}  // namespace gw::upstream

namespace gw::settings {
namespace {

std::string withBlock(std::string_view lines) {
  return "upstreams:\n  - name: u\n    endpoints: [127.0.0.1:9443]\n" + std::string(lines) +
         "routes:\n  - name: default\n    upstream: u\n";
}

TEST_CASE("health settings: every key loads, every mistake is an error", "[settings][health]") {
  LoadResult r = loadString(withBlock("    health_check:\n      probe: http\n      path: /ready\n"
                                      "      interval: 5s\n      timeout: 1s\n"
                                      "      unhealthy_threshold: 2\n      healthy_threshold: 1\n"
                                      "    outlier_detection:\n      consecutive_failures: 3\n"
                                      "      ejection_time: 10s\n      max_ejection_percent: 100\n"
                                      "    circuit_breaker: { max_requests: 10, max_pending: 2 }\n"
                                      "    retry:\n      attempts: 3\n      on: [reset, 503]\n"
                                      "      methods: [tools/list]\n      tools: none\n"
                                      "      budget: 50%\n      backoff: 10ms\n") +
                                "readiness: all_upstreams\n",
                            "gw.yaml");
  INFO(test::dump(r));
  REQUIRE(r.errors.empty());
  const Upstream& u = r.settings->upstreams[0];
  REQUIRE(u.health_check);
  CHECK(u.health_check->probe == HealthCheck::Probe::kHttp);
  CHECK(u.health_check->path == "/ready");
  CHECK(u.outlier_detection.consecutive_failures == 3);
  CHECK(u.outlier_detection.max_ejection_percent == 100);
  REQUIRE(u.circuit_breaker);
  CHECK(u.circuit_breaker->max_pending == 2);
  REQUIRE(u.retry);
  CHECK(u.retry->attempts == 3);
  CHECK(u.retry->on_reset);
  CHECK_FALSE(u.retry->on_timeout);
  CHECK(u.retry->on_status == std::vector<int>{503});
  CHECK(u.retry->tools == Retry::Tools::kNone);
  CHECK(u.retry->budget_percent == 50);
  CHECK(r.settings->readiness == Settings::Readiness::kAllUpstreams);

  // Absent: outlier detection with its defaults, the rest off.
  r = loadString(withBlock(""), "gw.yaml");
  REQUIRE(r.errors.empty());
  CHECK(r.settings->upstreams[0].outlier_detection.consecutive_failures == 5);
  CHECK_FALSE(r.settings->upstreams[0].health_check);
  CHECK_FALSE(r.settings->upstreams[0].retry);
  CHECK(r.settings->readiness == Settings::Readiness::kAnyUpstream);

  const std::vector<std::pair<std::string, std::string>> bad = {
      {"    health_check: { probe: grpc }\n", "must be mcp, http or tcp"},
      {"    health_check: { probe: tcp, path: /x }\n", "applies only to probe: http"},
      {"    health_check: { interval: 500ms }\n", "1s to 1h"},
      {"    health_check: { interval: 2s, timeout: 3s }\n", "shorter than its interval"},
      {"    health_check: { unhealthy_threshold: 0 }\n", "1 to 100"},
      {"    outlier_detection: { ejection_time: 10m }\n", "1s to 5m"},
      {"    outlier_detection: { max_ejection_percent: 101 }\n", "0 to 100"},
      {"    circuit_breaker: { max_requests: 0 }\n", "1 to 1000000"},
      {"    retry: { attempts: 9 }\n", "1 (no retry) to 5"},
      {"    retry: { on: [reset, 500] }\n", "is not one of connect_failure"},
      {"    retry: { methods: [tools/call] }\n", "retried only through 'tools'"},
      {"    retry: { methods: [notifications/cancelled] }\n", "never retried"},
      {"    retry: { budget: 20 }\n", "a percentage"},
      {"    retry: { backoff: 1s }\n", "0 to 250ms"},
      {"    retry: { tools: all }\n", "must be none, read_only or idempotent"},
      {"    retry: { when: always }\n", "unknown key"},
  };
  for (const auto& [lines, text] : bad) {
    LoadResult b = loadString(withBlock(lines), "gw.yaml");
    INFO(lines << test::dump(b));
    CHECK(test::hasError(b, text));
  }
  for (const auto& [text, tools] :
       {std::pair{"none", Retry::Tools::kNone}, std::pair{"read_only", Retry::Tools::kReadOnly},
        std::pair{"idempotent", Retry::Tools::kIdempotent}}) {
    LoadResult t =
        loadString(withBlock(std::string("    retry: { tools: ") + text + " }\n"), "gw.yaml");
    INFO(text << test::dump(t));
    REQUIRE(t.errors.empty());
    REQUIRE(t.settings->upstreams[0].retry);
    CHECK(t.settings->upstreams[0].retry->tools == tools);
  }
  LoadResult b = loadString(withBlock("") + "readiness: sometimes\n", "gw.yaml");
  CHECK(test::hasError(b, "must be always, any_upstream or all_upstreams"));
}

}  // namespace
}  // namespace gw::settings
