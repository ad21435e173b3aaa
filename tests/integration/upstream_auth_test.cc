// upstreams[].auth (issue #28) against a real OAuth 2.0 authorization server (oidc-provider,
// tests/fixtures/oauth-server.mjs, RFC 8693 registered through its API): token_exchange,
// client_credentials, signed_identity and forward, each upstream recording the Authorization it
// receives. Callers present ES256 JWTs made by jose (tests/fixtures/jwt-tool.mjs) that both the
// gateway (keys_file) and the authorization server (OAUTH_TRUSTED_JWT_KEY) trust. Asserted: what
// each upstream got, that no upstream but the `forward` one ever saw a caller's token, the cache
// and single flight (the server's own call counts), every failure mapping, the JWKS the gateway
// publishes (verified by jose), and a real SDK v2 server's view of a token_exchange route.

#include <catch.hpp>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/integration/era_fixtures.h"
#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

// One run of a fixture tool (node); its stdout (trimmed), REQUIREd to exit 0.
std::string runTool(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {kNode22, kFixtures + "/jwt-tool.mjs"};
  argv.insert(argv.end(), args.begin(), args.end());
  Process p(argv, dir.path(), "jwt-tool");
  const std::optional<int> code = p.wait(Ms(15000));
  INFO(p.stderrText());
  REQUIRE(code.has_value());
  REQUIRE(*code == 0);
  std::string out = p.stdoutText();
  while (!out.empty() && (out.back() == '\n' || out.back() == '\r')) {
    out.pop_back();
  }
  return out;
}

