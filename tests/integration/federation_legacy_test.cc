// Federation (issue #15) and 2025-era clients (issue #26): under `mcp.legacy: passthrough`
// (the default) a 2025-era request (no MCP-Protocol-Version, or a 2025 one) on a federated
// route is answered by the gateway as the client's server: initialize from the merged
// server/discover (its own session id), merged lists, calls sent to the owner as
// 2026-07-28 requests (the `_meta` envelope, Mcp-Method / Mcp-Name), never with the client's
// session id; a client's Mcp-Session-Id is never copied into a fan-out. Two raw upstreams
// stand for modern servers, so the test sees exactly which request reached which.

#include <catch.hpp>
#include <cstdio>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

bool has(const std::string& text, std::string_view needle) {
  return text.find(needle) != std::string::npos;
}

// A server that answers every request (keep-alive) with one tool `<name>_tool` — a valid
// tools/list result, which is all the gateway reads of it — and its session id.
UpstreamScript listingServer(const std::string& name) {
  return RawUpstream::respond(200,
                              R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":")" + name +
                                  R"(_tool","inputSchema":{"type":"object"}}]}})",
                              "application/json", "Mcp-Session-Id: sess-" + name + "\r\n");
}

// A 2026-07-28 server by its Mcp-Method: server/discover (capability `<name>cap`), tools/list
// (one tool `<name>_tool`), anything else a result naming the server.
UpstreamScript modernServer(const std::string& name) {
  return [name](UpstreamConn& c) {
    while (auto req = c.readRequest(Ms(15000))) {
      const std::string method = req->header("Mcp-Method").value_or("");
      std::string result;
      if (method == "server/discover") {
        result = R"({"supportedVersions":["2026-07-28"],"capabilities":{"tools":{},")" + name +
                 R"(cap":{}},"resultType":"complete"})";
      } else if (method == "tools/list") {
        result = R"({"tools":[{"name":")" + name +
                 R"(_tool","inputSchema":{"type":"object"}}],"resultType":"complete"})";
      } else {
        result = R"({"content":[{"type":"text","text":"from )" + name +
                 R"("}],"resultType":"complete"})";
      }
      const std::string body = R"({"jsonrpc":"2.0","id":1,"result":)" + result + "}";
      if (!c.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body)) {
        return;
      }
    }
  };
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
    names: keep
access_log: { path: "${ACCESS_LOG}" }
)";

// A 2025-era POST /mcp: `version_line` is "" (no MCP-Protocol-Version) or a whole header line.
std::string legacyPost(const std::string& body, const std::string& version_line,
                       const std::string& session = "") {
  std::string r =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n" +
      version_line;
  if (!session.empty()) {
    r += "Mcp-Session-Id: " + session + "\r\n";
  }
  return r + "Connection: close\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
         body;
}

std::string rpc(const std::string& method, int id, const std::string& params = "{}") {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"method":")" + method +
         R"(","params":)" + params + "}";
}

}  // namespace

