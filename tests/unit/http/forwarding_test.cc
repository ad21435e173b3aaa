// Hop-by-hop filtering of forwarded fields.

#include <catch.hpp>

#include <string_view>
#include <vector>

#include "gateway/http/forwarding.h"
#include "gateway/http/parser.h"

namespace gw::http {
namespace {

TEST_CASE("isHopByHop knows the fixed set, case-insensitively", "[http][forwarding]") {
  for (std::string_view n :
       {"Connection", "keep-alive", "Proxy-Connection", "TE", "Trailer", "TRANSFER-ENCODING",
        "Upgrade", "Proxy-Authenticate", "proxy-authorization"}) {
    INFO(n);
    CHECK(isHopByHop(n));
  }
  for (std::string_view n : {"Host", "Content-Type", "Mcp-Method", "Authorization", "Trailers", "T",
                             "Connections", "X-Forwarded-For", ""}) {
    INFO(n);
    CHECK_FALSE(isHopByHop(n));
  }
}

TEST_CASE("request and response fields: hop-by-hop and Connection-named dropped",
          "[http][forwarding]") {
  const std::string_view data =
      "POST /mcp HTTP/1.1\r\n"
      "Host: a\r\n"
      "Connection: keep-alive, X-Secret ,x-other\r\n"
      "Connection: Upgrade\r\n"
      "Keep-Alive: timeout=5\r\n"
      "X-Secret: s\r\n"
      "x-other: o\r\n"
      "Upgrade: websocket\r\n"
      "TE: trailers\r\n"
      "Expect: 100-continue\r\n"
      "Content-Length: 2\r\n"
      "Mcp-Method: tools/call\r\n"
      "X-Forwarded-For: 10.0.0.1\r\n"
      "Proxy-Authorization: Basic x\r\n"
      "\r\n";
  auto parser = makeHttp1Parser();
  RequestHead head;
  REQUIRE(parser->parseRequest(data, HeadLimits{}, head).status == ParseStatus::kComplete);
  ConnectionTokens conn;
  conn.collect(head.fields);
  CHECK(conn.contains("x-secret"));
  CHECK(conn.contains("X-OTHER"));
  CHECK(conn.contains("upgrade"));
  CHECK_FALSE(conn.contains("host"));

  std::vector<std::string_view> kept;
  for (const HeaderField& f : head.fields) {
    if (forwardRequestField(f, conn)) {
      kept.push_back(f.name);
    }
  }
  CHECK(kept == std::vector<std::string_view>{"Host", "Mcp-Method", "X-Forwarded-For"});

  kept.clear();
  for (const HeaderField& f : head.fields) {
    if (forwardResponseField(f, conn)) {
      kept.push_back(f.name);
    }
  }
  // Expect is a request-only concern; Content-Length is rewritten on both sides.
  CHECK(kept == std::vector<std::string_view>{"Host", "Expect", "Mcp-Method", "X-Forwarded-For"});

  conn.clear();
  CHECK_FALSE(conn.contains("x-secret"));
}

TEST_CASE("response framing fields are never forwarded as-is", "[http][forwarding]") {
  const std::string_view data =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n"
      "Connection: close\r\n\r\n";
  auto parser = makeHttp1Parser();
  ResponseHead head;
  REQUIRE(parser->parseResponse(data, HeadLimits{}, "POST", head).status == ParseStatus::kComplete);
  ConnectionTokens conn;
  conn.collect(head.fields);
  std::vector<std::string_view> kept;
  for (const HeaderField& f : head.fields) {
    if (forwardResponseField(f, conn)) {
      kept.push_back(f.line);
    }
  }
  CHECK(kept == std::vector<std::string_view>{"Content-Type: text/event-stream"});
}

}  // namespace
}  // namespace gw::http
