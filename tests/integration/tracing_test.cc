// tracing (issue #31) through the real gateway: a collector (a raw upstream that records the
// OTLP/HTTP JSON exports) and an MCP upstream that records what the gateway sends it.
// Propagation (the client's traceparent is the parent; the upstream's parent is the
// gateway's CLIENT span; tracestate as received; a malformed or repeated traceparent starts
// a new trace), the spans (ids chained, names and attributes of the MCP conventions, a refused
// request's error status), sampling (parent-based; roots at the ratio), the access log's ids,
// tracing off (the fields untouched), and a collector that never answers (requests unharmed,
// spans beyond max_queue dropped and counted).

#include <catch.hpp>

#include <simdjson.h>

#include <csignal>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const std::string kTrace = "0af7651916cd43dd8448eb211c80319c";
const std::string kParent = "b7ad6b7169203331";

std::string traceparent(const std::string& flags) {
  return "00-" + kTrace + "-" + kParent + "-" + flags;
}

struct SpanSeen {
  std::string trace_id;
  std::string span_id;
  std::string parent_id;
  std::string name;
  int64_t kind = 0;
  int64_t status = 0;
  std::map<std::string, std::string> attrs;  // every value as text
  std::vector<std::string> events;           // their names
  std::string attr(const std::string& key) const {
    auto it = attrs.find(key);
    return it != attrs.end() ? it->second : std::string();
  }
};

// Every span of every export the collector recorded.
std::vector<SpanSeen> spansOf(const RawUpstream& collector) {
  std::vector<SpanSeen> out;
  simdjson::dom::parser parser;
  for (const RecordedRequest& r : collector.requests()) {
    simdjson::dom::element doc;
    if (parser.parse(r.body).get(doc) != simdjson::SUCCESS) {
      FAIL("an export is not JSON: " << r.body.substr(0, 200));
    }
    for (simdjson::dom::element rs : doc["resourceSpans"].get_array()) {
      for (simdjson::dom::element ss : rs["scopeSpans"].get_array()) {
        for (simdjson::dom::element sp : ss["spans"].get_array()) {
          SpanSeen s;
          s.trace_id = std::string(std::string_view(sp["traceId"]));
          s.span_id = std::string(std::string_view(sp["spanId"]));
          std::string_view parent;
          if (sp["parentSpanId"].get(parent) == simdjson::SUCCESS) {
            s.parent_id = std::string(parent);
          }
          s.name = std::string(std::string_view(sp["name"]));
          s.kind = int64_t(sp["kind"]);
          int64_t code = 0;
          if (sp["status"]["code"].get(code) == simdjson::SUCCESS) {
            s.status = code;
          }
          for (simdjson::dom::element a : sp["attributes"].get_array()) {
            simdjson::dom::object v = a["value"];
            std::string text;
            for (auto [k, val] : v) {
              if (k == "stringValue" || k == "intValue") {
                text = std::string(std::string_view(val));
              } else if (k == "boolValue") {
                text = bool(val) ? "true" : "false";
              }
            }
            s.attrs[std::string(std::string_view(a["key"]))] = text;
          }
          simdjson::dom::array events;
          if (sp["events"].get(events) == simdjson::SUCCESS) {
            for (simdjson::dom::element e : events) {
              s.events.emplace_back(std::string_view(e["name"]));
            }
          }
          out.push_back(std::move(s));
        }
      }
    }
  }
  return out;
}

std::string traceYaml(const std::string& extra_tracing, const std::string& flush = "50ms") {
  return R"(listen: "127.0.0.1:${PORT}"
admin: "127.0.0.1:0"
workers: 1
upstreams:
  - name: tools
    endpoints: ["${UP}"]
routes:
  - name: main
    upstream: tools
policies: [${POLICY}]
access_log: { path: "${ACCESS_LOG}" }
tracing:
  otlp_endpoint: http://${COLLECTOR}/v1/traces
  flush_interval: )" +
         flush + "\n" + extra_tracing;
}

const std::string kPolicy =
    "rules:\n  - name: no-secrets\n    match: { method: tools/call, name: \"secret_*\" }\n"
    "    action: deny\n";

std::string call(const std::string& tool, const std::string& extra) {
  return mcpPost(toolsCallBody(tool, 7), extra, tool);
}

std::string writePolicy(const TempDir& dir) {
  REQUIRE(writeFile(dir.file("policy.yaml"), kPolicy));
  return dir.file("policy.yaml");
}