TEST_CASE("federation: a 2025-era client on a federated route gets the federated view",
          "[federation][legacy]") {
  // No MCP-Protocol-Version at all, and a 2025 version the gateway does not trust.
  const std::string version_line = GENERATE(std::string(""), std::string("MCP-Protocol-Version: "
                                                                         "2025-06-18\r\n"));
  RawUpstream a(modernServer("a"));
  RawUpstream b(modernServer("b"));
  Gateway gw(kYaml, {{"A", a.address()}, {"B", b.address()}});
  INFO("version line: '" << version_line << "'");

  const std::string init = rpc(
      "initialize", 1,
      R"({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}})");
  Response r = fetch(gw.port(), legacyPost(init, version_line));
  INFO("initialize: " << r.head << r.body << "\ngateway stderr:\n" << gw.process().stderrText());
  REQUIRE(r.status == 200);
  CHECK(has(r.body, R"("protocolVersion":"2025-06-18")"));
  CHECK(has(r.body, R"("acap":{})"));  // merged capabilities
  CHECK(has(r.body, R"("bcap":{})"));
  CHECK(has(r.body, R"("serverInfo":{"name":"mcp-gateway")"));
  REQUIRE(r.headerCount("Mcp-Session-Id") == 1);
  const std::string session = *r.header("Mcp-Session-Id");
  CHECK(session.rfind("gw1.", 0) == 0);

  // notifications/initialized and ping: answered here.
  Response note =
      fetch(gw.port(), legacyPost(R"({"jsonrpc":"2.0","method":"notifications/initialized"})",
                                  version_line, session));
  CHECK(note.status == 202);
  Response ping = fetch(gw.port(), legacyPost(rpc("ping", 7), version_line, session));
  CHECK(ping.status == 200);
  CHECK(has(ping.body, R"("id":7,"result":{})"));

  // The list is merged, as a modern client sees it.
  Response list = fetch(gw.port(), legacyPost(rpc("tools/list", 2), version_line, session));
  INFO("tools/list: " << list.head << list.body);
  CHECK(list.status == 200);
  CHECK(has(list.body, "\"a_tool\""));
  CHECK(has(list.body, "\"b_tool\""));
  CHECK(list.headerCount("Mcp-Session-Id") == 0);

  // A call of b's tool goes to b, as a 2026-07-28 request.
  Response call = fetch(
      gw.port(), legacyPost(rpc("tools/call", 3, R"({"name":"b_tool"})"), version_line, session));
  INFO("tools/call: " << call.head << call.body);
  CHECK(call.status == 200);
  CHECK(has(call.body, "from b"));

  // Outside a session: 400 without one, 404 for one the gateway did not mint (the client
  // initializes again); a 2025 version is the only other one a legacy request may name.
  Response none = fetch(gw.port(), legacyPost(rpc("tools/list", 4), version_line));
  CHECK(none.status == 400);
  CHECK(has(none.body, R"("id":4)"));
  std::string forged = session;
  forged.back() = forged.back() == 'A' ? 'B' : 'A';
  Response bad = fetch(gw.port(), legacyPost(rpc("tools/list", 5), version_line, forged));
  CHECK(bad.status == 404);
  CHECK(has(bad.body, "-31016"));
  Response odd = fetch(
      gw.port(), legacyPost(rpc("tools/list", 6), "MCP-Protocol-Version: 1999-01-01\r\n", session));
  CHECK(odd.status == 400);
  CHECK(has(odd.body, "-32022"));
  CHECK(has(odd.body, R"("id":6)"));

  // No upstream here streams (each answers subscriptions/listen with JSON): a 2025 GET gets
  // 405, as from a 2025 server without a stream.
  Response get =
      fetch(gw.port(), "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + version_line +
                           "Mcp-Session-Id: " + session + "\r\nConnection: close\r\n\r\n");
  INFO("GET: " << get.head << get.body);
  CHECK(get.status == 405);
  CHECK(get.header("Allow").value_or("") == "POST, DELETE");

  // DELETE ends the session (nothing is held for it upstream).
  Response del =
      fetch(gw.port(), "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + version_line +
                           "Mcp-Session-Id: " + session + "\r\nConnection: close\r\n\r\n");
  CHECK(del.status == 200);

  REQUIRE(b.waitForRequests(3, Ms(3000)));
  bool called = false;
  for (RawUpstream* up : {&a, &b}) {
    for (const RecordedRequest& q : up->requests()) {
      INFO(q.head << q.body);
      CHECK_FALSE(q.hasHeader("Mcp-Session-Id"));  // the gateway's session stays here
      CHECK(q.header("MCP-Protocol-Version").value_or("") == "2026-07-28");
      CHECK(has(q.body, R"("io.modelcontextprotocol/protocolVersion":"2026-07-28")"));
      if (q.header("Mcp-Method").value_or("") == "tools/call") {
        called = true;
        CHECK(up == &b);
        CHECK(q.header("Mcp-Name").value_or("") == "b_tool");
      }
    }
  }
  CHECK(called);
}