// The authorization server.
class OAuthServer {
 public:
  explicit OAuthServer(const TempDir& dir)
      : process_({"/usr/bin/env", "OAUTH_TRUSTED_JWT_KEY=" + dir.file("caller-public.pem"), kNode22,
                  kFixtures + "/oauth-server.mjs", "0"},
                 dir.path(), "oauth-server") {
    port_ = fixturePort(process_, "oauth-server.mjs");
  }
  uint16_t port() const { return port_; }
  std::string url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }
  // A count from GET /stats ("token", "introspect", "client_credentials", "token-exchange").
  int count(const std::string& key) {
    const Response r = fetch(port_, "GET /stats HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    REQUIRE(r.status == 200);
    const std::optional<std::string> v = jsonToken(r.body, key);
    return v ? std::stoi(*v) : 0;
  }
  void mode(const std::string& token_mode) {
    const Response r = fetch(port_, "POST /mode?token=" + token_mode +
                                        " HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                                        "Connection: close\r\n\r\n");
    REQUIRE(r.status == 204);
  }
  // RFC 7662 introspection of `token` as mcp-gateway: the answer's JSON.
  std::string introspect(const std::string& token) {
    const std::string body = "token=" + token;
    const Response r =
        fetch(port_,
              "POST /introspect HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
              "Authorization: Basic bWNwLWdhdGV3YXk6Z3ctc2VjcmV0"
              "\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: " +
                  std::to_string(body.size()) + "\r\n\r\n" + body);
    REQUIRE(r.status == 200);
    return r.body;
  }

 private:
  Process process_;
  uint16_t port_ = 0;
};

// The Authorization values an upstream received, in order ("-" for none).
std::vector<std::string> authorizations(const RawUpstream& up) {
  std::vector<std::string> out;
  for (const RecordedRequest& r : up.requests()) {
    out.push_back(r.header("authorization").value_or("-"));
  }
  return out;
}

struct Setup {
  TempDir dir;
  std::string alice = runTool(dir, {"mint", dir.path(), "alice", "mcp:tools"});
  std::string bob = runTool(dir, {"mint", dir.path(), "bob", "mcp:tools"});
  OAuthServer as{dir};
  RawUpstream exchanged{RawUpstream::respond(200, kOkBody)};
  RawUpstream refused{RawUpstream::respond(200, kOkBody)};
  RawUpstream own{RawUpstream::respond(200, kOkBody)};
  RawUpstream signed_up{RawUpstream::respond(200, kOkBody)};
  RawUpstream forwarded{RawUpstream::respond(200, kOkBody)};
  std::unique_ptr<Gateway> gw;

  Setup() {
    REQUIRE(writeFile(dir.file("gw-secret"), "gw-secret\n"));
    REQUIRE(std::system(("openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out " +
                         dir.file("identity-key.pem") + " 2>/dev/null")
                            .c_str()) == 0);
    REQUIRE(writeFile(dir.file("policy.yaml"),
                      "identity:\n  jwt:\n    issuer: https://idp.example.com\n"
                      "    audiences: [https://gw.example.com/mcp]\n"
                      "    keys_file: " +
                          dir.file("caller-jwks.json") +
                          "\n  api_keys:\n    - subject: robot\n      key_sha256: \"" +
                          sha256Hex("robot-key-0123456789") + "\"\n  anonymous: deny\n"));
    const std::string token_endpoint = as.url("/token");
    auto tokenAuth = [&](const std::string& type, const std::string& client,
                         const std::string& audience) {
      return "    auth:\n      type: " + type + "\n      token_endpoint: " + token_endpoint +
             "\n      client_id: " + client +
             "\n      client_secret_file: " + dir.file("gw-secret") +
             "\n      audience: " + audience + "\n      scopes: [repo:read]\n      timeout: 2s\n";
    };
    gw = std::make_unique<Gateway>(
        "listen: 127.0.0.1:${PORT}\nworkers: 2\nadmin: 127.0.0.1:0\n"
        "access_log:\n  path: ${ACCESS_LOG}\n"
        "upstreams:\n"
        "  - name: github\n    endpoints: [" +
        exchanged.address() + "]\n" +
        tokenAuth("token_exchange", "mcp-gateway", "https://github-mcp.internal") +
        "  - name: nope\n    endpoints: [" + refused.address() + "]\n" +
        tokenAuth("token_exchange", "mcp-gateway-noexchange", "https://github-mcp.internal") +
        "  - name: db\n    endpoints: [" + own.address() + "]\n" +
        tokenAuth("client_credentials", "mcp-gateway-post", "https://db-mcp.internal") +
        "      client_auth: post\n"
        "  - name: legacy-app\n    endpoints: [" +
        signed_up.address() +
        "]\n    auth:\n      type: signed_identity\n      issuer: https://gateway.example.com\n"
        "      key_file: " +
        dir.file("identity-key.pem") +
        "\n      audience: https://legacy-app.internal\n      ttl: 60s\n"
        "  - name: passthrough\n    endpoints: [" +
        forwarded.address() +
        "]\n    auth:\n      type: forward\n"
        "routes:\n"
        "  - name: github\n    match: { name: \"gh_*\" }\n    upstream: github\n"
        "  - name: nope\n    match: { name: \"no_*\" }\n    upstream: nope\n"
        "  - name: db\n    match: { name: \"db_*\" }\n    upstream: db\n"
        "  - name: signed\n    match: { name: \"sig_*\" }\n    upstream: legacy-app\n"
        "  - name: default\n    upstream: passthrough\n"
        "policies: [" +
        dir.file("policy.yaml") + "]\n");
    // The gateway fetches db's client_credentials token at start: counts read after this are
    // the requests' own.
    REQUIRE(waitFor([&] { return as.count("client_credentials") >= 1; }, Ms(10000)));
  }

  Response call(const std::string& tool, const std::string& credential) {
    return fetch(gw->port(), mcpPost(toolsCallBody(tool, 1),
                                     "Authorization: Bearer " + credential + "\r\n", tool));
  }
};

std::string bearerOf(const std::string& authorization) {
  REQUIRE(authorization.rfind("Bearer ", 0) == 0);
  return authorization.substr(7);
}

TEST_CASE("upstream auth: token_exchange sends an exchanged token, cached per caller and shared",
          "[upstream_auth][oauth]") {
  Setup s;
  const int before = s.as.count("token-exchange");
  REQUIRE(s.call("gh_search", s.alice).status == 200);
  REQUIRE(s.exchanged.requestCount() == 1);
  const std::string issued = bearerOf(authorizations(s.exchanged)[0]);
  CHECK(issued != s.alice);
  CHECK(s.as.count("token-exchange") == before + 1);
  // What the authorization server issued: for alice, to this upstream, acted on by the gateway.
  const std::string info = s.as.introspect(issued);
  INFO(info);
  CHECK(jsonToken(info, "active").value_or("") == "true");
  CHECK(jsonToken(info, "sub").value_or("") == "\"alice\"");
  CHECK(jsonToken(info, "aud").value_or("") == "\"https://github-mcp.internal\"");
  CHECK(jsonToken(info, "scope").value_or("") == "\"repo:read\"");

  // Cached: alice again costs no exchange and carries the same token.
  REQUIRE(s.call("gh_search", s.alice).status == 200);
  CHECK(authorizations(s.exchanged)[1] == "Bearer " + issued);
  CHECK(s.as.count("token-exchange") == before + 1);

  // bob gets his own, in one exchange for eight concurrent calls (both workers).
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] {
      if (s.call("gh_issue", s.bob).status == 200) {
        ++ok;
      }
    });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  CHECK(ok == 8);
  CHECK(s.as.count("token-exchange") == before + 2);
  const std::vector<std::string> got = authorizations(s.exchanged);
  REQUIRE(got.size() == 10);
  for (size_t i = 2; i < got.size(); ++i) {
    CHECK(got[i] == got[2]);
    CHECK(got[i] != "Bearer " + issued);
  }
  CHECK(jsonToken(s.as.introspect(bearerOf(got[2])), "sub").value_or("") == "\"bob\"");
  // The caller's token never reached the upstream.
  for (const std::string& a : got) {
    CHECK(a.find(s.alice) == std::string::npos);
    CHECK(a.find(s.bob) == std::string::npos);
  }
}

