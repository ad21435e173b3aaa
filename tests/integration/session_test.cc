// Issue 13 items 3 and 4 through the real binary.
// 3. Legacy (2025-era) sessions stay on the endpoint that created them, without shared state:
//    the upstream's Mcp-Session-Id reaches the client wrapped as `<endpoint token>.<server id>`
//    (MCP 2025-06-18 transport, Session Management: visible ASCII only), later POST, GET and
//    DELETE requests carrying it go to that endpoint with the server's own id — across workers,
//    replicas and restarts; a token that names no endpoint gets 404 + JSON-RPC error (what a
//    server answers for an unknown session, so the client re-initializes).
// 4. upstreams[].host_header: endpoint (default) | client | literal (RFC 9110 §7.2).

#include <signal.h>

#include <catch.hpp>
#include <map>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

// A session-keeping legacy server: every answer carries its session id (as the TS SDK's do)
// and names the endpoint in the body.
UpstreamScript sessionServer(const std::string& name) {
  return RawUpstream::respond(200,
                              "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"up\":\"" + name + "\"}}",
                              "application/json", "Mcp-Session-Id: sess-" + name + "\r\n");
}

// Gateway YAML: legacy passthrough, the given endpoints, `upstream_extra` lines inside the
// upstream (each "    key: value\n").
std::string sessionYaml(const std::vector<std::string>& endpoints, int workers = 1,
                        const std::string& upstream_extra = "") {
  GatewayConfig cfg;
  cfg.upstream_endpoints = endpoints;
  cfg.workers = workers;
  std::string y = gatewayYaml(cfg);
  y.replace(y.find("mcp:\n"), 5, "mcp:\n  legacy: passthrough\n");
  y.replace(y.find("    path: /mcp\n"), 15, "    path: /mcp\n" + upstream_extra);
  return y;
}

const std::string kInitBody =
    R"({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18",)"
    R"("capabilities":{},"clientInfo":{"name":"t","version":"1"}}})";

// A 2025-era request (no MCP-Protocol-Version) with an optional Mcp-Session-Id line.
std::string legacyRequest(const std::string& verb, const std::string& session_lines,
                          const std::string& body = "") {
  std::string r = verb + " /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (verb == "GET") {
    r += "Accept: text/event-stream\r\n";
  } else if (verb == "POST") {
    r += "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
  }
  r += session_lines;
  if (verb == "POST") {
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return r + "\r\n" + body;
}

std::string sessionLine(const std::string& id) {
  return "Mcp-Session-Id: " + id + "\r\n";
}

std::string toolsList(int id) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
         R"(,"method":"tools/list","params":{}})";
}

// Initializes until a session of endpoint `want` ("A" or "B") is handed out (the balancer
// alternates per worker); returns the wrapped id.
std::string sessionOn(uint16_t port, const std::string& want) {
  for (int i = 0; i < 20; ++i) {
    Response r = fetch(port, legacyRequest("POST", "", kInitBody));
    REQUIRE(r.status == 200);
    REQUIRE(r.headerCount("Mcp-Session-Id") == 1);
    std::string id = *r.header("Mcp-Session-Id");
    if (id.size() > 17 && id.substr(17) == "sess-" + want) {
      return id;
    }
  }
  FAIL("no session on endpoint " << want << " after 20 initializes");
  return {};
}

// Sends 20 follow-ups (POST, GET, DELETE in turn, each on a new connection so they spread over
// the workers) with `wrapped` and checks that each landed on `on` with the server's own id.
void followUps(uint16_t port, const std::string& wrapped, RawUpstream& on, RawUpstream& other,
               const std::string& server_id) {
  size_t on_before = on.requestCount();
  size_t other_before = other.requestCount();
  const char* verbs[] = {"POST", "GET", "DELETE"};
  for (int i = 0; i < 20; ++i) {
    std::string verb = verbs[i % 3];
    INFO(verb << " #" << i);
    Response r = fetch(
        port, legacyRequest(verb, sessionLine(wrapped), verb == "POST" ? toolsList(i + 2) : ""));
    CHECK(r.status == 200);
    // The client only ever sees the wrapped id.
    CHECK(r.header("Mcp-Session-Id").value_or("") == wrapped);
  }
  REQUIRE(on.waitForRequests(on_before + 20, Ms(3000)));
  CHECK(on.requestCount() == on_before + 20);
  CHECK(other.requestCount() == other_before);
  auto reqs = on.requests();
  for (size_t i = on_before; i < reqs.size(); ++i) {
    INFO(reqs[i].head);
    CHECK(reqs[i].headerValues("Mcp-Session-Id") == std::vector<std::string>{server_id});
  }
}