TEST_CASE("federation: a client's Mcp-Session-Id is not copied into a fan-out", "[federation]") {
  RawUpstream a(listingServer("a"));
  RawUpstream b(listingServer("b"));
  Gateway gw(kYaml, {{"A", a.address()}, {"B", b.address()}});

  const std::string body = R"({"jsonrpc":"2.0","id":5,"method":"tools/list","params":{"_meta":)"
                           R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  const std::string req =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
      "Mcp-Method: tools/list\r\nMcp-Session-Id: " +
      gatewaySessionToken("a", a.address()) +
      ".sess-a\r\n"
      "Connection: close\r\nContent-Length: " +
      std::to_string(body.size()) + "\r\n\r\n" + body;
  Response r = fetch(gw.port(), req);
  INFO("tools/list: " << r.head << r.body << "\ngateway stderr:\n" << gw.process().stderrText());
  CHECK(r.status == 200);
  CHECK(has(r.body, "\"a_tool\""));  // merged: both upstreams were asked
  CHECK(has(r.body, "\"b_tool\""));
  REQUIRE(a.waitForRequests(1, Ms(3000)));
  REQUIRE(b.waitForRequests(1, Ms(3000)));
  for (RawUpstream* up : {&a, &b}) {
    for (const RecordedRequest& q : up->requests()) {
      INFO(q.head);
      CHECK_FALSE(q.hasHeader("Mcp-Session-Id"));
    }
  }
}

namespace {

// A 2025-only server: initialize (its session `s-1`), notifications/initialized, and a GET
// stream that sends one tools/list_changed notification and one ping request, then holds;
// the gateway's answer to the ping is recorded like any POST.
UpstreamScript legacyStreamServer() {
  return [](UpstreamConn& c) {
    while (auto req = c.readRequest(Ms(15000))) {
      if (req->requestLine().rfind("GET ", 0) == 0) {
        const std::string events =
            "id: 1\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/tools/list_changed\"}\n\n"
            "id: 2\ndata: {\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"ping\"}\n\n";
        char size[16];
        std::snprintf(size, sizeof size, "%zx", events.size());
        c.send(
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            "Transfer-Encoding: chunked\r\n\r\n" +
            std::string(size) + "\r\n" + events + "\r\n");
        c.stall();
        return;
      }
      std::string body;
      int status = 200;
      if (has(req->body, "\"initialize\"")) {
        body =
            R"({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18",)"
            R"("capabilities":{"tools":{"listChanged":true}},"serverInfo":{"name":"old","version":"1"}}})";
      } else if (has(req->body, "\"method\"") && !has(req->body, "\"id\"")) {
        status = 202;  // notifications/initialized
      } else if (!has(req->body, "\"method\"")) {
        status = 202;  // a response to the server's ping
      } else {
        body = R"({"jsonrpc":"2.0","id":1,"result":{"tools":[]}})";
      }
      std::string r = "HTTP/1.1 " + std::to_string(status) +
                      " X\r\nContent-Type: application/json\r\nMcp-Session-Id: s-1\r\n"
                      "Content-Length: " +
                      std::to_string(body.size()) + "\r\n\r\n" + body;
      if (!c.send(r)) {
        return;
      }
    }
  };
}

}  // namespace

