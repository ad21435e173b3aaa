// The era bridge's front, pure half (see front.h).

#include "gateway/mcp/front.h"

#include <openssl/crypto.h>
#include <simdjson.h>

#include <optional>

#include "gateway/core/base64.h"
#include "gateway/core/hex.h"
#include "gateway/mcp/bridge.h"
#include "gateway/mcp/json_internal.h"
#include "gateway/mcp/session.h"

namespace gw::mcp::front {

namespace {

constexpr int kInternalError = -32603;  // JSON-RPC 2.0 "Internal error"
constexpr size_t kNpos = std::string_view::npos;

constexpr std::string_view kMetaVersion = "io.modelcontextprotocol/protocolVersion";
constexpr std::string_view kMetaCapabilities = "io.modelcontextprotocol/clientCapabilities";
constexpr std::string_view kMetaClientInfo = "io.modelcontextprotocol/clientInfo";

constexpr std::string_view kFrontDomain = "mcp-front/v1";
constexpr size_t kRandomBytes = 16;
constexpr size_t kRandomChars = 22;  // base64url of 16 bytes, no padding
constexpr size_t kTagAt = kFrontSessionPrefix.size() + kRandomChars + 1;

void appendString(std::string& out, std::string_view s) {
  out += '"';
  appendJsonEscaped(out, s);
  out += '"';
}

// ---- a scanner over JSON text simdjson has already accepted --------------------------------

bool isWs(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

size_t skipWs(std::string_view t, size_t i) noexcept {
  while (i < t.size() && isWs(t[i])) {
    ++i;
  }
  return i;
}

// t[i] is a string's opening quote; the index just past its closing quote.
size_t skipString(std::string_view t, size_t i) noexcept {
  ++i;
  while (i < t.size() && t[i] != '"') {
    i += t[i] == '\\' ? 2 : 1;
  }
  return i < t.size() ? i + 1 : t.size();
}

// t[i] is a value's first byte; the index just past the value.
size_t skipValue(std::string_view t, size_t i) noexcept {
  if (i >= t.size()) {
    return t.size();
  }
  if (t[i] == '"') {
    return skipString(t, i);
  }
  if (t[i] == '{' || t[i] == '[') {
    size_t depth = 0;
    while (i < t.size()) {
      const char c = t[i];
      if (c == '"') {
        i = skipString(t, i);
        continue;
      }
      if (c == '{' || c == '[') {
        ++depth;
      } else if ((c == '}' || c == ']') && --depth == 0) {
        return i + 1;
      }
      ++i;
    }
    return t.size();
  }
  while (i < t.size() && !isWs(t[i]) && t[i] != ',' && t[i] != '}' && t[i] != ']') {
    ++i;
  }
  return i;
}

// Whether the key text `raw` (between its quotes, escapes as written) unescapes to `want`,
// which is ASCII.
bool keyIs(std::string_view raw, std::string_view want) noexcept {
  size_t w = 0;
  size_t i = 0;
  while (i < raw.size()) {
    if (w >= want.size()) {
      return false;
    }
    char c = raw[i];
    if (c != '\\') {
      ++i;
    } else if (i + 1 < raw.size() && raw[i + 1] == 'u') {
      if (i + 6 > raw.size()) {
        return false;
      }
      int v = 0;
      for (size_t k = i + 2; k < i + 6; ++k) {
        const int h = core::hexValue(raw[k]);
        if (h < 0) {
          return false;
        }
        v = v * 16 + h;
      }
      if (v >= 0x80) {
        return false;  // not ASCII, so not in `want`
      }
      c = static_cast<char>(v);
      i += 6;
    } else if (i + 1 < raw.size()) {
      switch (raw[i + 1]) {
        case '"':
        case '\\':
        case '/':
          c = raw[i + 1];
          break;
        case 'b':
          c = '\b';
          break;
        case 'f':
          c = '\f';
          break;
        case 'n':
          c = '\n';
          break;
        case 'r':
          c = '\r';
          break;
        case 't':
          c = '\t';
          break;
        default:
          return false;
      }
      i += 2;
    } else {
      return false;
    }
    if (c != want[w]) {
      return false;
    }
    ++w;
  }
  return w == want.size();
}

// One pass over the object at t[open] ('{'): where it closes, whether it is empty, and the
// value span of its member `key` (when asked).
struct ObjectScan {
  size_t close = kNpos;  // the '}'
  bool empty = true;
  size_t begin = kNpos;  // the first `key` member's value, [begin, end)
  size_t end = kNpos;
  bool twice = false;  // `key` appears more than once
};

ObjectScan scanObject(std::string_view t, size_t open, std::optional<std::string_view> key) {
  ObjectScan s;
  size_t i = skipWs(t, open + 1);
  while (i < t.size() && t[i] == '"') {
    s.empty = false;
    const size_t key_end = skipString(t, i);
    const std::string_view raw = t.substr(i + 1, key_end - i - 2);
    const size_t value = skipWs(t, skipWs(t, key_end) + 1);  // past the ':'
    const size_t value_end = skipValue(t, value);
    if (key && keyIs(raw, *key)) {
      if (s.begin != kNpos) {
        s.twice = true;
      } else {
        s.begin = value;
        s.end = value_end;
      }
    }
    i = skipWs(t, value_end);
    if (i < t.size() && t[i] == ',') {
      i = skipWs(t, i + 1);
    }
  }
  if (i < t.size() && t[i] == '}') {
    s.close = i;
  }
  return s;
}

// ---- session ids ---------------------------------------------------------------------------

std::string frontTag(std::string_view secret, std::string_view random) {
  std::string msg;
  msg.reserve(kFrontDomain.size() + 1 + random.size());
  msg.append(kFrontDomain).append(1, '\0').append(random);
  return sessionTag(secret, msg);
}

}  // namespace

bool parseInitializeRequest(std::string_view body, InitRequest& out, std::string& why) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(body);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS) {
    why = "the initialize request is not JSON";
    return false;
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    why = root.is_array() ? "initialize cannot be sent in a batch"
                          : "the initialize request is not a JSON object";
    return false;
  }
  std::string_view method;
  if (obj["method"].get_string().get(method) != simdjson::SUCCESS || method != "initialize") {
    why = "the message is not an initialize request";
    return false;
  }
  simdjson::dom::element id;
  if (obj["id"].get(id) != simdjson::SUCCESS || !(id.is_string() || id.is_number())) {
    why = "initialize needs an id that is a string or a number";
    return false;
  }
  out.id = requestIdOf(id, std::string_view(padded.data(), padded.size()));
  simdjson::dom::object params;
  if (obj["params"].get_object().get(params) != simdjson::SUCCESS) {
    why = "the initialize request has no params object";
    return false;
  }
  std::string_view version;
  if (params["protocolVersion"].get_string().get(version) != simdjson::SUCCESS) {
    why = "the initialize request has no protocolVersion string";
    return false;
  }
  out.version = std::string(version);
  simdjson::dom::element e;
  out.capabilities = "{}";
  if (params["capabilities"].get(e) == simdjson::SUCCESS && !e.is_null()) {
    if (!e.is_object()) {
      why = "the initialize request's capabilities is not an object";
      return false;
    }
    out.capabilities = simdjson::minify(e);
  }
  out.client_info.clear();
  if (params["clientInfo"].get(e) == simdjson::SUCCESS && !e.is_null()) {
    if (!e.is_object()) {
      why = "the initialize request's clientInfo is not an object";
      return false;
    }
    out.client_info = simdjson::minify(e);
  }
  return true;
}