TEST_CASE("upstream auth: token_exchange refusals and failures are answered, never forwarded",
          "[upstream_auth][oauth]") {
  Setup s;
  // The client may not exchange: 403 naming the upstream and the OAuth error.
  const int before = s.as.count("token");
  Response r = s.call("no_thing", s.alice);
  CHECK(r.status == 403);
  CHECK(r.body.find("-31017") != std::string::npos);
  CHECK(r.body.find("'nope'") != std::string::npos);
  CHECK(r.body.find("unauthorized_client") != std::string::npos);
  CHECK(r.body.find(s.alice) == std::string::npos);
  // Remembered: a retry at once does not ask again.
  CHECK(s.call("no_thing", s.alice).status == 403);
  CHECK(s.as.count("token") == before + 1);
  CHECK(s.refused.requestCount() == 0);

  // A caller authenticated by an API key has no token to exchange: the 401 challenge.
  r = s.call("gh_search", "robot-key-0123456789");
  CHECK(r.status == 401);
  CHECK(r.header("www-authenticate").value_or("").rfind("Bearer", 0) == 0);

  // The token endpoint failing (500, a dropped connection): 503 + Retry-After.
  s.as.mode("500");
  r = s.call("gh_search", s.alice);
  CHECK(r.status == 503);
  CHECK(r.header("retry-after").has_value());
  CHECK(r.body.find("-31018") != std::string::npos);
  std::this_thread::sleep_for(Ms(1100));  // past the failure's memory (1 s)
  s.as.mode("close");
  r = s.call("gh_search", s.bob);
  CHECK(r.status == 503);
  // Slow: the call gives up after the auth timeout (2 s) and a second.
  s.as.mode("slow");
  const auto t0 = std::chrono::steady_clock::now();
  r = fetch(
      s.gw->port(),
      mcpPost(toolsCallBody("gh_x", 1),
              "Authorization: Bearer " + runTool(s.dir, {"mint", s.dir.path(), "carol"}) + "\r\n",
              "gh_x"),
      Ms(10000));
  CHECK(r.status == 503);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(6));
  CHECK(s.exchanged.requestCount() == 0);
}

