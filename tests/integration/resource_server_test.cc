// The gateway as the MCP OAuth resource server (issue #17 item 3): the RFC 9728 protected
// resource metadata at every well-known form, the 401 challenges that point at it, the
// insufficient_scope 403 of a rule's `require: { scopes }`, and tokens refused unless issued
// for the gateway's own resource URI. Tokens are HS256 JWTs signed here; every refusal is
// checked not to have reached the upstream, and no client token is forwarded.

#include <catch.hpp>

#include <chrono>
#include <ctime>
#include <string>
#include <thread>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kSecret[] = "0123456789abcdef0123456789abcdef";  // 32 bytes
constexpr char kResource[] = "https://gw.example.com/mcp";
constexpr char kMetadataUrl[] = "https://gw.example.com/.well-known/oauth-protected-resource/mcp";
constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";

// The gateway in front of `upstream` with a JWT identity whose audience defaults to the
// resource_metadata resource, `anonymous` as given, and a rule that needs mcp:admin for
// admin_* tools.
std::string config(const TempDir& dir, const std::string& upstream, const char* anonymous) {
  REQUIRE(writeFile(dir.file("jwks.json"),
                    R"({"keys":[{"kty":"oct","kid":"k1","k":")" + base64Url(kSecret) + R"("}]})"));
  REQUIRE(writeFile(dir.file("policy.yaml"),
                    std::string("identity:\n"
                                "  jwt:\n"
                                "    issuer: https://idp.example.com\n"
                                "    keys_file: jwks.json\n"
                                "  resource_metadata:\n"
                                "    resource: ") +
                        kResource +
                        "\n"
                        "    authorization_servers: [https://idp.example.com]\n"
                        "    scopes_supported: [mcp:tools, mcp:admin]\n"
                        "    resource_name: Example gateway\n"
                        "  anonymous: " +
                        anonymous +
                        "\n"
                        "rules:\n"
                        "  - name: admin-tools-need-scope\n"
                        "    match: { method: tools/call, name: \"admin_*\" }\n"
                        "    require: { scopes: [mcp:admin] }\n"));
  return "listen: 127.0.0.1:${PORT}\n"
         "workers: 1\n"
         "access_log:\n"
         "  path: ${ACCESS_LOG}\n"
         "upstreams:\n  - name: main\n    endpoints: [" +
         upstream +
         "]\n"
         "routes:\n  - name: default\n    upstream: main\n"
         "policies: [" +
         dir.file("policy.yaml") + "]\n";
}

std::string jwt(const std::string& aud, const std::string& scope_claims) {
  const long long now = static_cast<long long>(std::time(nullptr));
  return hs256Token(kSecret, "k1",
                    R"({"iss":"https://idp.example.com","aud":")" + aud +
                        R"(","sub":"user-1","exp":)" + std::to_string(now + 600) + scope_claims +
                        "}");
}

std::string get(const std::string& target, const std::string& method = "GET") {
  return method + " " + target + " HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\n\r\n";
}

std::string call(const std::string& tool, const std::string& token, int id) {
  std::string body = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                     R"(,"method":"tools/call","params":{"name":")" + tool +
                     R"(","arguments":{}}})";
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
         "Content-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\n"
         "MCP-Protocol-Version: 2026-07-28\r\n"
         "Mcp-Method: tools/call\r\n"
         "Mcp-Name: " +
         tool + "\r\n" + (token.empty() ? "" : "Authorization: Bearer " + token + "\r\n") +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string challenge(const Response& r) {
  return r.header("WWW-Authenticate").value_or("<absent>");
}

}  // namespace

