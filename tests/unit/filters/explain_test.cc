// filters/explain: the query-string reader (keys and values percent-decoded, malformed
// escapes refused) and which inputs are errors (no request can be built) as opposed to
// answers (the gateway would reject the request).

#include "gateway/filters/explain.h"

#include <catch.hpp>
#include <string>
#include <vector>

#include "tests/unit/policy/test_util.h"

using gw::filters::ExplainInput;
using gw::filters::parseExplainQuery;

namespace {

std::shared_ptr<const gw::filters::Snapshot> loadSnapshot(const gw::policy::test::TempDir& dir) {
  std::string path =
      dir.write("gateway.yaml",
                "listen: 127.0.0.1:8080\n"
                "limits: { max_request_line: 1KiB, max_header_bytes: 2KiB, max_headers: 20 }\n"
                // An unknown version is refused (the test below): no longer the default.
                "mcp: { legacy: reject }\n"
                "upstreams:\n"
                "  - name: backend\n"
                "    endpoints: [127.0.0.1:9000]\n"
                "routes:\n"
                "  - name: default\n"
                "    upstream: backend\n");
  std::vector<gw::settings::Diagnostic> errors;
  auto snap = gw::filters::Snapshot::load(path, nullptr, errors);
  for (const auto& e : errors) {
    UNSCOPED_INFO(e.str());
  }
  REQUIRE(snap);
  return snap;
}

}  // namespace

TEST_CASE("explain: query keys and values are percent-decoded", "[explain]") {
  ExplainInput in;
  std::string error;
  REQUIRE(
      parseExplainQuery("method=tools%2Fcall&na%6De=get+weather&param.Re%67ion=eu%2Dwest"
                        "&header.X%2DTrace=a%20b&%76ersion=2026-07-28&&",
                        in, error));
  CHECK(in.method == "tools/call");
  REQUIRE(in.name);
  CHECK(*in.name == "get weather");
  REQUIRE(in.params.size() == 1);
  CHECK(in.params[0].first == "Region");
  CHECK(in.params[0].second == "eu-west");
  REQUIRE(in.headers.size() == 1);
  CHECK(in.headers[0].first == "X-Trace");
  CHECK(in.headers[0].second == "a b");
  REQUIRE(in.protocol_version);
  CHECK(*in.protocol_version == "2026-07-28");

  ExplainInput empty;
  CHECK(parseExplainQuery("", empty, error));
  CHECK(parseExplainQuery("name=", empty, error));
  REQUIRE(empty.name);
  CHECK(empty.name->empty());
  CHECK(parseExplainQuery("token=a%2Bb%3D", empty, error));
  REQUIRE(empty.headers.size() == 1);
  CHECK(empty.headers[0].second == "Bearer a+b=");
}

TEST_CASE("explain: malformed query strings are input errors", "[explain]") {
  struct Case {
    const char* query;
    const char* error;
  };
  const Case cases[] = {
      {"method=tools%2", "malformed %-escape"},
      {"method=tools%zzcall", "malformed %-escape"},
      {"me%thod=tools/call", "malformed %-escape"},
      {"method=a%", "malformed %-escape"},
      {"method", "has no '=value'"},
      {"method=tools/call&colour=blue", "unknown explain input 'colour'"},
      {"co%6Cour=blue", "unknown explain input 'colour'"},
  };
  for (const Case& c : cases) {
    INFO(c.query);
    ExplainInput in;
    std::string error;
    CHECK_FALSE(parseExplainQuery(c.query, in, error));
    CHECK(error.find(c.error) != std::string::npos);
  }
}