TEST_CASE("upstream auth: client_credentials, signed_identity and forward",
          "[upstream_auth][oauth]") {
  Setup s;
  // client_credentials: the gateway's own token, fetched once at start for every caller.
  REQUIRE(s.call("db_query", s.alice).status == 200);
  REQUIRE(s.call("db_query", s.bob).status == 200);
  const std::vector<std::string> db = authorizations(s.own);
  REQUIRE(db.size() == 2);
  CHECK(db[0] == db[1]);
  const std::string info = s.as.introspect(bearerOf(db[0]));
  CHECK(jsonToken(info, "client_id").value_or("") == "\"mcp-gateway-post\"");
  CHECK(s.as.count("client_credentials") == 1);

  // signed_identity: a JWT per caller that jose verifies against the gateway's JWKS.
  REQUIRE(s.call("sig_run", s.alice).status == 200);
  REQUIRE(s.call("sig_run", s.alice).status == 200);
  REQUIRE(s.call("sig_run", s.bob).status == 200);
  const std::vector<std::string> sig = authorizations(s.signed_up);
  REQUIRE(sig.size() == 3);
  CHECK(sig[0] == sig[1]);  // reused for one caller within half its lifetime
  CHECK(sig[0] != sig[2]);
  const Response jwks = adminGet(s.gw->adminPort(), "/.well-known/jwks.json");
  CHECK(jwks.status == 200);
  CHECK(jwks.body.find("\"d\"") == std::string::npos);  // never the private part
  const std::string verified = runTool(
      s.dir,
      {"verify", "http://127.0.0.1:" + std::to_string(s.gw->adminPort()) + "/.well-known/jwks.json",
       "https://gateway.example.com", "https://legacy-app.internal", bearerOf(sig[2])});
  INFO(verified);
  CHECK(verified.find(R"("sub":"bob")") != std::string::npos);
  CHECK(verified.find(R"("alg":"ES256")") != std::string::npos);
  CHECK(verified.find(R"("scope":"mcp:tools")") != std::string::npos);
  CHECK(verified.find(R"("jti":")") != std::string::npos);

  // forward: the caller's own Authorization (and only there).
  REQUIRE(s.call("other", s.alice).status == 200);
  CHECK(authorizations(s.forwarded) == std::vector<std::string>{"Bearer " + s.alice});
  for (const RawUpstream* up : {&s.exchanged, &s.own, &s.signed_up}) {
    for (const std::string& a : authorizations(*up)) {
      CHECK(a.find(s.alice) == std::string::npos);
      CHECK(a.find(s.bob) == std::string::npos);
    }
  }
}

}  // namespace

