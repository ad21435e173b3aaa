// http::copyHead: a head kept after the bytes it was parsed from are reused (the connection
// parses into a per-worker buffer; the exchange keeps a copy).

#include <catch.hpp>

#include <string>

#include "gateway/http/message.h"
#include "gateway/http/parser.h"

namespace {

using gw::http::RequestHead;

bool inside(std::string_view v, const std::string& storage) {
  return v.empty() ||
         (v.data() >= storage.data() && v.data() + v.size() <= storage.data() + storage.size());
}

}  // namespace

TEST_CASE("copyHead: every view of the copy points into its own storage", "[http][head]") {
  const char* heads[] = {
      "POST /mcp?x=1 HTTP/1.1\r\nHost: gw\r\nMcp-Method: tools/call\r\nContent-Length: 2\r\n\r\n{}",
      "\r\n\r\nGET http://gw.example/mcp HTTP/1.1\r\nHost: gw.example\r\n\r\n",
      "GET / HTTP/1.0\r\n\r\n",
      "DELETE /mcp HTTP/1.1\r\nHost: gw\r\nX-Empty:\r\nX-Spaces:   a b   \r\n\r\npipelined",
  };
  auto parser = gw::http::makeHttp1Parser();
  const gw::http::HeadLimits limits{8192, 65536, 100, 8192};
  for (const char* text : heads) {
    std::string bytes = text;
    RequestHead parsed;
    REQUIRE(parser->parseRequest(bytes, limits, parsed).status == gw::http::ParseStatus::kComplete);
    REQUIRE(parsed.raw.size() == parsed.head_bytes);

    std::string storage;
    RequestHead copy;
    copy.fields.resize(7);  // a reused head: its old fields are replaced
    gw::http::copyHead(parsed, storage, copy);
    const std::string method(parsed.method), target(parsed.target), path(parsed.path),
        host(parsed.host);
    bytes.assign(bytes.size(), '#');  // the parse buffer is reused for the next request

    CHECK(storage.size() == parsed.head_bytes);
    CHECK(copy.method == method);
    CHECK(copy.target == target);
    CHECK(copy.path == path);
    CHECK(copy.host == host);
    CHECK(copy.head_bytes == parsed.head_bytes);
    CHECK(copy.framing == parsed.framing);
    CHECK(copy.content_length == parsed.content_length);
    CHECK(copy.keep_alive == parsed.keep_alive);
    CHECK(copy.version == parsed.version);
    REQUIRE(copy.fields.size() == parsed.fields.size());
    for (const auto& f : copy.fields) {
      CHECK(inside(f.name, storage));
      CHECK(inside(f.value, storage));
      CHECK(inside(f.line, storage));
      CHECK(f.line.find(f.name) == 0);
    }
    for (std::string_view v : {copy.method, copy.target, copy.path, copy.host, copy.raw}) {
      CHECK(inside(v, storage));
    }
  }
}