// A traced gateway (traceYaml + `extra_tracing`) in front of an upstream that answers every
// call, exporting to `collector` (by default one that accepts every export).
struct Traced {
  explicit Traced(const std::string& extra_tracing, const std::string& flush = "50ms",
                  UpstreamScript collector_script = RawUpstream::respond(200, "{}"))
      : collector(std::move(collector_script)),
        gw(traceYaml(extra_tracing, flush), {{"UP", up.address()},
                                             {"COLLECTOR", collector.address()},
                                             {"POLICY", writePolicy(dir)}}) {}
  RawUpstream collector;
  RawUpstream up{RawUpstream::respond(200, R"({"jsonrpc":"2.0","id":7,"result":{"content":[]}})")};
  TempDir dir;
  Gateway gw;
};

}  // namespace

TEST_CASE("tracing: the client's parent, the gateway's spans, the upstream's parent", "[tracing]") {
  Traced t("  sample_ratio: 0\n");
  RawUpstream& collector = t.collector;
  RawUpstream& up = t.up;
  Gateway& gw = t.gw;

  // A sampled parent: the spans are exported, chained to it.
  Response r = fetch(gw.port(), call("get_weather", "traceparent: " + traceparent("01") +
                                                        "\r\ntracestate: vendor=abc,other=1\r\n"));
  REQUIRE(r.status == 200);
  REQUIRE(up.waitForRequests(1, Ms(3000)));
  const RecordedRequest sent = up.requests().back();
  REQUIRE(sent.headerValues("traceparent").size() == 1);
  const std::string upstream_parent = *sent.header("traceparent");
  REQUIRE(upstream_parent.size() == 55);
  CHECK(upstream_parent.substr(0, 36) == "00-" + kTrace + "-");
  CHECK(upstream_parent.substr(36, 16) != kParent);  // the gateway's CLIENT span
  CHECK(upstream_parent.substr(52) == "-01");
  CHECK(sent.headerValues("tracestate") == std::vector<std::string>{"vendor=abc,other=1"});

  REQUIRE(waitFor([&] { return spansOf(collector).size() >= 2; }, Ms(5000)));
  std::vector<SpanSeen> spans = spansOf(collector);
  REQUIRE(spans.size() == 2);
  const SpanSeen* server = nullptr;
  const SpanSeen* client = nullptr;
  for (const SpanSeen& s : spans) {
    (s.kind == 2 ? server : client) = &s;
  }
  REQUIRE(server != nullptr);
  REQUIRE(client != nullptr);
  CHECK(server->trace_id == kTrace);
  CHECK(server->parent_id == kParent);
  CHECK(server->name == "tools/call get_weather");
  CHECK(server->attr("mcp.method.name") == "tools/call");
  CHECK(server->attr("gen_ai.tool.name") == "get_weather");
  CHECK(server->attr("mcp.protocol.version") == "2026-07-28");
  CHECK(server->attr("http.response.status_code") == "200");
  CHECK(server->attr("mcp_gateway.route") == "main");
  CHECK(server->attr("client.address") == "127.0.0.1");
  CHECK(server->status != 2);
  CHECK(client->kind == 3);
  CHECK(client->trace_id == kTrace);
  CHECK(client->parent_id == server->span_id);
  CHECK(client->span_id == upstream_parent.substr(36, 16));
  CHECK(client->attr("mcp_gateway.upstream") == "tools");
  CHECK(client->attr("server.address") == "127.0.0.1");
  CHECK(client->attr("server.port") == std::to_string(up.port()));
  // The access log names the trace and the server span.
  const std::string line = waitLogLine(gw, "get_weather");
  CHECK(line.find("\"trace_id\":\"" + kTrace + "\"") != std::string::npos);
  CHECK(line.find("\"span_id\":\"" + server->span_id + "\"") != std::string::npos);

  // An unsampled parent: propagated (flags 00), nothing exported.
  REQUIRE(fetch(gw.port(), call("get_time", "traceparent: " + traceparent("00") + "\r\n")).status ==
          200);
  REQUIRE(up.waitForRequests(2, Ms(3000)));
  const std::string unsampled = *up.requests().back().header("traceparent");
  CHECK(unsampled.substr(0, 36) == "00-" + kTrace + "-");
  CHECK(unsampled.substr(52) == "-00");

  // No parent, sample_ratio 0: a new trace, not sampled. A malformed or repeated
  // traceparent: the same, and its tracestate is not forwarded.
  const std::vector<std::string> roots = {
      "",
      "traceparent: 00-" + kTrace + "-" + kParent + "-1\r\ntracestate: a=b\r\n",
      "traceparent: 00-" + std::string(32, '0') + "-" + kParent + "-01\r\n",
      "traceparent: " + traceparent("01") + "\r\ntraceparent: " + traceparent("01") + "\r\n",
      "traceparent: 00-0AF7651916CD43DD8448EB211C80319C-" + kParent + "-01\r\n",
  };
  std::set<std::string> trace_ids;
  for (size_t i = 0; i < roots.size(); ++i) {
    INFO("root case " << i);
    REQUIRE(fetch(gw.port(), call("get_time", roots[i])).status == 200);
    REQUIRE(up.waitForRequests(3 + i, Ms(3000)));
    const RecordedRequest req = up.requests().back();
    REQUIRE(req.headerValues("traceparent").size() == 1);
    const std::string tp = *req.header("traceparent");
    CHECK(tp.size() == 55);
    CHECK(tp.substr(3, 32) != kTrace);
    CHECK(tp.substr(52) == "-00");
    CHECK_FALSE(req.hasHeader("tracestate"));
    trace_ids.insert(tp.substr(3, 32));
  }
  CHECK(trace_ids.size() == roots.size());  // each a new trace

  // A refused call (policy deny) with a sampled parent: its SERVER span is an error.
  Response denied =
      fetch(gw.port(), call("secret_keys", "traceparent: " + traceparent("01") + "\r\n"));
  CHECK(denied.status == 403);
  REQUIRE(waitFor(
      [&] {
        for (const SpanSeen& s : spansOf(collector)) {
          if (s.name == "tools/call secret_keys") {
            return true;
          }
        }
        return false;
      },
      Ms(5000)));
  for (const SpanSeen& s : spansOf(collector)) {
    CHECK(s.trace_id == kTrace);  // nothing of the unsampled requests
    if (s.name == "tools/call secret_keys") {
      CHECK(s.kind == 2);
      CHECK(s.status == 2);
      CHECK(s.attr("http.response.status_code") == "403");
      CHECK(s.attr("mcp_gateway.policy.rule") == "no-secrets");
      CHECK(s.attr("mcp_gateway.policy.decision") == "deny");
      CHECK_FALSE(s.attr("error.type").empty());
      CHECK_FALSE(s.attr("rpc.response.status_code").empty());
    }
  }
  // /explain says whether a request would be sampled.
  auto explain = [&](const std::string& headers_json) {
    const std::string body =
        R"({"method":"tools/call","name":"get_weather","headers":{)" + headers_json + "}}";
    return fetch(gw.adminPort(),
                 "POST /explain HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n"
                 "Content-Type: application/json\r\nContent-Length: " +
                     std::to_string(body.size()) + "\r\n\r\n" + body)
        .body;
  };
  const std::string with_parent = explain(R"("traceparent":")" + traceparent("01") + "\"");
  INFO(with_parent);
  CHECK(with_parent.find(R"("trace":{"parent":")" + traceparent("01") + R"(","sampled":true)") !=
        std::string::npos);
  const std::string unsampled_parent = explain(R"("traceparent":")" + traceparent("00") + "\"");
  CHECK(unsampled_parent.find(
            R"("sampled":false,"reason":"the client's traceparent is not sampled")") !=
        std::string::npos);
  const std::string root = explain("");
  INFO(root);
  CHECK(
      root.find(
          R"("trace":{"parent":null,"sampled":false,"reason":"no traceparent: a new trace, sampled at sample_ratio 0")") !=
      std::string::npos);
  const std::string metrics = adminGet(gw.adminPort(), "/metrics").body;
  CHECK(sample(metrics, "mcp_gateway_trace_exports_total{result=\"ok\"}") >= 2);
  CHECK(sample(metrics, "mcp_gateway_trace_spans_exported_total") >= 3);
  CHECK(sample(metrics, "mcp_gateway_trace_spans_dropped_total") == 0);
}

