// Verify mode's body check (spec items 22, 38, 45, 54-57): one simdjson DOM parse of the
// buffered, padded body, a walk for depth and duplicate keys, then the body values compared
// with the decoded Mcp-* headers. Error-code simdjson API only; nothing here throws on
// purpose (std::bad_alloc aside).

#include "gateway/mcp/verifier.h"

#include <simdjson.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <vector>

#include "gateway/mcp/json_internal.h"
#include "gateway/mcp/methods.h"
#include "gateway/mcp/number.h"

namespace gw::mcp {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

constexpr std::string_view kVersionKey = "io.modelcontextprotocol/protocolVersion";
constexpr int kInvalidParams = -32602;
constexpr size_t kLinearDupScan = 16;  // objects with more keys are checked by sorting

struct WalkState {
  size_t max_depth = 0;
  std::vector<std::string_view> keys;  // scratch, reused across objects and calls
  bool too_deep = false;
  std::string_view dup_key;  // view into the parser's string buffer
  size_t dup_depth = 0;
};

// True when `o` has two keys that are equal after unescaping (simdjson hands out the
// unescaped keys). Sets st.dup_key to one of them.
bool findDuplicateKey(object o, WalkState& st) {
  st.keys.clear();
  for (auto field : o) {
    st.keys.push_back(field.key);
  }
  const size_t n = st.keys.size();
  if (n <= kLinearDupScan) {
    for (size_t i = 1; i < n; ++i) {
      for (size_t j = 0; j < i; ++j) {
        if (st.keys[i] == st.keys[j]) {
          st.dup_key = st.keys[i];
          return true;
        }
      }
    }
    return false;
  }
  std::sort(st.keys.begin(), st.keys.end());
  const auto it = std::adjacent_find(st.keys.begin(), st.keys.end());
  if (it != st.keys.end()) {
    st.dup_key = *it;
    return true;
  }
  return false;
}

// Depth of the root container is 1. False (with too_deep or dup_key set) on the first
// violation.
bool walk(element e, size_t depth, WalkState& st) {
  const element_type t = e.type();
  if (t != element_type::OBJECT && t != element_type::ARRAY) {
    return true;
  }
  if (depth > st.max_depth) {
    st.too_deep = true;
    return false;
  }
  if (t == element_type::ARRAY) {
    simdjson::dom::array a;
    if (e.get_array().get(a) != simdjson::SUCCESS) {
      return true;
    }
    for (element child : a) {
      if (!walk(child, depth + 1, st)) {
        return false;
      }
    }
    return true;
  }
  object o;
  if (e.get_object().get(o) != simdjson::SUCCESS) {
    return true;
  }
  if (findDuplicateKey(o, st)) {
    st.dup_depth = depth;
    return false;
  }
  for (auto field : o) {
    if (!walk(field.value, depth + 1, st)) {
      return false;
    }
  }
  return true;
}

bool member(object o, std::string_view key, element& out) {
  return o.at_key(key).get(out) == simdjson::SUCCESS;
}

bool stringMember(object o, std::string_view key, std::string_view& out) {
  element e;
  return member(o, key, e) && e.get_string().get(out) == simdjson::SUCCESS;
}

bool objectMember(object o, std::string_view key, object& out) {
  element e;
  return member(o, key, e) && e.get_object().get(out) == simdjson::SUCCESS;
}

void reject(VerifyResult& r, int code, std::string message, const char* reason = nullptr) {
  r.ok = false;
  r.code = code;
  r.message = std::move(message);
  r.reason = reason != nullptr               ? reason
             : code == code::kHeaderMismatch ? "header_mismatch"
                                             : "body_invalid";
}

// "Header mismatch: <header> header value '<h>' does not match body value '<b>'"
std::string mismatch(std::string_view header, std::string_view header_value,
                     std::string_view body_value) {
  std::string m = "Header mismatch: ";
  m.append(header);
  m.append(" header value ");
  appendQuotedValue(m, header_value);
  m.append(" does not match body value ");
  appendQuotedValue(m, body_value);
  return m;
}

std::string missingHeader(std::string_view header, std::string_view why) {
  std::string m = "Header mismatch: missing ";
  m.append(header);
  m.append(" header");
  if (!why.empty()) {
    m.append(" (");
    m.append(why);
    m.push_back(')');
  }
  return m;
}

std::string missingInBody(std::string_view header, std::string_view header_value,
                          std::string_view body_path) {
  std::string m = "Header mismatch: ";
  m.append(header);
  m.append(" header value ");
  appendQuotedValue(m, header_value);
  m.append(" but the body has no ");
  m.append(body_path);
  return m;
}

std::string paramHeaderName(const HeaderParam& hp) {
  std::string h = "Mcp-Param-";
  appendJsonEscaped(h, hp.header);  // a token when learned by parseToolsList
  return h;
}

// The text of a body number: an integer printed from its value (simdjson keeps those
// exactly, and the printed form is the canonical one), anything else (a fraction or an
// exponent, kept by the DOM only as a double) read back as written from the padded body.
bool bodyNumberText(element e, std::string_view padded_body, const HeaderParam& hp,
                    std::string& out) {
  char buf[24];
  int64_t i = 0;
  uint64_t u = 0;
  switch (e.type()) {
    case element_type::INT64:
      if (e.get_int64().get(i) != simdjson::SUCCESS) {
        return false;
      }
      out.assign(buf, std::to_chars(buf, buf + sizeof buf, i).ptr);
      return true;
    case element_type::UINT64:
      if (e.get_uint64().get(u) != simdjson::SUCCESS) {
        return false;
      }
      out.assign(buf, std::to_chars(buf, buf + sizeof buf, u).ptr);
      return true;
    case element_type::DOUBLE: {
      static constexpr std::string_view kArgs[] = {"params", "arguments"};
      std::string_view raw;
      if (!rawMemberText(padded_body, kArgs, hp.path, raw)) {
        return false;
      }
      out.assign(raw);
      return true;
    }
    default:
      return false;
  }
}

// Resolves params.arguments.<path...>; false when a step is missing or not an object.
bool resolveArgument(bool has_args, object args, const std::vector<std::string>& path,
                     element& out) {
  return has_args && argumentAt(args, path, out);
}

// The Mcp-Param-* checks of item 45 for one annotated argument. False with r rejected.
bool checkParam(const HeaderParam& hp, bool has_args, object args, const McpHeaders& headers,
                std::string_view padded_body, VerifyResult& r) {
  element arg;
  const bool present =
      resolveArgument(has_args, args, hp.path, arg) && arg.type() != element_type::NULL_VALUE;
  const McpParam* hdr = headers.findParam(hp.header);
  if (!present) {
    if (hdr != nullptr) {
      std::string m = "Header mismatch: ";
      m.append(paramHeaderName(hp));
      m.append(" header present but the argument is absent or null");
      reject(r, code::kHeaderMismatch, std::move(m));
      return false;
    }
    return true;
  }
  if (hdr == nullptr) {
    reject(r, code::kHeaderMismatch, missingHeader(paramHeaderName(hp), "the argument is present"));
    return false;
  }
  const std::string_view hv = hdr->v.value;
  switch (hp.type) {
    case ParamType::kString: {
      std::string_view bv;
      if (arg.get_string().get(bv) != simdjson::SUCCESS) {
        reject(r, code::kHeaderMismatch,
               "Header mismatch: " + paramHeaderName(hp) + " argument is not a string");
        return false;
      }
      if (hv != bv) {
        reject(r, code::kHeaderMismatch, mismatch(paramHeaderName(hp), hv, bv));
        return false;
      }
      return true;
    }
    case ParamType::kInteger: {
      const element_type t = arg.type();
      if (t != element_type::INT64 && t != element_type::UINT64 && t != element_type::DOUBLE) {
        reject(r, code::kHeaderMismatch,
               "Header mismatch: " + paramHeaderName(hp) + " argument is not a number");
        return false;
      }
      std::string bv;
      if (!bodyNumberText(arg, padded_body, hp, bv) || !sameNumber(hv, bv)) {
        reject(r, code::kHeaderMismatch, mismatch(paramHeaderName(hp), hv, bv));
        return false;
      }
      return true;
    }
    case ParamType::kBoolean: {
      bool bv = false;
      if (arg.get_bool().get(bv) != simdjson::SUCCESS) {
        reject(r, code::kHeaderMismatch,
               "Header mismatch: " + paramHeaderName(hp) + " argument is not a boolean");
        return false;
      }
      if (hv != (bv ? "true" : "false")) {
        reject(r, code::kHeaderMismatch, mismatch(paramHeaderName(hp), hv, bv ? "true" : "false"));
        return false;
      }
      return true;
    }
  }
  return true;
}

// Header checks for a request (kind kRequest). False with r rejected.
bool checkRequestHeaders(std::string_view method, bool has_params, object params,
                         const McpHeaders& headers, const ToolSchema* tool,
                         std::string_view padded_body, VerifyResult& r) {
  if (!headers.has_method) {
    reject(r, code::kHeaderMismatch, missingHeader("Mcp-Method", {}));
    return false;
  }
  if (headers.method != method) {
    reject(r, code::kHeaderMismatch, mismatch("Mcp-Method", headers.method, method));
    return false;
  }

  const std::string_view field = nameMember(method);
  std::string_view body_name;
  const bool has_body_name = has_params && !field.empty() && stringMember(params, field, body_name);
  if (!field.empty()) {
    if (!headers.has_name) {
      std::string why = "required for ";
      appendJsonEscaped(why, method);
      reject(r, code::kHeaderMismatch, missingHeader("Mcp-Name", why));
      return false;
    }
    if (!has_body_name) {
      std::string path = "string params.";
      path.append(field);
      reject(r, code::kHeaderMismatch, missingInBody("Mcp-Name", headers.name.value, path));
      return false;
    }
    if (headers.name.value != body_name) {
      reject(r, code::kHeaderMismatch, mismatch("Mcp-Name", headers.name.value, body_name));
      return false;
    }
  }

  if (!headers.has_version) {
    reject(r, code::kHeaderMismatch, missingHeader("MCP-Protocol-Version", {}));
    return false;
  }
  object meta;
  std::string_view body_version;
  if (!has_params || !objectMember(params, "_meta", meta) ||
      !stringMember(meta, kVersionKey, body_version)) {
    reject(r, code::kHeaderMismatch,
           missingInBody("MCP-Protocol-Version", headers.version,
                         "string params._meta[\"io.modelcontextprotocol/protocolVersion\"]"));
    return false;
  }
  if (headers.version != body_version) {
    reject(r, code::kHeaderMismatch,
           mismatch("MCP-Protocol-Version", headers.version, body_version));
    return false;
  }

  // Annotations only apply to the tool they were learned for.
  if (tool != nullptr && method == "tools/call" && has_body_name && body_name == tool->tool) {
    object args;
    const bool has_args = objectMember(params, "arguments", args);
    for (const HeaderParam& hp : tool->params) {
      if (!checkParam(hp, has_args, args, headers, padded_body, r)) {
        return false;
      }
    }
  }
  return true;
}

// Notifications: Mcp-Method and MCP-Protocol-Version are compared only when sent (their
// presence on notification POSTs is not defined; item A.18).
bool checkNotificationHeaders(std::string_view method, bool has_params, object params,
                              const McpHeaders& headers, VerifyResult& r) {
  if (headers.has_method && headers.method != method) {
    reject(r, code::kHeaderMismatch, mismatch("Mcp-Method", headers.method, method));
    return false;
  }
  object meta;
  std::string_view body_version;
  if (headers.has_version && has_params && objectMember(params, "_meta", meta) &&
      stringMember(meta, kVersionKey, body_version) && headers.version != body_version) {
    reject(r, code::kHeaderMismatch,
           mismatch("MCP-Protocol-Version", headers.version, body_version));
    return false;
  }
  return true;
}

}  // namespace

