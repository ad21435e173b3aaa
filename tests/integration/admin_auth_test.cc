// admin_auth on the real mcp-gateway binary (issue 17, part 5): every admin path but
// /healthz and /readyz answers 401 without the Bearer token, with a wrong one (of the same or
// another length) and with a non-Bearer credential, and as usual with the token (the scheme
// name in any case); a reload that changes the token applies to the next admin request; an
// admin listener off loopback is refused without admin_auth, and a running one off loopback
// keeps needing it until a restart. Tokens are made at run time; ports are chosen at run time.

#include <signal.h>

#include <catch.hpp>
#include <filesystem>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"content":[]}})";
constexpr char kRealm[] = "Bearer realm=\"mcp-gateway-admin\"";
constexpr char kInvalid[] = "Bearer realm=\"mcp-gateway-admin\", error=\"invalid_token\"";

// `bytes` random bytes as hex (a token as `openssl rand -hex` makes one).
std::string randomToken(size_t bytes = 24) {
  std::random_device rd;
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  for (size_t i = 0; i < bytes; ++i) {
    const unsigned b = rd() & 0xff;
    out += kHex[b >> 4];
    out += kHex[b & 0xf];
  }
  return out;
}

std::string configYaml(const std::string& admin, const std::string& token_file,
                       const std::string& upstream) {
  return "listen: 127.0.0.1:${PORT}\n"
         "admin: " +
         admin +
         "\n"
         "admin_auth:\n"
         "  token_file: " +
         token_file +
         "\n"
         "workers: 1\n"
         "upstreams:\n"
         "  - name: backend\n"
         "    endpoints: [" +
         upstream +
         "]\n"
         "routes:\n"
         "  - name: default\n"
         "    upstream: backend\n"
         "access_log: { path: \"${ACCESS_LOG}\" }\n";
}

// A gateway whose admin listener (on `admin_host`) needs the token in dir/admin.token.
struct AuthGateway {
  explicit AuthGateway(const std::string& admin_host = "127.0.0.1")
      : token(writeToken(dir, randomToken())),
        gw(configYaml(admin_host + ":0", dir.file("admin.token"), up.address())),
        admin(gw.adminPort()) {}
  static std::string writeToken(const TempDir& d, const std::string& t) {
    writeFile(d.file("admin.token"), t + "\n");
    return t;
  }
  TempDir dir;
  RawUpstream up{RawUpstream::respond(200, kOkBody)};
  std::string token;
  Gateway gw;
  uint16_t admin;  // the port the gateway chose
};

// One admin request; `auth` is the whole Authorization line(s) ("" for none).
Response adminRequest(uint16_t port, const std::string& method, const std::string& target,
                      const std::string& auth, const std::string& body = "") {
  std::string req = method + " " + target + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n";
  req += auth;
  if (method == "POST") {
    req +=
        "Content-Type: application/json\r\nContent-Length: " + std::to_string(body.size()) + "\r\n";
  }
  return fetch(port, req + "\r\n" + body);
}

std::string bearer(std::string_view token, std::string_view scheme = "Bearer") {
  return "Authorization: " + std::string(scheme) + " " + std::string(token) + "\r\n";
}

struct Target {
  const char* method;
  const char* target;
  const char* body;
  int status;  // with the token
};

// Every admin path the listener serves, and an unknown one.
const Target kProtected[] = {
    {"GET", "/metrics", "", 200},
    {"GET", "/config", "", 200},
    {"GET", "/explain?method=tools/call&name=echo", "", 200},
    {"POST", "/explain", R"({"method":"tools/call","name":"echo"})", 200},
    {"GET", "/federation", "", 200},
    {"GET", "/pins", "", 200},
    {"GET", "/nope", "", 404},
    {"POST", "/metrics", "{}", 405},
};

void checkRefused(const Response& r, const char* challenge) {
  CHECK(r.status == 401);
  CHECK(r.header("WWW-Authenticate") == challenge);
  CHECK(r.header("Content-Type") == "application/json");
  CHECK(r.body.rfind("{\"error\":\"", 0) == 0);
}

}  // namespace