std::string_view negotiateLegacy(std::string_view requested) noexcept {
  for (std::string_view v : bridge::kLegacyVersions) {
    if (v == requested) {
      return v;
    }
  }
  return bridge::kLegacyVersions[0];
}

std::string initializeAnswer(std::string_view discover_result, std::string_view version,
                             std::string_view server_name, std::string_view server_version,
                             const RequestId& id) {
  std::string capabilities = "{}";
  std::string instructions;
  const size_t first = skipWs(discover_result, 0);
  simdjson::padded_string padded;
  if (first < discover_result.size() && discover_result[first] == '{') {
    padded = simdjson::padded_string(discover_result);
  } else {
    std::string wrapped;
    wrapped.reserve(discover_result.size() + 2);
    wrapped.append(1, '{').append(discover_result).append(1, '}');
    padded = simdjson::padded_string(wrapped);
  }
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::dom::object result;
  if (parser.parse(padded).get(root) == simdjson::SUCCESS &&
      root.get_object().get(result) == simdjson::SUCCESS) {
    simdjson::dom::element e;
    if (result["capabilities"].get(e) == simdjson::SUCCESS && e.is_object()) {
      capabilities = simdjson::minify(e);
    }
    std::string_view text;
    if (result["instructions"].get_string().get(text) == simdjson::SUCCESS) {
      appendString(instructions, text);
    }
  }
  std::string out = R"({"jsonrpc":"2.0","id":)";
  out += id.kind == RequestId::Kind::kJson ? std::string_view(id.json) : "null";
  out += R"(,"result":{"protocolVersion":)";
  appendString(out, version);
  out += R"(,"capabilities":)";
  out += capabilities;
  out += R"(,"serverInfo":{"name":)";
  appendString(out, server_name);
  out += R"(,"version":)";
  appendString(out, server_version);
  out += '}';
  if (!instructions.empty()) {
    out += R"(,"instructions":)";
    out += instructions;
  }
  out += "}}";
  return out;
}

