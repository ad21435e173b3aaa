// Issue 12 (edge hardening), HTTP-level classes through the real binary: Host and
// request-target rules (RFC 9112 §3.2), `_` aliases and Connection abuse (RFC 9110 §5.1,
// §7.6.1), two Authorization fields, strict chunk-size / chunk-ext (RFC 9112 §7.1), the
// field-line and Mcp-Param limits (spec item 62), CONNECT/TRACE/asterisk-form 405,
// mcp.allowed_hosts 403, and empty lines before a request line (RFC 9112 §2.2). Every rejected
// request is also shown never to reach the upstream.

#include <catch.hpp>

#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

const char kUpstreamJson[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

// Gateway YAML with extra lines under `limits:` and `mcp:`.
std::string edgeYaml(const RawUpstream& up, const std::string& limits_extra,
                     const std::string& mcp_extra) {
  GatewayConfig cfg;
  cfg.upstream_endpoints = {up.address()};
  std::string y = gatewayYaml(cfg);
  y.replace(y.find("limits:\n"), 8, "limits:\n" + limits_extra);
  y.replace(y.find("mcp:\n"), 5, "mcp:\n" + mcp_extra);
  return y;
}

// A full POST /mcp (tools/call echo) with `host_line` ("Host: x\r\n" or "") and `extra`.
std::string post(std::string_view target, std::string_view host_line, std::string_view extra,
                 std::string_view version = "HTTP/1.1") {
  const std::string body = toolsCallBody();
  std::string r = "POST " + std::string(target) + " " + std::string(version) + "\r\n";
  r += host_line;
  r += "Content-Type: application/json\r\n"
       "Accept: application/json, text/event-stream\r\n"
       "MCP-Protocol-Version: 2026-07-28\r\n"
       "Mcp-Method: tools/call\r\nMcp-Name: echo\r\n";
  r += extra;
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return r;
}

std::string chunkedPost(std::string_view framed_body) {
  std::string r =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\n"
      "MCP-Protocol-Version: 2026-07-28\r\n"
      "Mcp-Method: tools/call\r\nMcp-Name: echo\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  r += framed_body;
  return r;
}

struct Case {
  std::string name;
  std::string bytes;
  int status;
  bool json_rpc;  // a JSON-RPC error body (decided after the head parsed) or plain text
  bool closes;    // the gateway closes the connection after the answer
};

// Sends each case on a fresh connection and checks status, body kind and close.
void runCases(uint16_t port, const std::vector<Case>& cases) {
  for (const Case& tc : cases) {
    INFO("case: " << tc.name);
    Client c(port);
    REQUIRE(c.connected());
    REQUIRE(c.send(tc.bytes));
    auto r = c.readResponse(Ms(3000));
    REQUIRE(r);
    CHECK(r->status == tc.status);
    if (tc.json_rpc) {
      CHECK(r->header("Content-Type").value_or("") == "application/json");
      CHECK(r->body.find("\"jsonrpc\":\"2.0\"") != std::string::npos);
      CHECK(r->body.find("\"error\"") != std::string::npos);
    } else {
      CHECK(r->header("Content-Type").value_or("").find("text/plain") == 0);
    }
    if (tc.closes) {
      CHECK(r->header("Connection").value_or("") == "close");
      CHECK(c.waitClosed(Ms(2000)));
    }
  }
}

}  // namespace

