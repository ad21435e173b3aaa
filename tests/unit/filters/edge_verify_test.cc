// Issue #12 item 11 through the real stages (Pipeline::onHeaders / onBody, driven by
// filters::explain exactly as /explain and `mcp-gateway explain` drive them): the header-level
// rules of contractStage (Content-Type charset, Content-Encoding, Mcp-Name on a method that
// defines no name) for every trusted request, and the body rules of verify mode.

#include <simdjson.h>

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/filters/explain.h"
#include "tests/unit/policy/test_util.h"

using gw::filters::ExplainInput;

namespace {

std::shared_ptr<const gw::filters::Snapshot> loadSnapshot(const gw::policy::test::TempDir& dir,
                                                          bool verify) {
  std::string path = dir.write("gateway.yaml", std::string("listen: 127.0.0.1:8080\n") +
                                                   (verify ? "mcp: { verify_body: true }\n" : "") +
                                                   "upstreams:\n"
                                                   "  - name: backend\n"
                                                   "    endpoints: [127.0.0.1:9000]\n"
                                                   "routes:\n"
                                                   "  - name: default\n"
                                                   "    upstream: backend\n");
  std::vector<gw::settings::Diagnostic> errors;
  auto snap = gw::filters::Snapshot::load(path, nullptr, errors);
  for (const auto& e : errors) {
    UNSCOPED_INFO(e.str());
  }
  REQUIRE(snap);
  return snap;
}

struct Decision {
  bool forward = false;
  int64_t status = 0;
  std::string reason;
  int64_t code = 0;
};

Decision decide(const gw::filters::Snapshot& snap, const ExplainInput& in) {
  auto r = gw::filters::explain(snap, in, nullptr);
  REQUIRE(r);
  INFO(*r);
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  REQUIRE(parser.parse(*r).get(root) == simdjson::SUCCESS);
  Decision d;
  std::string_view decision;
  REQUIRE(root["decision"].get(decision) == simdjson::SUCCESS);
  d.forward = decision == "forward";
  if (!d.forward) {
    REQUIRE(root["status"].get(d.status) == simdjson::SUCCESS);
    std::string_view reason;
    REQUIRE(root["reason"].get(reason) == simdjson::SUCCESS);
    d.reason = reason;
    simdjson::dom::element error = root["error"];
    if (error.is_object()) {
      REQUIRE(error["code"].get(d.code) == simdjson::SUCCESS);
    }
  }
  return d;
}

// A complete tools/list (verify mode checks the body's _meta version too).
ExplainInput toolsList() {
  ExplainInput in;
  in.method = "tools/list";
  in.body = R"({"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":)"
            R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  return in;
}

}  // namespace

