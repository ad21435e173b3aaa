// client/request.h: the URL parser, percent and form encoding, the JSON and form bodies.

#include "gateway/client/request.h"

#include <catch.hpp>

#include <string>

namespace gw::client {
namespace {

TEST_CASE("client url: accepted forms", "[client]") {
  struct Case {
    const char* url;
    bool https;
    const char* host;
    uint16_t port;
    const char* target;
    const char* authority;
  };
  const Case cases[] = {
      {"https://idp.example/.well-known/jwks.json", true, "idp.example", 443,
       "/.well-known/jwks.json", "idp.example"},
      {"HTTP://127.0.0.1:8080", false, "127.0.0.1", 8080, "/", "127.0.0.1:8080"},
      {"http://h?x=1", false, "h", 80, "/?x=1", "h"},
      {"https://[::1]:8443/a#frag", true, "::1", 8443, "/a", "[::1]:8443"},
      {"https://[::1]/", true, "::1", 443, "/", "[::1]"},
      {"http://h:80/p", false, "h", 80, "/p", "h"},
  };
  for (const Case& c : cases) {
    INFO(c.url);
    Url u;
    std::string error;
    REQUIRE(parseUrl(c.url, u, error));
    CHECK(u.https == c.https);
    CHECK(u.host == c.host);
    CHECK(u.port == c.port);
    CHECK(u.target == c.target);
    CHECK(u.authority() == c.authority);
  }
}

TEST_CASE("client url: refused forms", "[client]") {
  for (const char* url : {"ftp://h/", "h/path", "https://", "https:///p", "https://u:p@h/",
                          "https://h:0/", "https://h:65536/", "https://h:/", "https://h:8x/",
                          "https://[::1/", "https://[::1]x/", "https://h/a b", "https://h/\r\n"}) {
    INFO(url);
    Url u;
    std::string error;
    CHECK_FALSE(parseUrl(url, u, error));
    CHECK(!error.empty());
  }
}

TEST_CASE("client: percent and form encoding", "[client]") {
  CHECK(percentEncode("a-b._~ /?&=+é") == "a-b._~%20%2F%3F%26%3D%2B%C3%A9");
  CHECK(formEncode({}) == "");
  CHECK(formEncode({{"grant_type", "urn:ietf:params:oauth:grant-type:token-exchange"},
                    {"scope", "read write"},
                    {"x", "*-._~!'()&=+%"}}) ==
        "grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange"
        "&scope=read+write&x=*-._%7E%21%27%28%29%26%3D%2B%25");
  CHECK(formEncode({{"", ""}, {"k", "\n"}}) == "=&k=%0A");
}

TEST_CASE("client: JSON and form bodies set the content type", "[client]") {
  Request r;
  r.setJson(R"({"a":1})");
  CHECK(r.body == R"({"a":1})");
  CHECK(r.content_type == "application/json");
  r.setForm({{"a", "b c"}});
  CHECK(r.body == "a=b+c");
  CHECK(r.content_type == "application/x-www-form-urlencoded");
}

TEST_CASE("client: error names", "[client]") {
  CHECK(std::string(errorName(Error::kTooLarge)) == "too_large");
  CHECK(std::string(errorName(Error::kBadResponse)) == "bad_response");
  CHECK(std::string(errorName(Error::kTimeout)) == "timeout");
}

}  // namespace
}  // namespace gw::client
