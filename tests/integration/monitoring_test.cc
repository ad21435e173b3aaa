// monitoring (issue #31): every metric the Grafana dashboard (deploy/grafana/mcp-gateway.json)
// and the alert rules (deploy/prometheus/alerts.yaml) name is one the gateway exports — read
// from a real /metrics scrape of a gateway with tracing on, after a request, a fan-out and a
// reload. (Whether their expressions parse and the alerts fire as meant: scripts/
// check-monitoring.sh, with promtool, in .ci/run.)

#include <catch.hpp>

#include <csignal>
#include <set>
#include <string>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

// The metric names a text names: every `mcp_gateway_…`, `mcp_server_…` and `mcp_client_…`
// identifier, histogram suffixes taken off.
std::set<std::string> metricNames(const std::string& text) {
  std::set<std::string> out;
  size_t pos = 0;
  while ((pos = text.find("mcp_", pos)) != std::string::npos) {
    if (pos > 0 && (std::isalnum(static_cast<unsigned char>(text[pos - 1])) ||
                    text[pos - 1] == '_' || text[pos - 1] == '.')) {
      pos += 4;
      continue;
    }
    size_t end = pos;
    while (end < text.size() &&
           (std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '_')) {
      ++end;
    }
    std::string name = text.substr(pos, end - pos);
    for (const char* suffix : {"_bucket", "_count", "_sum"}) {
      const std::string s = suffix;
      if (name.size() > s.size() && name.ends_with(s) &&
          name.find("_seconds") != std::string::npos) {
        name.resize(name.size() - s.size());
      }
    }
    // Labels (mcp_method_name) are not metrics.
    if (name.starts_with("mcp_gateway_") || name.starts_with("mcp_server_") ||
        name.starts_with("mcp_client_")) {
      out.insert(name);
    }
    pos = end;
  }
  return out;
}

// The names a scrape exports (its "# TYPE name kind" lines).
std::set<std::string> exported(const std::string& scrape) {
  std::set<std::string> out;
  size_t pos = 0;
  while ((pos = scrape.find("# TYPE ", pos)) != std::string::npos) {
    pos += 7;
    const size_t end = scrape.find(' ', pos);
    out.insert(scrape.substr(pos, end - pos));
  }
  return out;
}

}  // namespace

TEST_CASE("monitoring: the dashboard and the alerts name only metrics the gateway exports",
          "[monitoring]") {
  const std::string dashboard =
      readFile(std::string(GW_SOURCE_DIR) + "/deploy/grafana/mcp-gateway.json");
  const std::string alerts =
      readFile(std::string(GW_SOURCE_DIR) + "/deploy/prometheus/alerts.yaml");
  REQUIRE_FALSE(dashboard.empty());
  REQUIRE_FALSE(alerts.empty());
  RawUpstream collector(RawUpstream::respond(200, "{}"));
  RawUpstream up(RawUpstream::respond(
      200,
      R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}})"));
  Gateway gw(R"(listen: "127.0.0.1:${PORT}"
admin: "127.0.0.1:0"
workers: 1
upstreams:
  - name: tools
    endpoints: ["${UP}"]
routes:
  - name: fed
    match: { headers: { X-Route: fed } }
    upstreams: [tools]
  - name: main
    upstream: tools
tracing:
  otlp_endpoint: http://${COLLECTOR}/v1/traces
  flush_interval: 50ms
)",
             {{"UP", up.address()}, {"COLLECTOR", collector.address()}});
  REQUIRE(fetch(gw.port(), mcpPost(toolsCallBody("t", 1), "", "t")).status == 200);
  REQUIRE(fetch(gw.port(), mcpPost(toolsCallBody("t", 2), "X-Route: fed\r\n", "t")).status > 0);
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  REQUIRE(gw.process().waitForOutput("reloaded", Ms(10000)));
  REQUIRE(collector.waitForRequests(1, Ms(5000)));
  const std::set<std::string> have = exported(adminGet(gw.adminPort(), "/metrics").body);
  // Exported only with a TLS listener (the served certificate's expiry): documented in the
  // README's metrics table, which this checks instead.
  const std::set<std::string> tls_only = {"mcp_gateway_tls_certificate_expiry_timestamp_seconds"};
  const std::string readme = readFile(std::string(GW_SOURCE_DIR) + "/README.md");
  std::set<std::string> named = metricNames(dashboard);
  const std::set<std::string> in_alerts = metricNames(alerts);
  named.insert(in_alerts.begin(), in_alerts.end());
  CHECK(named.size() >= 15);
  for (const std::string& name : named) {
    INFO(name);
    if (tls_only.count(name) != 0) {
      CHECK(readme.find("`" + name + "`") != std::string::npos);
      continue;
    }
    CHECK(have.count(name) == 1);
  }
}