TEST_CASE("edge-http: malformed Host, target, names, framing: 400/431 plain text, close",
          "[edge][edge-http]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson));
  Gateway gw(edgeYaml(up, "  max_header_line: 1KiB\n", ""));
  const std::string h = "Host: 127.0.0.1\r\n";
  const std::string body = toolsCallBody();
  std::vector<Case> cases = {
      // RFC 9112 §3.2 / RFC 9110 §7.2: Host
      {"missing Host", post("/mcp", "", ""), 400, false, true},
      {"two Host", post("/mcp", h + h, ""), 400, false, true},
      {"two Host differing case", post("/mcp", h + "host: 127.0.0.1\r\n", ""), 400, false, true},
      {"Host list", post("/mcp", "Host: 127.0.0.1, evil\r\n", ""), 400, false, true},
      {"Host userinfo", post("/mcp", "Host: u@127.0.0.1\r\n", ""), 400, false, true},
      {"empty Host", post("/mcp", "Host:\r\n", ""), 400, false, true},
      {"Host inner space", post("/mcp", "Host: 127.0.0.1 x\r\n", ""), 400, false, true},
      {"Host bad port", post("/mcp", "Host: 127.0.0.1:99999\r\n", ""), 400, false, true},
      {"Host bad char", post("/mcp", "Host: a/b\r\n", ""), 400, false, true},
      // RFC 9112 §3.2.2: absolute-form
      {"absolute-form other host", post("http://evil/mcp", h, ""), 400, false, true},
      {"absolute-form other port", post("http://127.0.0.1:81/mcp", h, ""), 400, false, true},
      {"absolute-form userinfo", post("http://u@127.0.0.1/mcp", h, ""), 400, false, true},
      {"absolute-form ftp", post("ftp://127.0.0.1/mcp", h, ""), 400, false, true},
      // RFC 9112 §3.2: fragment, NUL
      {"fragment", post("/mcp#x", h, ""), 400, false, true},
      {"fragment in query", post("/mcp?a#x", h, ""), 400, false, true},
      {"%00 in path", post("/mcp%00", h, ""), 400, false, true},
      {"%00 in query (the endpoint's: JSON-RPC)", post("/mcp?x=%00", h, ""), 400, true, true},
      {"authority-form POST", post("127.0.0.1:80", h, ""), 400, false, true},
      {"CONNECT origin-form", "CONNECT /mcp HTTP/1.1\r\n" + h + "\r\n", 400, false, true},
      // RFC 9110 §5.1: `_` aliases
      {"Content_Length", post("/mcp", h, "Content_Length: 1\r\n"), 400, false, true},
      {"Transfer_Encoding", post("/mcp", h, "Transfer_Encoding: chunked\r\n"), 400, false, true},
      {"Mcp_Method", post("/mcp", h, "Mcp_Method: tools/list\r\n"), 400, false, true},
      {"MCP_Protocol_Version", post("/mcp", h, "MCP_Protocol_Version: 1\r\n"), 400, false, true},
      {"Mcp_Param_X", post("/mcp", h, "Mcp_Param_X: 1\r\n"), 400, false, true},
      {"X_Forwarded_For", post("/mcp", h, "X_Forwarded_For: 1.2.3.4\r\n"), 400, false, true},
      // RFC 9110 §7.6.1: Connection naming protected fields
      {"Connection: Authorization", post("/mcp", h, "Connection: Authorization\r\n"), 400, false,
       true},
      {"Connection: Content-Length", post("/mcp", h, "Connection: close, Content-Length\r\n"), 400,
       false, true},
      {"Connection: Mcp-Method", post("/mcp", h, "Connection: Mcp-Method\r\n"), 400, false, true},
      {"Connection: X-Forwarded-For", post("/mcp", h, "Connection: X-Forwarded-For\r\n"), 400,
       false, true},
      {"Connection: Host", post("/mcp", h, "Connection: host\r\n"), 400, false, true},
      // two Authorization
      {"two Authorization (the endpoint's: JSON-RPC)",
       post("/mcp", h, "Authorization: Bearer a\r\nauthorization: Bearer b\r\n"), 400, true, true},
      {"two Authorization elsewhere",
       post("/other", h, "Authorization: Bearer a\r\nauthorization: Bearer b\r\n"), 400, false,
       true},
      // spec item 62: one field line over limits.max_header_line (1 KiB here)
      {"field line over max_header_line",
       post("/mcp", h, "X-Big: " + std::string(1100, 'v') + "\r\n"), 431, false, true},
      // RFC 9112 §2.2: only CRLF may precede the request line
      {"bare LF before request line", "\n" + post("/mcp", h, ""), 400, false, true},
      // RFC 9112 §7.1: chunk-size and chunk-ext
      {"chunk size with SP", chunkedPost("3 \r\nabc\r\n0\r\n\r\n"), 400, false, true},
      {"chunk size SP before ;", chunkedPost("3 ;a=b\r\nabc\r\n0\r\n\r\n"), 400, false, true},
      {"chunk size 0x", chunkedPost("0x3\r\nabc\r\n0\r\n\r\n"), 400, false, true},
      {"chunk size sign", chunkedPost("+3\r\nabc\r\n0\r\n\r\n"), 400, false, true},
      {"chunk size 17 digits", chunkedPost("00000000000000003\r\nabc\r\n0\r\n\r\n"), 400, false,
       true},
      {"chunk ext empty value", chunkedPost("3;a=\r\nabc\r\n0\r\n\r\n"), 400, false, true},
      {"chunk ext bad quoted-string", chunkedPost("3;a=\"b\x01\"\r\nabc\r\n0\r\n\r\n"), 400, false,
       true},
      {"chunk data bare LF", chunkedPost("3\r\nabc\n0\r\n\r\n"), 400, false, true},
      {"chunk ext over the budget",
       chunkedPost("1;" + std::string(3000, 'e') + "\r\nx\r\n1;" + std::string(3000, 'e') +
                   "\r\ny\r\n0\r\n\r\n"),
       400, false, true},
  };
  runCases(gw.port(), cases);
  // What the gateway would have forwarded is at the upstream once a marker is.
  REQUIRE(forwardMarker(gw.port(), up));
  CHECK(up.acceptCount() == 1);
  CHECK(up.requestCount() == 1);
}

