// metrics/: label folding, the tool-name cap, histogram buckets, and the merged scrape.

#include "gateway/metrics/metrics.h"

#include <atomic>
#include <catch.hpp>
#include <map>
#include <string>
#include <thread>
#include <vector>

using gw::metrics::Cell;
using gw::metrics::Registry;
using gw::metrics::ToolNames;
using namespace std::chrono_literals;

namespace {

// The labels (without the closing brace) of r1's successful tools/call echo series.
const std::string kOkLabels =
    "{server=\"default\",route=\"r1\",mcp_method_name=\"tools/call\",gen_ai_tool_name=\"echo\","
    "http_response_status_code=\"200\",error_type=\"\"";

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

TEST_CASE("metrics: tool names outside [A-Za-z0-9_.-]{1,128} are not label values", "[metrics]") {
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
  CHECK(names.label("a", 2, true) == "a");
  CHECK(names.label("b", 2, true) == "b");
  CHECK(names.label("c", 2, true) == "other");
  CHECK(names.label("a", 2, true) == "a");  // admitted names stay, also once full
  CHECK(names.label("b", 2, false) == "b");
  CHECK(names.label("bad name", 2, true) == "other");

  SECTION("many threads racing for a small cap admit exactly the cap") {
    ToolNames shared;
    std::vector<std::thread> threads;
    for (int t = 0; t < 4; ++t) {
      threads.emplace_back([&, t] {
        for (int i = 0; i < 50; ++i) {
          shared.label("tool" + std::to_string((i * 7 + t) % 40), 10, true);
        }
      });
    }
    for (auto& th : threads) {
      th.join();
    }
    int distinct = 0;
    for (int i = 0; i < 40; ++i) {
      std::string n = "tool" + std::to_string(i);
      distinct += shared.label(n, 10, true) == n ? 1 : 0;
    }
    CHECK(distinct == 10);
  }
}

TEST_CASE("metrics: only requests that may admit a tool name use up the cap", "[metrics]") {
  ToolNames names;
  // Rejected requests (401/403/429...): a new name counts as "other" and takes no slot.
  for (int i = 0; i < 10; ++i) {
    CHECK(names.label("junk" + std::to_string(i), 2, false) == "other");
  }
  CHECK(names.label("junk0", 2, false) == "other");  // still not admitted
  // The slots are still free for forwarded requests.
  CHECK(names.label("get_weather", 2, true) == "get_weather");
  // A known name is its own label for rejected requests too.
  CHECK(names.label("get_weather", 2, false) == "get_weather");
  CHECK(names.label("echo", 2, true) == "echo");
  CHECK(names.label("third", 2, true) == "other");
}

TEST_CASE("metrics: a cap raised by a reload admits more names", "[metrics]") {
  ToolNames names;
  CHECK(names.label("a", 1, true) == "a");
  CHECK(names.label("b", 1, true) == "other");  // full at cap 1
  CHECK(names.label("b", 1, true) == "other");
  CHECK(names.label("b", 3, true) == "b");  // reload: cap 3
  CHECK(names.label("c", 3, true) == "c");
  CHECK(names.label("d", 3, true) == "other");
  // A lowered cap admits nothing new but keeps what is in.
  CHECK(names.label("c", 1, true) == "c");
  CHECK(names.label("e", 1, true) == "other");
  CHECK(names.label("e", 4, false) == "other");  // room, but this request may not admit
  CHECK(names.label("e", 4, true) == "e");
}

TEST_CASE("metrics: a worker's label cache answers admitted names and never caches other",
          "[metrics]") {
  ToolNames all;
  gw::metrics::ToolLabelCache w1;
  gw::metrics::ToolLabelCache w2;
  // Not admitted while the request may not admit: "other", and not remembered as such.
  CHECK(w1.label(all, "get_weather", 2, false) == "other");
  std::string_view admitted = w1.label(all, "get_weather", 2, true);
  CHECK(admitted == "get_weather");
  // Cached: the same view, whatever may_admit says now.
  CHECK(w1.label(all, "get_weather", 2, false).data() == admitted.data());
  // Another worker sees the process-wide admission.
  CHECK(w2.label(all, "get_weather", 2, false).data() == admitted.data());
  // A tool literally named "other" is a name like any other.
  CHECK(w2.label(all, "other", 2, true) == "other");
  CHECK(w1.label(all, "third", 2, true) == "other");  // cap 2: full
  CHECK(w1.label(all, "third", 3, true) == "third");  // raised cap: admitted now
}

TEST_CASE("metrics: observations land in the semconv buckets (le is inclusive)", "[metrics]") {
  Cell c;
  c.observe(5ms);   // ≤ 0.01
  c.observe(10ms);  // = 0.01, still the first bucket
  c.observe(11ms);  // ≤ 0.02
  c.observe(400s);  // beyond 300: +Inf only
  c.observe(-1ms);  // a clock step back counts as 0
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
  w1.server_ops.at({"default", "r1", "tools/call", "echo", "200", ""}).observe(3ms);
  w2.server_ops.at({"default", "r1", "tools/call", "echo", "200", ""}).observe(30ms);
  w2.server_ops.at({"default", "r1", "tools/call", "echo", "502", "connect_failed"}).observe(1ms);
  w1.rejections.at({"default", "rate_limited"}).add(2);
  w2.rejections.at({"default", "rate_limited"}).add(1);
  w1.bytes_in.add(100);
  w2.bytes_in.add(23);
  r.reloaded(true);
  r.reloaded(false);
  r.reloaded(false);
  gw::metrics::Gauges g;
  g.connections = 4;
  std::string t = "\n" + r.scrape(g);
  const std::string ok = kOkLabels;
  CHECK(sample(t, "mcp_server_operation_duration_seconds_count" + ok + "}") == 2);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"0.01\"}") == 1);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"0.05\"}") == 2);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"+Inf\"}") == 2);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_sum" + ok + "}") ==
        Approx(0.033).margin(1e-9));
  CHECK(sample(t, "mcp_gateway_rejections_total{server=\"default\",reason=\"rate_limited\"}") == 3);
  CHECK(sample(t, "mcp_gateway_received_bytes_total") == 123);
  CHECK(sample(t, "mcp_gateway_active_connections") == 4);
  CHECK(sample(t, "mcp_gateway_config_reloads_total{result=\"success\"}") == 1);
  CHECK(sample(t, "mcp_gateway_config_reloads_total{result=\"failure\"}") == 2);
  CHECK(t.find("# TYPE mcp_server_operation_duration_seconds histogram") != std::string::npos);
  CHECK(t.find("# TYPE mcp_gateway_rejections_total counter") != std::string::npos);
}

