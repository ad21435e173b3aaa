// mcp/bridge: what the gateway says and reads as a 2025 client of a legacy upstream.

#include <catch.hpp>

#include <string>
#include <vector>

#include "gateway/mcp/bridge.h"

using namespace gw::mcp;

TEST_CASE("bridge: initialize offers the newest 2025 version and no capabilities", "[bridge]") {
  const std::string body = bridge::initializeRequest("1.2.3");
  CHECK(body ==
        R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25",)"
        R"("capabilities":{},"clientInfo":{"name":"mcp-gateway","version":"1.2.3"}}})");
  CHECK(bridge::initializedNotification() ==
        R"({"jsonrpc":"2.0","method":"notifications/initialized"})");
}

TEST_CASE("bridge: versions the gateway speaks as a 2025 client", "[bridge]") {
  CHECK(bridge::speaksLegacy("2025-11-25"));
  CHECK(bridge::speaksLegacy("2025-06-18"));
  CHECK(bridge::speaksLegacy("2025-03-26"));
  CHECK(bridge::speaksLegacy("2024-11-05"));
  CHECK_FALSE(bridge::speaksLegacy("2026-07-28"));
  CHECK_FALSE(bridge::speaksLegacy(""));
  CHECK_FALSE(bridge::speaksLegacy("2025-11-25 "));
}

TEST_CASE("bridge: initialize answers, JSON and SSE", "[bridge]") {
  const std::string json =
      R"({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18",)"
      R"("capabilities":{ "tools" : {"listChanged":true}},"serverInfo":{"name":"s","version":"1"},)"
      R"("instructions":"use \"x\""}})";
  bridge::InitResult r;
  std::string why;
  REQUIRE(bridge::parseInitializeAnswer(json, false, r, why));
  CHECK(r.version == "2025-06-18");
  CHECK(r.capabilities == R"({"tools":{"listChanged":true}})");
  CHECK(r.server_info == R"({"name":"s","version":"1"})");
  CHECK(r.instructions == R"("use \"x\"")");

  const std::string sse = "id: abc\ndata: \n\nevent: message\nid: d\r\ndata: " + json + "\r\n\r\n";
  bridge::InitResult s;
  REQUIRE(bridge::parseInitializeAnswer(sse, true, s, why));
  CHECK(s.version == "2025-06-18");

  const std::string bare = R"({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}})";
  REQUIRE(bridge::parseInitializeAnswer(bare, false, r, why));
  CHECK(r.capabilities == "{}");
  CHECK(r.server_info.empty());
  CHECK(r.instructions.empty());
}

TEST_CASE("bridge: initialize answers refused", "[bridge]") {
  const std::vector<std::string> bad = {
      "",
      "not json",
      R"({"jsonrpc":"2.0","id":0,"error":{"code":-32000,"message":"no"}})",
      R"({"jsonrpc":"2.0","id":0,"result":{}})",
      R"({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2026-07-28"}})",
      R"({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":7}})",
      R"([{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-11-25"}}])",
  };
  for (const std::string& b : bad) {
    bridge::InitResult r;
    std::string why;
    CHECK_FALSE(bridge::parseInitializeAnswer(b, false, r, why));
    CHECK_FALSE(why.empty());
  }
  bridge::InitResult r;
  std::string why;
  CHECK_FALSE(bridge::parseInitializeAnswer("event: message\n\n", true, r, why));
}