namespace {

TEST_CASE("upstream auth: real SDK servers see the gateway's credentials, in both eras",
          "[upstream_auth][oauth]") {
  Setup s;
  // A 2026-07-28 server behind token_exchange and a 2025-only one behind client_credentials
  // (the gateway's own session with it: initialize included), each logging what it got.
  Process modern({"/usr/bin/env", "MCP_AUTH_TRACE=1", kNode22, kFixtures + "/mcp-server.mjs", "0"},
                 s.dir.path(), "modern-server");
  Process old({"/usr/bin/env", "MCP_AUTH_TRACE=1", "MCP_LEGACY=only", kNode22,
               kFixtures + "/mcp-server.mjs", "0"},
              s.dir.path(), "old-server");
  const uint16_t modern_port = fixturePort(modern);
  const uint16_t old_port = fixturePort(old);
  Gateway gw(
      "listen: 127.0.0.1:${PORT}\nworkers: 2\n"
      "upstreams:\n"
      "  - name: modern\n    endpoints: [127.0.0.1:" +
      std::to_string(modern_port) +
      "]\n    era: modern\n    auth:\n      type: token_exchange\n      token_endpoint: " +
      s.as.url("/token") +
      "\n      client_id: mcp-gateway\n      client_secret_file: " + s.dir.file("gw-secret") +
      "\n      audience: http://upstream-a\n"
      "  - name: old\n    endpoints: [127.0.0.1:" +
      std::to_string(old_port) +
      "]\n    era: legacy\n    auth:\n      type: client_credentials\n"
      "      token_endpoint: " +
      s.as.url("/token") +
      "\n      client_id: mcp-gateway\n      client_secret_file: " + s.dir.file("gw-secret") +
      "\n      audience: http://upstream-b\n"
      "routes:\n  - name: old\n    match: { method: \"tools/*\", name: \"echo\" }\n"
      "    upstream: old\n  - name: default\n    upstream: modern\n"
      "policies: [" +
      s.dir.file("policy.yaml") + "]\n");
  const std::string echo =
      R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo",)"
      R"("arguments":{"text":"hi"},"_meta":{"io.modelcontextprotocol/protocolVersion":)"
      R"("2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}})";
  Response r = fetch(gw.port(), mcpPost(echo, "Authorization: Bearer " + s.alice + "\r\n"));
  INFO(r.body << old.stderrText());
  CHECK(r.status == 200);
  const std::string list = R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"_meta":)"
                           R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                           R"("io.modelcontextprotocol/clientCapabilities":{}}}})";
  r = fetch(gw.port(),
            "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            "Mcp-Method: tools/list\r\nAuthorization: Bearer " +
                s.alice + "\r\nContent-Length: " + std::to_string(list.size()) + "\r\n\r\n" + list);
  INFO(r.body << modern.stderrText());
  CHECK(r.status == 200);
  REQUIRE(waitFor([&] { return old.stderrText().find("AUTH ") != std::string::npos; }, Ms(3000)));
  // Every request the servers got carried a gateway-made token, never alice's.
  for (Process* p : {&modern, &old}) {
    const std::string err = p->stderrText();
    size_t lines = 0;
    for (size_t at = err.find("AUTH "); at != std::string::npos; at = err.find("AUTH ", at + 1)) {
      const std::string line = err.substr(at, err.find('\n', at) - at);
      INFO(line);
      CHECK(line.find(" Bearer ") != std::string::npos);
      CHECK(line.find(s.alice) == std::string::npos);
      ++lines;
    }
    CHECK(lines >= 1);
  }
  // The 2025-era server's initialize came with the client_credentials token.
  const std::string err = old.stderrText();
  CHECK(err.find("AUTH - Bearer ") != std::string::npos);
  modern.terminate();
  old.terminate();
}

}  // namespace