TEST_CASE("oauth: the protected resource metadata is served at its well-known URIs (RFC 9728)",
          "[oauth][prm]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  TempDir dir;
  Gateway gw(config(dir, up.address(), "deny"));
  const std::string doc = std::string(R"({"resource":")") + kResource +
                          R"(","authorization_servers":["https://idp.example.com"],)"
                          R"("scopes_supported":["mcp:tools","mcp:admin"],)"
                          R"("bearer_methods_supported":["header"],)"
                          R"("resource_name":"Example gateway"})";
  // §3.1: the path-inserted form of the resource, the root form, and either with a query.
  for (const char* target :
       {"/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource",
        "/.well-known/oauth-protected-resource/mcp?x=1"}) {
    INFO(target);
    Response r = fetch(gw.port(), get(target));
    CHECK(r.status == 200);
    CHECK(r.header("Content-Type").value_or("") == "application/json");
    CHECK(r.body == doc);  // §3.2: the resource value is the URI the metadata URL came from
  }
  {
    // HEAD: the same head, no body (RFC 9110 §9.3.2); the connection closes right after it.
    Client c(gw.port());
    REQUIRE(
        c.send("HEAD /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: "
               "127.0.0.1\r\nConnection: close\r\n\r\n"));
    REQUIRE(c.readUntil("\r\n\r\n", Ms(3000)));
    CHECK(c.waitClosed(Ms(3000)));
    const std::string& raw = c.received();
    CHECK(raw.starts_with("HTTP/1.1 200 "));
    CHECK(raw.find("Content-Length: " + std::to_string(doc.size()) + "\r\n") != std::string::npos);
    CHECK(raw.find("\r\n\r\n") + 4 == raw.size());
  }
  Response post = fetch(gw.port(), get("/.well-known/oauth-protected-resource/mcp", "POST"));
  CHECK(post.status == 405);
  CHECK(post.header("Allow").value_or("") == "GET, HEAD, OPTIONS");
  Response preflight =
      fetch(gw.port(),
            "OPTIONS /.well-known/oauth-protected-resource/mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
            "Origin: https://app.example.com\r\nAccess-Control-Request-Method: GET\r\n"
            "Access-Control-Request-Headers: mcp-protocol-version\r\n\r\n");
  CHECK(preflight.status == 200);
  CHECK(preflight.header("Access-Control-Allow-Origin").value_or("") == "*");
  CHECK(preflight.header("Access-Control-Allow-Headers").value_or("") == "*");
  Response cross = fetch(gw.port(),
                         "GET /.well-known/oauth-protected-resource HTTP/1.1\r\nHost: "
                         "127.0.0.1\r\nOrigin: https://app.example.com\r\n\r\n");
  CHECK(cross.status == 200);  // the metadata is public: mcp.allowed_origins guards the endpoint
  CHECK(cross.header("Access-Control-Allow-Origin").value_or("") == "*");
  for (const char* target :
       {"/.well-known/oauth-protected-resource/other", "/.well-known/oauth-protected-resourcex",
        "/.well-known/oauth-protected-resource/mcp/", "/.well-known/oauth-authorization-server"}) {
    INFO(target);
    CHECK(fetch(gw.port(), get(target)).status == 404);
  }
  CHECK(up.requestCount() == 0);
}

TEST_CASE("oauth: 401 challenges point at the metadata, tokens must be for this gateway",
          "[oauth][challenge]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  TempDir dir;
  Gateway gw(config(dir, up.address(), "deny"));
  const std::string meta = std::string("resource_metadata=\"") + kMetadataUrl + "\"";
  const std::string scope = "scope=\"mcp:tools mcp:admin\"";

  Response none = fetch(gw.port(), call("echo", "", 1));
  CHECK(none.status == 401);
  CHECK(challenge(none) == "Bearer " + scope + ", " + meta);
  CHECK(jsonToken(none.body, "id").value_or("") == "1");
  CHECK(jsonToken(none.body, "code").value_or("") == "-31006");

  struct Bad {
    const char* what;
    std::string token;
  };
  const Bad bad[] = {
      {"garbage", "not-a-token"},
      {"an upstream's audience", jwt("https://upstream.example.com/mcp", "")},
      {"no audience match at all", jwt("mcp-gateway", "")},
      {"signed with another key",
       hs256Token("another-secret-of-32-bytes-long!", "k1",
                  R"({"iss":"https://idp.example.com","aud":")" + std::string(kResource) +
                      R"(","sub":"x","exp":9999999999})")},
  };
  int id = 10;
  for (const Bad& b : bad) {
    INFO(b.what);
    Response r = fetch(gw.port(), call("echo", b.token, ++id));
    CHECK(r.status == 401);
    CHECK(challenge(r) == "Bearer error=\"invalid_token\", " + scope + ", " + meta);
    CHECK(jsonToken(r.body, "id").value_or("") == std::to_string(id));
  }
  Response ok = fetch(gw.port(), call("echo", jwt(kResource, R"(,"scope":"mcp:tools")"), 30));
  CHECK(ok.status == 200);
  REQUIRE(up.waitForRequests(1, Ms(2000)));
  // None of the refused calls went upstream: the accepted one (a marker) is the only request.
  CHECK(up.requestCount() == 1);
  CHECK_FALSE(up.requests()[0].hasHeader("Authorization"));  // the token stops here
}