size_t countOf(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) {
    ++n;
  }
  return n;
}

}  // namespace

TEST_CASE("session: the initialize answer's id is wrapped, 20 follow-ups stay on its endpoint",
          "[session]") {
  RawUpstream a(sessionServer("A"));
  RawUpstream b(sessionServer("B"));
  Gateway gw(sessionYaml({a.address(), b.address()}, 2));

  for (const char* want : {"A", "B"}) {
    RawUpstream& on = std::string(want) == "A" ? a : b;
    RawUpstream& other = std::string(want) == "A" ? b : a;
    std::string wrapped = sessionOn(gw.port(), want);
    INFO(wrapped);
    // <token>.<server id>: the token is derived from the config alone.
    CHECK(wrapped == gatewaySessionToken("main", on.address()) + ".sess-" + want);
    for (char c : wrapped) {
      CHECK((c >= 0x21 && c <= 0x7E));
    }
    followUps(gw.port(), wrapped, on, other, std::string("sess-") + want);
  }
  // The upstreams never saw a wrapped id.
  for (RawUpstream* up : {&a, &b}) {
    for (const RecordedRequest& r : up->requests()) {
      for (const std::string& v : r.headerValues("Mcp-Session-Id")) {
        CHECK(v.rfind("sess-", 0) == 0);
      }
    }
  }
}

TEST_CASE("session: a second replica and a restarted gateway send the session to its endpoint",
          "[session]") {
  RawUpstream a(sessionServer("A"));
  RawUpstream b(sessionServer("B"));
  std::string yaml = sessionYaml({a.address(), b.address()}, 2);
  std::string on_a;
  std::string on_b;
  {
    Gateway first(yaml);
    on_a = sessionOn(first.port(), "A");
    on_b = sessionOn(first.port(), "B");
    Gateway replica(yaml);  // same config, other process, other port
    followUps(replica.port(), on_a, a, b, "sess-A");
    followUps(replica.port(), on_b, b, a, "sess-B");
  }
  Gateway restarted(yaml);  // every earlier process is gone
  followUps(restarted.port(), on_a, a, b, "sess-A");
  followUps(restarted.port(), on_b, b, a, "sess-B");
}

TEST_CASE(
    "session: a forged, foreign or unwrapped session id gets 404 -31016, upstream sees nothing",
    "[session]") {
  RawUpstream a(sessionServer("A"));
  RawUpstream b(sessionServer("B"));
  Gateway gw(sessionYaml({a.address(), b.address()}, 1));
  std::string good = gatewaySessionToken("main", a.address());
  std::string flipped = good;
  flipped[3] = flipped[3] == 'x' ? 'y' : 'x';
  const std::string bad_ids[] = {
      "sess-A",                                                   // created before this feature
      "7f3c2b1e-1d0a-4c7e-9b2f-0c1d2e3f4a5b",                     // a bare UUID
      gatewaySessionToken("other", a.address()) + ".sess-A",      // another upstream's token
      gatewaySessionToken("main", a.address(), "k") + ".sess-A",  // another secret's token
      gatewaySessionToken("main", "127.0.0.1:1") + ".sess-A",     // an endpoint not configured
      flipped + ".sess-A",                                        // forged
      good + ".",                                                 // no server part
      good,                                                       // token only
      good.substr(0, 15) + ".sess-A",                             // short token
      good + "x.sess-A",                                          // long token
      good.substr(0, 15) + "=.sess-A",                            // not base64url
      good + "." + std::string(1100, 'x'),                        // too long
  };
  int id = 10;
  for (const std::string& bad : bad_ids) {
    for (const char* verb : {"POST", "GET", "DELETE"}) {
      INFO(verb << " " << bad.substr(0, 80));
      Response r = fetch(
          gw.port(),
          legacyRequest(verb, sessionLine(bad), std::string(verb) == "POST" ? toolsList(id) : ""));
      CHECK(r.status == 404);
      CHECK(r.header("Content-Type") == "application/json");
      CHECK(jsonToken(r.body, "code") == "-31016");
      CHECK(jsonToken(r.body, "id") ==
            (std::string(verb) == "POST" ? std::to_string(id) : std::string("null")));
      CHECK_FALSE(r.header("Mcp-Session-Id").has_value());
      ++id;
    }
  }
  // Two Mcp-Session-Id fields, even two valid ones: which session is meant is unknown.
  std::string wrapped = good + ".sess-A";
  Response two = fetch(
      gw.port(), legacyRequest("POST", sessionLine(wrapped) + sessionLine(wrapped), toolsList(99)));
  CHECK(two.status == 404);
  // None of them reached an upstream: a marker on a real session of each is the first there.
  const std::string on_a = good + ".sess-A";
  const std::string on_b = gatewaySessionToken("main", b.address()) + ".sess-B";
  REQUIRE(forwardMarker(gw.port(), a, legacyRequest("POST", sessionLine(on_a), toolsList(98))));
  REQUIRE(forwardMarker(gw.port(), b, legacyRequest("POST", sessionLine(on_b), toolsList(99))));
  CHECK(a.requestCount() == 1);
  CHECK(b.requestCount() == 1);
  // The access log names the outcome (lines are written as requests end).
  const size_t want = std::size(bad_ids) * 3 + 1;
  CHECK(waitFor([&] { return countOf(readFile(gw.accessLogPath()), "session_not_found") == want; },
                Ms(3000)));
}