TEST_CASE("federation: a 2025-era client's GET stream is the merged subscription stream",
          "[federation][legacy][bridge]") {
  RawUpstream modern(modernServer("a"));  // answers subscriptions/listen with JSON: left out
  RawUpstream old(legacyStreamServer());
  Gateway gw(R"(listen: "127.0.0.1:${PORT}"
workers: 1
upstreams:
  - name: a
    endpoints: ["${A}"]
  - name: old
    endpoints: ["${B}"]
    era: legacy
routes:
  - name: default
    upstreams: [a, old]
    names: prefix
)",
             {{"A", modern.address()}, {"B", old.address()}});
  const std::string init = rpc(
      "initialize", 1,
      R"({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}})");
  Response r = fetch(gw.port(), legacyPost(init, ""));
  INFO("initialize: " << r.head << r.body << "\ngateway stderr:\n" << gw.process().stderrText());
  REQUIRE(r.status == 200);
  const std::string session = r.header("Mcp-Session-Id").value_or("");
  CHECK(has(r.body, R"("listChanged":true)"));  // the 2025 server's, from its initialize

  Client c(gw.port());
  REQUIRE(
      c.send("GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: text/event-stream\r\n"
             "MCP-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: " +
             session + "\r\n\r\n"));
  auto head = c.readHead(Ms(5000));
  REQUIRE(head);
  INFO("GET: " << head->head << "\ngateway stderr:\n" << gw.process().stderrText());
  REQUIRE(head->status == 200);
  CHECK(head->header("Content-Type").value_or("").rfind("text/event-stream", 0) == 0);
  CHECK(head->headerCount("Mcp-Session-Id") == 0);
  REQUIRE(c.readBodyUntil("notifications/tools/list_changed", Ms(5000)));
  CHECK_FALSE(has(c.body(), "subscriptions/acknowledged"));  // a 2025 client knows none
  CHECK_FALSE(has(c.body(), "\"ping\""));                    // server requests stay here
  CHECK_FALSE(has(c.body(), "id: 1"));

  // The server's ping was refused in the gateway's session, not left waiting.
  bool refused = false;
  for (int i = 0; i < 50 && !refused; ++i) {
    for (const RecordedRequest& q : old.requests()) {
      refused = refused || (has(q.body, "-32601") && has(q.body, "\"id\":9") &&
                            q.header("Mcp-Session-Id").value_or("") == "s-1");
    }
    if (!refused) {
      std::this_thread::sleep_for(Ms(100));
    }
  }
  CHECK(refused);
  // The GET stream went to the 2025 server in the gateway's session.
  bool got = false;
  for (const RecordedRequest& q : old.requests()) {
    if (q.requestLine().rfind("GET ", 0) == 0) {
      got = true;
      CHECK(q.header("Mcp-Session-Id").value_or("") == "s-1");
      CHECK(q.header("MCP-Protocol-Version").value_or("") == "2025-06-18");
    }
  }
  CHECK(got);

  // The stream is in the client's own session with the server (a 2025 SDK server allows one
  // standalone stream per session); it ends with DELETE when the client's session ends — not
  // when its stream closes.
  c.close();
  std::this_thread::sleep_for(Ms(300));
  for (const RecordedRequest& q : old.requests()) {
    CHECK(q.requestLine().rfind("DELETE ", 0) != 0);
  }
  Response del = fetch(gw.port(),
                       "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                       "MCP-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: " +
                           session + "\r\nConnection: close\r\n\r\n");
  CHECK(del.status == 200);
  bool deleted = false;
  for (int i = 0; i < 50 && !deleted; ++i) {
    for (const RecordedRequest& q : old.requests()) {
      deleted = deleted || (q.requestLine().rfind("DELETE ", 0) == 0 &&
                            q.header("Mcp-Session-Id").value_or("") == "s-1");
    }
    if (!deleted) {
      std::this_thread::sleep_for(Ms(100));
    }
  }
  CHECK(deleted);
}

namespace {

// A 2025-only server that opens a new session (s-1, s-2, …) on every initialize, answers a
// request in a session it ended (DELETE) or never opened with 404, lists one tool `t`, and
// answers tools/call with the session it came in.
struct SessionLedger {
  std::mutex mu;
  int opened = 0;
  std::set<std::string> live;
};

UpstreamScript perSessionServer(std::shared_ptr<SessionLedger> ledger) {
  return [ledger](UpstreamConn& c) {
    while (auto req = c.readRequest(Ms(15000))) {
      const std::string sid = req->header("Mcp-Session-Id").value_or("");
      std::string body;
      std::string sid_field;
      int status = 200;
      {
        std::lock_guard lock(ledger->mu);
        if (has(req->body, "\"initialize\"")) {
          sid_field = "s-" + std::to_string(++ledger->opened);
          ledger->live.insert(sid_field);
          body = R"({"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18",)"
                 R"("capabilities":{"tools":{}},"serverInfo":{"name":"old","version":"1"}}})";
        } else if (ledger->live.count(sid) == 0) {
          status = 404;
          body =
              R"({"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}})";
        } else if (req->requestLine().rfind("DELETE ", 0) == 0) {
          ledger->live.erase(sid);
        } else if (has(req->body, "\"method\"") && !has(req->body, "\"id\"")) {
          status = 202;  // notifications/initialized
        } else if (has(req->body, "\"tools/list\"")) {
          body =
              R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"}}]}})";
        } else {
          body = R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"in )" +
                 sid + R"("}]}})";
        }
      }
      std::string r =
          "HTTP/1.1 " + std::to_string(status) + " X\r\nContent-Type: application/json\r\n";
      if (!sid_field.empty()) {
        r += "Mcp-Session-Id: " + sid_field + "\r\n";
      }
      r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
      if (!c.send(r)) {
        return;
      }
    }
  };
}