namespace {

// An opaque access token the authorization server issues to `client` (a caller) by
// client_credentials.
std::string opaqueToken(OAuthServer& as, const std::string& basic, const std::string& scope) {
  const std::string body = "grant_type=client_credentials&scope=" + scope;
  const Response r = fetch(as.port(),
                           "POST /token HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
                           "Authorization: Basic " +
                               basic +
                               "\r\nContent-Type: application/x-www-form-urlencoded\r\n"
                               "Content-Length: " +
                               std::to_string(body.size()) + "\r\n\r\n" + body);
  REQUIRE(r.status == 200);
  const std::optional<std::string> t = jsonToken(r.body, "access_token");
  REQUIRE(t.has_value());
  REQUIRE(t->size() > 2);
  return t->substr(1, t->size() - 2);
}

TEST_CASE("introspection: opaque tokens are introspected, cached and exchanged",
          "[upstream_auth][oauth][introspection]") {
  TempDir dir;
  runTool(dir, {"mint", dir.path(), "seed"});  // the key pair the server trusts
  OAuthServer as{dir};
  REQUIRE(writeFile(dir.file("gw-secret"), "gw-secret\n"));
  RawUpstream plain{RawUpstream::respond(200, kOkBody)};
  RawUpstream exchanged{RawUpstream::respond(200, kOkBody)};
  REQUIRE(writeFile(
      dir.file("policy.yaml"),
      "identity:\n  introspection:\n    endpoint: " + as.url("/introspect") +
          "\n    client_id: mcp-gateway\n    client_secret_file: " + dir.file("gw-secret") +
          "\n    cache: 2m\n    timeout: 2s\n  anonymous: deny\n"
          "rules:\n  - name: admin-needs-scope\n"
          "    match: { method: tools/call, name: \"admin_*\" }\n"
          "    require: { scopes: [mcp:admin] }\n"));
  Gateway gw(
      "listen: 127.0.0.1:${PORT}\nworkers: 2\naccess_log:\n  path: ${ACCESS_LOG}\n"
      "upstreams:\n  - name: plain\n    endpoints: [" +
      plain.address() + "]\n  - name: gh\n    endpoints: [" + exchanged.address() +
      "]\n    auth:\n      type: token_exchange\n      token_endpoint: " + as.url("/token") +
      "\n      client_id: mcp-gateway\n      client_secret_file: " + dir.file("gw-secret") +
      "\n      audience: https://github-mcp.internal\n"
      "routes:\n  - name: gh\n    match: { name: \"gh_*\" }\n    upstream: gh\n"
      "  - name: default\n    upstream: plain\n"
      "policies: [" +
      dir.file("policy.yaml") + "]\n");
  const std::string alice = opaqueToken(as, "YWxpY2U6YWxpY2Utc2VjcmV0", "mcp:tools");
  const std::string bob = opaqueToken(as, "Ym9iOmJvYi1zZWNyZXQ=", "mcp:tools");
  auto call = [&](const std::string& tool, const std::string& token) {
    return fetch(gw.port(),
                 mcpPost(toolsCallBody(tool, 1), "Authorization: Bearer " + token + "\r\n", tool));
  };
  const int before = as.count("introspect");
  // Introspected: alice is who the answer says, with its scopes.
  REQUIRE(call("echo", alice).status == 200);
  CHECK(as.count("introspect") == before + 1);
  CHECK(waitLogLine(gw, "\"subject\":\"alice\"").size() > 0);
  // Cached: more calls, no more introspection; eight of bob's at once share one.
  REQUIRE(call("echo", alice).status == 200);
  CHECK(as.count("introspect") == before + 1);
  std::vector<std::thread> threads;
  std::atomic<int> ok{0};
  for (int i = 0; i < 8; ++i) {
    threads.emplace_back([&] { ok += call("echo", bob).status == 200 ? 1 : 0; });
  }
  for (std::thread& t : threads) {
    t.join();
  }
  CHECK(ok == 8);
  CHECK(as.count("introspect") == before + 2);
  // Its scopes decide: mcp:admin is missing → 403 insufficient_scope.
  CHECK(call("admin_reset", alice).status == 403);
  // The introspected token is what token_exchange exchanges; the upstream never sees it.
  REQUIRE(call("gh_search", alice).status == 200);
  const std::vector<std::string> got = authorizations(exchanged);
  REQUIRE(got.size() == 1);
  CHECK(got[0].find(alice) == std::string::npos);
  CHECK(jsonToken(as.introspect(got[0].substr(7)), "sub").value_or("") == "\"alice\"");
  // Not active (unknown, or garbage): 401 invalid_token, remembered (no second call).
  const int mid = as.count("introspect");
  Response r = call("echo", "not-a-token-the-server-issued");
  CHECK(r.status == 401);
  CHECK(r.header("www-authenticate").value_or("").find("invalid_token") != std::string::npos);
  CHECK(call("echo", "not-a-token-the-server-issued").status == 401);
  CHECK(as.count("introspect") == mid + 1);
  // The endpoint down: 503, never 401 (it is not the token's fault).
  as.mode("normal&introspect=500");
  r = call("echo", opaqueToken(as, "YWxpY2U6YWxpY2Utc2VjcmV0", "mcp:tools"));
  CHECK(r.status == 503);
  CHECK(r.body.find("-31018") != std::string::npos);
  CHECK(r.header("retry-after").has_value());
  as.mode("normal&introspect=slow");
  const auto t0 = std::chrono::steady_clock::now();
  r = fetch(gw.port(),
            mcpPost(toolsCallBody("echo", 1),
                    "Authorization: Bearer " +
                        opaqueToken(as, "Ym9iOmJvYi1zZWNyZXQ=", "mcp:tools") + "\r\n"),
            Ms(10000));
  CHECK(r.status == 503);
  CHECK(std::chrono::steady_clock::now() - t0 < std::chrono::seconds(6));
}

}  // namespace