TEST_CASE("session: a modern request's stray Mcp-Session-Id is a no-op, a wrapped one is pinned",
          "[session]") {
  // 2026-07-28 (transport §A.1.4): sessions are gone, a stray Mcp-Session-Id is ignored, not
  // refused; the gateway forwards it as sent. A wrapped one still names its endpoint.
  RawUpstream a(sessionServer("A"));
  RawUpstream b(sessionServer("B"));
  Gateway gw(sessionYaml({a.address(), b.address()}, 1));
  Response r = fetch(gw.port(), mcpPost(toolsCallBody("echo", 1), "Mcp-Session-Id: stray-1\r\n"));
  CHECK(r.status == 200);
  REQUIRE(waitFor([&] { return a.requestCount() + b.requestCount() == 1; }, Ms(2000)));
  RecordedRequest got = a.requestCount() == 1 ? a.requests().at(0) : b.requests().at(0);
  CHECK(got.headerValues("Mcp-Session-Id") == std::vector<std::string>{"stray-1"});
  std::string wrapped = gatewaySessionToken("main", b.address()) + ".sess-B";
  size_t before_b = b.requestCount();
  for (int i = 0; i < 4; ++i) {
    Response p = fetch(gw.port(), mcpPost(toolsCallBody("echo", i), sessionLine(wrapped)));
    CHECK(p.status == 200);
  }
  REQUIRE(b.waitForRequests(before_b + 4, Ms(2000)));
  CHECK(b.requests().back().headerValues("Mcp-Session-Id") == std::vector<std::string>{"sess-B"});
}

TEST_CASE("session: an endpoint removed from config (reload) or refusing connects gets 404",
          "[session]") {
  RawUpstream a(sessionServer("A"));
  RawUpstream b(sessionServer("B"));
  Gateway gw(sessionYaml({a.address(), b.address()}, 2));
  std::string on_a = sessionOn(gw.port(), "A");
  std::string on_b = sessionOn(gw.port(), "B");

  SECTION("removed from config: 404, the kept endpoint's sessions stay valid") {
    size_t a_before = a.requestCount();
    std::string text = readFile(gw.configPath());
    size_t at = text.find(a.address() + ", ");
    REQUIRE(at != std::string::npos);
    text.erase(at, a.address().size() + 2);
    REQUIRE(writeFile(gw.configPath(), text));
    std::string reloaded = "reloaded " + gw.configPath();
    size_t before = countOf(gw.process().stderrText(), reloaded);
    REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
    REQUIRE(
        waitFor([&] { return countOf(gw.process().stderrText(), reloaded) > before; }, Ms(5000)));
    for (const char* verb : {"POST", "GET", "DELETE"}) {
      INFO(verb);
      Response r = fetch(gw.port(), legacyRequest(verb, sessionLine(on_a),
                                                  std::string(verb) == "POST" ? toolsList(5) : ""));
      CHECK(r.status == 404);
      CHECK(jsonToken(r.body, "code") == "-31016");
    }
    CHECK(a.requestCount() == a_before);
    // Endpoint B's token depends only on its own address: its session goes on.
    followUps(gw.port(), on_b, b, a, "sess-B");
  }

  SECTION("refusing connects: 404 (the session is gone with its server), never moved") {
    size_t b_before = b.requestCount();
    a.stop();
    // The gateway's idle connections to A have seen the close (a pooled connection found dead
    // would make a request fail as closed, not as a refused connect).
    REQUIRE(waitFor([&] { return openConnectionsTo(a.port()) == 0; }, Ms(3000)));
    for (int i = 0; i < 6; ++i) {
      Response r = fetch(gw.port(), legacyRequest("POST", sessionLine(on_a), toolsList(40 + i)));
      INFO(r.head << r.body);
      CHECK(r.status == 404);
      CHECK(jsonToken(r.body, "code") == "-31016");
      CHECK(jsonToken(r.body, "id") == std::to_string(40 + i));
    }
    CHECK(b.requestCount() == b_before);
    CHECK(
        waitFor([&] { return countOf(readFile(gw.accessLogPath()), "session_endpoint_down") == 6; },
                Ms(3000)));
    // A request without a session still goes to the endpoint that is up.
    Response fresh = fetch(gw.port(), legacyRequest("POST", "", kInitBody));
    CHECK(fresh.status == 200);
  }
}

