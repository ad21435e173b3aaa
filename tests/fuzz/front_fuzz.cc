// libFuzzer target: the era bridge's front (gateway/mcp/front.h). Must never crash; checks
// that a modernized request is a JSON object whose params._meta carries the 2026-07-28
// envelope, that modernizing it again changes nothing, that a refusal leaves `out` alone,
// that legacyAnswer's error and initializeAnswer's response are JSON, and that a session id
// checks only when it is exactly what mintFrontSession made.

#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>
#include <string_view>

#include "gateway/mcp/front.h"

namespace {

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

bool isJsonObject(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  return parser.parse(simdjson::padded_string(text)).get(root) == simdjson::SUCCESS &&
         root.is_object();
}

bool hasEnvelope(std::string_view text) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::dom::element v;
  simdjson::dom::element c;
  return parser.parse(simdjson::padded_string(text)).get(root) == simdjson::SUCCESS &&
         root.at_pointer("/params/_meta/io.modelcontextprotocol~1protocolVersion").get(v) ==
             simdjson::SUCCESS &&
         root.at_pointer("/params/_meta/io.modelcontextprotocol~1clientCapabilities").get(c) ==
             simdjson::SUCCESS;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  namespace front = gw::mcp::front;

  std::string out = "<untouched>";
  if (front::modernizeRequest(in, R"({"name":"c"})", R"({"roots":{}})", out)) {
    check(isJsonObject(out) && hasEnvelope(out));
    std::string again;
    check(front::modernizeRequest(out, R"({"name":"c"})", R"({"roots":{}})", again));
    check(again == out);
  } else {
    check(out == "<untouched>");
  }

  front::InitRequest init;
  std::string why;
  if (front::parseInitializeRequest(in, init, why)) {
    check(init.id.kind == gw::mcp::RequestId::Kind::kJson);
    check(isJsonObject(init.capabilities));
    check(init.client_info.empty() || isJsonObject(init.client_info));
    const std::string answer =
        front::initializeAnswer(in, front::negotiateLegacy(init.version), "gw", "1", init.id);
    check(isJsonObject(answer));
  } else {
    check(!why.empty());
  }
  check(isJsonObject(front::initializeAnswer(in, "2025-11-25", "gw", "1", {})));

  std::string error = "<untouched>";
  if (front::legacyAnswer(in, error)) {
    check(isJsonObject(error));
  } else {
    check(error == "<untouched>");
  }

  if (front::checkFrontSession("k", in)) {
    check(in.size() == front::kFrontSessionChars);
  }
  if (size >= 16) {
    const std::string id = front::mintFrontSession("k", std::span<const uint8_t>(data, 16));
    check(id.size() == front::kFrontSessionChars && front::checkFrontSession("k", id));
    check(!front::checkFrontSession("j", id));
  }
  return 0;
}