TEST_CASE("admin_auth: every admin path but /healthz and /readyz needs the Bearer token",
          "[admin][admin_auth]") {
  AuthGateway fixture;
  auto& [dir, up, token, gw, admin] = fixture;
  const std::string same_length(token.size(), token[0] == 'a' ? 'b' : 'a');
  for (const Target& t : kProtected) {
    INFO(t.method << " " << t.target);
    Response none = adminRequest(admin, t.method, t.target, "", t.body);
    checkRefused(none, kRealm);
    CHECK(none.body == "{\"error\":\"admin token required (Authorization: Bearer <token>)\"}\n");
    Response wrong = adminRequest(admin, t.method, t.target, bearer(same_length), t.body);
    checkRefused(wrong, kInvalid);
    CHECK(wrong.body == "{\"error\":\"invalid admin token\"}\n");
    checkRefused(adminRequest(admin, t.method, t.target, bearer(token + "0"), t.body), kInvalid);
    checkRefused(adminRequest(admin, t.method, t.target, bearer(token.substr(1)), t.body),
                 kInvalid);
    checkRefused(adminRequest(admin, t.method, t.target, bearer(token, "Basic"), t.body), kRealm);
    checkRefused(
        adminRequest(admin, t.method, t.target, bearer(token) + bearer(same_length), t.body),
        kInvalid);
    CHECK(adminRequest(admin, t.method, t.target, bearer(token), t.body).status == t.status);
    CHECK(adminRequest(admin, t.method, t.target, bearer(token, "bearer"), t.body).status ==
          t.status);
    CHECK(adminRequest(admin, t.method, t.target, bearer(token, "BEARER"), t.body).status ==
          t.status);
  }
  // Probes need nothing, and a wrong token does not hurt them.
  for (const char* open : {"/healthz", "/readyz"}) {
    INFO(open);
    Response r = adminRequest(admin, "GET", open, "");
    CHECK(r.status == 200);
    CHECK_FALSE(r.header("WWW-Authenticate"));
    CHECK(adminRequest(admin, "GET", open, bearer(same_length)).status == 200);
  }
  // The image's HEALTHCHECK (GET /healthz) passes.
  Process hc({GW_BINARY, "healthcheck", "--port", std::to_string(admin)}, dir.path(),
             "healthcheck");
  CHECK(hc.wait(Ms(5000)) == 0);
  // What a token opens: the usual answers; /config names the file, never the token.
  Response cfg = adminRequest(admin, "GET", "/config", bearer(token));
  REQUIRE(cfg.status == 200);
  CHECK(cfg.body.find("\"admin_auth\":{\"token_file\":\"" + dir.file("admin.token") + "\"}") !=
        std::string::npos);
  CHECK(cfg.body.find(token) == std::string::npos);
  const size_t n = std::size(kProtected);
  Response m = adminRequest(admin, "GET", "/metrics", bearer(token));
  CHECK(sample(m.body, "mcp_gateway_admin_auth_failures_total{reason=\"missing\"}") == 2 * n);
  CHECK(sample(m.body, "mcp_gateway_admin_auth_failures_total{reason=\"invalid\"}") == 4 * n);
  // The MCP endpoint does not care about the admin token.
  CHECK(fetch(gw.port(), mcpPost(toolsCallBody())).status == 200);
  const std::string logs = gw.process().stdoutText() + gw.process().stderrText();
  CHECK(logs.find(token) == std::string::npos);
}

TEST_CASE("admin_auth: a new token applies to the next request, a broken one is not taken",
          "[admin][admin_auth][reload]") {
  AuthGateway fixture;
  auto& [dir, up, token, gw, admin] = fixture;
  REQUIRE(adminRequest(admin, "GET", "/metrics", bearer(token)).status == 200);
  const std::string old_token = token;
  const std::string new_token = randomToken(32);  // another length too
  const std::string file = dir.file("admin.token");

  SECTION("the watched token file") {
    REQUIRE(writeFile(file, new_token + "\r\n"));
  }
  SECTION("SIGHUP after an edit") {
    // The watch may see the write first; either way the next request uses the new token.
    REQUIRE(writeFile(file, new_token));
    REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  }
  REQUIRE(waitFor(
      [&] { return adminRequest(admin, "GET", "/config", bearer(new_token)).status == 200; },
      Ms(10000)));
  for (const Target& t : kProtected) {
    INFO(t.target);
    checkRefused(adminRequest(admin, t.method, t.target, bearer(old_token), t.body), kInvalid);
    CHECK(adminRequest(admin, t.method, t.target, bearer(new_token), t.body).status == t.status);
  }
  // A token too short to keep: the reload fails, and the last good token stays.
  REQUIRE(writeFile(file, "short\n"));
  REQUIRE(gw.process().waitForOutput("holds a token of 5 bytes", Ms(10000)));
  REQUIRE(gw.process().waitForOutput("reload failed; keeping the running configuration", Ms(5000)));
  CHECK(adminRequest(admin, "GET", "/metrics", bearer(new_token)).status == 200);
  CHECK(adminRequest(admin, "GET", "/metrics", bearer("short")).status == 401);
  const std::string logs = gw.process().stdoutText() + gw.process().stderrText();
  CHECK(logs.find(old_token) == std::string::npos);
  CHECK(logs.find(new_token) == std::string::npos);
}

