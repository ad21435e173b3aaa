// client::HttpClient against a fake HTTP/1.1 server in this process (127.0.0.1, port 0, on the
// same event loop; plain or TLS with a CA made at test time by the openssl CLI). Every loop is
// bounded in turns and time.

#include "gateway/client/http_client.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch.hpp>
#include <chrono>
#include <optional>
#include <string>

#include "gateway/event/dns.h"
#include "gateway/event/owners.h"
#include "tests/unit/client/fake_server.h"

namespace gw::client {
namespace {

using namespace std::chrono_literals;
using test::certs;
using test::FakeServer;
using test::runFor;
using test::runUntil;

// A loop, a resolver that knows only the test hosts file, and a client on them.
struct Rig {
  Rig() : Rig(HttpClient::Options{}) {}
  explicit Rig(HttpClient::Options options) {
    base.reset(event_base_new());
    REQUIRE(base != nullptr);
    dns.reset(evdns_base_new(base.get(), 0));
    REQUIRE(dns != nullptr);
    REQUIRE(evdns_base_load_hosts(dns.get(), certs().file("hosts").c_str()) == 0);
    http = std::make_unique<HttpClient>(base.get(), dns.get(), options);
  }
  ~Rig() { http.reset(); }

  // Sends `req` and runs the loop until its callback ran; the result.
  Result fetch(Request req) {
    std::optional<Result> got;
    int calls = 0;
    http->send(std::move(req), [&](Result&& r) {
      ++calls;
      got = std::move(r);
    });
    REQUIRE(runUntil(base.get(), [&] { return got.has_value(); }));
    runFor(base.get(), 20ms);  // a second call would show here
    CHECK(calls == 1);
    return std::move(*got);
  }

