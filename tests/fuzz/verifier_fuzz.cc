// libFuzzer target: the verify-mode body checker and tools/list learning. Must never crash;
// checks that every result is self-consistent (ok ⇔ no code; codes from the documented
// set) and that the error body built from any result — id and message included — is valid
// JSON, i.e. nothing copied from the request escapes its quoting.

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/mcp/contract.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/schema.h"
#include "gateway/mcp/verifier.h"

namespace {

using gw::mcp::BodyKind;
using gw::mcp::ParamType;
using gw::mcp::VerifyResult;

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

bool validJson(const std::string& s) {
  static simdjson::dom::parser parser;
  simdjson::dom::element e;
  return parser.parse(s).get(e) == simdjson::SUCCESS;
}

const gw::mcp::ToolSchema& tool() {
  static const gw::mcp::ToolSchema t{"execute_sql",
                                     {{"Region", {"region"}, ParamType::kString},
                                      {"Count", {"count"}, ParamType::kInteger},
                                      {"Dry", {"dry"}, ParamType::kBoolean},
                                      {"Tenant", {"opts", "tenant"}, ParamType::kString}}};
  return t;
}

const gw::mcp::McpHeaders& headers() {
  static const gw::mcp::McpHeaders h = [] {
    gw::mcp::McpHeaders x;
    x.has_version = true;
    x.version = "2026-07-28";
    x.has_method = true;
    x.method = "tools/call";
    x.has_name = true;
    x.name = {"execute_sql", "execute_sql", false};
    x.params = {{"Region", {"us-west1", "us-west1", false}},
                {"count", {"42", "42", false}},
                {"DRY", {"true", "true", false}},
                {"Tenant", {"=?base64?SGVsbG8sIOS4lueVjA==?=", "Hello, 世界", true}}};
    return x;
  }();
  return h;
}

void checkResult(const VerifyResult& r) {
  if (r.ok) {
    check(r.code == 0 && r.message.empty());
    check(r.kind != BodyKind::kUnknown);
  } else {
    check(r.code == gw::mcp::code::kParseError || r.code == gw::mcp::code::kInvalidRequest ||
          r.code == gw::mcp::code::kHeaderMismatch);
    check(!r.message.empty() && r.message.size() < 512);
  }
  check(validJson(gw::mcp::errorBody(r.id, r.code, r.message)));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const size_t padding = gw::mcp::bodyPadding();
  std::vector<char> buf(size + padding, '\0');
  if (size > 0) {
    std::memcpy(buf.data(), data, size);
  }
  const std::string_view body(buf.data(), size);

  gw::mcp::VerifyOptions opts;
  opts.max_depth = 16;
  for (bool check_headers : {true, false}) {
    opts.check_headers = check_headers;
    const VerifyResult r = gw::mcp::verifyBody(body, headers(), &tool(), opts);
    checkResult(r);
    const VerifyResult again = gw::mcp::verifyBody(body, headers(), nullptr, opts);
    checkResult(again);
  }

  std::vector<gw::mcp::ToolSchema> tools;
  uint64_t ttl = 0;
  if (gw::mcp::parseToolsList(body, tools, ttl)) {
    for (const gw::mcp::ToolSchema& t : tools) {
      for (const gw::mcp::HeaderParam& p : t.params) {
        check(!p.header.empty() && !p.path.empty());
      }
    }
  }

  std::string escaped = "\"";
  gw::mcp::appendJsonEscaped(escaped, body);
  escaped.push_back('"');
  check(validJson(escaped));
  return 0;
}
