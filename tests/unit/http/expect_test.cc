// http::expectation — RFC 9110 §10.1.1: only 100-continue is understood (issue 12 item 5).

#include <catch.hpp>

#include <string>
#include <string_view>

#include "gateway/http/message.h"
#include "gateway/http/parser.h"

namespace gw::http {
namespace {

Expectation of(std::string_view fields, std::string_view version = "HTTP/1.1") {
  static std::string data;
  data = "POST /mcp " + std::string(version) + "\r\nHost: a\r\n" + std::string(fields) + "\r\n";
  static RequestHead head;
  auto parser = makeHttp1Parser();
  REQUIRE(parser->parseRequest(data, HeadLimits{}, head).status == ParseStatus::kComplete);
  return expectation(head.fields, head.version);
}

TEST_CASE("expect: 100-continue in any case, once, on HTTP/1.1 (RFC 9110 10.1.1)",
          "[http][expect][edge]") {
  CHECK(of("") == Expectation::kNone);
  for (std::string_view v : {"100-continue", "100-Continue", "100-CONTINUE", "  100-continue  "}) {
    INFO(v);
    CHECK(of("Expect: " + std::string(v) + "\r\n") == Expectation::kContinue);
    CHECK(of("expect: " + std::string(v) + "\r\n") == Expectation::kContinue);
  }
  // HTTP/1.0: a server MUST ignore a 100-continue expectation.
  CHECK(of("Expect: 100-continue\r\n", "HTTP/1.0") == Expectation::kNone);
}

TEST_CASE("expect: anything else is 417, whatever the version (RFC 9110 10.1.1)",
          "[http][expect][edge]") {
  for (std::string_view f : {
           "Expect: foo\r\n",
           "Expect: 100-continue, foo\r\n",
           "Expect: foo, 100-continue\r\n",
           "Expect: 100-continue,\r\n",
           "Expect: 100-continue;x=1\r\n",
           "Expect: 100-continues\r\n",
           "Expect: 200-ok\r\n",
           "Expect: 100 continue\r\n",
           "Expect:\r\n",
           "Expect: \"100-continue\"\r\n",
           "Expect: 100-continue\r\nExpect: 100-continue\r\n",
           "Expect: 100-continue\r\nexpect: foo\r\n",
       }) {
    INFO(f);
    CHECK(of(f) == Expectation::kUnsupported);
    CHECK(of(f, "HTTP/1.0") == Expectation::kUnsupported);
  }
}

}  // namespace
}  // namespace gw::http

TEST_CASE("queryHasParam: every spelling of a parameter name, nothing else", "[http]") {
  using gw::http::queryHasParam;
  for (std::string_view t :
       {"/mcp?access_token=abc", "/mcp?x=1&access_token=abc", "/mcp?x=1;access_token",
        "/mcp?access%5Ftoken=abc", "/mcp?access%5ftoken=", "/mcp?%61ccess_token=1",
        "/mcp?a=1&&access_token=2#frag", "https://gw.test/mcp?access_token=1"}) {
    CAPTURE(t);
    CHECK(queryHasParam(t, "access_token"));
  }
  for (std::string_view t :
       {"/mcp", "/mcp?", "/mcp?access_tokens=1", "/mcp?xaccess_token=1", "/mcp?ACCESS_TOKEN=1",
        "/mcp?x=access_token", "/mcp#?access_token=1", "/mcp?x=1#&access_token=1",
        "/mcp?access%5Gtoken=1", "/mcp?access%5", "/mcp?access_token%", "/access_token"}) {
    CAPTURE(t);
    CHECK_FALSE(queryHasParam(t, "access_token"));
  }
  CHECK(queryHasParam("/mcp?a+b=1", "a b"));
}