TEST_CASE("oauth: a rule's require.scopes answers 403 insufficient_scope with the scopes",
          "[oauth][scope]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  TempDir dir;
  Gateway gw(config(dir, up.address(), "allow"));
  const std::string meta = std::string("resource_metadata=\"") + kMetadataUrl + "\"";

  // A token without mcp:admin, in each spelling of the scope claim.
  for (const char* claims : {R"(,"scope":"mcp:tools")", R"(,"scp":["mcp:tools"])", ""}) {
    INFO(claims);
    Response r = fetch(gw.port(), call("admin_reset", jwt(kResource, claims), 40));
    CHECK(r.status == 403);
    CHECK(challenge(r) == "Bearer error=\"insufficient_scope\", scope=\"mcp:admin\", " + meta);
    CHECK(jsonToken(r.body, "id").value_or("") == "40");
    CHECK(jsonToken(r.body, "scopes").value_or("") == R"(["mcp:admin"])");
  }
  // No token at all (anonymous: allow): 401, with the scope to ask for.
  Response anon = fetch(gw.port(), call("admin_reset", "", 41));
  CHECK(anon.status == 401);
  CHECK(challenge(anon) == "Bearer scope=\"mcp:admin\", " + meta);

  // With the scope, in each spelling, the call goes through; other tools need none.
  size_t n = 0;
  for (const char* claims :
       {R"(,"scope":"mcp:tools mcp:admin")", R"(,"scp":["mcp:admin"])", R"(,"scp":"mcp:admin")"}) {
    INFO(claims);
    CHECK(fetch(gw.port(), call("admin_reset", jwt(kResource, claims), 42)).status == 200);
    CHECK(up.waitForRequests(++n, Ms(2000)));
    // None of the refused calls went upstream: the accepted ones (markers) are all there is.
    CHECK(up.requestCount() == n);
  }
  CHECK(fetch(gw.port(), call("echo", "", 43)).status == 200);
  CHECK(up.waitForRequests(++n, Ms(2000)));
  std::string line;
  auto deadline = Clock::now() + Ms(3000);
  while (Clock::now() < deadline && line.empty()) {
    for (const std::string& l : fileLines(gw.accessLogPath())) {
      if (l.find("insufficient_scope") != std::string::npos) {
        line = l;
      }
    }
    std::this_thread::sleep_for(Ms(10));
  }
  CHECK(line.find("\"status\":403") != std::string::npos);
}

TEST_CASE("oauth: scope_implies grants through the pipeline, a 401 names the least it needs",
          "[oauth]") {
  RawUpstream up(RawUpstream::respond(200, kOkBody));
  TempDir dir;
  const std::string yaml = config(dir, up.address(), "deny");
  // The same policy with a hierarchy (mcp:owner grants mcp:admin) and a narrower challenge.
  std::string policy = readFile(dir.file("policy.yaml"));
  policy.replace(policy.find("  anonymous:"), 0,
                 "    challenge_scopes: [mcp:tools]\n"
                 "  scope_implies:\n"
                 "    \"mcp:owner\": [\"mcp:admin\"]\n");
  REQUIRE(writeFile(dir.file("policy.yaml"), policy));
  Gateway gw(yaml);

  // A 401 names the least the request needs: the scopes of the rule that decides it, else
  // challenge_scopes (not all of scopes_supported).
  Response none = fetch(gw.port(), call("admin_reset", "", 1));
  CHECK(none.status == 401);
  CHECK(challenge(none) ==
        std::string("Bearer scope=\"mcp:admin\", resource_metadata=\"") + kMetadataUrl + "\"");
  Response plain = fetch(gw.port(), call("echo", "", 4));
  CHECK(plain.status == 401);
  CHECK(challenge(plain) ==
        std::string("Bearer scope=\"mcp:tools\", resource_metadata=\"") + kMetadataUrl + "\"");
  // mcp:owner implies mcp:admin, which the admin_* rule requires.
  Response owner =
      fetch(gw.port(), call("admin_reset", jwt(kResource, R"(,"scope":"mcp:owner")"), 2));
  INFO(owner.head << owner.body);
  CHECK(owner.status == 200);
  Response tools =
      fetch(gw.port(), call("admin_reset", jwt(kResource, R"(,"scope":"mcp:tools")"), 3));
  CHECK(tools.status == 403);
  CHECK(challenge(tools).find("insufficient_scope") != std::string::npos);
  CHECK(up.requestCount() == 1);
}