TEST_CASE("session: one endpoint still wraps, so adding endpoints later keeps the session",
          "[session]") {
  RawUpstream a(sessionServer("A"));
  RawUpstream b(sessionServer("B"));
  std::string wrapped;
  {
    Gateway gw(sessionYaml({a.address()}, 1));
    Response r = fetch(gw.port(), legacyRequest("POST", "", kInitBody));
    REQUIRE(r.status == 200);
    wrapped = r.header("Mcp-Session-Id").value_or("");
    CHECK(wrapped == gatewaySessionToken("main", a.address()) + ".sess-A");
  }
  Gateway grown(sessionYaml({b.address(), a.address()}, 2));
  followUps(grown.port(), wrapped, a, b, "sess-A");
}

TEST_CASE("session: an upstream session id the client could not be given is a 502", "[session]") {
  // MCP 2025-06-18 Session Management: visible ASCII only; the gateway also bounds its length.
  const std::string bad[] = {
      "Mcp-Session-Id: a b\r\n", "Mcp-Session-Id: " + std::string(1025, 'x') + "\r\n",
      "Mcp-Session-Id: s1\r\nMcp-Session-Id: s2\r\n", "Mcp-Session-Id: caf\xc3\xa9\r\n"};
  for (const std::string& h : bad) {
    INFO(h.substr(0, 60));
    RawUpstream up(RawUpstream::respond(200, "{}", "application/json", h));
    Gateway gw(sessionYaml({up.address()}, 1));
    Response r = fetch(gw.port(), legacyRequest("POST", "", kInitBody));
    CHECK(r.status == 502);
    CHECK(jsonToken(r.body, "code") == "-31010");
    CHECK_FALSE(r.header("Mcp-Session-Id").has_value());
  }
}

TEST_CASE("host_header: what Host the upstream receives in each mode (RFC 9110 7.2)",
          "[session][host-header]") {
  RawUpstream up(RawUpstream::respond(200, "{}"));
  struct Case {
    const char* name;
    std::string extra;
    std::string http_version;
    std::string client_host;  // "" = no Host line (HTTP/1.0 only)
    std::string want;         // "" = the endpoint's address
  };
  const Case cases[] = {
      {"default", "", "HTTP/1.1", "127.0.0.1", ""},
      {"endpoint", "    host_header: endpoint\n", "HTTP/1.1", "127.0.0.1", ""},
      {"endpoint, HTTP/1.0 no Host", "    host_header: endpoint\n", "HTTP/1.0", "", ""},
      {"client", "    host_header: client\n", "HTTP/1.1", "gw.example:8443", "gw.example:8443"},
      {"client, HTTP/1.0 no Host", "    host_header: client\n", "HTTP/1.0", "", ""},
      {"literal", "    host_header: mcp.internal:9000\n", "HTTP/1.1", "127.0.0.1",
       "mcp.internal:9000"},
      {"literal, HTTP/1.0 no Host", "    host_header: mcp.internal\n", "HTTP/1.0", "",
       "mcp.internal"},
      {"literal IPv6", "    host_header: \"[::1]:81\"\n", "HTTP/1.1", "127.0.0.1", "[::1]:81"},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    Gateway gw(sessionYaml({up.address()}, 1, c.extra));
    size_t before = up.requestCount();
    std::string body = toolsCallBody("echo", 1);
    std::string req = "POST /mcp " + c.http_version + "\r\n";
    if (!c.client_host.empty()) {
      req += "Host: " + c.client_host + "\r\n";
    }
    req +=
        "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
        "Content-Length: " +
        std::to_string(body.size()) + "\r\n\r\n" + body;
    Response r = fetch(gw.port(), req);
    CHECK(r.status == 200);
    REQUIRE(up.waitForRequests(before + 1, Ms(2000)));
    std::string want = c.want.empty() ? up.address() : c.want;
    CHECK(up.requests().back().headerValues("host") == std::vector<std::string>{want});
  }
}

