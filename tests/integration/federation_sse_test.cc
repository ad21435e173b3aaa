// Federation (issue #15): an upstream's list answer in SSE whose response event arrives in the
// same read as the end of the answer — framed by Content-Length, or chunked with the last chunk
// right behind the event — is merged like any other; the fan-out stops at the response event
// without tearing the upstream request down inside its own read.

#include <catch.hpp>
#include <string>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

bool has(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

std::string listEvent(const std::string& tool) {
  return R"(event: message
data: {"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":")" +
         tool + R"(","inputSchema":{"type":"object"}}]}}

)";
}

// A 2026-07-28 tools/list POST with id `id` (JSON text) and this Accept, on a closing connection.
std::string listRequest(const std::string& id, std::string_view accept) {
  const std::string body = R"({"jsonrpc":"2.0","id":)" + id +
                           R"(,"method":"tools/list","params":{"_meta":)"
                           R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: " +
         std::string(accept) +
         "\r\nMCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/list\r\n"
         "Connection: close\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

constexpr char kYaml[] = R"(listen: "127.0.0.1:${PORT}"
workers: 1
upstreams:
  - name: a
    endpoints: ["${A}"]
  - name: b
    endpoints: ["${B}"]
routes:
  - name: default
    upstreams: [a, b]
access_log: { path: "${ACCESS_LOG}" }
)";

}  // namespace

TEST_CASE("federation: an SSE list answer that ends in the read of its response event is merged",
          "[federation]") {
  const bool chunked = GENERATE(false, true);
  INFO((chunked ? "chunked, last chunk in the same send" : "Content-Length"));
  const std::string event = listEvent("a_tool");
  const std::string answer =
      chunked ? sseHead() + chunk(event) + chunk("")
              : "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: " +
                    std::to_string(event.size()) + "\r\n\r\n" + event;
  UpstreamScript a_script = [answer](UpstreamConn& c) {
    while (c.readRequest(Ms(10000))) {
      if (!c.send(answer)) {
        return;
      }
    }
  };
  RawUpstream a(a_script);
  RawUpstream b(RawUpstream::respond(
      200, R"({"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"b_tool","inputSchema":{}}]}})"));
  Gateway gw(kYaml, {{"A", a.address()}, {"B", b.address()}});

  const std::string req = listRequest("3", "application/json, text/event-stream");
  for (int i = 0; i < 3; ++i) {
    Response r = fetch(gw.port(), req, Ms(5000));
    INFO("tools/list #" << i << ": " << r.head << r.body << "\ngateway stderr:\n"
                        << gw.process().stderrText());
    CHECK(r.status == 200);
    CHECK(has(r.body, "\"a_tool\""));
    CHECK(has(r.body, "\"b_tool\""));
  }
  CHECK(gw.process().running());
}

TEST_CASE(
    "federation: a client that accepts only SSE gets the merged list as one event, pretty-printed "
    "upstream lists and cached answers too",
    "[federation]") {
  // a pretty-prints its answer (line breaks between tokens, CRLF too); both are public for a
  // minute, so the second and third lists come from the gateway's cache.
  const std::string pretty =
      "{\n  \"jsonrpc\": \"2.0\",\n  \"id\": 3,\n  \"result\": {\r\n    \"tools\": [\n      {\n"
      "        \"name\": \"a_tool\",\n        \"description\": \"line one\\nline two\",\n"
      "        \"inputSchema\": {\"type\": \"object\"}\n      }\n    ],\n"
      "    \"ttlMs\": 60000,\n    \"cacheScope\": \"public\"\n  }\n}\n";
  const bool pretty_a = GENERATE(false, true);
  INFO((pretty_a ? "a pretty-prints" : "both compact"));
  const std::string compact_a =
      R"({"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"a_tool","inputSchema":{}}],)"
      R"("ttlMs":60000,"cacheScope":"public"}})";
  RawUpstream a(RawUpstream::respond(200, pretty_a ? pretty : compact_a));
  RawUpstream b(RawUpstream::respond(
      200, R"({"jsonrpc":"2.0","id":3,"result":{"tools":[{"name":"b_tool","inputSchema":{}}],)"
           R"("ttlMs":60000,"cacheScope":"public"}})"));
  Gateway gw(kYaml, {{"A", a.address()}, {"B", b.address()}});

  for (int i = 0; i < 3; ++i) {
    const std::string id = std::to_string(40 + i);
    Response r = fetch(gw.port(), listRequest(id, "text/event-stream"), Ms(5000));
    INFO("tools/list #" << i << ": " << r.head << r.body << "\ngateway stderr:\n"
                        << gw.process().stderrText());
    REQUIRE(r.status == 200);
    CHECK(r.header("content-type").value_or("").starts_with("text/event-stream"));
    // One event: its type line, one data line holding the whole JSON answer, a blank line.
    REQUIRE(r.body.starts_with("event: message\ndata: {"));
    REQUIRE(r.body.ends_with("}\n\n"));
    const std::string data = r.body.substr(21, r.body.size() - 21 - 2);
    CHECK(data.find_first_of("\r\n") == std::string::npos);
    CHECK(has(data, "\"id\":" + id + ","));
    CHECK(has(data, "\"a_tool\""));
    CHECK(has(data, "\"b_tool\""));
    if (pretty_a) {
      CHECK(has(data, R"(line one\nline two)"));  // an escape inside a string stays as it was
    }
    CHECK(has(data, R"("cacheScope":"public")"));
  }
  CHECK(a.requestCount() == 1);  // the second and third answers came from the cache
  CHECK(b.requestCount() == 1);
}