// The session a call's answer names ("in s-N"), or "".
std::string sessionOf(const std::string& body) {
  const size_t at = body.find("in s-");
  if (at == std::string::npos) {
    return "";
  }
  size_t end = at + 5;
  while (end < body.size() && body[end] >= '0' && body[end] <= '9') {
    ++end;
  }
  return body.substr(at + 3, end - at - 3);
}

}  // namespace

TEST_CASE("federation: each 2025-era client gets its own sessions with 2025-era upstreams",
          "[federation][legacy][bridge]") {
  auto ledger = std::make_shared<SessionLedger>();
  RawUpstream modern(modernServer("a"));
  RawUpstream old(perSessionServer(ledger));
  // Two workers: a client's requests may land on either, and its DELETE on one of them.
  Gateway gw(R"(listen: "127.0.0.1:${PORT}"
workers: 2
upstreams:
  - name: a
    endpoints: ["${A}"]
  - name: old
    endpoints: ["${B}"]
    era: legacy
routes:
  - name: default
    upstreams: [a, old]
    names: prefix
)",
             {{"A", modern.address()}, {"B", old.address()}});
  const std::string version = "MCP-Protocol-Version: 2025-06-18\r\n";
  auto initialize = [&]() {
    const std::string init = rpc(
        "initialize", 1,
        R"({"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}})");
    Response r = fetch(gw.port(), legacyPost(init, ""));
    INFO("initialize: " << r.head << r.body << "\ngateway stderr:\n" << gw.process().stderrText());
    REQUIRE(r.status == 200);
    return r.header("Mcp-Session-Id").value_or("");
  };
  auto call = [&](const std::string& session, int id) {
    Response r = fetch(gw.port(),
                       legacyPost(rpc("tools/call", id, R"({"name":"old__t"})"), version, session));
    INFO("tools/call: " << r.head << r.body << "\ngateway stderr:\n" << gw.process().stderrText());
    CHECK(r.status == 200);
    return sessionOf(r.body);
  };
  const std::string first = initialize();
  const std::string second = initialize();
  REQUIRE(first != second);

  // Each client's calls go in sessions of its own (one per worker its requests reach), made
  // at its first call there; no session carries both clients' calls.
  std::set<std::string> firsts;
  std::set<std::string> seconds;
  for (int i = 0; i < 5; ++i) {  // new connections: either worker
    firsts.insert(call(first, 10 + i));
    seconds.insert(call(second, 20 + i));
  }
  CHECK(firsts.count("") == 0);
  CHECK(seconds.count("") == 0);
  CHECK(firsts.size() <= 2);  // at most one per worker
  CHECK(seconds.size() <= 2);
  for (const std::string& sid : firsts) {
    CHECK(seconds.count(sid) == 0);
  }
  // The route's shared list (the call's owner lookup) went in neither client's sessions.
  for (const RecordedRequest& q : old.requests()) {
    if (has(q.body, "\"tools/list\"")) {
      const std::string sid = q.header("Mcp-Session-Id").value_or("");
      CHECK(firsts.count(sid) == 0);
      CHECK(seconds.count(sid) == 0);
    }
  }

  // The first client's DELETE ends its sessions on every worker, and no other client's.
  Response del = fetch(gw.port(), "DELETE /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n" + version +
                                      "Mcp-Session-Id: " + first + "\r\nConnection: close\r\n\r\n");
  CHECK(del.status == 200);
  auto liveCount = [&](const std::set<std::string>& ids) {
    std::lock_guard lock(ledger->mu);
    size_t n = 0;
    for (const std::string& sid : ids) {
      n += ledger->live.count(sid);
    }
    return n;
  };
  for (int i = 0; i < 60 && liveCount(firsts) != 0; ++i) {
    std::this_thread::sleep_for(Ms(100));
  }
  CHECK(liveCount(firsts) == 0);
  CHECK(liveCount(seconds) == seconds.size());
  const std::string after = call(second, 30);  // its sessions go on
  CHECK_FALSE(after.empty());
  CHECK(firsts.count(after) == 0);
}
