// trace/: W3C traceparent parsing as a receiver must (every way a value can be wrong), the
// value written back, ids, parent-based sampling and the OTLP JSON encoding (parsed back).

#include <catch.hpp>

#include <simdjson.h>

#include <set>
#include <string>

#include "gateway/trace/trace.h"

using namespace gw::trace;

namespace {

const std::string kGood = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

}  // namespace

TEST_CASE("traceparent: a valid value is read, trace id, parent id and flags",
          "[trace][traceparent]") {
  TraceParent p;
  REQUIRE(parseTraceparent(kGood, p));
  CHECK(hex(p.trace_id) == "0af7651916cd43dd8448eb211c80319c");
  CHECK(hex(p.parent_id) == "b7ad6b7169203331");
  CHECK(p.flags == 1);
  CHECK(p.sampled());
  REQUIRE(parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00", p));
  CHECK_FALSE(p.sampled());
  // Other flag bits are kept (only bit 0 is "sampled").
  REQUIRE(parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-03", p));
  CHECK(p.flags == 3);
  CHECK(p.sampled());
  REQUIRE(parseTraceparent("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-fe", p));
  CHECK_FALSE(p.sampled());
  // A later version: 55 characters, or more after a '-'.
  CHECK(parseTraceparent("01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", p));
  CHECK(parseTraceparent("cc-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-what-comes", p));
  CHECK(hex(p.parent_id) == "b7ad6b7169203331");
}

TEST_CASE("traceparent: every malformed value is ignored", "[trace][traceparent]") {
  const char* bad[] = {
      "",
      "00",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0",     // short
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-011",   // version 00, long
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01-x",  // version 00, more fields
      "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",    // version ff
      "0g-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",    // version not hex
      "00-0AF7651916CD43DD8448EB211C80319C-b7ad6b7169203331-01",    // uppercase trace id
      "00-0af7651916cd43dd8448eb211c80319c-B7AD6B7169203331-01",    // uppercase parent id
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0A",    // uppercase flags
      "00-00000000000000000000000000000000-b7ad6b7169203331-01",    // zero trace id
      "00-0af7651916cd43dd8448eb211c80319c-0000000000000000-01",    // zero parent id
      "00_0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",    // separators
      "00-0af7651916cd43dd8448eb211c80319c_b7ad6b7169203331-01",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331_01",
      "00-0af7651916cd43dd8448eb211c8031-9c-b7ad6b716920333101",  // fields misplaced
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-0z",
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b716920333 -01",
      " 00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
      "01-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01x",  // later version, no '-'
      // Two fields combined (a repeated traceparent): never one of them.
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01, "
      "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  };
  for (const char* v : bad) {
    TraceParent p;
    p.flags = 7;
    CAPTURE(v);
    CHECK_FALSE(parseTraceparent(v, p));
    CHECK(p.flags == 7);  // untouched
  }
}

TEST_CASE("traceparent: written as version 00 and read back", "[trace][traceparent]") {
  for (int i = 0; i < 50; ++i) {
    const TraceId t = newTraceId();
    const SpanId s = newSpanId();
    char out[kTraceparentSize];
    formatTraceparent(t, s, static_cast<uint8_t>(i % 2), out);
    TraceParent p;
    REQUIRE(parseTraceparent(std::string_view(out, sizeof out), p));
    CHECK(p.trace_id == t);
    CHECK(p.parent_id == s);
    CHECK(p.flags == i % 2);
  }
}

TEST_CASE("trace ids: random, never zero, not repeated", "[trace]") {
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) {
    const TraceId t = newTraceId();
    CHECK(t != TraceId{});
    seen.insert(hex(t));
    CHECK(newSpanId() != SpanId{});
  }
  CHECK(seen.size() == 1000);
}

TEST_CASE("sampling: a parent decides, roots at the ratio", "[trace]") {
  TraceParent sampled;
  sampled.flags = 1;
  TraceParent unsampled;
  for (const double ratio : {0.0, 0.05, 1.0}) {
    CHECK(sample(&sampled, ratio));
    CHECK_FALSE(sample(&unsampled, ratio));
  }
  int kept = 0;
  for (int i = 0; i < 20000; ++i) {
    kept += sample(nullptr, 0.25) ? 1 : 0;
  }
  CHECK(kept > 4000);
  CHECK(kept < 6000);
  for (int i = 0; i < 1000; ++i) {
    CHECK_FALSE(sample(nullptr, 0.0));
    CHECK(sample(nullptr, 1.0));
  }
}

TEST_CASE("OTLP JSON: a batch encodes as the JSON mapping says", "[trace][otlp]") {
  Span server;
  TraceParent p;
  REQUIRE(parseTraceparent(kGood, p));
  server.trace_id = p.trace_id;
  server.parent_id = p.parent_id;
  server.span_id = newSpanId();
  server.trace_state = "vendor=a\"b";
  server.name = "tools/call get_weather";
  server.kind = Kind::kServer;
  server.start_ns = 1700000000000000000ULL;
  server.end_ns = 1700000000123456789ULL;
  server.add("mcp.method.name", "tools/call");
  server.add("http.response.status_code", int64_t{403});
  server.addBool("gw.sampled", true);
  server.add("bad.utf8", std::string_view("\xff\x01", 2));
  server.status = Status::kError;
  server.status_message = "denied by rule \"x\"";
  Event ev;
  ev.name = "rate_limit";
  ev.time_ns = 1700000000000000001ULL;
  server.events.push_back(ev);
  Span client;
  client.trace_id = p.trace_id;
  client.parent_id = server.span_id;
  client.span_id = newSpanId();
  client.name = "tools/call";
  client.kind = Kind::kClient;
  const std::string json = encodeOtlpJson({server, client}, "mcp-gateway", "0.1.0");
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  REQUIRE(parser.parse(json).get(doc) == simdjson::SUCCESS);
  simdjson::dom::element rs = doc["resourceSpans"].at(0);
  CHECK(std::string_view(rs["resource"]["attributes"].at(0)["key"]) == "service.name");
  CHECK(std::string_view(rs["resource"]["attributes"].at(0)["value"]["stringValue"]) ==
        "mcp-gateway");
  simdjson::dom::array spans = rs["scopeSpans"].at(0)["spans"];
  REQUIRE(spans.size() == 2);
  simdjson::dom::element s0 = spans.at(0);
  CHECK(std::string_view(s0["traceId"]) == "0af7651916cd43dd8448eb211c80319c");
  CHECK(std::string_view(s0["parentSpanId"]) == "b7ad6b7169203331");
  CHECK(std::string_view(s0["spanId"]) == hex(server.span_id));
  CHECK(std::string_view(s0["traceState"]) == "vendor=a\"b");
  CHECK(int64_t(s0["kind"]) == 2);
  CHECK(std::string_view(s0["startTimeUnixNano"]) == "1700000000000000000");
  CHECK(std::string_view(s0["endTimeUnixNano"]) == "1700000000123456789");
  CHECK(std::string_view(s0["attributes"].at(1)["value"]["intValue"]) == "403");
  CHECK(bool(s0["attributes"].at(2)["value"]["boolValue"]));
  CHECK(int64_t(s0["status"]["code"]) == 2);
  CHECK(std::string_view(s0["status"]["message"]) == "denied by rule \"x\"");
  CHECK(std::string_view(s0["events"].at(0)["name"]) == "rate_limit");
  simdjson::dom::element s1 = spans.at(1);
  CHECK(std::string_view(s1["parentSpanId"]) == hex(server.span_id));
  CHECK(int64_t(s1["kind"]) == 3);
  CHECK(s1["status"].get_object().size() == 0);  // unset
  // A root span has no parentSpanId.
  Span root;
  root.span_id = newSpanId();
  root.trace_id = newTraceId();
  const std::string one = encodeOtlpJson({root}, "svc", "1");
  CHECK(one.find("parentSpanId") == std::string::npos);
}