StructureCheck checkStructure(element root, size_t max_depth) {
  thread_local WalkState st;
  st.max_depth = max_depth;
  st.too_deep = false;
  st.dup_key = {};
  st.dup_depth = 0;
  StructureCheck c;
  c.ok = walk(root, 1, st);
  c.too_deep = st.too_deep;
  c.dup_key = st.dup_key;
  c.dup_depth = st.dup_depth;
  return c;
}

size_t bodyPadding() noexcept {
  return simdjson::SIMDJSON_PADDING;
}

VerifyResult verifyBody(std::string_view body, const McpHeaders& headers, const ToolSchema* tool,
                        const VerifyOptions& options) {
  thread_local simdjson::dom::parser parser;
  thread_local WalkState st;

  VerifyResult r;
  r.id = RequestId::null();  // until the body is readable

  if (body.size() >= 3 && static_cast<unsigned char>(body[0]) == 0xEF &&
      static_cast<unsigned char>(body[1]) == 0xBB && static_cast<unsigned char>(body[2]) == 0xBF) {
    reject(r, code::kParseError, "Parse error: byte order mark");
    return r;
  }
  element root;
  const auto err = parser.parse(body.data(), body.size(), false).get(root);
  if (err == simdjson::DEPTH_ERROR) {
    reject(r, code::kInvalidRequest, "Invalid Request: nesting too deep");
    return r;
  }
  if (err != simdjson::SUCCESS) {
    reject(r, code::kParseError,
           err == simdjson::UTF8_ERROR ? "Parse error: invalid UTF-8" : "Parse error");
    return r;
  }
  if (root.type() == element_type::ARRAY) {
    reject(r, code::kInvalidRequest, "Invalid Request: batch requests are not supported");
    return r;
  }
  object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    reject(r, code::kInvalidRequest, "Invalid Request: the body is not a JSON object");
    return r;
  }

  element id;
  const bool has_id = member(obj, "id", id);
  const element_type id_type = has_id ? id.type() : element_type::NULL_VALUE;
  const bool id_valid = !has_id || id_type == element_type::STRING ||
                        id_type == element_type::INT64 || id_type == element_type::UINT64 ||
                        id_type == element_type::DOUBLE || id_type == element_type::NULL_VALUE;
  r.id = !has_id ? RequestId::absent() : id_valid ? requestIdOf(id, body) : RequestId::null();

  st.max_depth = options.max_depth;
  st.too_deep = false;
  st.dup_key = {};
  if (!walk(root, 1, st)) {
    if (st.too_deep) {
      reject(r, code::kInvalidRequest, "Invalid Request: nesting too deep");
      return r;
    }
    if (st.dup_depth == 1 && st.dup_key == "id") {
      r.id = RequestId::null();
    }
    std::string m = "Invalid Request: duplicate key ";
    appendQuotedValue(m, st.dup_key);
    reject(r, code::kInvalidRequest, std::move(m));
    return r;
  }

  std::string_view version;
  if (!stringMember(obj, "jsonrpc", version) || version != "2.0") {
    reject(r, code::kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
    return r;
  }

  element method_el;
  if (!member(obj, "method", method_el)) {
    element unused;
    if (member(obj, "result", unused) || member(obj, "error", unused)) {
      // Spec item 3: the client MUST NOT POST a response (with or without header checks:
      // it is no request for the server and must not reach one as if it were).
      r.kind = BodyKind::kResponse;
      reject(r, code::kInvalidRequest, "JSON-RPC responses may not be POSTed", "response_posted");
      return r;
    }
    reject(r, code::kInvalidRequest, "Invalid Request: missing \"method\"");
    return r;
  }
  std::string_view method;
  if (method_el.get_string().get(method) != simdjson::SUCCESS) {
    reject(r, code::kInvalidRequest, "Invalid Request: \"method\" must be a string");
    return r;
  }
  r.method = method;
  // MCP RequestId is string | number: JSON-RPC's discouraged null is not an id here.
  if (!id_valid || (has_id && id_type == element_type::NULL_VALUE)) {
    reject(r, code::kInvalidRequest, "Invalid Request: \"id\" must be a string or a number",
           "id_invalid");
    return r;
  }
  r.kind = has_id ? BodyKind::kRequest : BodyKind::kNotification;
  if (!has_id && isRequestOnlyMethod(method)) {
    std::string m = "Invalid Request: ";
    appendQuotedValue(m, method);
    m.append(" is a request and needs an \"id\"");
    reject(r, code::kInvalidRequest, std::move(m), "request_without_id");
    return r;
  }

  if (options.check_envelope && r.kind == BodyKind::kRequest) {
    // The 2026-07-28 request envelope (spec A.7), as a server checks it before dispatch.
    object params;
    object meta;
    object caps;
    std::string_view meta_version;
    const char* missing = nullptr;
    if (!objectMember(obj, "params", params) || !objectMember(params, "_meta", meta)) {
      missing = "params._meta";
    } else if (!stringMember(meta, kVersionKey, meta_version)) {
      missing = "io.modelcontextprotocol/protocolVersion";
    } else if (!objectMember(meta, "io.modelcontextprotocol/clientCapabilities", caps)) {
      missing = "io.modelcontextprotocol/clientCapabilities";
    }
    if (missing != nullptr) {
      std::string m = "Invalid params: invalid _meta envelope for protocol revision 2026-07-28: ";
      m += missing;
      m += ": missing";
      reject(r, kInvalidParams, std::move(m), "body_invalid");
      return r;
    }
  }

  if (options.check_headers) {
    object params;
    const bool has_params = objectMember(obj, "params", params);
    const bool passed =
        r.kind == BodyKind::kRequest
            ? checkRequestHeaders(method, has_params, params, headers, tool, body, r)
            : checkNotificationHeaders(method, has_params, params, headers, r);
    if (!passed) {
      return r;
    }
  }
  r.ok = true;
  return r;
}

}  // namespace gw::mcp