TEST_CASE("tracing: sample_ratio 1 samples every root", "[tracing]") {
  Traced t("  sample_ratio: 1\n  service_name: edge-gw\n");
  RawUpstream& collector = t.collector;
  RawUpstream& up = t.up;
  Gateway& gw = t.gw;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(fetch(gw.port(), call("get_time", "")).status == 200);
  }
  REQUIRE(waitFor([&] { return spansOf(collector).size() >= 6; }, Ms(5000)));
  std::set<std::string> traces;
  for (const SpanSeen& s : spansOf(collector)) {
    traces.insert(s.trace_id);
    if (s.kind == 2) {
      CHECK(s.parent_id.empty());  // a root
    }
  }
  CHECK(traces.size() == 3);
  CHECK(collector.requests().front().body.find("\"edge-gw\"") != std::string::npos);
  for (const std::string& tp : {up.requests()[0].header("traceparent").value_or("")}) {
    CHECK(tp.substr(52) == "-01");
  }
}

TEST_CASE("tracing: off, traceparent and tracestate pass untouched", "[tracing]") {
  RawUpstream up(RawUpstream::respond(200, R"({"jsonrpc":"2.0","id":7,"result":{"content":[]}})"));
  GatewayConfig cfg;
  cfg.upstream_endpoints = {up.address()};
  Gateway gw(cfg);
  for (const std::string& tp : {traceparent("01"), std::string("not-a-traceparent")}) {
    REQUIRE(fetch(gw.port(), call("get_time", "traceparent: " + tp + "\r\ntracestate: k=v\r\n"))
                .status == 200);
    REQUIRE(up.waitForRequests(1, Ms(3000)));
    const RecordedRequest req = up.requests().back();
    CHECK(req.headerValues("traceparent") == std::vector<std::string>{tp});
    CHECK(req.headerValues("tracestate") == std::vector<std::string>{"k=v"});
  }
  CHECK(readFile(gw.accessLogPath()).find("trace_id") == std::string::npos);
}