namespace {

TEST_CASE("upstream auth: on a federated route each upstream gets its own credential",
          "[upstream_auth][oauth][federation]") {
  Setup s;
  // `own` takes the gateway's client_credentials token; `refusing`'s exchange is refused
  // (its client may not exchange): it is left out of the list, never contacted.
  Process own({"/usr/bin/env", "MCP_AUTH_TRACE=1", kNode22, kFixtures + "/mcp-server.mjs", "0"},
              s.dir.path(), "own-server");
  Process refusing({"/usr/bin/env", "MCP_AUTH_TRACE=1", "MCP_NAME_SUFFIX=_b", kNode22,
                    kFixtures + "/mcp-server.mjs", "0"},
                   s.dir.path(), "refusing-server");
  const uint16_t own_port = fixturePort(own);
  const uint16_t refusing_port = fixturePort(refusing);
  const std::string secret = s.dir.file("gw-secret");
  Gateway gw(
      "listen: 127.0.0.1:${PORT}\nworkers: 2\n"
      "upstreams:\n"
      "  - name: own\n    endpoints: [127.0.0.1:" +
      std::to_string(own_port) +
      "]\n    auth:\n      type: client_credentials\n      token_endpoint: " + s.as.url("/token") +
      "\n      client_id: mcp-gateway\n      client_secret_file: " + secret +
      "\n      audience: http://upstream-a\n" +
      "  - name: refusing\n    endpoints: [127.0.0.1:" + std::to_string(refusing_port) +
      "]\n    auth:\n      type: token_exchange\n      token_endpoint: " + s.as.url("/token") +
      "\n      client_id: mcp-gateway-noexchange\n      client_secret_file: " + secret +
      "\n      audience: http://upstream-b\n"
      "routes:\n  - name: all\n    upstreams: [own, refusing]\n"
      "policies: [" +
      s.dir.file("policy.yaml") + "]\n");
  const std::string meta = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                           R"("io.modelcontextprotocol/clientCapabilities":{}})";
  const std::string list =
      R"({"jsonrpc":"2.0","id":2,"method":"tools/list","params":{)" + meta + "}}";
  Response r =
      fetch(gw.port(),
            "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
            "Mcp-Method: tools/list\r\nAuthorization: Bearer " +
                s.alice + "\r\nContent-Length: " + std::to_string(list.size()) + "\r\n\r\n" + list);
  INFO(r.body);
  CHECK(r.status == 200);
  CHECK(r.body.find("\"echo\"") != std::string::npos);
  CHECK(r.body.find("echo_b") == std::string::npos);
  const std::string echo = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":)"
                           R"("echo","arguments":{"text":"hi"},)" +
                           meta + "}}";
  r = fetch(gw.port(), mcpPost(echo, "Authorization: Bearer " + s.alice + "\r\n"));
  CHECK(r.status == 200);
  const std::string echo_b = R"({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":)"
                             R"("echo_b","arguments":{"text":"hi"},)" +
                             meta + "}}";
  r = fetch(gw.port(), mcpPost(echo_b, "Authorization: Bearer " + s.alice + "\r\n", "echo_b"));
  CHECK(r.body.find("\"result\"") == std::string::npos);
  // What the servers received: the client_credentials token at `own`, nothing at `refusing`.
  const std::string own_log = own.stderrText();
  CHECK(own_log.find("AUTH ") != std::string::npos);
  for (size_t at = own_log.find("AUTH "); at != std::string::npos;
       at = own_log.find("AUTH ", at + 1)) {
    const std::string line = own_log.substr(at, own_log.find('\n', at) - at);
    INFO(line);
    CHECK(line.find(" Bearer ") != std::string::npos);
    CHECK(line.find(s.alice) == std::string::npos);
  }
  CHECK(refusing.stderrText().find("AUTH ") == std::string::npos);
  own.terminate();
  refusing.terminate();
}

}  // namespace