// Issue 24 item 8: a raw non-ASCII byte or a percent-encoded CR/LF/NUL in the target is 400
// (it was 404), and two Authorization fields on the endpoint get a JSON-RPC 400 (it was plain
// text): on the MCP endpoint every gateway-made 4xx is JSON-RPC; elsewhere the malformed
// head's plain text. Never forwarded.
TEST_CASE("edge-http: flawed target bytes and two Authorization fields are 400, JSON-RPC on /mcp",
          "[edge][edge-http]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson));
  Gateway gw(edgeYaml(up, "", ""));
  const std::string h = "Host: 127.0.0.1\r\n";
  std::vector<Case> cases;
  struct Spelling {
    const char* name;
    const char* bytes;
  };
  const Spelling spellings[] = {
      {"%0d", "%0d"},
      {"%0D", "%0D"},
      {"%0a", "%0a"},
      {"%0A", "%0A"},
      {"%00", "%00"},
      {"%0d%0a", "%0d%0a"},
      {"0x80", "\x80"},
      {"0xff", "\xff"},
      {"UTF-8 2 bytes", "caf\xc3\xa9"},
      {"UTF-8 3 bytes", "\xe2\x82\xac"},
      {"UTF-8 4 bytes", "\xf0\x9f\x98\x80"},
  };
  for (const Spelling& sp : spellings) {
    const std::string b = sp.bytes;
    // In the endpoint's query: the endpoint's answer, JSON-RPC.
    cases.push_back(
        {std::string(sp.name) + " in the query", post("/mcp?x=" + b, h, ""), 400, true, true});
    cases.push_back({std::string(sp.name) + " as a query name", post("/mcp?" + b + "=1", h, ""),
                     400, true, true});
    // In the path: not the endpoint's path, so the plain text of a malformed head.
    cases.push_back(
        {std::string(sp.name) + " in the path", post("/mcp" + b, h, ""), 400, false, true});
    cases.push_back(
        {std::string(sp.name) + " mid path", post("/m" + b + "cp", h, ""), 400, false, true});
    cases.push_back({std::string(sp.name) + " in another path's query",
                     post("/other?x=" + b, h, ""), 400, false, true});
    cases.push_back({std::string(sp.name) + " absolute-form query",
                     post("http://127.0.0.1/mcp?x=" + b, h, ""), 400, true, true});
  }
  cases.push_back({"two Authorization",
                   post("/mcp", h, "Authorization: Bearer a\r\nAuthorization: Bearer a\r\n"), 400,
                   true, true});
  cases.push_back({"two Authorization, case differs, query",
                   post("/mcp?a=1", h, "authorization: Bearer a\r\nAUTHORIZATION: Basic b\r\n"),
                   400, true, true});
  runCases(gw.port(), cases);

  // The JSON-RPC answer names the rule, with id null and the gateway's -32600.
  Client c(gw.port());
  REQUIRE(c.connected());
  REQUIRE(c.send(post("/mcp?x=%0D%0A", h, "")));
  auto r = c.readResponse(Ms(3000));
  REQUIRE(r);
  CHECK(r->status == 400);
  CHECK(r->body.find("\"id\":null") != std::string::npos);
  CHECK(r->body.find("-32600") != std::string::npos);
  CHECK(r->body.find("encoded CR or LF in request target") != std::string::npos);

  // Clean targets, percent-encoded UTF-8 included, still pass.
  Client ok(gw.port());
  REQUIRE(ok.connected());
  REQUIRE(ok.send(post("/mcp?x=caf%C3%A9&y=%0e", h, "")));
  auto r2 = ok.readResponse(Ms(3000));
  REQUIRE(r2);
  CHECK(r2->status == 200);
  // Only the clean one went upstream: a marker is the next request there.
  REQUIRE(forwardMarker(gw.port(), up));
  CHECK(up.requestCount() == 2);
}

