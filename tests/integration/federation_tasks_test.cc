// Federation (issue #15), task ids: a federated tools/call whose answer carries a taskId makes
// tasks/* with that id go back to the upstream that returned it — and /explain names that
// upstream ("task owner") for such a request, as the proxy decides it. Raw upstreams, so the
// test sees which request reached which.

#include <catch.hpp>
#include <string>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

bool has(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

// Every answer is both a tools/list result (one tool `<name>_tool`) and a call result that
// started task `task-<name>`: all the gateway reads of either.
UpstreamScript server(const std::string& name) {
  return RawUpstream::respond(200, R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":")" +
                                       name +
                                       R"(_tool","inputSchema":{"type":"object"}}],)"
                                       R"("task":{"taskId":"task-)" +
                                       name + R"(","status":"working"}}})");
}

std::string post(const std::string& method, const std::string& name, const std::string& params) {
  const std::string body =
      R"({"jsonrpc":"2.0","id":9,"method":")" + method + R"(","params":)" + params + "}";
  std::string r =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
      "Mcp-Method: " +
      method + "\r\n";
  if (!name.empty()) {
    r += "Mcp-Name: " + name + "\r\n";
  }
  return r + "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         body;
}

std::string explain(uint16_t admin, const std::string& query) {
  return fetch(admin,
               "GET /explain?" + query + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n")
      .body;
}

}  // namespace

TEST_CASE("federation: tasks/* go to the upstream that returned the taskId, and /explain says so",
          "[federation]") {
  RawUpstream a(server("a"));
  RawUpstream b(server("b"));
  Gateway gw(
      "listen: \"127.0.0.1:${PORT}\"\nadmin: \"127.0.0.1:0\"\nworkers: 1\nupstreams:\n  - name: "
      "a\n    endpoints: [\"" +
      a.address() + "\"]\n  - name: b\n    endpoints: [\"" + b.address() +
      "\"]\nroutes:\n  - name: default\n    upstreams: [a, b]\naccess_log: { path: "
      "\"${ACCESS_LOG}\" }\n");
  const uint16_t admin = gw.adminPort();
  const std::string meta = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"})";

  // Before any call, the id is nobody's: the first upstream.
  std::string before = explain(admin, "method=tasks/get&name=task-b");
  INFO("explain before: " << before);
  CHECK(has(before, R"("sends_to":"first upstream","owner":"a")"));

  // b_tool is b's (learnt from the lists); its answer returns task-b.
  REQUIRE(fetch(gw.port(), post("tools/list", "", "{" + meta + "}")).status == 200);
  Response call =
      fetch(gw.port(), post("tools/call", "b_tool", R"({"name":"b_tool",)" + meta + "}"));
  INFO("call: " << call.head << call.body);
  REQUIRE(call.status == 200);
  const size_t b_before = b.requestCount();
  Response task =
      fetch(gw.port(), post("tasks/get", "task-b", R"({"taskId":"task-b",)" + meta + "}"));
  CHECK(task.status == 200);
  CHECK(b.requestCount() == b_before + 1);  // the proxy sent it to b

  std::string after = explain(admin, "method=tasks/get&name=task-b");
  INFO("explain after: " << after);
  CHECK(has(after, R"("sends_to":"task owner","owner":"b")"));
  CHECK(has(explain(admin, "method=tasks/cancel&name=task-zz"),
            R"("sends_to":"first upstream","owner":"a")"));
}