TEST_CASE("tracing: a collector that never answers costs requests nothing", "[tracing][slow]") {
  // The collector holds every connection without answering: exports stay in flight, the
  // queue fills, spans beyond max_queue are dropped and counted.
  Traced t("  sample_ratio: 1\n  max_queue: 4\n  batch: 2\n", "50ms",
           [](UpstreamConn& c) { c.stall(); });
  RawUpstream& collector = t.collector;
  Gateway& gw = t.gw;
  const auto t0 = Clock::now();
  for (int i = 0; i < 30; ++i) {
    REQUIRE(fetch(gw.port(), call("get_time", "")).status == 200);
  }
  // 30 calls against a local upstream: well under a second each even on a loaded machine.
  CHECK(Clock::now() - t0 < Ms(15000));
  REQUIRE(collector.waitForAccepts(1, Ms(3000)));
  const std::string metrics = adminGet(gw.adminPort(), "/metrics").body;
  // 60 spans, 4 queued, 2 in flight: the rest dropped.
  CHECK(sample(metrics, "mcp_gateway_trace_spans_dropped_total") >= 40);
  CHECK(sample(metrics, "mcp_gateway_trace_exports_total{result=\"ok\"}") == 0);
}

TEST_CASE("tracing: params._meta.traceparent of a body the gateway reads, the HTTP field wins",
          "[tracing]") {
  Traced t("  sample_ratio: 0\nmcp:\n  verify_body: true\n  legacy: passthrough\n");
  RawUpstream& collector = t.collector;
  RawUpstream& up = t.up;
  Gateway& gw = t.gw;
  const std::string meta_trace = "4bf92f3577b34da6a3ce929d0e0e4736";
  const std::string meta_parent = "00f067aa0ba902b7";
  const std::string meta_tp = "00-" + meta_trace + "-" + meta_parent + "-01";
  auto body = [&](const std::string& meta) {
    return R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"get_time",)"
           R"("arguments":{},"_meta":{)" +
           meta + R"("io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  };
  size_t seen = 0;
  auto upstreamParent = [&](const std::string& request) {
    Response r = fetch(gw.port(), request);
    INFO(r.head << r.body);
    REQUIRE(r.status == 200);
    REQUIRE(up.waitForRequests(++seen, Ms(3000)));
    return up.requests().back();
  };
  // verify mode reads the body: its _meta parent is the request's.
  const std::string with_meta = body(R"("traceparent":")" + meta_tp + R"(","tracestate":"m=1",)");
  RecordedRequest a = upstreamParent(mcpPost(with_meta, "", "get_time"));
  CHECK(a.header("traceparent").value_or("").substr(0, 36) == "00-" + meta_trace + "-");
  CHECK(a.header("traceparent").value_or("").substr(52) == "-01");
  CHECK(a.header("tracestate").value_or("") == "m=1");
  // The HTTP field wins over _meta.
  RecordedRequest b =
      upstreamParent(mcpPost(with_meta, "traceparent: " + traceparent("00") + "\r\n", "get_time"));
  CHECK(b.header("traceparent").value_or("").substr(0, 36) == "00-" + kTrace + "-");
  CHECK(b.header("traceparent").value_or("").substr(52) == "-00");
  // A malformed _meta value: a new root.
  RecordedRequest c = upstreamParent(mcpPost(body(R"("traceparent":"00-xyz",)"), "", "get_time"));
  CHECK(c.header("traceparent").value_or("").substr(3, 32) != meta_trace);
  // A 2025-era client (no MCP headers; the body is inspected): its _meta parent too.
  const std::string legacy_body =
      R"({"jsonrpc":"2.0","id":8,"method":"tools/call","params":{"name":"get_time",)"
      R"("arguments":{},"_meta":{"traceparent":")" +
      meta_tp + R"("}}})";
  RecordedRequest d = upstreamParent(
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n"
      "Content-Length: " +
      std::to_string(legacy_body.size()) + "\r\n\r\n" + legacy_body);
  CHECK(d.header("traceparent").value_or("").substr(0, 36) == "00-" + meta_trace + "-");
  // The sampled ones were exported, under the _meta trace id.
  REQUIRE(waitFor(
      [&] {
        size_t n = 0;
        for (const SpanSeen& s : spansOf(collector)) {
          n += s.trace_id == meta_trace && s.kind == 2 ? 1 : 0;
        }
        return n >= 2;
      },
      Ms(5000)));
  for (const SpanSeen& s : spansOf(collector)) {
    if (s.trace_id == meta_trace && s.kind == 2) {
      CHECK(s.parent_id == meta_parent);
    }
  }
}