TEST_CASE("edge-http: CONNECT, TRACE and asterisk-form get 405 with Allow: POST, never forwarded",
          "[edge][edge-http]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson));
  const std::string legacy = GENERATE(std::string(""), std::string("  legacy: passthrough\n"));
  INFO("mcp extra: " << legacy);
  Gateway gw(edgeYaml(up, "", legacy));
  const std::string h = "Host: 127.0.0.1\r\n";
  std::vector<Case> cases = {
      {"CONNECT", "CONNECT 127.0.0.1:443 HTTP/1.1\r\nHost: 127.0.0.1:443\r\n\r\n", 405, true, true},
      {"TRACE", "TRACE /mcp HTTP/1.1\r\n" + h + "\r\n", 405, true, false},
      {"TRACE elsewhere", "TRACE /other HTTP/1.1\r\n" + h + "\r\n", 405, true, false},
      {"OPTIONS *", "OPTIONS * HTTP/1.1\r\n" + h + "\r\n", 405, true, false},
      {"GET *", "GET * HTTP/1.1\r\n" + h + "\r\n", 405, true, false},
      // The whole body came with the head: it is dropped unread and the connection goes on
      // (a body still to come closes it: edge_conn_test).
      {"POST *", post("*", h, ""), 405, true, false},
  };
  runCases(gw.port(), cases);
  for (const Case& tc : cases) {
    INFO(tc.name);
    Response r = fetch(gw.port(), tc.bytes);
    CHECK(r.header("Allow").value_or("") == "POST");
    CHECK(r.body.find("-31002") != std::string::npos);
  }
  // What the gateway would have forwarded is at the upstream once a marker is.
  REQUIRE(forwardMarker(gw.port(), up));
  CHECK(up.acceptCount() == 1);
  CHECK(up.requestCount() == 1);
}

