// Issue #12 item 11 through the real binary: what JSON-RPC 2.0 and MCP 2026-07-28 forbid is
// answered by the gateway (status, JSON-RPC code, echoed id) and never reaches the upstream
// (RawUpstream saw no connection); /explain and `mcp-gateway explain` give the same decision
// for the header-level rules. Everything on 127.0.0.1, ports chosen at run time.

#include <catch.hpp>
#include <string>
#include <vector>

#include "tests/integration/harness.h"

using namespace gw::itest;

namespace {

constexpr char kOkBody[] = R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete"}})";
constexpr char kMeta[] = R"("_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                         R"("io.modelcontextprotocol/clientCapabilities":{}})";

std::string configYaml(const std::string& upstream, uint16_t admin, bool verify) {
  return "listen: 127.0.0.1:${PORT}\n"
         "admin: 127.0.0.1:" +
         std::to_string(admin) +
         "\n"
         "workers: 1\n"
         "mcp:\n"
         "  verify_body: " +
         (verify ? "true" : "false") +
         "\n"
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

// A trusted POST: version, Mcp-Method (unless empty), Content-Type (unless `content_type`
// is empty), the extra header lines, a Content-Length.
std::string post(std::string_view method, std::string_view body, std::string_view extra = "",
                 std::string_view content_type = "application/json") {
  std::string r = "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n";
  if (!content_type.empty()) {
    r += "Content-Type: " + std::string(content_type) + "\r\n";
  }
  r += "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n";
  if (!method.empty()) {
    r += "Mcp-Method: " + std::string(method) + "\r\n";
  }
  r += extra;
  r += "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n";
  r += body;
  return r;
}

std::string rpc(std::string_view method, std::string_view id, std::string_view params = "") {
  std::string b = R"({"jsonrpc":"2.0",)";
  if (!id.empty()) {
    b += R"("id":)" + std::string(id) + ",";
  }
  b += R"("method":")" + std::string(method) + R"(","params":{)" + std::string(params);
  if (!params.empty()) {
    b += ",";
  }
  b += std::string(kMeta) + "}}";
  return b;
}

std::string field(const std::string& json, std::string_view key) {
  return jsonToken(json, key).value_or("<absent>");
}

struct Reject {
  const char* what;
  std::string request;
  int status;
  const char* code;
  const char* id;      // the echoed id token; "?T": T or null (decided from the head alone)
  const char* reason;  // access-log outcome
};

// Each request, on a fresh connection, gets its status, code and id; the access log names
// the outcome and no upstream; the upstream never saw a connection.
void expectRejected(Gateway& gw, RawUpstream& up, const std::vector<Reject>& cases) {
  size_t logged = fileLines(gw.accessLogPath()).size();
  for (const Reject& c : cases) {
    INFO("case: " << c.what);
    Response r = fetch(gw.port(), c.request);
    INFO(r.head << r.body);
    CHECK(r.status == c.status);
    CHECK(r.header("Content-Type").value_or("") == "application/json");
    CHECK(field(r.body, "jsonrpc") == "\"2.0\"");
    CHECK(field(r.body, "code") == c.code);
    if (c.id[0] == '?') {
      // Decided from the head: the id is echoed only when the body was already read.
      const std::string id = field(r.body, "id");
      CHECK((id == c.id + 1 || id == "null"));
    } else {
      CHECK(field(r.body, "id") == c.id);
    }
    ++logged;
    REQUIRE(waitFor([&] { return fileLines(gw.accessLogPath()).size() >= logged; }, Ms(3000)));
    const std::string line = fileLines(gw.accessLogPath()).back();
    INFO("access log: " << line);
    CHECK(field(line, "outcome") == "\"" + std::string(c.reason) + "\"");
    CHECK(field(line, "upstream") == "null");
  }
  CHECK(up.acceptCount() == 0);
  CHECK(up.requestCount() == 0);
}

}  // namespace

TEST_CASE("edge-verify: header-level rules answer 415/400 in header and verify mode",
          "[edge][edge-verify]") {
  for (bool verify : {false, true}) {
    DYNAMIC_SECTION("verify_body " << verify) {
      RawUpstream up{RawUpstream::respond(200, kOkBody)};
      Gateway gw(configYaml(up.address(), 0, verify));
      uint16_t admin = gw.adminPort();
      const std::string list = rpc("tools/list", "11");
      std::vector<Reject> cases = {
          {"charset latin1", post("tools/list", list, "", "application/json; charset=iso-8859-1"),
           415, "-31007", "?11", "charset_unsupported"},
          {"charset utf-16 quoted",
           post("tools/list", list, "", "application/json;charset=\"UTF-16\""), 415, "-31007",
           "?11", "charset_unsupported"},
          {"two charsets",
           post("tools/list", list, "", "application/json; charset=utf-8; charset=utf-8"), 415,
           "-31007", "?11", "charset_unsupported"},
          {"Content-Encoding gzip", post("tools/list", list, "Content-Encoding: gzip\r\n"), 415,
           "-31007", "?11", "content_encoding_unsupported"},
          {"Content-Encoding identity", post("tools/list", list, "content-encoding: identity\r\n"),
           415, "-31007", "?11", "content_encoding_unsupported"},
          {"Mcp-Name on tools/list", post("tools/list", list, "Mcp-Name: echo\r\n"), 400, "-32020",
           "?11", "name_unexpected"},
          {"Mcp-Name on server/discover",
           post("server/discover", rpc("server/discover", "\"d\""), "mcp-name: x\r\n"), 400,
           "-32020", "?\"d\"", "name_unexpected"},
      };
      expectRejected(gw, up, cases);

      // The spellings that stay legal reach the upstream.
      for (const char* ct :
           {"application/json; charset=utf-8", "application/json;charset=\"UTF-8\"",
            "Application/JSON; charset=utf8"}) {
        INFO(ct);
        Response ok = fetch(gw.port(), post("tools/list", list, "", ct));
        CHECK(ok.status == 200);
      }
      CHECK(up.requestCount() == 3);

      {  // 415 for a coded body names what is accepted (RFC 9110 §15.5.16)
        Response r = fetch(gw.port(), post("tools/list", list, "Content-Encoding: br\r\n"));
        CHECK(r.status == 415);
        CHECK(r.header("Accept-Encoding").value_or("") == "identity");
      }

      {  // /explain and the explain command give the same decision
        struct Ask {
          std::string query;
          std::vector<std::string> args;
          const char* status;
          const char* reason;
        };
        const std::vector<Ask> asks = {
            {"/explain?method=tools/list&header.Content-Type=application/json%3B+charset%3Dlatin1",
             {"--method", "tools/list", "--header",
              "Content-Type: application/json; charset=latin1"},
             "415",
             "\"charset_unsupported\""},
            {"/explain?method=tools/list&header.Content-Encoding=gzip",
             {"--method", "tools/list", "--header", "Content-Encoding: gzip"},
             "415",
             "\"content_encoding_unsupported\""},
            {"/explain?method=tools/list&name=echo",
             {"--method", "tools/list", "--name", "echo"},
             "400",
             "\"name_unexpected\""},
            {"/explain?method=tools/list&header.Content-Type=application/json%3B+charset%3DUTF-8",
             {"--method", "tools/list", "--header",
              "Content-Type: application/json; charset=UTF-8"},
             "null",
             "null"},
        };
        TempDir cli_dir;
        const std::string config = cli_dir.file("gateway.yaml");
        writeFile(config, expand(gw.configText(), {}));
        for (const Ask& a : asks) {
          INFO(a.query);
          Response ex = adminGet(admin, a.query);
          REQUIRE(ex.status == 200);
          CHECK(field(ex.body, "status") == a.status);
          CHECK(field(ex.body, "reason") == a.reason);
          std::vector<std::string> argv{GW_BINARY, "explain", "-c", config};
          argv.insert(argv.end(), a.args.begin(), a.args.end());
          Process p(argv, cli_dir.path(), "explain");
          auto rc = p.wait(Ms(5000));
          REQUIRE(rc);
          CHECK(*rc == 0);
          CHECK(field(p.stdoutText(), "status") == a.status);
          CHECK(field(p.stdoutText(), "reason") == a.reason);
        }
      }
    }
  }
}

TEST_CASE("edge-verify: JSON-RPC message rules answer 400/-32600 with the id echoed",
          "[edge][edge-verify]") {
  RawUpstream up{RawUpstream::respond(200, kOkBody)};
  Gateway gw(configYaml(up.address(), 0, true));
  const std::string tail = std::string(R"("method":"tools/list","params":{)") + kMeta + "}}";
  std::vector<Reject> cases = {
      {"id null", post("tools/list", R"({"jsonrpc":"2.0","id":null,)" + tail), 400, "-32600",
       "null", "id_invalid"},
      {"id true", post("tools/list", R"({"jsonrpc":"2.0","id":true,)" + tail), 400, "-32600",
       "null", "id_invalid"},
      {"id object", post("tools/list", R"({"jsonrpc":"2.0","id":{"a":1},)" + tail), 400, "-32600",
       "null", "id_invalid"},
      {"id array", post("tools/list", R"({"jsonrpc":"2.0","id":[7],)" + tail), 400, "-32600",
       "null", "id_invalid"},
      {"tools/list without id", post("tools/list", rpc("tools/list", "")), 400, "-32600", "null",
       "request_without_id"},
      {"tools/call without id",
       post("tools/call", rpc("tools/call", "", R"("name":"echo","arguments":{})"),
            "Mcp-Name: echo\r\n"),
       400, "-32600", "null", "request_without_id"},
      {"escaped ping without id, no Mcp-Method",
       post("", R"({"jsonrpc":"2.0","method":"p\u0069ng"})"), 400, "-32600", "null",
       "request_without_id"},
      {"response POSTed", post("", R"({"jsonrpc":"2.0","id":5,"result":{}})"), 400, "-32600", "5",
       "response_posted"},
      {"error POSTed with Mcp-Method",
       post("tools/list", R"({"jsonrpc":"2.0","id":"e","error":{"code":1,"message":"m"}})"), 400,
       "-32600", "\"e\"", "response_posted"},
      // Fractions and exponents are ids JSON-RPC discourages but allows: echoed as written.
      {"exponent id echoed as written",
       post("tools/list", R"({"jsonrpc":"2.0","id":1.50e+3,"method":"tools/list"})"), 400, "-32020",
       "1.50e+3", "header_mismatch"},
  };
  expectRejected(gw, up, cases);

  SECTION("header mode reads a body without Mcp-Method and applies the same rules") {
    RawUpstream up2{RawUpstream::respond(200, kOkBody)};
    Gateway gw2(configYaml(up2.address(), 0, false));
    std::vector<Reject> header_mode = {
        {"tools/call as a notification",
         post("", R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"delete_all"}})"), 400,
         "-32600", "null", "request_without_id"},
        {"response POSTed", post("", R"({"jsonrpc":"2.0","id":9,"result":{}})"), 400, "-32600", "9",
         "response_posted"},
        {"id null without Mcp-Method", post("", R"({"jsonrpc":"2.0","id":null,"method":"x"})"), 400,
         "-32600", "null", "id_invalid"},
    };
    expectRejected(gw2, up2, header_mode);
  }
}