TEST_CASE("edge-verify: Content-Type charset must be UTF-8 (RFC 8259 §8.1, RFC 9110 §8.3.1)",
          "[edge][edge-verify]") {
  gw::policy::test::TempDir dir;
  for (bool verify : {false, true}) {
    auto snap = loadSnapshot(dir, verify);
    struct Case {
      const char* content_type;
      const char* reason;  // "" = forwarded
    };
    const Case cases[] = {
        {"application/json", ""},
        {"Application/JSON", ""},
        {"application/json;charset=utf-8", ""},
        {"application/json; charset=utf-8", ""},
        {"application/json ; charset=UTF-8", ""},
        {"application/json;  CHARSET=Utf-8", ""},  // (HTAB: explain refuses controls)
        {"application/json; charset=\"utf-8\"", ""},
        {"application/json; charset=\"UTF-8\"", ""},
        {"application/json; charset=\"utf\\-8\"", ""},  // quoted-pair
        {"application/json; charset=utf8", ""},         // WHATWG / Python / Java label for UTF-8
        {"application/json; charset=UTF8", ""},
        {"application/json;", ""},
        {"application/json;;", ""},
        {"application/json; ; charset=utf-8 ;", ""},
        {"application/json; profile=x; charset=utf-8", ""},
        {"application/json; foo=\"a;b\"", ""},
        {"application/json; charset=iso-8859-1", "charset_unsupported"},
        {"application/json; charset=latin1", "charset_unsupported"},
        {"application/json; charset=us-ascii", "charset_unsupported"},
        {"application/json; charset=utf-16", "charset_unsupported"},
        {"application/json; charset=UTF-16LE", "charset_unsupported"},
        {"application/json; charset=utf-32", "charset_unsupported"},
        {"application/json; charset=utf-7", "charset_unsupported"},
        {"application/json; charset=\"iso-8859-1\"", "charset_unsupported"},
        {"application/json; charset=\"\"", "charset_unsupported"},
        {"application/json; charset=utf-8x", "charset_unsupported"},
        {"application/json; charset=utf-8-with-a-long-tail", "charset_unsupported"},
        {"application/json; charset=\"utf-8 \"", "charset_unsupported"},
        {"application/json; charset=utf-8; charset=utf-8", "charset_unsupported"},
        {"application/json; charset=utf-8; Charset=latin1", "charset_unsupported"},
        {"application/json; charset=latin1; charset=utf-8", "charset_unsupported"},
        {"application/json; charset", "unsupported_media_type"},
        {"application/json; charset=", "unsupported_media_type"},
        {"application/json; charset =utf-8", "unsupported_media_type"},
        {"application/json; charset= utf-8", "unsupported_media_type"},
        {"application/json; charset=\"utf-8", "unsupported_media_type"},
        {"application/json; charset=utf-8 x", "unsupported_media_type"},
        {"application/json; =utf-8", "unsupported_media_type"},
        {"application/json, text/plain", "unsupported_media_type"},
        {"text/plain; charset=utf-8", "unsupported_media_type"},
        {"application/jsonx", "unsupported_media_type"},
    };
    for (const Case& c : cases) {
      INFO("verify " << verify << " Content-Type: " << c.content_type);
      ExplainInput in = toolsList();
      in.headers.emplace_back("Content-Type", c.content_type);
      const Decision d = decide(*snap, in);
      if (*c.reason == '\0') {
        CHECK(d.forward);
      } else {
        CHECK_FALSE(d.forward);
        CHECK(d.status == 415);
        CHECK(d.reason == c.reason);
        CHECK(d.code == -31007);
      }
    }
    SECTION("two Content-Type fields are refused, even when both say JSON") {
      ExplainInput in = toolsList();
      in.headers.emplace_back("Content-Type", "application/json");
      in.headers.emplace_back("content-type", "application/json");
      const Decision d = decide(*snap, in);
      CHECK(d.status == 415);
      CHECK(d.reason == "unsupported_media_type");
    }
  }
}

TEST_CASE("edge-verify: any Content-Encoding on a request is refused (RFC 9110 §8.4, §15.5.16)",
          "[edge][edge-verify]") {
  gw::policy::test::TempDir dir;
  auto snap = loadSnapshot(dir, false);
  for (const char* name : {"Content-Encoding", "content-encoding", "CONTENT-ENCODING"}) {
    for (const char* value :
         {"gzip", "identity", "IDENTITY", "deflate", "br", "zstd", "x-gzip", "gzip, identity",
          "identity, identity", "compress", "unknown-coding"}) {
      INFO(name << ": " << value);
      ExplainInput in = toolsList();
      in.headers.emplace_back(name, value);
      const Decision d = decide(*snap, in);
      CHECK_FALSE(d.forward);
      CHECK(d.status == 415);
      CHECK(d.reason == "content_encoding_unsupported");
      CHECK(d.code == -31007);
    }
  }
  SECTION("also on a named method and with a legal charset") {
    ExplainInput in;
    in.method = "tools/call";
    in.name = "echo";
    in.headers.emplace_back("Content-Type", "application/json; charset=utf-8");
    in.headers.emplace_back("Content-Encoding", "gzip");
    CHECK(decide(*snap, in).reason == "content_encoding_unsupported");
  }
}