TEST_CASE("explain: inputs that cannot make a request are errors, rejections are answers",
          "[explain]") {
  gw::policy::test::TempDir dir;
  auto snap = loadSnapshot(dir);

  SECTION("errors") {
    struct Case {
      const char* what;
      ExplainInput in;
      const char* error;
    };
    std::vector<Case> cases;
    ExplainInput in;
    in.method = "tools/call";
    in.name = "echo";
    {
      ExplainInput bad = in;
      bad.params.emplace_back("Bad Name", "x");
      cases.push_back({"param name with a space", bad, "is not a header token"});
    }
    {
      ExplainInput bad = in;
      bad.headers.emplace_back("X:Y", "x");
      cases.push_back({"header name with a colon", bad, "invalid name or value"});
    }
    {
      ExplainInput bad = in;
      bad.headers.emplace_back("X-Trace", "a\r\nInjected: 1");
      cases.push_back({"header value with CR LF", bad, "invalid name or value"});
    }
    {
      ExplainInput bad = in;
      bad.protocol_version = "2026-07-28\r\nInjected: 1";
      cases.push_back({"version with CR LF", bad, "control characters"});
    }
    {
      ExplainInput bad = in;
      bad.headers.emplace_back("X-Big", std::string(4096, 'a'));
      cases.push_back({"head over max_header_bytes", bad, "refused before the pipeline"});
    }
    {
      ExplainInput bad = in;
      for (int i = 0; i < 30; ++i) {
        bad.headers.emplace_back("X-H" + std::to_string(i), "1");
      }
      cases.push_back({"more fields than max_headers", bad, "refused before the pipeline"});
    }
    for (const Case& c : cases) {
      INFO(c.what);
      auto r = gw::filters::explain(*snap, c.in, nullptr);
      REQUIRE_FALSE(r);
      CHECK(r.error().message.find(c.error) != std::string::npos);
    }
  }

  SECTION("answers, also when the answer is a rejection") {
    ExplainInput ok;
    ok.method = "tools/call";
    ok.name = "echo";
    auto r = gw::filters::explain(*snap, ok, nullptr);
    REQUIRE(r);
    CHECK(r->find("\"decision\":\"forward\"") != std::string::npos);
    CHECK(r->find("\"error\":null") != std::string::npos);

    ExplainInput origin = ok;
    origin.headers.emplace_back("Origin", "http://evil.example");
    r = gw::filters::explain(*snap, origin, nullptr);
    REQUIRE(r);
    CHECK(r->find("\"decision\":\"reject\"") != std::string::npos);
    CHECK(r->find("\"status\":403") != std::string::npos);

    ExplainInput unknown = ok;
    unknown.protocol_version = "1999-01-01";
    r = gw::filters::explain(*snap, unknown, nullptr);
    REQUIRE(r);
    CHECK(r->find("\"decision\":\"reject\"") != std::string::npos);
  }
}

TEST_CASE("explain: legacy traffic on a federated route gets the federated view", "[explain]") {
  gw::policy::test::TempDir dir;
  std::string path = dir.write("gateway.yaml",
                               "listen: 127.0.0.1:8080\n"
                               "upstreams:\n"
                               "  - name: a\n    endpoints: [127.0.0.1:9000]\n"
                               "  - name: b\n    endpoints: [127.0.0.1:9001]\n"
                               "routes:\n"
                               "  - name: default\n"
                               "    upstreams: [a, b]\n");
  std::vector<gw::settings::Diagnostic> errors;
  auto snap = gw::filters::Snapshot::load(path, nullptr, errors);
  REQUIRE(snap);
  ExplainInput in;
  in.method = "tools/list";
  auto modern = gw::filters::explain(*snap, in, nullptr);
  REQUIRE(modern);
  CHECK(modern->find(R"x("sends_to":"every upstream (merged)")x") != std::string::npos);
  in.protocol_version = "2025-06-18";  // untrusted: legacy passthrough, the body is the view
  auto legacy = gw::filters::explain(*snap, in, nullptr);
  REQUIRE(legacy);
  CHECK(legacy->find(R"x("sends_to":"every upstream (merged)")x") != std::string::npos);
  for (const char* own : {"initialize", "ping", "notifications/initialized"}) {
    in.method = own;
    auto answered = gw::filters::explain(*snap, in, nullptr);
    REQUIRE(answered);
    INFO(own << ": " << *answered);
    CHECK(answered->find(R"x("sends_to":"gateway (answers the 2025-era client itself)")x") !=
          std::string::npos);
  }
}