TEST_CASE("tracing: each member of a federated fan-out is a CLIENT span of its own", "[tracing]") {
  RawUpstream collector(RawUpstream::respond(200, "{}"));
  auto listOf = [](const std::string& tool) {
    return RawUpstream::respond(200, R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":")" +
                                         tool + R"(","inputSchema":{"type":"object"}}]}})");
  };
  RawUpstream a(listOf("alpha"));
  RawUpstream b(listOf("beta"));
  Gateway gw(R"(listen: "127.0.0.1:${PORT}"
workers: 1
upstreams:
  - name: a
    endpoints: ["${A}"]
  - name: b
    endpoints: ["${B}"]
routes:
  - name: fed
    upstreams: [a, b]
tracing:
  otlp_endpoint: http://${COLLECTOR}/v1/traces
  flush_interval: 50ms
  sample_ratio: 0
)",
             {{"A", a.address()}, {"B", b.address()}, {"COLLECTOR", collector.address()}});
  const std::string body = R"({"jsonrpc":"2.0","id":3,"method":"tools/list","params":{"_meta":{)"
                           R"("io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  const std::string req =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
      "Mcp-Method: tools/list\r\ntraceparent: " +
      traceparent("01") + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  // A call before any list: the gateway finds its owner with a refresh first, a wait that
  // is an event of the call's SERVER span.
  Response call_r = fetch(
      gw.port(),
      mcpPost(R"({"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"beta",)"
              R"("arguments":{},"_meta":{"io.modelcontextprotocol/protocolVersion":)"
              R"("2026-07-28"}}})",
              "traceparent: 00-" + std::string(31, '1') + "2-" + kParent + "-01\r\n", "beta"));
  INFO(call_r.head << call_r.body);
  REQUIRE(waitFor(
      [&] {
        for (const SpanSeen& s : spansOf(collector)) {
          if (s.kind == 2 && s.name == "tools/call beta") {
            return true;
          }
        }
        return false;
      },
      Ms(5000)));
  for (const SpanSeen& s : spansOf(collector)) {
    if (s.kind == 2 && s.name == "tools/call beta") {
      CHECK(s.events == std::vector<std::string>{"wait: federation refresh"});
    }
  }
  const size_t before = spansOf(collector).size();
  Response r = fetch(gw.port(), req);
  INFO(r.head << r.body);
  REQUIRE(r.status == 200);
  CHECK(r.body.find("alpha") != std::string::npos);
  CHECK(r.body.find("beta") != std::string::npos);
  REQUIRE(waitFor([&] { return spansOf(collector).size() >= before + 3; }, Ms(5000)));
  std::string server_id;
  std::map<std::string, std::string> client_ids;  // upstream → span id
  for (const SpanSeen& s : spansOf(collector)) {
    if (s.trace_id != kTrace) {
      continue;  // the call's trace
    }
    if (s.kind == 2) {
      server_id = s.span_id;
      CHECK(s.name == "tools/list");
      CHECK(s.parent_id == kParent);
    }
  }
  for (const SpanSeen& s : spansOf(collector)) {
    if (s.kind == 3 && s.trace_id == kTrace) {
      CHECK(s.parent_id == server_id);
      client_ids[s.attr("mcp_gateway.upstream")] = s.span_id;
    }
  }
  REQUIRE(client_ids.size() == 2);
  for (const auto& [up, name] : {std::pair<RawUpstream*, std::string>{&a, "a"}, {&b, "b"}}) {
    REQUIRE(up->requestCount() >= 1);
    const std::string tp = up->requests().back().header("traceparent").value_or("");
    CHECK(tp.substr(0, 36) == "00-" + kTrace + "-");
    CHECK(tp.substr(36, 16) == client_ids[name]);
  }
}