TEST_CASE("bridge: the discover probe and what its answer says", "[bridge]") {
  CHECK(bridge::discoverProbe("2026-07-28") ==
        R"({"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{)"
        R"("io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
        R"("io.modelcontextprotocol/clientCapabilities":{},)"
        R"("io.modelcontextprotocol/clientInfo":{"name":"mcp-gateway","version":"probe"}}}})");
  const std::string modern =
      R"({"jsonrpc":"2.0","id":0,"result":{"supportedVersions":["2026-07-28"],"capabilities":{}}})";
  CHECK(bridge::probeSaysModern(200, modern, false));
  CHECK(bridge::probeSaysModern(200, "event: message\ndata: " + modern + "\n\n", true));
  CHECK_FALSE(bridge::probeSaysModern(404, modern, false));
  CHECK_FALSE(bridge::probeSaysModern(
      400,
      R"({"jsonrpc":"2.0","error":{"code":-32000,"message":"Bad Request: Server not initialized"},"id":null})",
      false));
  CHECK_FALSE(bridge::probeSaysModern(200, R"({"jsonrpc":"2.0","id":0,"result":{}})", false));
  CHECK_FALSE(bridge::probeSaysModern(200, "", false));
}

TEST_CASE("bridge: server/discover made from an initialize result", "[bridge]") {
  bridge::InitResult r;
  r.version = "2025-11-25";
  r.capabilities = R"({"tools":{}})";
  r.server_info = R"({"name":"s","version":"1"})";
  r.instructions = R"("hi")";
  const std::vector<std::string> offered = {"2026-07-28"};
  RequestId id{RequestId::Kind::kJson, "\"a\""};
  CHECK(bridge::discoverAnswer(r, offered, id) ==
        R"({"jsonrpc":"2.0","id":"a","result":{"supportedVersions":["2026-07-28"],)"
        R"("capabilities":{"tools":{}},"instructions":"hi","ttlMs":0,"cacheScope":"private",)"
        R"("resultType":"complete","_meta":{"io.modelcontextprotocol/serverInfo":)"
        R"({"name":"s","version":"1"}}}})");
  bridge::InitResult bare;
  CHECK(bridge::discoverAnswer(bare, {}, RequestId::absent()) ==
        R"({"jsonrpc":"2.0","id":null,"result":{"supportedVersions":[],"capabilities":{},)"
        R"("ttlMs":0,"cacheScope":"private","resultType":"complete"}})");
}

TEST_CASE("bridge: refusal of a server-to-client request, SSE response lookup", "[bridge]") {
  CHECK(bridge::refusalFor("7").starts_with(R"({"jsonrpc":"2.0","id":7,"error":{"code":-32601,)"));
  CHECK(bridge::firstSseResponse("data: {\"jsonrpc\":\"2.0\",\"method\":\"x\"}\n\n"
                                 "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n") ==
        R"({"jsonrpc":"2.0","id":1,"result":{}})");
  CHECK(bridge::firstSseResponse("data:\n\n").empty());
  CHECK(bridge::firstSseResponse("").empty());
}

TEST_CASE("bridge: a 2025 result gets resultType complete", "[bridge]") {
  std::string out;
  REQUIRE(bridge::completeResult(R"({"jsonrpc":"2.0","id":1,"result":{"tools":[]}})", false, out));
  CHECK(out == R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[]}})");
  REQUIRE(bridge::completeResult(R"({"result" : { },"jsonrpc":"2.0","id":"result"})", false, out));
  CHECK(out == R"({"result" : {"resultType":"complete" },"jsonrpc":"2.0","id":"result"})");
  // A "result" key deeper down, or inside a string, is not the member.
  REQUIRE(bridge::completeResult(
      R"({"jsonrpc":"2.0","id":"\"result\":{","x":{"result":{}},"result":{"a":1}})", false, out));
  CHECK(
      out ==
      R"({"jsonrpc":"2.0","id":"\"result\":{","x":{"result":{}},"result":{"resultType":"complete","a":1}})");

  std::string untouched = "keep";
  CHECK_FALSE(bridge::completeResult(
      R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required"}})", false, untouched));
  CHECK_FALSE(
      bridge::completeResult(R"({"jsonrpc":"2.0","id":1,"error":{"code":1}})", false, untouched));
  CHECK_FALSE(bridge::completeResult(R"({"jsonrpc":"2.0","method":"notifications/progress"})",
                                     false, untouched));
  CHECK_FALSE(bridge::completeResult(R"({"jsonrpc":"2.0","id":1,"result":[]})", false, untouched));
  CHECK_FALSE(bridge::completeResult("not json", false, untouched));
  CHECK_FALSE(bridge::completeResult("", false, untouched));
  CHECK(untouched == "keep");

  // A list (CacheableResult) also gets ttlMs and cacheScope, each only when absent.
  REQUIRE(bridge::completeResult(R"({"jsonrpc":"2.0","id":1,"result":{"tools":[]}})", true, out));
  CHECK(out == R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":0,)"
               R"("cacheScope":"private","tools":[]}})");
  REQUIRE(bridge::completeResult(
      R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","ttlMs":5}})", true, out));
  CHECK(out == R"({"jsonrpc":"2.0","id":1,"result":{"cacheScope":"private","resultType":)"
               R"("complete","ttlMs":5}})");
  CHECK(bridge::isCacheable("resources/read"));
  CHECK(bridge::isCacheable("tools/list"));
  CHECK_FALSE(bridge::isCacheable("tools/call"));
}