  event::BasePtr base;
  event::DnsBasePtr dns;
  std::unique_ptr<HttpClient> http;
};

Request get(const std::string& url) {
  Request r;
  r.url = url;
  r.total_timeout = 3000ms;
  return r;
}

TEST_CASE("client: GET with a Content-Length answer", "[client]") {
  Rig rig;
  FakeServer srv(rig.base.get());
  srv.answer = [](const std::string&) {
    return std::string(
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-Thing:  a b \r\n"
        "Content-Length: 11\r\n\r\n{\"ok\":true}");
  };
  Request req = get(srv.url("/p/a?x=1"));
  req.headers = {{"Accept", "application/json"}, {"Authorization", "Bearer t"}};
  Result r = rig.fetch(std::move(req));
  REQUIRE(r.ok());
  CHECK(r.response.status == 200);
  CHECK(r.response.body == R"({"ok":true})");
  REQUIRE(r.response.header("x-thing") != nullptr);
  CHECK(*r.response.header("x-thing") == "a b");
  REQUIRE(srv.seen.size() == 1);
  const std::string& sent = srv.seen[0].request;
  CHECK(sent.starts_with("GET /p/a?x=1 HTTP/1.1\r\nHost: 127.0.0.1:" + std::to_string(srv.port()) +
                         "\r\n"));
  CHECK(sent.find("\r\nAccept: application/json\r\n") != std::string::npos);
  CHECK(sent.find("\r\nAuthorization: Bearer t\r\n") != std::string::npos);
  CHECK(sent.find("\r\nUser-Agent: mcp-gateway\r\n") != std::string::npos);
  CHECK(sent.find("\r\nConnection: close\r\n") != std::string::npos);
  CHECK(sent.find("Content-Length") == std::string::npos);
  CHECK(rig.http->inFlight() == 0);
  CHECK(rig.http->idleConnections() == 0);
}

TEST_CASE("client: POST JSON and form bodies", "[client]") {
  Rig rig;
  FakeServer srv(rig.base.get());
  srv.answer = [](const std::string&) {
    return std::string("HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n");
  };
  Request req = get(srv.url("/token"));
  req.method = "POST";
  SECTION("JSON") {
    req.setJson(R"({"a":[1,2]})");
    Result r = rig.fetch(std::move(req));
    REQUIRE(r.ok());
    CHECK(r.response.status == 201);
    REQUIRE(srv.seen.size() == 1);
    const std::string& sent = srv.seen[0].request;
    CHECK(sent.starts_with("POST /token HTTP/1.1\r\n"));
    CHECK(sent.find("\r\nContent-Type: application/json\r\n") != std::string::npos);
    CHECK(sent.find("\r\nContent-Length: 11\r\n") != std::string::npos);
    CHECK(sent.ends_with("\r\n\r\n{\"a\":[1,2]}"));
  }
  SECTION("form") {
    req.setForm({{"grant_type", "client_credentials"}, {"scope", "a b&c=d"}});
    Result r = rig.fetch(std::move(req));
    REQUIRE(r.ok());
    REQUIRE(srv.seen.size() == 1);
    const std::string& sent = srv.seen[0].request;
    CHECK(sent.find("\r\nContent-Type: application/x-www-form-urlencoded\r\n") !=
          std::string::npos);
    CHECK(sent.ends_with("\r\n\r\ngrant_type=client_credentials&scope=a+b%26c%3Dd"));
  }
  SECTION("an empty POST says Content-Length: 0") {
    Result r = rig.fetch(std::move(req));
    REQUIRE(r.ok());
    REQUIRE(srv.seen.size() == 1);
    CHECK(srv.seen[0].request.find("\r\nContent-Length: 0\r\n") != std::string::npos);
  }
}

TEST_CASE("client: response framings", "[client]") {
  Rig rig;
  FakeServer srv(rig.base.get());
  struct Case {
    const char* name;
    const char* method;
    std::string bytes;
    bool close_after;
    int status;
    std::string body;
  };
  const Case cases[] = {
      {"chunked", "GET",
       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nhell\r\n1;x=y\r\no\r\n0\r\n"
       "Trailer: t\r\n\r\n",
       false, 200, "hello"},
      {"until the close", "GET", "HTTP/1.1 200 OK\r\n\r\nall of it", true, 200, "all of it"},
      {"HTTP/1.0", "GET", "HTTP/1.0 200 OK\r\nContent-Length: 3\r\n\r\nold", true, 200, "old"},
      {"interim 1xx skipped", "GET",
       "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
       "HTTP/1.1 404 Not Found\r\nContent-Length: 4\r\n\r\ngone",
       false, 404, "gone"},
      {"204 has no body", "GET", "HTTP/1.1 204 No Content\r\n\r\n", false, 204, ""},
      {"304 has no body", "GET", "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n", false,
       304, ""},
      {"HEAD has no body", "HEAD", "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n", false, 200, ""},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    srv.close_after = c.close_after;
    const std::string bytes = c.bytes;
    srv.answer = [bytes](const std::string&) { return bytes; };
    Request req = get(srv.url("/"));
    req.method = c.method;
    Result r = rig.fetch(std::move(req));
    REQUIRE(r.ok());
    CHECK(r.response.status == c.status);
    CHECK(r.response.body == c.body);
  }
}

TEST_CASE("client: errors", "[client]") {
  Rig rig;
  FakeServer srv(rig.base.get());
  Request req = get(srv.url("/"));

  SECTION("a body over max_body_bytes is too_large (Content-Length)") {
    srv.answer = [](const std::string&) {
      return "HTTP/1.1 200 OK\r\nContent-Length: 2000\r\n\r\n" + std::string(2000, 'x');
    };
    req.max_body_bytes = 1000;
    Result r = rig.fetch(std::move(req));
    CHECK(r.error == Error::kTooLarge);
  }
  SECTION("a body over max_body_bytes is too_large (chunked)") {
    srv.answer = [](const std::string&) {
      return "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n7d0\r\n" +
             std::string(2000, 'x') + "\r\n0\r\n\r\n";
    };
    req.max_body_bytes = 1000;
    Result r = rig.fetch(std::move(req));
    CHECK(r.error == Error::kTooLarge);
  }
  SECTION("a body over max_body_bytes is too_large (until the close)") {
    srv.close_after = true;
    srv.answer = [](const std::string&) {
      return "HTTP/1.1 200 OK\r\n\r\n" + std::string(5000, 'x');
    };
    req.max_body_bytes = 1000;
    Result r = rig.fetch(std::move(req));
    CHECK(r.error == Error::kTooLarge);
  }
  SECTION("bytes that are not a response") {
    srv.answer = [](const std::string&) { return std::string("SSH-2.0-OpenSSH\r\n\r\n"); };
    Result r = rig.fetch(std::move(req));
    CHECK(r.error == Error::kBadResponse);
    CHECK(r.reason == "malformed status line");
  }
  SECTION("a body cut short by the close") {
    srv.close_after = true;
    srv.answer = [](const std::string&) {
      return std::string("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort");
    };
    Result r = rig.fetch(std::move(req));
    CHECK(r.error == Error::kBadResponse);
  }
  SECTION("101 without an upgrade asked") {
    srv.answer = [](const std::string&) {
      return std::string("HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n");
    };
    Result r = rig.fetch(std::move(req));
    CHECK(r.error == Error::kBadResponse);
  }
  SECTION("no answer within total_timeout") {
    srv.answer = [](const std::string&) { return std::string(); };
    req.total_timeout = 200ms;
    const auto t0 = std::chrono::steady_clock::now();
    Result r = rig.fetch(std::move(req));
    CHECK(r.error == Error::kTimeout);
    CHECK(r.reason == "no complete answer within 200 ms");
    CHECK(std::chrono::steady_clock::now() - t0 < 2s);
    runUntil(rig.base.get(), [&] { return srv.closed == 1; });
    CHECK(srv.closed == 1);  // the client let go of the connection
  }
  SECTION("connection refused") {
    const evutil_socket_t fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) == 0);
    socklen_t len = sizeof(sin);
    REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&sin), &len) == 0);
    ::close(fd);  // bound once, never listening: nothing there
    Result r = rig.fetch(get("http://127.0.0.1:" + std::to_string(ntohs(sin.sin_port)) + "/"));
    CHECK(r.error == Error::kConnect);
  }
  SECTION("a name that does not resolve") {
    // A name server that never answers, asked once for 200 ms (not in the hosts file).
    const evutil_socket_t udp = ::socket(AF_INET, SOCK_DGRAM, 0);
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    REQUIRE(::bind(udp, reinterpret_cast<sockaddr*>(&sin), sizeof(sin)) == 0);
    socklen_t len = sizeof(sin);
    REQUIRE(getsockname(udp, reinterpret_cast<sockaddr*>(&sin), &len) == 0);
    REQUIRE(evdns_base_set_option(rig.dns.get(), "timeout:", "0.2") == 0);
    REQUIRE(evdns_base_set_option(rig.dns.get(), "attempts:", "1") == 0);
    REQUIRE(evdns_base_nameserver_sockaddr_add(rig.dns.get(), reinterpret_cast<sockaddr*>(&sin),
                                               sizeof(sin), 0) == 0);
    evdns_set_log_fn([](int, const char*) {});  // its "nameserver failed" lines
    Result r = rig.fetch(get("http://no-such-host.invalid/"));
    evdns_set_log_fn(nullptr);
    INFO(r.reason);
    CHECK(r.error == Error::kDns);
    CHECK(r.reason.starts_with("cannot resolve no-such-host.invalid: "));
    ::close(udp);
  }
  SECTION("refused at once, reported from the loop") {
    for (const char* url : {"ftp://x/", "http://u@h/"}) {
      Result r = rig.fetch(get(url));
      CHECK(r.error == Error::kInvalidRequest);
    }
    Request bad = get(srv.url("/"));
    bad.headers = {{"X-Evil", "a\r\nInjected: 1"}};
    CHECK(rig.fetch(std::move(bad)).error == Error::kInvalidRequest);
    Request host = get(srv.url("/"));
    host.headers = {{"Host", "elsewhere"}};
    CHECK(rig.fetch(std::move(host)).error == Error::kInvalidRequest);
    Request method = get(srv.url("/"));
    method.method = "GE T";
    CHECK(rig.fetch(std::move(method)).error == Error::kInvalidRequest);
    CHECK(srv.connections == 0);
  }
}