namespace {

// Checks every histogram series in an exposition text: its buckets (in the order written)
// never decrease, the last is le="+Inf", and _count equals it. Returns the number of series
// checked; a failure is reported through Catch with the offending lines.
int checkHistograms(const std::string& text, const std::string& name) {
  std::map<std::string, std::vector<std::pair<std::string, double>>> buckets;  // labels → le
  std::map<std::string, double> counts;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    std::string line = text.substr(pos, eol == std::string::npos ? std::string::npos : eol - pos);
    pos = eol == std::string::npos ? text.size() : eol + 1;
    if (line.empty() || line[0] == '#') {
      continue;
    }
    size_t brace = line.find('{');
    size_t close = line.rfind('}');
    if (brace == std::string::npos || close == std::string::npos) {
      continue;
    }
    std::string metric = line.substr(0, brace);
    std::string labels = line.substr(brace + 1, close - brace - 1);
    double value = std::stod(line.substr(close + 2));
    if (metric == name + "_bucket") {
      size_t le = labels.rfind(",le=\"");
      REQUIRE(le != std::string::npos);
      buckets[labels.substr(0, le)].emplace_back(labels.substr(le + 5), value);
    } else if (metric == name + "_count") {
      counts[labels] = value;
    }
  }
  for (const auto& [labels, bs] : buckets) {
    INFO(name << "{" << labels << "}");
    REQUIRE(!bs.empty());
    for (size_t i = 1; i < bs.size(); ++i) {
      INFO("le=" << bs[i - 1].first << " " << bs[i - 1].second << ", le=" << bs[i].first << " "
                 << bs[i].second);
      CHECK(bs[i].second >= bs[i - 1].second);
    }
    CHECK(bs.back().first == "+Inf\"");
    REQUIRE(counts.count(labels) == 1);
    CHECK(counts[labels] == bs.back().second);
  }
  CHECK(counts.size() == buckets.size());
  return static_cast<int>(buckets.size());
}

}  // namespace

TEST_CASE("metrics: a scraped histogram is consistent while a worker is mid-observation",
          "[metrics]") {
  Registry r;
  auto& w = r.addWorker();
  Cell& c = w.server_ops.at({"default", "r1", "tools/call", "echo", "200", ""});
  c.observe(3ms);
  // The worker between its bucket store and its count store (observe() bumps the bucket
  // first) for an observation in the le="300" bucket: count still 1, buckets already 2.
  c.buckets[gw::metrics::kDurationBounds.size() - 1].store(1);
  std::string t = "\n" + r.scrape({});
  CHECK(checkHistograms(t, "mcp_server_operation_duration_seconds") == 1);
  const std::string ok = kOkLabels;
  CHECK(sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"300\"}") == 2);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_bucket" + ok + ",le=\"+Inf\"}") == 2);
  CHECK(sample(t, "mcp_server_operation_duration_seconds_count" + ok + "}") == 2);
}

TEST_CASE("metrics: scrapes racing with observations are always internally consistent",
          "[metrics]") {
  Registry r;
  auto& w1 = r.addWorker();
  auto& w2 = r.addWorker();
  std::atomic<bool> stop{false};
  auto writer = [&stop](gw::metrics::WorkerMetrics& w, int seed) {
    Cell& server = w.server_ops.at({"default", "r1", "tools/call", "echo", "200", ""});
    Cell& client = w.client_ops.at({"default", "up", "tools/call", "echo", ""});
    for (uint64_t i = 0; i < 2000000 && !stop.load(std::memory_order_relaxed); ++i) {
      auto d = std::chrono::milliseconds((i * 7919 + static_cast<uint64_t>(seed)) % 400000);
      server.observe(d);
      client.observe(d);
    }
  };
  std::thread t1(writer, std::ref(w1), 1);
  std::thread t2(writer, std::ref(w2), 2);
  for (int i = 0; i < 200; ++i) {
    std::string t = r.scrape({});
    checkHistograms(t, "mcp_server_operation_duration_seconds");
    checkHistograms(t, "mcp_client_operation_duration_seconds");
  }
  stop = true;
  t1.join();
  t2.join();
  std::string t = r.scrape({});
  CHECK(checkHistograms(t, "mcp_server_operation_duration_seconds") == 1);
  CHECK(checkHistograms(t, "mcp_client_operation_duration_seconds") == 1);
}
