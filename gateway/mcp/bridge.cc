// The era bridge's pure half (see bridge.h).

#include "gateway/mcp/bridge.h"

#include <simdjson.h>

#include "gateway/mcp/id_scan.h"
#include "gateway/mcp/json_internal.h"

namespace gw::mcp::bridge {

namespace {

constexpr size_t kMaxAnswer = 1024 * 1024;

// The JSON-RPC message of an answer body: the body itself, or an SSE body's response event.
std::string_view messageOf(std::string_view body, bool sse) noexcept {
  return sse ? firstSseResponse(body) : body;
}

// Parses `json` (copied into a padded string) and finds its "result" object.
bool resultOf(simdjson::dom::parser& parser, std::string_view json, simdjson::dom::object& out) {
  if (json.empty() || json.size() > kMaxAnswer) {
    return false;
  }
  simdjson::dom::element root;
  if (parser.parse(simdjson::padded_string(json)).get(root) != simdjson::SUCCESS) {
    return false;
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    return false;
  }
  simdjson::dom::object result;
  if (obj["result"].get_object().get(result) != simdjson::SUCCESS) {
    return false;
  }
  out = result;
  return true;
}

void appendString(std::string& out, std::string_view s) {
  out += '"';
  appendJsonEscaped(out, s);
  out += '"';
}

}  // namespace

bool speaksLegacy(std::string_view version) noexcept {
  for (std::string_view v : kLegacyVersions) {
    if (v == version) {
      return true;
    }
  }
  return false;
}

std::string initializeRequest(std::string_view gateway_version) {
  std::string out =
      R"({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":")";
  out += kLegacyVersions[0];
  out += R"(","capabilities":{},"clientInfo":{"name":"mcp-gateway","version":)";
  appendString(out, gateway_version);
  out += "}}}";
  return out;
}

std::string_view initializedNotification() noexcept {
  return R"({"jsonrpc":"2.0","method":"notifications/initialized"})";
}

bool parseInitializeAnswer(std::string_view body, bool sse, InitResult& out, std::string& why) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object result;
  if (!resultOf(parser, messageOf(body, sse), result)) {
    why = "the initialize answer holds no JSON-RPC result";
    return false;
  }
  std::string_view version;
  if (result["protocolVersion"].get_string().get(version) != simdjson::SUCCESS) {
    why = "the initialize result has no protocolVersion";
    return false;
  }
  if (!speaksLegacy(version)) {
    why = "the server chose protocol version '" + std::string(version.substr(0, 32)) +
          "', which the gateway does not speak as a 2025 client";
    return false;
  }
  out.version = std::string(version);
  simdjson::dom::element e;
  out.capabilities = result["capabilities"].get(e) == simdjson::SUCCESS && e.is_object()
                         ? simdjson::minify(e)
                         : "{}";
  out.server_info.clear();
  if (result["serverInfo"].get(e) == simdjson::SUCCESS && e.is_object()) {
    out.server_info = simdjson::minify(e);
  }
  out.instructions.clear();
  std::string_view text;
  if (result["instructions"].get_string().get(text) == simdjson::SUCCESS) {
    appendString(out.instructions, text);
  }
  return true;
}

std::string discoverProbe(std::string_view modern_version) {
  std::string out = R"({"jsonrpc":"2.0","id":0,"method":"server/discover","params":{"_meta":{)";
  out += R"("io.modelcontextprotocol/protocolVersion":)";
  appendString(out, modern_version);
  out += R"(,"io.modelcontextprotocol/clientCapabilities":{},)";
  out += R"("io.modelcontextprotocol/clientInfo":{"name":"mcp-gateway","version":"probe"}}}})";
  return out;
}

bool probeSaysModern(int status, std::string_view body, bool sse) {
  if (status != 200) {
    return false;
  }
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object result;
  if (!resultOf(parser, messageOf(body, sse), result)) {
    return false;
  }
  simdjson::dom::array versions;
  return result["supportedVersions"].get_array().get(versions) == simdjson::SUCCESS;
}

std::string discoverAnswer(const InitResult& init, std::span<const std::string> offered,
                           const RequestId& id) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id.kind == RequestId::Kind::kJson ? std::string_view(id.json) : "null";
  out += R"(,"result":{"supportedVersions":[)";
  for (size_t i = 0; i < offered.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    appendString(out, offered[i]);
  }
  out += R"(],"capabilities":)";
  out += init.capabilities.empty() ? std::string_view("{}") : std::string_view(init.capabilities);
  if (!init.instructions.empty()) {
    out += R"(,"instructions":)";
    out += init.instructions;
  }
  out += R"(,"ttlMs":0,"cacheScope":"private","resultType":"complete")";
  if (!init.server_info.empty()) {
    out += R"(,"_meta":{"io.modelcontextprotocol/serverInfo":)";
    out += init.server_info;
    out += '}';
  }
  out += "}}";
  return out;
}