TEST_CASE("client: keep-alive reuses one connection, close does not", "[client]") {
  Rig rig;
  FakeServer srv(rig.base.get());
  Request req = get(srv.url("/"));

  SECTION("two keep-alive requests share one connection") {
    req.keep_alive = true;
    CHECK(rig.fetch(req).ok());
    CHECK(rig.http->idleConnections() == 1);
    req.method = "POST";
    req.setJson("{}");
    CHECK(rig.fetch(req).ok());
    REQUIRE(srv.seen.size() == 2);
    CHECK(srv.connections == 1);
    CHECK(srv.seen[1].connection == 1);
    CHECK(srv.seen[0].request.find("Connection:") == std::string::npos);
  }
  SECTION("a chunked answer leaves the connection reusable") {
    srv.answer = [](const std::string&) {
      return std::string(
          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nok\r\n0\r\n\r\n");
    };
    req.keep_alive = true;
    CHECK(rig.fetch(req).ok());
    CHECK(rig.fetch(req).ok());
    CHECK(srv.connections == 1);
  }
  SECTION("Connection: close from the server") {
    srv.answer = [](const std::string&) {
      return std::string(
          "HTTP/1.1 200 OK\r\nConnection: keep-alive, Close\r\nContent-Length: 0\r\n\r\n");
    };
    req.keep_alive = true;
    CHECK(rig.fetch(req).ok());
    CHECK(rig.http->idleConnections() == 0);
    CHECK(rig.fetch(req).ok());
    CHECK(srv.connections == 2);
  }
  SECTION("keep_alive off: Connection: close, a connection each") {
    CHECK(rig.fetch(req).ok());
    CHECK(rig.fetch(req).ok());
    CHECK(srv.connections == 2);
    CHECK(rig.http->idleConnections() == 0);
  }
  SECTION("a pooled connection the server closed is noticed, the next request connects anew") {
    req.keep_alive = true;
    srv.close_after = false;
    CHECK(rig.fetch(req).ok());
    REQUIRE(rig.http->idleConnections() == 1);
    srv.close_after = true;  // the next answer closes
    CHECK(rig.fetch(req).ok());
    runUntil(rig.base.get(), [&] { return rig.http->idleConnections() == 0; });
    CHECK(rig.http->idleConnections() == 0);
    srv.close_after = false;
    CHECK(rig.fetch(req).ok());
    CHECK(srv.connections == 2);
  }
}

TEST_CASE("client: a pooled connection closed as it is reused", "[client]") {
  Rig rig;
  FakeServer srv(rig.base.get());
  Request req = get(srv.url("/"));
  req.keep_alive = true;
  REQUIRE(rig.fetch(req).ok());
  REQUIRE(rig.http->idleConnections() == 1);
  srv.closeAll();  // the client has not seen the close when it takes the connection
  SECTION("an idempotent request is sent again on a new connection") {
    Result r = rig.fetch(req);
    CHECK(r.ok());
    CHECK(srv.connections == 2);
    CHECK(srv.seen.size() == 2);
  }
  SECTION("a POST is not sent twice") {
    req.method = "POST";
    Result r = rig.fetch(req);
    CHECK(r.error == Error::kBadResponse);
    CHECK(r.reason == "connection closed before the response head");
    CHECK(srv.connections == 1);
  }
}

TEST_CASE("client: the idle pool is bounded and times out", "[client]") {
  HttpClient::Options options;
  options.max_idle_per_origin = 1;
  options.idle_timeout = 100ms;
  Rig rig(options);
  FakeServer srv(rig.base.get());
  Request req = get(srv.url("/"));
  req.keep_alive = true;
  int done = 0;
  for (int i = 0; i < 3; ++i) {
    rig.http->send(req, [&](Result&& r) {
      CHECK(r.ok());
      ++done;
    });
  }
  REQUIRE(runUntil(rig.base.get(), [&] { return done == 3; }));
  CHECK(srv.connections == 3);
  CHECK(rig.http->idleConnections() == 1);
  REQUIRE(runUntil(rig.base.get(), [&] { return srv.closed == 3; }));
  CHECK(rig.http->idleConnections() == 0);
}

TEST_CASE("client: cancel and re-entrancy", "[client]") {
  Rig rig;
  FakeServer srv(rig.base.get());

  SECTION("a cancelled request's callback never runs, its connection is closed") {
    srv.answer = [](const std::string&) { return std::string(); };
    int calls = 0;
    const uint64_t h = rig.http->send(get(srv.url("/")), [&](Result&&) { ++calls; });
    REQUIRE(h != 0);
    REQUIRE(runUntil(rig.base.get(), [&] { return srv.seen.size() == 1; }));
    CHECK(rig.http->cancel(h));
    CHECK_FALSE(rig.http->cancel(h));
    CHECK(rig.http->inFlight() == 0);
    REQUIRE(runUntil(rig.base.get(), [&] { return srv.closed == 1; }));
    runFor(rig.base.get(), 50ms);
    CHECK(calls == 0);
  }
  SECTION("cancel before the loop ran: nothing is sent") {
    int calls = 0;
    const uint64_t h = rig.http->send(get(srv.url("/")), [&](Result&&) { ++calls; });
    CHECK(rig.http->cancel(h));
    runFor(rig.base.get(), 50ms);
    CHECK(calls == 0);
    CHECK(srv.connections == 0);
  }
  SECTION("never from inside send(); a callback may send and cancel") {
    int depth = 0;
    int calls = 0;
    std::optional<Result> second;
    uint64_t other = 0;
    auto guard = [&](Result&& r) {
      CHECK(depth == 0);
      ++depth;
      ++calls;
      CHECK(r.error == Error::kInvalidRequest);
      CHECK(rig.http->cancel(other));
      rig.http->send(get(srv.url("/")), [&](Result&& r2) {
        CHECK(depth == 0);
        second = std::move(r2);
      });
      --depth;
    };
    ++depth;
    rig.http->send(get("nonsense"), guard);
    other = rig.http->send(get(srv.url("/other")), [&](Result&&) { FAIL("cancelled"); });
    --depth;
    CHECK(calls == 0);
    REQUIRE(runUntil(rig.base.get(), [&] { return second.has_value(); }));
    CHECK(calls == 1);
    CHECK(second->ok());
    REQUIRE(srv.seen.size() == 1);
    CHECK(srv.seen[0].request.starts_with("GET / "));
  }
  SECTION("a callback may destroy the client") {
    bool called = false;
    rig.http->send(get(srv.url("/")), [&](Result&&) {
      called = true;
      rig.http.reset();
    });
    REQUIRE(runUntil(rig.base.get(), [&] { return called; }));
    runFor(rig.base.get(), 20ms);
  }
  SECTION("destroying the client drops requests in flight unanswered") {
    srv.answer = [](const std::string&) { return std::string(); };
    int calls = 0;
    rig.http->send(get(srv.url("/")), [&](Result&&) { ++calls; });
    REQUIRE(runUntil(rig.base.get(), [&] { return srv.seen.size() == 1; }));
    rig.http.reset();
    REQUIRE(runUntil(rig.base.get(), [&] { return srv.closed == 1; }));
    CHECK(calls == 0);
  }
}

TEST_CASE("client: HTTPS", "[client]") {
  Rig rig;
  FakeServer srv(rig.base.get(), true);
  Request req = get(srv.url("/keys", "gw-client.test"));
  req.ca_file = certs().file("ca.pem");

  SECTION("verified against the CA file, SNI sent, keep-alive reuse") {
    req.keep_alive = true;
    Result r = rig.fetch(req);
    INFO(r.reason);
    REQUIRE(r.ok());
    CHECK(r.response.body == "ok");
    CHECK(rig.fetch(req).ok());
    CHECK(srv.connections == 1);
    REQUIRE(srv.sni.size() == 1);
    CHECK(srv.sni[0] == "gw-client.test");
    REQUIRE(srv.seen.size() == 2);
    CHECK(srv.seen[0].request.find("\r\nHost: gw-client.test:" + std::to_string(srv.port())) !=
          std::string::npos);
  }
  SECTION("a certificate for another name is refused") {
    req.url = srv.url("/keys", "other.test");
    Result r = rig.fetch(req);
    CHECK(r.error == Error::kTls);
    CHECK(r.reason.find("hostname mismatch") != std::string::npos);
    CHECK(srv.seen.empty());
  }
  SECTION("an IP literal the certificate does not name is refused") {
    req.url = srv.url("/keys");
    CHECK(rig.fetch(req).error == Error::kTls);
  }
  SECTION("a certificate from another CA is refused") {
    req.ca_file = certs().file("other-ca.pem");
    Result r = rig.fetch(req);
    CHECK(r.error == Error::kTls);
    CHECK(srv.seen.empty());
  }
  SECTION("a caller's own TLS context is used instead of ca_file") {
    std::string error;
    req.tls_context = tls::makeClientContext(certs().file("ca.pem"), "", "", error);
    REQUIRE(req.tls_context != nullptr);
    req.ca_file = certs().file("other-ca.pem");
    Result r = rig.fetch(req);
    INFO(r.reason);
    CHECK(r.ok());
  }
  SECTION("a CA file that cannot be read") {
    req.ca_file = certs().file("absent.pem");
    CHECK(rig.fetch(req).error == Error::kTls);
  }
  SECTION("no handshake within connect_timeout") {
    FakeServer plain(rig.base.get());  // speaks no TLS: waits for a request that never comes
    req.url = "https://gw-client.test:" + std::to_string(plain.port()) + "/";
    req.connect_timeout = 200ms;
    Result r = rig.fetch(req);
    CHECK(r.error == Error::kTimeout);
    CHECK(r.reason == "not connected within 200 ms");
  }
}

}  // namespace
}  // namespace gw::client
