// http/whole_response: small responses the gateway fetches for itself (the JWKS): framing by
// Content-Length, chunked or the close, the limits, and Cache-Control max-age.

#include <catch.hpp>

#include <string>

#include "gateway/http/whole_response.h"

namespace gw::http {

TEST_CASE("whole response: Content-Length, chunked and close-delimited bodies") {
  struct Case {
    std::string bytes;
    bool eof;
    WholeResult result;
    int status;
    std::string body;
  };
  const Case cases[] = {
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, WholeResult::kDone, 200,
       "hello"},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", false, WholeResult::kNeedMore, 0, ""},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhel", true, WholeResult::kError, 0, ""},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n2\r\nlo\r\n0\r\n\r\n",
       false, WholeResult::kDone, 200, "hello"},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nhel\r\n", false,
       WholeResult::kNeedMore, 0, ""},
      {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}", false, WholeResult::kNeedMore,
       0, ""},
      {"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{}", true, WholeResult::kDone, 200,
       "{}"},
      {"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n", false, WholeResult::kDone, 404, ""},
      {"HTTP/1.1 204 No Content\r\n\r\n", false, WholeResult::kDone, 204, ""},
      {"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!", false,
       WholeResult::kError, 0, ""},
      {"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nTransfer-Encoding: chunked\r\n\r\n", false,
       WholeResult::kError, 0, ""},
      {"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", false, WholeResult::kError, 0, ""},
      {"HTTP/1.1 200 OK\r\nX: a\r\n folded\r\nContent-Length: 0\r\n\r\n", false,
       WholeResult::kError, 0, ""},
      {"HTTP/2 200\r\n\r\n", false, WholeResult::kError, 0, ""},
      {"HTTP/1.1 200 OK\r\nContent-Length: 2000000\r\n\r\n", false, WholeResult::kTooLarge, 0, ""},
      {"HTTP/1.1 200 OK\r\nContent-Len", true, WholeResult::kError, 0, ""},
  };
  for (const Case& c : cases) {
    INFO(c.bytes);
    WholeResponse out;
    std::string error;
    REQUIRE(readWholeResponse(c.bytes, c.eof, 16 * 1024, 1024 * 1024, out, error) == c.result);
    if (c.result == WholeResult::kDone) {
      CHECK(out.status == c.status);
      CHECK(out.body == c.body);
    } else if (c.result != WholeResult::kNeedMore) {
      CHECK(!error.empty());
    }
  }
}

TEST_CASE("whole response: fields lower-cased, head limit") {
  WholeResponse out;
  std::string error;
  REQUIRE(readWholeResponse("HTTP/1.1 200 OK\r\nCache-Control: public, max-age=60\r\n"
                            "Content-Length: 0\r\n\r\n",
                            false, 1024, 1024, out, error) == WholeResult::kDone);
  REQUIRE(out.field("cache-control") != nullptr);
  CHECK(*out.field("cache-control") == "public, max-age=60");
  CHECK(out.field("x-absent") == nullptr);
  CHECK(readWholeResponse("HTTP/1.1 200 OK\r\nX: " + std::string(2000, 'a'), false, 1024, 1024, out,
                          error) == WholeResult::kTooLarge);
}

TEST_CASE("whole response: consumed bytes, 1xx, HEAD") {
  WholeResponse out;
  std::string error;
  const std::string cl = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nhiHTTP/1.1";
  REQUIRE(readWholeResponse(cl, false, 1024, 1024, out, error) == WholeResult::kDone);
  CHECK(out.consumed == cl.size() - 8);
  const std::string ch =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\nX";
  REQUIRE(readWholeResponse(ch, false, 1024, 1024, out, error) == WholeResult::kDone);
  CHECK(out.body == "hi");
  CHECK(out.consumed == ch.size() - 1);
  const std::string cont = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n";
  REQUIRE(readWholeResponse(cont, false, 1024, 1024, out, error) == WholeResult::kDone);
  CHECK(out.status == 100);
  CHECK(out.consumed == 25);
  const std::string head = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n";
  REQUIRE(readWholeResponse(head, false, 1024, 1024, out, error, true) == WholeResult::kDone);
  CHECK(out.body.empty());
  CHECK(out.consumed == head.size());
}

TEST_CASE("whole response: Cache-Control max-age") {
  CHECK(cacheMaxAge("max-age=60") == 60);
  CHECK(cacheMaxAge("public, max-age=300, must-revalidate") == 300);
  CHECK(cacheMaxAge("Max-Age=\"45\"") == 45);
  CHECK(cacheMaxAge("no-cache") == std::nullopt);
  CHECK(cacheMaxAge("max-age=abc") == std::nullopt);
  CHECK(cacheMaxAge("max-age=-1") == std::nullopt);
}

}  // namespace gw::http