TEST_CASE("bridge: a server-to-client request inside a bridged call", "[bridge]") {
  std::string id;
  REQUIRE(bridge::serverRequest(
      R"({"jsonrpc":"2.0","id":"s-1","method":"sampling/createMessage","params":{}})", id));
  CHECK(id == R"("s-1")");
  REQUIRE(bridge::serverRequest(R"({"method":"roots/list","id":7,"jsonrpc":"2.0"})", id));
  CHECK(id == "7");
  CHECK(bridge::refusalFor(id) ==
        R"({"jsonrpc":"2.0","id":7,"error":{"code":-32601,"message":"Method not found: the )"
        R"(gateway bridges this session for a 2026-07-28 client and takes no server-to-client )"
        R"(requests"}})");
  // Notifications, responses and what is not JSON are not requests.
  CHECK_FALSE(bridge::serverRequest(R"({"jsonrpc":"2.0","method":"notifications/progress"})", id));
  CHECK_FALSE(bridge::serverRequest(R"({"jsonrpc":"2.0","id":1,"result":{}})", id));
  CHECK_FALSE(bridge::serverRequest(R"({"jsonrpc":"2.0","id":null,"method":"ping"})", id));
  CHECK_FALSE(bridge::serverRequest("", id));
  CHECK_FALSE(bridge::serverRequest("[1]", id));
}

TEST_CASE("bridge: a -32601 answer, and the methods 2026-07-28 removed", "[bridge]") {
  CHECK(bridge::isMethodNotFound(
      R"({"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"x"}})"));
  CHECK(bridge::isMethodNotFound(
      R"( {"error" : {"message":"x", "code" : -32601}, "id":"a","jsonrpc":"2.0"} )"));
  CHECK_FALSE(bridge::isMethodNotFound(
      R"({"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"x"}})"));
  CHECK_FALSE(bridge::isMethodNotFound(R"({"jsonrpc":"2.0","id":1,"result":{"code":-32601}})"));
  CHECK_FALSE(bridge::isMethodNotFound(R"({"jsonrpc":"2.0","id":1,"error":{"code":"-32601"}})"));
  CHECK_FALSE(bridge::isMethodNotFound("not json"));
  CHECK_FALSE(bridge::isMethodNotFound(""));
  for (const char* m :
       {"initialize", "ping", "logging/setLevel", "resources/subscribe", "resources/unsubscribe",
        "notifications/initialized", "notifications/roots/list_changed"}) {
    CHECK(bridge::removedIn2026(m));
  }
  for (const char* m : {"tools/list", "tools/call", "server/discover", "subscriptions/listen",
                        "Initialize", "initialize ", "resources/read", ""}) {
    CHECK_FALSE(bridge::removedIn2026(m));
  }
}
