// metrics/: label folding, the tool-name cap, histogram buckets, and the merged scrape.

#include "gateway/metrics/metrics.h"

#include <catch.hpp>
#include <string>
#include <thread>
#include <vector>

using gw::metrics::Cell;
using gw::metrics::Registry;
using gw::metrics::ToolNames;
using namespace std::chrono_literals;

namespace {

// The value on the exposition line that starts with `series`, or -1.
double sample(const std::string& text, const std::string& series) {
  size_t pos = text.find("\n" + series + " ");
  if (pos == std::string::npos) {
    return -1;
  }
  return std::stod(text.substr(pos + series.size() + 2));
}

}  // namespace

TEST_CASE("metrics: method labels are the MCP method list, anything else folds", "[metrics]") {
  CHECK(gw::metrics::methodLabel("tools/call") == "tools/call");
  CHECK(gw::metrics::methodLabel("notifications/initialized") == "notifications/initialized");
  CHECK(gw::metrics::methodLabel("") == "");
  CHECK(gw::metrics::methodLabel("tools/call2") == "other");
  CHECK(gw::metrics::methodLabel("x\"y") == "other");
}

TEST_CASE("metrics: tool names outside [A-Za-z0-9_.-]{1,128} are not label values",
          "[metrics]") {
  CHECK(gw::metrics::validToolName("get_weather.v2-beta"));
  CHECK_FALSE(gw::metrics::validToolName(""));
  CHECK_FALSE(gw::metrics::validToolName("with space"));
  CHECK_FALSE(gw::metrics::validToolName("quote\""));
  CHECK_FALSE(gw::metrics::validToolName("caf\xc3\xa9"));
  CHECK_FALSE(gw::metrics::validToolName(std::string(129, 'a')));
  CHECK(gw::metrics::validToolName(std::string(128, 'a')));
}

TEST_CASE("metrics: the tool-name cap admits the first N names, process-wide", "[metrics]") {
  ToolNames names;
  CHECK(names.label("a", 2) == "a");
  CHECK(names.label("b", 2) == "b");
  CHECK(names.label("c", 2) == "other");
  CHECK(names.label("a", 2) == "a");  // admitted names stay, also once full
  CHECK(names.label("b", 2) == "b");
  CHECK(names.label("bad name", 2) == "other");

  SECTION("many threads racing for a small cap admit exactly the cap") {
    ToolNames shared;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i) {
          shared.label("tool" + std::to_string((i * 7 + t) % 40), 10);
        }
      });
    }
    for (auto& th : threads) {
      th.join();
    }
    int distinct = 0;
    for (int i = 0; i < 40; ++i) {
      std::string n = "tool" + std::to_string(i);
      distinct += shared.label(n, 10) == n ? 1 : 0;
    }
    CHECK(distinct == 10);
  }
}

TEST_CASE("metrics: observations land in the semconv buckets (le is inclusive)", "[metrics]") {
  Cell c;
  c.observe(5ms);     // ≤ 0.01
  c.observe(10ms);    // = 0.01, still the first bucket
  c.observe(11ms);    // ≤ 0.02
  c.observe(400s);    // beyond 300: +Inf only
  c.observe(-1ms);    // a clock step back counts as 0
  CHECK(c.count.load() == 5);
  CHECK(c.buckets[0].load() == 3);
  CHECK(c.buckets[1].load() == 1);
  CHECK(c.buckets[gw::metrics::kDurationBounds.size()].load() == 1);
  CHECK(c.sum_ns.load() == uint64_t{(5 + 10 + 11) * 1000000ull + 400ull * 1000000000ull});
}

TEST_CASE("metrics: a scrape merges every worker's series", "[metrics]") {
  Registry r;
  auto& w1 = r.addWorker();
  auto& w2 = r.addWorker();
  w1.server_ops.at({"r1", "tools/call", "echo", "200", ""}).observe(3ms);
  w2.server_ops.at({"r1", "tools/call", "echo", "200", ""}).observe(30ms);
  w2.server_ops.at({"r1", "tools/call", "echo", "502", "connect_failed"}).observe(1ms);
  w1.rejections.at({"rate_limited"}).add(2);
  w2.rejections.at({"rate_limited"}).add(1);
  w1.bytes_in.add(100);
  w2.bytes_in.add(23);
  r.reloaded(true);
  r.reloaded(false);
  r.reloaded(false);
  gw::metrics::Gauges g;
  g.connections = 4;
  std::string t = "\n" + r.scrape(g);
  const std::string ok =
      "{route=\"r1\",mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\","
      "http_response_status_code=\"200\",error_type=\"\"";
  CHECK(sample(t, "mcp_server_operation_duration_seconds_count" + ok + "}") == 2);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"0.01\"}") == 1);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"0.05\"}") == 2);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"+Inf\"}") == 2);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_sum" + ok + "}") ==
        Approx(0.033).margin(1e-9));
  CHECK(sample(t, "mcp_gateway_rejections_total{reason=\"rate_limited\"}") == 3);
  CHECK(sample(t, "mcp_gateway_received_bytes_total") == 123);
  CHECK(sample(t, "mcp_gateway_active_connections") == 4);
  CHECK(sample(t, "mcp_gateway_config_reloads_total{result=\"success\"}") == 1);
  CHECK(sample(t, "mcp_gateway_config_reloads_total{result=\"failure\"}") == 2);
  CHECK(t.find("# TYPE mcp_server_operation_duration_seconds histogram") != std::string::npos);
  CHECK(t.find("# TYPE mcp_gateway_rejections_total counter") != std::string::npos);
}