TEST_CASE("admin_auth: an admin listener off loopback needs it, until a restart too",
          "[admin][admin_auth]") {
  TempDir dir;
  RawUpstream up{RawUpstream::respond(200, kOkBody)};
  const std::string open_admin = "0.0.0.0:0";  // the gateway chooses the port
  // Without admin_auth the file does not load: `check` and `run` say why and exit 1.
  writeFile(dir.file("open.yaml"), "listen: 127.0.0.1:0\nadmin: " + open_admin +
                                       "\nupstreams:\n  - name: b\n    endpoints: [" +
                                       up.address() + "]\nroutes:\n  - name: d\n    upstream: b\n");
  const std::string why = "admin listens on " + open_admin +
                          " (not loopback) without admin_auth; set admin_auth.token_file or "
                          "bind admin to 127.0.0.1";
  for (const char* cmd : {"check", "run"}) {
    INFO(cmd);
    std::vector<std::string> argv{GW_BINARY, cmd, "-c", dir.file("open.yaml")};
    if (std::string_view(cmd) == "run") {
      argv.insert(argv.end(), {"--ports-file", dir.file("open.ports")});
    }
    Process p(argv, dir.path(), cmd);
    CHECK(p.wait(Ms(5000)) == 1);
    CHECK(p.stderrText().find("open.yaml:2:8: " + why) != std::string::npos);
  }
  // `run` bound nothing: it writes the ports file once every listener is bound.
  CHECK_FALSE(std::filesystem::exists(dir.file("open.ports")));

  // With admin_auth it runs (reached here through 127.0.0.1).
  const std::string token = randomToken();
  writeFile(dir.file("admin.token"), token);
  Gateway gw(configYaml(open_admin, dir.file("admin.token"), up.address()));
  const uint16_t admin = gw.adminPort();
  REQUIRE(admin != 0);
  checkRefused(adminRequest(admin, "GET", "/metrics", ""), kRealm);
  CHECK(adminRequest(admin, "GET", "/metrics", bearer(token)).status == 200);
  CHECK(adminRequest(admin, "GET", "/healthz", "").status == 200);

  // A reload may not drop admin_auth while the listener bound at start is off loopback, even
  // when the file moves admin to loopback (that move waits for a restart).
  std::string next = readFile(gw.configPath());
  next.replace(next.find("admin: 0.0.0.0"), 14, "admin: 127.0.0.1");
  next.erase(next.find("admin_auth:"), next.find("workers:") - next.find("admin_auth:"));
  REQUIRE(next.find("admin_auth") == std::string::npos);
  REQUIRE(writeFile(gw.configPath(), next));
  REQUIRE(::kill(gw.pid(), SIGHUP) == 0);
  REQUIRE(gw.process().waitForOutput("(not loopback) until a restart; it cannot lose admin_auth",
                                     Ms(10000)));
  REQUIRE(gw.process().waitForOutput("reload failed; keeping the running configuration", Ms(5000)));
  checkRefused(adminRequest(admin, "GET", "/metrics", ""), kRealm);
  Response m = adminRequest(admin, "GET", "/metrics", bearer(token));
  REQUIRE(m.status == 200);
  CHECK(sample(m.body, "mcp_gateway_config_reloads_total{result=\"failure\"}") >= 1);
  CHECK(sample(m.body, "mcp_gateway_config_reloads_total{result=\"success\"}") == 0);
}
