// Http1Parser: request and response heads as tables of byte strings.

#include <catch.hpp>

#include <string>
#include <string_view>

#include "gateway/http/parser.h"

namespace gw::http {
namespace {

using namespace std::string_view_literals;

bool inside(std::string_view view, std::string_view data) {
  return view.empty() ||
         (view.data() >= data.data() && view.data() + view.size() <= data.data() + data.size());
}

struct RejectCase {
  const char* name;
  std::string_view head;
  ParseError error;
};

TEST_CASE("request heads that must be rejected", "[http][parser]") {
  const RejectCase cases[] = {
      {"CL and TE",
       "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
       "Transfer-Encoding: chunked\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"TE and CL",
       "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
       "Content-Length: 5\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"duplicate CL equal",
       "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
       "Content-Length: 5\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"duplicate CL differing",
       "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n"
       "content-length: 6\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"CL plus sign", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: +5\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"CL list", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1,1\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"CL negative", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: -1\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"CL empty", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: \r\n\r\n"sv,
       ParseError::kBadRequest},
      {"CL inner space", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 1 2\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"CL hex", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 0x5\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"CL 2^63", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775808\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"CL overflow",
       "POST / HTTP/1.1\r\nHost: a\r\n"
       "Content-Length: 99999999999999999999999\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"TE unknown", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip\r\n\r\n"sv,
       ParseError::kNotImplemented},
      {"TE identity", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: identity\r\n\r\n"sv,
       ParseError::kNotImplemented},
      {"TE list", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"TE chunked twice in list",
       "POST / HTTP/1.1\r\nHost: a\r\n"
       "Transfer-Encoding: chunked, chunked\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"TE repeated",
       "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n"
       "Transfer-Encoding: chunked\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"TE with parameter",
       "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked;x=1\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"TE empty", "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: \r\n\r\n"sv,
       ParseError::kBadRequest},
      {"HTTP/1.0 chunked", "POST / HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"obs-fold", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n c\r\n\r\n"sv, ParseError::kBadRequest},
      {"obs-fold tab", "GET / HTTP/1.1\r\nHost: a\r\nX-A: b\r\n\tc\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"space before colon", "GET / HTTP/1.1\r\nHost: a\r\nX-A : b\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"tab before colon", "GET / HTTP/1.1\r\nHost: a\r\nX-A\t: b\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"space before colon on CL", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length : 5\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"bare LF in field", "GET / HTTP/1.1\r\nHost: a\nX: b\r\n\r\n"sv, ParseError::kBadRequest},
      {"bare LF request line", "GET / HTTP/1.1\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"bare LF terminator", "GET / HTTP/1.1\r\nHost: a\r\n\n"sv, ParseError::kBadRequest},
      {"bare CR in value", "GET / HTTP/1.1\r\nHost: a\r\nX: b\rc\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"bare CR in name", "GET / HTTP/1.1\r\nHost: a\r\nX\r: b\r\n\r\n"sv, ParseError::kBadRequest},
      {"bare CR request line", "GET /\r HTTP/1.1\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"NUL in value", "GET / HTTP/1.1\r\nHost: a\r\nX: b\0c\r\n\r\n"sv, ParseError::kBadRequest},
      {"CTL in value", "GET / HTTP/1.1\r\nHost: a\r\nX: b\x01\r\n\r\n"sv, ParseError::kBadRequest},
      {"DEL in value", "GET / HTTP/1.1\r\nHost: a\r\nX: b\x7f\r\n\r\n"sv, ParseError::kBadRequest},
      {"empty name", "GET / HTTP/1.1\r\nHost: a\r\n: b\r\n\r\n"sv, ParseError::kBadRequest},
      {"non-token name", "GET / HTTP/1.1\r\nHost: a\r\nX(y): b\r\n\r\n"sv, ParseError::kBadRequest},
      {"non-ascii name", "GET / HTTP/1.1\r\nHost: a\r\nX\xc3\xa9: b\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"no colon", "GET / HTTP/1.1\r\nHost: a\r\nXY\r\n\r\n"sv, ParseError::kBadRequest},
      {"missing Host", "GET / HTTP/1.1\r\n\r\n"sv, ParseError::kBadRequest},
      {"duplicate Host", "GET / HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"duplicate Host 1.0", "GET / HTTP/1.0\r\nHost: a\r\nhost: b\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"method not token", "G(T / HTTP/1.1\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"empty method", " / HTTP/1.1\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"two spaces", "GET  / HTTP/1.1\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"trailing space", "GET / HTTP/1.1 \r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"double space before version", "GET /  HTTP/1.1\r\nHost: a\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"tab separator", "GET\t/ HTTP/1.1\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"no version", "GET /\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"HTTP/2.0", "GET / HTTP/2.0\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"HTTP/1.2", "GET / HTTP/1.2\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"lowercase version", "GET / http/1.1\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"CTL in target", "GET /a\x01 HTTP/1.1\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"DEL in target", "GET /a\x7f HTTP/1.1\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      // RFC 9112 §2.2 (issue 12): a leading CRLF is now skipped; a leading bare LF is not.
      {"leading bare LF", "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
      // RFC 9112 §3.2 (issue 12): an empty Host on HTTP/1.1 is rejected.
      {"empty Host", "GET / HTTP/1.1\r\nHost: \r\n\r\n"sv, ParseError::kBadRequest},
      {"unknown method (llhttp)", "FROB / HTTP/1.1\r\nHost: a\r\n\r\n"sv, ParseError::kBadRequest},
  };
  auto parser = makeHttp1Parser();
  RequestHead head;
  for (const RejectCase& c : cases) {
    INFO(c.name);
    const ParseResult r = parser->parseRequest(c.head, HeadLimits{}, head);
    CHECK(r.status == ParseStatus::kError);
    CHECK(r.error == c.error);
    CHECK(std::string_view(r.reason).size() > 0);
  }
}

TEST_CASE("statusFor maps parse errors to HTTP status", "[http][parser]") {
  CHECK(statusFor(ParseError::kBadRequest) == 400);
  CHECK(statusFor(ParseError::kUriTooLong) == 414);
  CHECK(statusFor(ParseError::kHeadTooLarge) == 431);
  CHECK(statusFor(ParseError::kTooManyFields) == 431);
  CHECK(statusFor(ParseError::kNotImplemented) == 501);
}

struct AcceptCase {
  const char* name;
  std::string_view head;
  std::string_view method;
  std::string_view target;
  std::string_view path;
  Version version;
  BodyFraming framing;
  uint64_t content_length;
  bool keep_alive;
  bool expect_continue;
  std::string_view host;
  size_t fields;
};

TEST_CASE("valid request heads", "[http][parser]") {
  using V = Version;
  using F = BodyFraming;
  const AcceptCase cases[] = {
      {"simple GET", "GET / HTTP/1.1\r\nHost: example.com\r\n\r\n"sv, "GET", "/", "/", V::kHttp11,
       F::kNone, 0, true, false, "example.com", 1},
      {"POST with CL", "POST /mcp HTTP/1.1\r\nHost: a:8080\r\nContent-Length: 42\r\n\r\n"sv, "POST",
       "/mcp", "/mcp", V::kHttp11, F::kContentLength, 42, true, false, "a:8080", 2},
      {"CL zero", "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 0\r\n\r\n"sv, "POST", "/mcp",
       "/mcp", V::kHttp11, F::kContentLength, 0, true, false, "a", 2},
      {"CL max", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 9223372036854775807\r\n\r\n"sv,
       "POST", "/", "/", V::kHttp11, F::kContentLength, 9223372036854775807ULL, true, false, "a",
       2},
      {"CL leading zeros", "POST / HTTP/1.1\r\nHost: a\r\nContent-Length: 007\r\n\r\n"sv, "POST",
       "/", "/", V::kHttp11, F::kContentLength, 7, true, false, "a", 2},
      {"chunked", "POST /mcp HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"sv, "POST",
       "/mcp", "/mcp", V::kHttp11, F::kChunked, 0, true, false, "a", 2},
      {"chunked mixed case",
       "POST /mcp HTTP/1.1\r\nhost: a\r\ntransfer-encoding: ChUnKeD\r\n\r\n"sv, "POST", "/mcp",
       "/mcp", V::kHttp11, F::kChunked, 0, true, false, "a", 2},
      {"1.1 close", "GET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n"sv, "GET", "/", "/",
       V::kHttp11, F::kNone, 0, false, false, "a", 2},
      {"1.1 close in list", "GET / HTTP/1.1\r\nHost: a\r\nConnection: x-foo ,  CLOSE\r\n\r\n"sv,
       "GET", "/", "/", V::kHttp11, F::kNone, 0, false, false, "a", 2},
      {"1.1 keep-alive", "GET / HTTP/1.1\r\nHost: a\r\nConnection: keep-alive\r\n\r\n"sv, "GET",
       "/", "/", V::kHttp11, F::kNone, 0, true, false, "a", 2},
      {"1.0 default close", "GET / HTTP/1.0\r\n\r\n"sv, "GET", "/", "/", V::kHttp10, F::kNone, 0,
       false, false, "", 0},
      {"1.0 keep-alive", "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n"sv, "GET", "/", "/",
       V::kHttp10, F::kNone, 0, true, false, "", 1},
      {"1.0 keep-alive and close", "GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n"sv,
       "GET", "/", "/", V::kHttp10, F::kNone, 0, false, false, "", 1},
      {"1.0 POST CL", "POST /x HTTP/1.0\r\nHost: h\r\nContent-Length: 3\r\n\r\n"sv, "POST", "/x",
       "/x", V::kHttp10, F::kContentLength, 3, false, false, "h", 2},
      // Issue 12: absolute-form must name the Host's authority (was Host: e, now rejected).
      {"absolute-form",
       "GET http://example.com:80/mcp/a?x=1 HTTP/1.1\r\nHost: example.com\r\n\r\n"sv, "GET",
       "http://example.com:80/mcp/a?x=1", "/mcp/a", V::kHttp11, F::kNone, 0, true, false,
       "example.com", 1},
      {"absolute-form no path", "GET http://example.com HTTP/1.1\r\nHost: example.com\r\n\r\n"sv,
       "GET", "http://example.com", "", V::kHttp11, F::kNone, 0, true, false, "example.com", 1},
      {"query string", "POST /mcp?session=1&b=%20 HTTP/1.1\r\nHost: a\r\n\r\n"sv, "POST",
       "/mcp?session=1&b=%20", "/mcp", V::kHttp11, F::kNone, 0, true, false, "a", 1},
      {"asterisk-form", "OPTIONS * HTTP/1.1\r\nHost: a\r\n\r\n"sv, "OPTIONS", "*", "*", V::kHttp11,
       F::kNone, 0, true, false, "a", 1},
      {"expect",
       "POST / HTTP/1.1\r\nHost: a\r\nExpect: 100-Continue\r\nContent-Length: 1\r\n\r\n"sv, "POST",
       "/", "/", V::kHttp11, F::kContentLength, 1, true, true, "a", 3},
      {"empty values and OWS", "GET / HTTP/1.1\r\nHost:a\r\nX-Empty:\r\nX-Ows: \t \r\n\r\n"sv,
       "GET", "/", "/", V::kHttp11, F::kNone, 0, true, false, "a", 3},
      {"empty Host on HTTP/1.0", "GET / HTTP/1.0\r\nHost: \r\n\r\n"sv, "GET", "/", "/", V::kHttp10,
       F::kNone, 0, false, false, "", 1},
      {"obs-text value", "GET / HTTP/1.1\r\nHost: a\r\nX: caf\xc3\xa9\r\n\r\n"sv, "GET", "/", "/",
       V::kHttp11, F::kNone, 0, true, false, "a", 2},
  };
  auto parser = makeHttp1Parser();
  RequestHead head;
  for (const AcceptCase& c : cases) {
    INFO(c.name);
    const ParseResult r = parser->parseRequest(c.head, HeadLimits{}, head);
    REQUIRE(r.status == ParseStatus::kComplete);
    CHECK(r.error == ParseError::kNone);
    CHECK(head.method == c.method);
    CHECK(head.target == c.target);
    CHECK(head.path == c.path);
    CHECK(head.version == c.version);
    CHECK(head.framing == c.framing);
    CHECK(head.content_length == c.content_length);
    CHECK(head.keep_alive == c.keep_alive);
    CHECK(head.expect_continue == c.expect_continue);
    CHECK(head.host == c.host);
    CHECK(head.fields.size() == c.fields);
    CHECK(head.head_bytes == c.head.size());
    CHECK(inside(head.method, c.head));
    CHECK(inside(head.target, c.head));
    CHECK(inside(head.path, c.head));
    CHECK(inside(head.host, c.head));
    for (const HeaderField& f : head.fields) {
      CHECK(inside(f.name, c.head));
      CHECK(inside(f.value, c.head));
      CHECK(inside(f.line, c.head));
    }
  }
}

TEST_CASE("field views: names as sent, values OWS-trimmed, raw lines", "[http][parser]") {
  const std::string_view data =
      "POST /mcp HTTP/1.1\r\nHOST: a\r\nmcp-Method:  \ttools/call \t\r\nX-Empty:\r\n"
      "X-Inner: a  b\r\n\r\n";
  auto parser = makeHttp1Parser();
  RequestHead head;
  REQUIRE(parser->parseRequest(data, HeadLimits{}, head).status == ParseStatus::kComplete);
  REQUIRE(head.fields.size() == 4);
  CHECK(head.fields[0].name == "HOST");
  CHECK(head.fields[1].name == "mcp-Method");
  CHECK(head.fields[1].value == "tools/call");
  CHECK(head.fields[1].line == "mcp-Method:  \ttools/call \t");
  CHECK(head.fields[2].value.empty());
  CHECK(head.fields[2].line == "X-Empty:");
  CHECK(head.fields[3].value == "a  b");
  REQUIRE(findField(head.fields, "MCP-METHOD") != nullptr);
  CHECK(findField(head.fields, "mcp-method")->value == "tools/call");
  CHECK(findField(head.fields, "Mcp-Name") == nullptr);
  CHECK(countFields(head.fields, "x-empty") == 1);
  CHECK(countFields(head.fields, "x-missing") == 0);
}

TEST_CASE("pipelined requests: head_bytes points at the next request", "[http][parser]") {
  const std::string first = "POST /mcp HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\n\r\n";
  const std::string second = "GET /two HTTP/1.1\r\nHost: b\r\n\r\n";
  const std::string data = first + "hello" + second;
  auto parser = makeHttp1Parser();
  RequestHead head;
  REQUIRE(parser->parseRequest(data, HeadLimits{}, head).status == ParseStatus::kComplete);
  REQUIRE(head.head_bytes == first.size());
  CHECK(data.substr(head.head_bytes, head.content_length) == "hello");
  const std::string_view rest = std::string_view(data).substr(head.head_bytes + 5);
  REQUIRE(parser->parseRequest(rest, HeadLimits{}, head).status == ParseStatus::kComplete);
  CHECK(head.target == "/two");
  CHECK(head.host == "b");
  CHECK(head.head_bytes == second.size());

  // Two body-less heads back to back in one buffer.
  const std::string twice = second + second;
  REQUIRE(parser->parseRequest(twice, HeadLimits{}, head).status == ParseStatus::kComplete);
  CHECK(head.head_bytes == second.size());
}

TEST_CASE("every prefix of a valid head is incomplete", "[http][parser]") {
  const std::string_view heads[] = {
      "POST /mcp?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 5\r\nX-Empty:\r\n\r\n",
      "GET / HTTP/1.0\r\n\r\n",
      "POST / HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n",
  };
  auto parser = makeHttp1Parser();
  RequestHead head;
  for (std::string_view full : heads) {
    for (size_t n = 0; n < full.size(); ++n) {
      INFO(full << " prefix " << n);
      const ParseResult r = parser->parseRequest(full.substr(0, n), HeadLimits{}, head);
      CHECK(r.status == ParseStatus::kIncomplete);
    }
    CHECK(parser->parseRequest(full, HeadLimits{}, head).status == ParseStatus::kComplete);
  }
}

TEST_CASE("request line limit: exactly at the limit passes, one more is 414", "[http][parser]") {
  HeadLimits limits;
  limits.max_request_line = 64;
  auto parser = makeHttp1Parser();
  RequestHead head;
  const auto lineOf = [](size_t len) {
    // "GET /aaa... HTTP/1.1" of exactly len bytes.
    return "GET /" + std::string(len - 14, 'a') + " HTTP/1.1";
  };
  const std::string ok = lineOf(64) + "\r\nHost: a\r\n\r\n";
  REQUIRE(parser->parseRequest(ok, limits, head).status == ParseStatus::kComplete);
  CHECK(head.target.size() == 64 - 13);

  const std::string over = lineOf(65) + "\r\nHost: a\r\n\r\n";
  ParseResult r = parser->parseRequest(over, limits, head);
  CHECK(r.status == ParseStatus::kError);
  CHECK(r.error == ParseError::kUriTooLong);

  // Decided before the line ends: max_request_line + 2 bytes without LF.
  r = parser->parseRequest(std::string_view(over).substr(0, 66), limits, head);
  CHECK(r.error == ParseError::kUriTooLong);
  r = parser->parseRequest(std::string_view(over).substr(0, 65), limits, head);
  CHECK(r.status == ParseStatus::kIncomplete);
}

TEST_CASE("head size limit: exactly at the limit passes, one more is 431", "[http][parser]") {
  const std::string base = "GET / HTTP/1.1\r\nHost: a\r\nX-Pad: ";
  const std::string ok = base + std::string(100, 'p') + "\r\n\r\n";
  HeadLimits limits;
  limits.max_head_bytes = ok.size();
  auto parser = makeHttp1Parser();
  RequestHead head;
  REQUIRE(parser->parseRequest(ok, limits, head).status == ParseStatus::kComplete);
  CHECK(head.head_bytes == limits.max_head_bytes);
  // Body bytes after a head at the limit do not count.
  REQUIRE(parser->parseRequest(ok + "GET", limits, head).status == ParseStatus::kComplete);

  const std::string over = base + std::string(101, 'p') + "\r\n\r\n";
  ParseResult r = parser->parseRequest(over, limits, head);
  CHECK(r.status == ParseStatus::kError);
  CHECK(r.error == ParseError::kHeadTooLarge);
  // Not decidable until max_head_bytes + 1 bytes have arrived.
  r = parser->parseRequest(std::string_view(over).substr(0, limits.max_head_bytes), limits, head);
  CHECK(r.status == ParseStatus::kIncomplete);
  r = parser->parseRequest(std::string_view(over).substr(0, limits.max_head_bytes + 1), limits,
                           head);
  CHECK(r.error == ParseError::kHeadTooLarge);
}

TEST_CASE("field count limit: exactly at the limit passes, one more is 431", "[http][parser]") {
  HeadLimits limits;
  limits.max_fields = 5;
  std::string ok = "GET / HTTP/1.1\r\nHost: a\r\n";
  for (int i = 0; i < 4; ++i) {
    ok += "X-" + std::to_string(i) + ": v\r\n";
  }
  auto parser = makeHttp1Parser();
  RequestHead head;
  REQUIRE(parser->parseRequest(ok + "\r\n", limits, head).status == ParseStatus::kComplete);
  CHECK(head.fields.size() == 5);
  const ParseResult r = parser->parseRequest(ok + "X-5: v\r\n\r\n", limits, head);
  CHECK(r.status == ParseStatus::kError);
  CHECK(r.error == ParseError::kTooManyFields);
  CHECK(statusFor(r.error) == 431);
}

TEST_CASE("a parser is reusable after an error", "[http][parser]") {
  auto parser = makeHttp1Parser();
  RequestHead head;
  CHECK(parser->parseRequest("GET / HTTP/1.1\r\nHost: a\r\nX : y\r\n\r\n"sv, HeadLimits{}, head)
            .status == ParseStatus::kError);
  REQUIRE(
      parser->parseRequest("GET /ok HTTP/1.1\r\nHost: a\r\n\r\n"sv, HeadLimits{}, head).status ==
      ParseStatus::kComplete);
  CHECK(head.target == "/ok");
  CHECK(head.fields.size() == 1);
}

// ---- responses ----

struct ResponseCase {
  const char* name;
  std::string_view head;
  std::string_view method;
  int status;
  std::string_view reason;
  BodyFraming framing;
  uint64_t content_length;
  bool keep_alive;
};

TEST_CASE("valid response heads and their framing", "[http][parser]") {
  using F = BodyFraming;
  const ResponseCase cases[] = {
      {"200 CL", "HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n"sv, "POST", 200, "OK",
       F::kContentLength, 12, true},
      {"200 chunked",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
       "Content-Type: text/event-stream\r\n\r\n"sv,
       "POST", 200, "OK", F::kChunked, 0, true},
      {"until close", "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n"sv, "POST", 200,
       "OK", F::kUntilClose, 0, false},
      {"1.0 until close", "HTTP/1.0 200 OK\r\n\r\n"sv, "GET", 200, "OK", F::kUntilClose, 0, false},
      {"1.0 CL keep-alive",
       "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\n"sv, "GET", 200, "OK",
       F::kContentLength, 1, true},
      {"1.0 CL", "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\n"sv, "GET", 200, "OK",
       F::kContentLength, 1, false},
      {"close", "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n"sv, "POST", 200,
       "OK", F::kContentLength, 2, false},
      {"204", "HTTP/1.1 204 No Content\r\n\r\n"sv, "DELETE", 204, "No Content", F::kNone, 0, true},
      {"304 with CL", "HTTP/1.1 304 Not Modified\r\nContent-Length: 50\r\n\r\n"sv, "GET", 304,
       "Not Modified", F::kNone, 0, true},
      {"HEAD with CL", "HTTP/1.1 200 OK\r\nContent-Length: 50\r\n\r\n"sv, "HEAD", 200, "OK",
       F::kNone, 0, true},
      {"HEAD chunked", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"sv, "HEAD", 200, "OK",
       F::kNone, 0, true},
      {"202 CL 0", "HTTP/1.1 202 Accepted\r\nContent-Length: 0\r\n\r\n"sv, "POST", 202, "Accepted",
       F::kContentLength, 0, true},
      {"100 continue", "HTTP/1.1 100 Continue\r\n\r\n"sv, "POST", 100, "Continue", F::kNone, 0,
       true},
      {"no reason", "HTTP/1.1 200\r\nContent-Length: 0\r\n\r\n"sv, "POST", 200, "",
       F::kContentLength, 0, true},
      {"empty reason", "HTTP/1.1 404 \r\nContent-Length: 0\r\n\r\n"sv, "POST", 404, "",
       F::kContentLength, 0, true},
      {"reason with spaces", "HTTP/1.1 500 Internal  Server Error\r\nContent-Length: 0\r\n\r\n"sv,
       "POST", 500, "Internal  Server Error", F::kContentLength, 0, true},
  };
  auto parser = makeHttp1Parser();
  ResponseHead head;
  for (const ResponseCase& c : cases) {
    INFO(c.name);
    const ParseResult r = parser->parseResponse(c.head, HeadLimits{}, c.method, head);
    REQUIRE(r.status == ParseStatus::kComplete);
    CHECK(head.status == c.status);
    CHECK(head.reason == c.reason);
    CHECK(head.framing == c.framing);
    CHECK(head.content_length == c.content_length);
    CHECK(head.keep_alive == c.keep_alive);
    CHECK(head.head_bytes == c.head.size());
    for (size_t n = 0; n < c.head.size(); ++n) {
      INFO("prefix " << n);
      CHECK(parser->parseResponse(c.head.substr(0, n), HeadLimits{}, c.method, head).status ==
            ParseStatus::kIncomplete);
    }
  }
}

TEST_CASE("100 Continue interim head, then the final head", "[http][parser]") {
  const std::string data =
      "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  auto parser = makeHttp1Parser();
  ResponseHead head;
  REQUIRE(parser->parseResponse(data, HeadLimits{}, "POST", head).status == ParseStatus::kComplete);
  CHECK(head.status == 100);
  CHECK(head.framing == BodyFraming::kNone);
  const std::string_view rest = std::string_view(data).substr(head.head_bytes);
  REQUIRE(parser->parseResponse(rest, HeadLimits{}, "POST", head).status == ParseStatus::kComplete);
  CHECK(head.status == 200);
  CHECK(head.framing == BodyFraming::kContentLength);
  CHECK(rest.substr(head.head_bytes) == "ok");
}

TEST_CASE("response heads that must be rejected", "[http][parser]") {
  const RejectCase cases[] = {
      {"CL and TE", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"duplicate CL", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"CL malformed", "HTTP/1.1 200 OK\r\nContent-Length: 5x\r\n\r\n"sv, ParseError::kBadRequest},
      {"TE unknown", "HTTP/1.1 200 OK\r\nTransfer-Encoding: br\r\n\r\n"sv,
       ParseError::kNotImplemented},
      {"1.0 chunked", "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"sv,
       ParseError::kBadRequest},
      {"obs-fold", "HTTP/1.1 200 OK\r\nX: a\r\n b\r\n\r\n"sv, ParseError::kBadRequest},
      {"space before colon", "HTTP/1.1 200 OK\r\nX : a\r\n\r\n"sv, ParseError::kBadRequest},
      {"bare LF", "HTTP/1.1 200 OK\nX: a\r\n\r\n"sv, ParseError::kBadRequest},
      {"NUL", "HTTP/1.1 200 OK\r\nX: a\0\r\n\r\n"sv, ParseError::kBadRequest},
      {"two-digit status", "HTTP/1.1 20 OK\r\n\r\n"sv, ParseError::kBadRequest},
      {"four-digit status", "HTTP/1.1 2000 OK\r\n\r\n"sv, ParseError::kBadRequest},
      {"status 099", "HTTP/1.1 099 X\r\n\r\n"sv, ParseError::kBadRequest},
      {"HTTP/2", "HTTP/2.0 200 OK\r\n\r\n"sv, ParseError::kBadRequest},
      {"not HTTP", "ICY 200 OK\r\n\r\n"sv, ParseError::kBadRequest},
      {"CTL in reason", "HTTP/1.1 200 O\x01K\r\n\r\n"sv, ParseError::kBadRequest},
  };
  auto parser = makeHttp1Parser();
  ResponseHead head;
  for (const RejectCase& c : cases) {
    INFO(c.name);
    const ParseResult r = parser->parseResponse(c.head, HeadLimits{}, "GET", head);
    CHECK(r.status == ParseStatus::kError);
    CHECK(r.error == c.error);
  }
}

TEST_CASE("response head limits", "[http][parser]") {
  HeadLimits limits;
  limits.max_fields = 1;
  auto parser = makeHttp1Parser();
  ResponseHead head;
  CHECK(parser->parseResponse("HTTP/1.1 200 OK\r\nA: 1\r\n\r\n"sv, limits, "GET", head).status ==
        ParseStatus::kComplete);
  CHECK(parser->parseResponse("HTTP/1.1 200 OK\r\nA: 1\r\nB: 2\r\n\r\n"sv, limits, "GET", head)
            .error == ParseError::kTooManyFields);
  limits = HeadLimits{};
  limits.max_head_bytes = 19;
  CHECK(parser->parseResponse("HTTP/1.1 200 OK\r\n\r\n"sv, limits, "GET", head).status ==
        ParseStatus::kComplete);
  CHECK(parser->parseResponse("HTTP/1.1 200 OKK\r\n\r\n"sv, limits, "GET", head).error ==
        ParseError::kHeadTooLarge);
}

}  // namespace
}  // namespace gw::http