bool modernizeRequest(std::string_view body, std::string_view client_info_json,
                      std::string_view client_caps_json, std::string& out) {
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(body);
  simdjson::dom::element root;
  simdjson::dom::object obj;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS ||
      root.get_object().get(obj) != simdjson::SUCCESS) {
    return false;
  }
  std::string_view method;
  if (obj["method"].get_string().get(method) != simdjson::SUCCESS) {
    return false;
  }
  // What the DOM says is there: params (object, null, absent), _meta (the same), its keys.
  bool need_version = true;
  bool need_caps = true;
  bool need_info = !client_info_json.empty();
  simdjson::dom::element params;
  const bool has_params = obj["params"].get(params) == simdjson::SUCCESS && !params.is_null();
  bool has_meta = false;
  if (has_params) {
    simdjson::dom::object p;
    if (params.get_object().get(p) != simdjson::SUCCESS) {
      return false;
    }
    simdjson::dom::element meta;
    if (p["_meta"].get(meta) == simdjson::SUCCESS && !meta.is_null()) {
      simdjson::dom::object m;
      if (meta.get_object().get(m) != simdjson::SUCCESS) {
        return false;
      }
      has_meta = true;
      need_version = m[kMetaVersion].error() != simdjson::SUCCESS;
      need_caps = m[kMetaCapabilities].error() != simdjson::SUCCESS;
      need_info = need_info && m[kMetaClientInfo].error() != simdjson::SUCCESS;
    }
  }

  // Where in the text: the span to replace or the brace to insert before.
  const size_t root_open = skipWs(body, 0);
  const ObjectScan top = scanObject(body, root_open, "params");
  if (top.twice || top.close == kNpos || (has_params && top.begin == kNpos) ||
      (!has_params && top.begin != kNpos && body[top.begin] != 'n')) {
    return false;  // the last two: the scan and the DOM disagree (never on valid JSON)
  }
  size_t at = top.close;  // insert at `at`, or replace [at, until)
  size_t until = kNpos;
  std::string_view open;   // written before the members
  std::string_view close;  // and after them
  bool comma = false;      // a ',' before what is inserted
  if (top.begin == kNpos || !has_params) {
    if (top.begin != kNpos) {
      at = top.begin;  // "params":null
      until = top.end;
      open = R"({"_meta":{)";
    } else {
      comma = !top.empty;
      open = R"("params":{"_meta":{)";
    }
    close = "}}";
  } else {
    const ObjectScan p = scanObject(body, top.begin, "_meta");
    if (p.twice || p.close == kNpos || (has_meta && p.begin == kNpos) ||
        (!has_meta && p.begin != kNpos && body[p.begin] != 'n')) {
      return false;
    }
    if (p.begin == kNpos) {
      at = p.close;
      comma = !p.empty;
      open = R"("_meta":{)";
      close = "}";
    } else if (!has_meta) {
      at = p.begin;  // "_meta":null
      until = p.end;
      open = "{";
      close = "}";
    } else {
      const ObjectScan m = scanObject(body, p.begin, std::nullopt);
      if (m.close == kNpos) {
        return false;
      }
      at = m.close;
      comma = !m.empty;
    }
  }
  if (!need_version && !need_caps && !need_info) {
    out.assign(body);
    return true;
  }

  std::string r;
  r.reserve(body.size() + 160 + client_caps_json.size() + client_info_json.size());
  r.append(body.substr(0, at));
  if (comma) {
    r += ',';
  }
  r += open;
  bool first = true;
  auto member = [&](std::string_view key) {
    if (!first) {
      r += ',';
    }
    first = false;
    r += '"';
    r += key;
    r += "\":";
  };
  if (need_version) {
    member(kMetaVersion);
    appendString(r, kModernVersion);
  }
  if (need_caps) {
    member(kMetaCapabilities);
    r += client_caps_json.empty() ? std::string_view("{}") : client_caps_json;
  }
  if (need_info) {
    member(kMetaClientInfo);
    r += client_info_json;
  }
  r += close;
  r.append(body.substr(until == kNpos ? at : until));
  out = std::move(r);
  return true;
}