TEST_CASE("edge-verify: Mcp-Name on a method that defines no name (spec item 38)",
          "[edge][edge-verify]") {
  gw::policy::test::TempDir dir;
  for (bool verify : {false, true}) {
    auto snap = loadSnapshot(dir, verify);
    for (const char* method :
         {"tools/list", "prompts/list", "resources/list", "resources/templates/list",
          "server/discover", "subscriptions/listen", "completion/complete"}) {
      for (const char* name : {"x", "", "tools/list", "=?base64?eA==?="}) {
        INFO("verify " << verify << " " << method << " with Mcp-Name '" << name << "'");
        ExplainInput in;
        in.method = method;
        in.headers.emplace_back("Mcp-Name", name);
        in.body = R"({"jsonrpc":"2.0","id":1,"method":")" + std::string(method) +
                  R"(","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":)"
                  R"("2026-07-28"}}})";
        const Decision d = decide(*snap, in);
        CHECK_FALSE(d.forward);
        CHECK(d.status == 400);
        CHECK(d.reason == "name_unexpected");
        CHECK(d.code == -32020);
      }
    }
    // Methods with a name, and methods the gateway does not know, keep Mcp-Name.
    for (const char* method :
         {"tools/call", "prompts/get", "resources/read", "tasks/get", "tasks/update",
          "tasks/cancel", "custom/thing", "TOOLS/LIST", "ping", "initialize", "tasks/list"}) {
      INFO("verify " << verify << " " << method);
      ExplainInput in;
      in.method = method;
      in.name = "x";
      const Decision d = decide(*snap, in);
      CHECK(d.forward);
    }
  }
}

TEST_CASE("edge-verify: body rules of verify mode through the stages", "[edge][edge-verify]") {
  gw::policy::test::TempDir dir;
  auto snap = loadSnapshot(dir, true);
  const std::string meta =
      R"("params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}})";
  struct Case {
    const char* what;
    const char* method;  // Mcp-Method ("" = none)
    std::string body;
    const char* reason;
    int64_t code;
  };
  const Case cases[] = {
      {"null id", "tools/list", R"({"jsonrpc":"2.0","id":null,"method":"tools/list",)" + meta + "}",
       "id_invalid", -32600},
      {"bool id", "tools/list", R"({"jsonrpc":"2.0","id":true,"method":"tools/list",)" + meta + "}",
       "id_invalid", -32600},
      {"array id", "tools/list", R"({"jsonrpc":"2.0","id":[1],"method":"tools/list",)" + meta + "}",
       "id_invalid", -32600},
      {"tools/list without id", "tools/list",
       R"({"jsonrpc":"2.0","method":"tools/list",)" + meta + "}", "request_without_id", -32600},
      {"tools/call without id, no Mcp-Method", "",
       R"({"jsonrpc":"2.0","method":"tools/call","params":{"name":"x"}})", "request_without_id",
       -32600},
      {"response", "", R"({"jsonrpc":"2.0","id":1,"result":{}})", "response_posted", -32600},
      {"error response", "tools/list",
       R"({"jsonrpc":"2.0","id":1,"error":{"code":1,"message":""}})", "response_posted", -32600},
  };
  for (bool verify : {true, false}) {
    auto s = loadSnapshot(dir, verify);
    for (const Case& c : cases) {
      if (!verify && *c.method != '\0') {
        continue;  // header mode forwards a request with Mcp-Method unread
      }
      INFO("verify " << verify << " " << c.what);
      ExplainInput in;
      in.method = c.method;
      in.body = c.body;
      const Decision d = decide(*s, in);
      CHECK_FALSE(d.forward);
      CHECK(d.status == 400);
      CHECK(d.reason == c.reason);
      CHECK(d.code == c.code);
    }
  }
  (void)snap;
}