TEST_CASE("edge-http: mcp.allowed_hosts 403 and mcp.max_param_headers 431 with JSON-RPC errors",
          "[edge][edge-http]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson));
  Gateway gw(edgeYaml(up, "",
                      "  allowed_hosts: [localhost, \"127.0.0.1\", \"[::1]:8080\", "
                      "\"*.good.example\"]\n  max_param_headers: 3\n"));
  std::string four_params;
  for (int i = 0; i < 4; ++i) {
    four_params += "Mcp-Param-P" + std::to_string(i) + ": =?base64?!!!?=\r\n";
  }
  // Each body comes whole with its head: dropped unread, the connection stays open.
  std::vector<Case> cases = {
      {"Host not listed", post("/mcp", "Host: evil.example\r\n", ""), 403, true, false},
      {"rebinding name", post("/mcp", "Host: localhost.evil.example\r\n", ""), 403, true, false},
      {"IPv6 wrong port", post("/mcp", "Host: [::1]:8081\r\n", ""), 403, true, false},
      {"IPv6 no port", post("/mcp", "Host: [::1]\r\n", ""), 403, true, false},
      {"glob base name", post("/mcp", "Host: good.example\r\n", ""), 403, true, false},
      {"HTTP/1.0 without Host", post("/mcp", "", "", "HTTP/1.0"), 403, true, true},
      {"403 for a GET", "GET /mcp HTTP/1.1\r\nHost: evil\r\n\r\n", 403, true, false},
      {"four Mcp-Param over 3", post("/mcp", "Host: localhost\r\n", four_params), 431, true, false},
  };
  runCases(gw.port(), cases);
  Response r = fetch(gw.port(), post("/mcp", "Host: evil.example\r\n", ""));
  CHECK(r.body.find("-31014") != std::string::npos);
  CHECK(r.body.find("evil") == std::string::npos);  // the Host is not echoed
  r = fetch(gw.port(), post("/mcp", "Host: localhost\r\n", four_params));
  CHECK(r.body.find("-31015") != std::string::npos);
  // What the gateway would have forwarded is at the upstream once a marker is.
  REQUIRE(forwardMarker(gw.port(), up));
  CHECK(up.requestCount() == 1);

  // Allowed spellings reach the upstream.
  const char* const good[] = {"localhost",  "LOCALHOST:9999", "127.0.0.1",           "127.0.0.1:1",
                              "[::1]:8080", "a.good.example", "A.B.GOOD.EXAMPLE:443"};
  std::string three_params;
  for (int i = 0; i < 3; ++i) {
    three_params += "Mcp-Param-P" + std::to_string(i) + ": v\r\n";
  }
  for (const char* host : good) {
    INFO(host);
    Response ok =
        fetch(gw.port(), post("/mcp", "Host: " + std::string(host) + "\r\n", three_params));
    CHECK(ok.status == 200);
  }
  CHECK(up.requestCount() == std::size(good) + 1);  // and the marker
}

TEST_CASE("edge-http: absolute-form goes upstream in origin-form, the authority picks nothing",
          "[edge][edge-http]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson));
  GatewayConfig cfg;
  cfg.upstream_endpoints = {up.address()};
  cfg.upstream_path = "/upstream/mcp";
  Gateway gw(cfg);
  struct Ok {
    std::string target;
    std::string host;
    std::string want_line;
  };
  const Ok cases[] = {
      {"http://127.0.0.1/mcp", "127.0.0.1", "POST /upstream/mcp HTTP/1.1"},
      {"HTTP://LOCALHOST:80/mcp?x=1", "localhost", "POST /upstream/mcp?x=1 HTTP/1.1"},
      {"https://a.example/mcp", "a.example:443", "POST /upstream/mcp HTTP/1.1"},
  };
  for (const Ok& c : cases) {
    INFO(c.target);
    Response r = fetch(gw.port(), post(c.target, "Host: " + c.host + "\r\n", ""));
    CHECK(r.status == 200);
  }
  REQUIRE(up.waitForRequests(std::size(cases), Ms(3000)));
  auto reqs = up.requests();
  REQUIRE(reqs.size() == std::size(cases));
  for (size_t i = 0; i < reqs.size(); ++i) {
    INFO(cases[i].target);
    CHECK(reqs[i].requestLine() == cases[i].want_line);
    // upstreams[].host_header defaults to `endpoint` (issue 13): the upstream gets the
    // endpoint's host:port, whatever authority the client named.
    CHECK(reqs[i].headerValues("host") == std::vector<std::string>{up.address()});
  }
  // The absolute-form's path is what the endpoint check sees.
  Response r = fetch(gw.port(), post("http://127.0.0.1/other", "Host: 127.0.0.1\r\n", ""));
  CHECK(r.status == 404);
  CHECK(up.requestCount() == std::size(cases));
}