bool legacyAnswer(std::string_view message, std::string& out) {
  if (message.empty()) {
    return false;
  }
  simdjson::dom::parser parser;
  const simdjson::padded_string padded(message);
  simdjson::dom::element root;
  simdjson::dom::object obj;
  simdjson::dom::object result;
  std::string_view type;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS ||
      root.get_object().get(obj) != simdjson::SUCCESS ||
      obj["result"].get_object().get(result) != simdjson::SUCCESS ||
      result["resultType"].get_string().get(type) != simdjson::SUCCESS ||
      type != "input_required") {
    return false;
  }
  RequestId rid = RequestId::null();
  simdjson::dom::element id;
  if (obj["id"].get(id) == simdjson::SUCCESS) {
    rid = requestIdOf(id, std::string_view(padded.data(), padded.size()));
  }
  out = errorBody(rid, kInternalError, kInputRequiredMessage);
  return true;
}

std::string mintFrontSession(std::string_view secret, std::span<const uint8_t> random16) {
  if (random16.size() != kRandomBytes) {
    return {};
  }
  const std::string_view random(reinterpret_cast<const char*>(random16.data()), kRandomBytes);
  const std::string tag = frontTag(secret, random);
  if (tag.size() != kSessionTokenChars) {
    return {};
  }
  std::string out;
  out.reserve(kFrontSessionChars);
  out += kFrontSessionPrefix;
  core::appendBase64(out, random, core::Base64Alphabet::kUrl, core::Base64Padding::kNone);
  out += '.';
  out += tag;
  return out;
}

bool checkFrontSession(std::string_view secret, std::string_view id) {
  if (id.size() != kFrontSessionChars || !id.starts_with(kFrontSessionPrefix) ||
      id[kTagAt - 1] != '.') {
    return false;
  }
  std::string random;
  if (!core::base64Decode(id.substr(kFrontSessionPrefix.size(), kRandomChars),
                          core::Base64Alphabet::kUrl, core::Base64Padding::kNone, random) ||
      random.size() != kRandomBytes) {
    return false;
  }
  const std::string_view tag = id.substr(kTagAt);
  const std::string expected = frontTag(secret, random);
  return expected.size() == kSessionTokenChars && tag.size() == kSessionTokenChars &&
         CRYPTO_memcmp(expected.data(), tag.data(), kSessionTokenChars) == 0;
}

}  // namespace gw::mcp::front