TEST_CASE("edge-verify: integer Mcp-Param equivalence holds for every JSON number spelling",
          "[edge][edge-verify]") {
  // The upstream's tools/list teaches the gateway that `count` is mirrored as Mcp-Param-Count.
  const std::string tools_list =
      R"({"jsonrpc":"2.0","id":1,"result":{"resultType":"complete","tools":[{"name":"count_it",)"
      R"("inputSchema":{"type":"object","properties":{"count":{"type":"integer",)"
      R"("x-mcp-header":"Count"}}}}]}})";
  RawUpstream up{RawUpstream::respond(200, tools_list)};
  Gateway gw(configYaml(up.address(), 0, true));
  Response learned = fetch(gw.port(), post("tools/list", rpc("tools/list", "1")));
  REQUIRE(learned.status == 200);
  REQUIRE(up.requestCount() == 1);

  auto call = [&](std::string_view header, std::string_view body_value, int id) {
    return post("tools/call",
                rpc("tools/call", std::to_string(id),
                    R"("name":"count_it","arguments":{"count":)" + std::string(body_value) + "}"),
                "Mcp-Name: count_it\r\nMcp-Param-Count: " + std::string(header) + "\r\n");
  };
  struct Case {
    const char* header;
    const char* body;
    bool equal;
  };
  const Case cases[] = {
      {"1000", "1e3", true},
      {"1000", "1000.0", true},
      {"1e3", "10E2", true},
      {"1.0e+3", "1000", true},
      {"1.5", "1.50", true},
      {"0", "-0", true},
      {"9007199254740993", "9007199254740993.0", true},
      {"9007199254740992", "9007199254740993", false},
      {"9007199254740992.0", "9007199254740993", false},
      {"9007199254740993", "9007199254740992.0", false},
      {"+1000", "1000", false},
      {"01000", "1000", false},
      {"1e999999999999", "1000", false},
  };
  int id = 100;
  size_t forwarded = up.requestCount();
  for (const Case& c : cases) {
    INFO("Mcp-Param-Count: " << c.header << " vs body " << c.body);
    Response r = fetch(gw.port(), call(c.header, c.body, ++id));
    INFO(r.head << r.body);
    if (c.equal) {
      CHECK(r.status == 200);
      ++forwarded;
    } else {
      CHECK(r.status == 400);
      CHECK(field(r.body, "code") == "-32020");
      CHECK(field(r.body, "id") == std::to_string(id));
    }
    CHECK(up.requestCount() == forwarded);
  }
}