bool serverRequest(std::string_view message, std::string& id_json) {
  if (message.empty() || message.size() > kMaxAnswer) {
    return false;
  }
  thread_local simdjson::dom::parser parser;
  const simdjson::padded_string padded(message);
  simdjson::dom::element root;
  simdjson::dom::object obj;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS ||
      root.get_object().get(obj) != simdjson::SUCCESS) {
    return false;
  }
  std::string_view method;
  simdjson::dom::element id;
  if (obj["method"].get_string().get(method) != simdjson::SUCCESS ||
      obj["id"].get(id) != simdjson::SUCCESS || !(id.is_string() || id.is_number())) {
    return false;
  }
  const RequestId rid = requestIdOf(id, std::string_view(padded.data(), padded.size()));
  if (rid.kind != RequestId::Kind::kJson) {
    return false;
  }
  id_json = rid.json;
  return true;
}

bool isMethodNotFound(std::string_view message) {
  if (message.empty() || message.size() > kMaxAnswer ||
      message.find("-32601") == std::string_view::npos) {
    return false;  // (the common case: no parse)
  }
  thread_local simdjson::dom::parser parser;
  const simdjson::padded_string padded(message);
  simdjson::dom::element root;
  simdjson::dom::object obj;
  simdjson::dom::object error;
  int64_t code = 0;
  return parser.parse(padded).get(root) == simdjson::SUCCESS &&
         root.get_object().get(obj) == simdjson::SUCCESS &&
         obj["error"].get_object().get(error) == simdjson::SUCCESS &&
         error["code"].get_int64().get(code) == simdjson::SUCCESS && code == -32601;
}

bool removedIn2026(std::string_view method) noexcept {
  return method == "initialize" || method == "ping" || method == "logging/setLevel" ||
         method == "resources/subscribe" || method == "resources/unsubscribe" ||
         method == "notifications/initialized" || method == "notifications/roots/list_changed";
}

std::string refusalFor(std::string_view id_json) {
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id_json;
  out += R"(,"error":{"code":-32601,"message":"Method not found: the gateway bridges this )";
  out += R"(session for a 2026-07-28 client and takes no server-to-client requests"}})";
  return out;
}

namespace {

// Where the top-level "result" member's object starts ('{'), in JSON text already checked to
// be a valid object; npos when there is none.
size_t resultObjectAt(std::string_view json) noexcept {
  int depth = 0;
  bool key_next = false;  // at depth 1, the next string is a key
  for (size_t i = 0; i < json.size(); ++i) {
    const char c = json[i];
    if (c == '"') {
      const size_t start = i + 1;
      ++i;
      while (i < json.size() && json[i] != '"') {
        i += json[i] == '\\' ? 2 : 1;
      }
      if (depth == 1 && key_next) {
        key_next = false;
        if (json.substr(start, i - start) == "result") {
          size_t j = i + 1;
          while (j < json.size() && (json[j] == ' ' || json[j] == '\t' || json[j] == '\n' ||
                                     json[j] == '\r' || json[j] == ':')) {
            ++j;
          }
          return j < json.size() && json[j] == '{' ? j : std::string_view::npos;
        }
      }
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
      key_next = depth == 1 && c == '{';
    } else if (c == '}' || c == ']') {
      --depth;
    } else if (c == ',' && depth == 1) {
      key_next = true;
    }
  }
  return std::string_view::npos;
}

}  // namespace

bool isCacheable(std::string_view method) noexcept {
  return method == "tools/list" || method == "prompts/list" || method == "resources/list" ||
         method == "resources/read" || method == "resources/templates/list";
}

bool completeResult(std::string_view message, bool cacheable, std::string& out) {
  thread_local simdjson::dom::parser parser;
  simdjson::dom::object result;
  if (!resultOf(parser, message, result)) {
    return false;
  }
  simdjson::dom::element e;
  std::string members;
  if (result["resultType"].get(e) != simdjson::SUCCESS) {
    members += R"("resultType":"complete")";
  }
  if (cacheable && result["ttlMs"].get(e) != simdjson::SUCCESS) {
    members += members.empty() ? R"("ttlMs":0)" : R"(,"ttlMs":0)";
  }
  if (cacheable && result["cacheScope"].get(e) != simdjson::SUCCESS) {
    members += members.empty() ? R"("cacheScope":"private")" : R"(,"cacheScope":"private")";
  }
  const size_t at = members.empty() ? std::string_view::npos : resultObjectAt(message);
  if (at == std::string_view::npos) {
    return false;
  }
  out.clear();
  out.reserve(message.size() + members.size() + 1);
  out.append(message.substr(0, at + 1));
  out += members;
  if (result.size() != 0) {
    out += ',';
  }
  out.append(message.substr(at + 1));
  return true;
}

std::string_view firstSseResponse(std::string_view body) noexcept {
  size_t at = 0;
  while (at < body.size()) {
    size_t end = body.find('\n', at);
    if (end == std::string_view::npos) {
      end = body.size();
    }
    std::string_view line = body.substr(at, end - at);
    if (!line.empty() && line.back() == '\r') {
      line.remove_suffix(1);
    }
    if (line.starts_with("data:")) {
      line.remove_prefix(5);
      if (!line.empty() && line.front() == ' ') {
        line.remove_prefix(1);
      }
      if (looksLikeResponse(line.substr(0, kIdScanBytes))) {
        return line;
      }
    }
    at = end + 1;
  }
  return {};
}

}  // namespace gw::mcp::bridge