TEST_CASE(
    "tracing: one trace from the client through the gateway to an OpenTelemetry-instrumented "
    "server",
    "[tracing]") {
  const std::string fixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";
  if (!std::filesystem::exists(fixtures + "/node_modules/@opentelemetry/sdk-trace-node")) {
    FAIL("tests/fixtures/node_modules lacks @opentelemetry/sdk-trace-node: run scripts/setup.sh");
  }
  TempDir dir;
  Process server({"node", fixtures + "/otel-server.mjs", "0"}, dir.path(), "otel-server");
  uint16_t port = 0;
  REQUIRE(waitFor(
      [&] {
        const std::string out = server.stdoutText();
        const size_t at = out.find("LISTENING ");
        if (at != std::string::npos && out.find('\n', at) != std::string::npos) {
          port = static_cast<uint16_t>(std::stoi(out.substr(at + 10)));
        }
        return port != 0 || !server.running();
      },
      Ms(15000)));
  REQUIRE(port != 0);
  RawUpstream collector(RawUpstream::respond(200, "{}"));
  Gateway gw(traceYaml("  sample_ratio: 0\n"), {{"UP", "127.0.0.1:" + std::to_string(port)},
                                                {"COLLECTOR", collector.address()},
                                                {"POLICY", writePolicy(dir)}});
  Response r = fetch(gw.port(), call("lookup", "traceparent: " + traceparent("01") + "\r\n"));
  INFO(r.head << r.body);
  REQUIRE(r.status == 200);
  CHECK(r.body.find("traced") != std::string::npos);
  // The server's span, as its SDK ended it.
  std::string line;
  REQUIRE(waitFor(
      [&] {
        const std::string out = server.stdoutText();
        const size_t at = out.find("SPAN ");
        if (at == std::string::npos || out.find('\n', at) == std::string::npos) {
          return false;
        }
        line = out.substr(at + 5, out.find('\n', at) - at - 5);
        return true;
      },
      Ms(5000)));
  INFO(line);
  REQUIRE(waitFor([&] { return spansOf(collector).size() >= 2; }, Ms(5000)));
  std::string server_span;
  std::string client_span;
  for (const SpanSeen& s : spansOf(collector)) {
    CHECK(s.trace_id == kTrace);
    (s.kind == 2 ? server_span : client_span) = s.span_id;
    if (s.kind == 2) {
      CHECK(s.parent_id == kParent);  // the client's span
    }
  }
  // client (kParent) -> gateway SERVER -> gateway CLIENT -> the MCP server's SERVER span.
  CHECK(line.find("\"traceId\":\"" + kTrace + "\"") != std::string::npos);
  CHECK(line.find("\"parentSpanId\":\"" + client_span + "\"") != std::string::npos);
  CHECK(line.find("\"name\":\"tools/call lookup\"") != std::string::npos);
  CHECK_FALSE(client_span.empty());
  CHECK_FALSE(server_span.empty());
}

TEST_CASE("tracing: a drain sends the spans still queued before the gateway exits", "[tracing]") {
  // Nothing leaves on its own: a batch of 512 is never reached, the interval is a minute.
  Traced t("  sample_ratio: 1\n", "1m");
  RawUpstream& collector = t.collector;
  Gateway& gw = t.gw;
  for (int i = 0; i < 3; ++i) {
    REQUIRE(fetch(gw.port(), call("get_time", "")).status == 200);
  }
  CHECK(collector.requestCount() == 0);
  REQUIRE(::kill(gw.pid(), SIGTERM) == 0);
  REQUIRE(gw.process().wait(Ms(10000)).has_value());
  REQUIRE(collector.requestCount() >= 1);
  CHECK(spansOf(collector).size() == 6);  // three SERVER and three CLIENT spans
}