TEST_CASE("host_header: a connect retried on the next endpoint names that endpoint",
          "[session][host-header]") {
  RawUpstream up(RawUpstream::respond(200, "{}"));
  ClosedPort dead;
  Gateway gw(sessionYaml({dead.address(), up.address()}, 1, "    balance: first_healthy\n"));
  Response r = fetch(gw.port(), mcpPost(toolsCallBody("echo", 1)));
  CHECK(r.status == 200);
  REQUIRE(up.waitForRequests(1, Ms(2000)));
  RecordedRequest got = up.requests().back();
  CHECK(got.headerValues("host") == std::vector<std::string>{up.address()});
  CHECK(got.requestLine() == "POST /mcp HTTP/1.1");
  CHECK(got.body == toolsCallBody("echo", 1));
}

TEST_CASE(
    "session: under default: deny, a legacy GET or DELETE of a session the gateway handed out "
    "passes, one without a session or with a forged one does not",
    "[session]") {
  RawUpstream a(sessionServer("A"));
  TempDir dir;
  REQUIRE(writeFile(dir.file("policy.yaml"),
                    "default: deny\n"
                    "rules:\n"
                    "  - name: handshake\n"
                    "    match: { method: initialize }\n"
                    "    action: allow\n"));
  std::string y = sessionYaml({a.address()});
  y += "policies: [" + dir.file("policy.yaml") + "]\n";
  Gateway gw(y);
  Response init = fetch(gw.port(), legacyRequest("POST", "", kInitBody));
  REQUIRE(init.status == 200);
  const std::string wrapped = init.header("Mcp-Session-Id").value_or("");
  REQUIRE(wrapped.size() > 17);
  for (const char* verb : {"GET", "DELETE"}) {
    INFO(verb);
    CHECK(fetch(gw.port(), legacyRequest(verb, sessionLine(wrapped))).status == 200);
    Response none = fetch(gw.port(), legacyRequest(verb, ""));
    CHECK(none.status == 403);
    CHECK(jsonToken(none.body, "code") == "-31004");
    std::string forged = wrapped;
    forged[3] = forged[3] == 'x' ? 'y' : 'x';
    CHECK(fetch(gw.port(), legacyRequest(verb, sessionLine(forged))).status == 403);
  }
  // A method the rules do not allow is still refused on the same session.
  Response call = fetch(gw.port(), legacyRequest("POST", sessionLine(wrapped), toolsList(5)));
  CHECK(call.status == 403);
  CHECK(a.waitForRequests(3, Ms(2000)));
  // The refused ones are not there: a marker (an initialize, which the rules allow) is next.
  REQUIRE(forwardMarker(gw.port(), a, legacyRequest("POST", "", kInitBody)));
  CHECK(a.requestCount() == 4);
}

TEST_CASE(
    "session: a legacy GET or DELETE goes to the upstream its session was created on, "
    "not the legacy route's",
    "[session]") {
  RawUpstream a(sessionServer("A"));
  RawUpstream b(sessionServer("B"));
  // initialize is routed by its body to `other`; everything else takes the default route.
  std::string y = sessionYaml({a.address()});
  y.replace(y.find("routes:\n"), 8,
            "  - name: other\n    endpoints: [" + b.address() +
                "]\n    path: /mcp\nroutes:\n  - name: handshake\n"
                "    match: { method: initialize }\n    upstream: other\n");
  Gateway gw(y);
  Response init = fetch(gw.port(), legacyRequest("POST", "", kInitBody));
  REQUIRE(init.status == 200);
  const std::string wrapped = init.header("Mcp-Session-Id").value_or("");
  REQUIRE(wrapped.size() > 17);
  CHECK(wrapped.substr(17) == "sess-B");
  REQUIRE(b.waitForRequests(1, Ms(2000)));
  for (const char* verb : {"GET", "DELETE"}) {
    INFO(verb);
    CHECK(fetch(gw.port(), legacyRequest(verb, sessionLine(wrapped))).status == 200);
  }
  CHECK(b.waitForRequests(3, Ms(2000)));
  CHECK(a.requestCount() == 0);
  auto reqs = b.requests();
  REQUIRE(reqs.size() == 3);
  CHECK(reqs[1].headerValues("Mcp-Session-Id") == std::vector<std::string>{"sess-B"});
}
