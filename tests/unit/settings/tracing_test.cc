// settings/: tracing (issue #31) — every key read with its default and range, each mistake a
// load error at its place, the plain-http-with-headers warning.

#include <stdlib.h>

#include <catch.hpp>
#include <filesystem>
#include <fstream>
#include <string>

#include "gateway/settings/settings.h"
#include "tests/unit/settings/load_util.h"

namespace gw::settings {
namespace {

using test::dump;
using test::hasError;

// `lines` under `tracing:` (line 4 on).
LoadResult load(const std::string& lines) {
  return loadString("upstreams:\n  - name: a\n    endpoints: [127.0.0.1:9000]\ntracing:\n" + lines,
                    "/tmp/gw-tracing-test.yaml");
}

}  // namespace

TEST_CASE("tracing: absent is off, the defaults, every key read", "[settings][tracing]") {
  LoadResult none =
      loadString("upstreams:\n  - name: a\n    endpoints: [127.0.0.1:9000]\n", "/tmp/x.yaml");
  REQUIRE(none.errors.empty());
  CHECK_FALSE(none.settings->tracing.has_value());

  LoadResult d = load("  otlp_endpoint: http://127.0.0.1:4318/v1/traces\n");
  INFO(dump(d));
  REQUIRE(d.errors.empty());
  REQUIRE(d.settings->tracing);
  const Tracing& t = *d.settings->tracing;
  CHECK(t.otlp_endpoint == "http://127.0.0.1:4318/v1/traces");
  CHECK(t.sample_ratio == 1.0);
  CHECK(t.service_name == "mcp-gateway");
  CHECK(t.max_queue == 4096);
  CHECK(t.batch == 512);
  CHECK(t.flush_interval == std::chrono::seconds(1));
  CHECK(t.headers.empty());
  CHECK(t.ca.empty());

  ::setenv("GW_TRACING_TEST_TOKEN", "s3cret", 1);
  std::filesystem::create_directories("/tmp/certs");
  { std::ofstream("/tmp/certs/collector-ca.pem") << "-----BEGIN CERTIFICATE-----\n"; }
  LoadResult all = load(
      "  otlp_endpoint: https://collector.example.com:4318/v1/traces\n"
      "  protocol: http/json\n"
      "  sample_ratio: 0.05\n"
      "  service_name: edge\n"
      "  headers: { Authorization: \"Bearer ${GW_TRACING_TEST_TOKEN}\" }\n"
      "  ca: certs/collector-ca.pem\n"
      "  max_queue: 100\n"
      "  batch: 10\n"
      "  flush_interval: 250ms\n");
  ::unsetenv("GW_TRACING_TEST_TOKEN");
  INFO(dump(all));
  REQUIRE(all.errors.empty());
  const Tracing& a = *all.settings->tracing;
  CHECK(a.sample_ratio == 0.05);
  CHECK(a.service_name == "edge");
  REQUIRE(a.headers.size() == 1);
  CHECK(a.headers[0].first == "Authorization");
  CHECK(a.headers[0].second == "Bearer s3cret");
  CHECK(a.ca == "/tmp/certs/collector-ca.pem");
  CHECK(a.max_queue == 100);
  CHECK(a.batch == 10);
  CHECK(a.flush_interval == std::chrono::milliseconds(250));
  for (const char* r : {"0", "1", "0.5", "1.0", "0.000001"}) {
    LoadResult ok =
        load("  otlp_endpoint: http://127.0.0.1:4318/v1/traces\n  sample_ratio: " + std::string(r) +
             "\n");
    CAPTURE(r);
    CHECK(ok.errors.empty());
  }
}

TEST_CASE("tracing: each mistake is a load error at its place", "[settings][tracing]") {
  struct Case {
    std::string lines;
    int line;
    std::string text;
  };
  const std::string ep = "  otlp_endpoint: http://127.0.0.1:4318/v1/traces\n";
  const Case cases[] = {
      {"  sample_ratio: 0.5\n", 4, "needs 'otlp_endpoint'"},
      {"  otlp_endpoint: ftp://x/v1/traces\n", 5, "is not an http:// or https:// URL"},
      {"  otlp_endpoint: \"\"\n", 5, ""},
      {ep + "  protocol: grpc\n", 6, "grpc"},
      {ep + "  protocol: http/protobuf\n", 6, "http/protobuf is not built"},
      {ep + "  sample_ratio: 1.5\n", 6, "must be a number from 0 to 1"},
      {ep + "  sample_ratio: -0.1\n", 6, "must be a number from 0 to 1"},
      {ep + "  sample_ratio: 5%\n", 6, "must be a number from 0 to 1"},
      {ep + "  sample_ratio: nan\n", 6, "must be a number from 0 to 1"},
      {ep + "  sample_ratio: half\n", 6, "must be a number from 0 to 1"},
      {ep + "  max_queue: 0\n", 6, "must be 1 to 1000000"},
      {ep + "  max_queue: 2000000\n", 6, ""},
      {ep + "  batch: 0\n", 6, "must be 1 to 1000000"},
      {ep + "  max_queue: 10\n  batch: 20\n", 7, "must not exceed max_queue"},
      {ep + "  flush_interval: 1ms\n", 6, "must be 10ms to 1m"},
      {ep + "  flush_interval: 2h\n", 6, "must be 10ms to 1m"},
      {ep + "  ca: /tmp/certs/collector-ca.pem\n", 6, "applies only to an https otlp_endpoint"},
      {"  otlp_endpoint: https://c:4318/v1/traces\n  ca: /nonexistent/ca.pem\n", 6, "cannot read"},
      {ep + "  headers: { \"Bad Name\": x }\n", 6, ""},
      {ep + "  sampel_ratio: 0.5\n", 6, "sample_ratio"},
      {ep + "  service_name: \"\"\n", 6, ""},
  };
  for (const Case& c : cases) {
    LoadResult r = load(c.lines);
    INFO(c.lines << dump(r));
    REQUIRE_FALSE(r.errors.empty());
    CHECK(r.errors.front().line == c.line);
    if (!c.text.empty()) {
      CHECK(hasError(r, c.text));
    }
  }
  LoadResult empty = loadString("tracing:\n", "/tmp/x.yaml");
  CHECK(hasError(empty, "needs 'otlp_endpoint'"));
}

TEST_CASE("tracing: headers over plain http to another host are warned about",
          "[settings][tracing]") {
  LoadResult r = load(
      "  otlp_endpoint: http://otel-collector:4318/v1/traces\n"
      "  headers: { Authorization: \"Bearer x\" }\n");
  INFO(dump(r));
  REQUIRE(r.errors.empty());
  bool warned = false;
  for (const Diagnostic& d : r.settings->warnings) {
    warned = warned || d.message.find("use https to keep them private") != std::string::npos;
  }
  CHECK(warned);
  LoadResult local = load(
      "  otlp_endpoint: http://127.0.0.1:4318/v1/traces\n"
      "  headers: { Authorization: \"Bearer x\" }\n");
  REQUIRE(local.errors.empty());
  for (const Diagnostic& d : local.settings->warnings) {
    CHECK(d.message.find("use https") == std::string::npos);
  }
}

}  // namespace gw::settings