TEST_CASE("edge-http: empty lines before a request line are skipped, pipelined too",
          "[edge][edge-http]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson));
  GatewayConfig cfg;
  cfg.upstream_endpoints = {up.address()};
  Gateway gw(cfg);
  const std::string one = mcpPost(toolsCallBody("echo", 1));
  const std::string two = mcpPost(toolsCallBody("echo", 2));
  {
    Client c(gw.port());
    // Before the first request, and between two pipelined requests in one write.
    REQUIRE(c.send("\r\n\r\n" + one + "\r\n" + two));
    auto r1 = c.readResponse();
    REQUIRE(r1);
    CHECK(r1->status == 200);
    auto r2 = c.readResponse();
    REQUIRE(r2);
    CHECK(r2->status == 200);
    // Empty lines arriving on their own, then a request, on the same connection.
    REQUIRE(c.send("\r\n"));
    std::this_thread::sleep_for(Ms(50));  // stays: the lines arrive on their own
    REQUIRE(c.send("\r\n" + one));
    auto r3 = c.readResponse();
    REQUIRE(r3);
    CHECK(r3->status == 200);
    CHECK_FALSE(c.peerClosed());
  }
  REQUIRE(up.waitForRequests(3, Ms(3000)));
  {
    // An endless stream of CRLFs is cut off: 400 and close once max_request_line is passed.
    Client c(gw.port());
    std::string crlfs;
    for (int i = 0; i < 5000; ++i) {
      crlfs += "\r\n";
    }
    REQUIRE(c.send(crlfs));
    auto r = c.readResponse(Ms(3000));
    REQUIRE(r);
    CHECK(r->status == 400);
    CHECK(c.waitClosed(Ms(2000)));
  }
  // The CRLFs made no request upstream: a marker is the next one there.
  REQUIRE(forwardMarker(gw.port(), up));
  CHECK(up.requestCount() == 4);
}

TEST_CASE(
    "edge-http: an HTTP/1.0 request without Host reaches the upstream with one (RFC 9112 3.2)",
    "[edge][edge-http]") {
  RawUpstream up(RawUpstream::respond(200, kUpstreamJson));
  Gateway gw(edgeYaml(up, "", ""));
  Response r = fetch(gw.port(), post("/mcp", "", "", "HTTP/1.0"));
  CHECK(r.status == 200);
  REQUIRE(up.waitForRequests(1, Ms(2000)));
  RecordedRequest req = up.requests().back();
  CHECK(req.requestLine() == "POST /mcp HTTP/1.1");
  CHECK(req.headerValues("host") == std::vector<std::string>{up.address()});
  // A Host the client sent is replaced by the endpoint's (host_header: endpoint, the default
  // since issue 13), never doubled. host_header: client is in session_test.cc.
  r = fetch(gw.port(), post("/mcp", "Host: client.example\r\n", "", "HTTP/1.0"));
  CHECK(r.status == 200);
  REQUIRE(up.waitForRequests(2, Ms(2000)));
  CHECK(up.requests().back().headerValues("host") == std::vector<std::string>{up.address()});
}
