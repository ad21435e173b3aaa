// Legacy body → MCP view (see legacy.h). One simdjson DOM parse of the padded body copy the
// proxy already holds; the structural walk is verify mode's (checkStructure); values are
// copied into the request's ValueArena only when a view is filled.

#include "gateway/mcp/legacy.h"

#include <simdjson.h>

#include <charconv>
#include <cstring>

#include "gateway/mcp/json_internal.h"
#include "gateway/mcp/methods.h"

namespace gw::mcp {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

struct ThreadState {
  simdjson::dom::parser parser;
  std::vector<object> objects;  // message i's object, for fillParams
};

ThreadState& state() {
  thread_local ThreadState st;
  return st;
}

bool member(object o, std::string_view key, element& out) {
  return o.at_key(key).get(out) == simdjson::SUCCESS;
}

bool fail(LegacyError& e, int code, std::string message, const char* reason = "body_invalid") {
  e.code = code;
  e.message = std::move(message);
  e.reason = reason;
  return false;
}

// Message-level rules for one object (see legacy.h). `doc` is the padded body for a single
// message (ids with a fraction are echoed as written), empty inside a batch.
bool readMessage(object o, std::string_view doc, LegacyMessage& m, LegacyError& e) {
  element id;
  const bool has_id = member(o, "id", id);
  const element_type id_type = has_id ? id.type() : element_type::NULL_VALUE;
  const bool id_scalar = id_type == element_type::STRING || id_type == element_type::INT64 ||
                         id_type == element_type::UINT64 || id_type == element_type::DOUBLE;
  m.id = !has_id ? RequestId::absent() : id_scalar ? requestIdOf(id, doc) : RequestId::null();
  e.id = m.id.kind == RequestId::Kind::kAbsent ? RequestId::null() : m.id;

  std::string_view version;
  element v;
  if (!member(o, "jsonrpc", v) || v.get_string().get(version) != simdjson::SUCCESS ||
      version != "2.0") {
    return fail(e, code::kInvalidRequest, "Invalid Request: \"jsonrpc\" must be \"2.0\"");
  }
  element method_el;
  if (!member(o, "method", method_el)) {
    element unused;
    if (!member(o, "result", unused) && !member(o, "error", unused)) {
      return fail(e, code::kInvalidRequest, "Invalid Request: missing \"method\"");
    }
    if (has_id && !id_scalar && id_type != element_type::NULL_VALUE) {
      return fail(e, code::kInvalidRequest, "Invalid Request: \"id\" must be a string or a number",
                  "id_invalid");
    }
    m.kind = BodyKind::kResponse;
    return true;
  }
  if (method_el.get_string().get(m.method) != simdjson::SUCCESS) {
    return fail(e, code::kInvalidRequest, "Invalid Request: \"method\" must be a string");
  }
  if (has_id && !id_scalar) {
    return fail(e, code::kInvalidRequest, "Invalid Request: \"id\" must be a string or a number",
                "id_invalid");
  }
  m.kind = has_id ? BodyKind::kRequest : BodyKind::kNotification;
  if (!has_id && isRequestOnlyMethod(m.method)) {
    std::string msg = "Invalid Request: ";
    appendQuotedValue(msg, m.method);
    msg.append(" is a request and needs an \"id\"");
    return fail(e, code::kInvalidRequest, std::move(msg), "request_without_id");
  }
  const std::string_view field = nameMember(m.method, true);
  object params;
  element name_el;
  if (!field.empty() && member(o, "params", v) && v.get_object().get(params) == simdjson::SUCCESS &&
      member(params, field, name_el)) {
    if (name_el.get_string().get(m.name) != simdjson::SUCCESS) {
      std::string msg = "Invalid Request: params.";
      msg.append(field);
      msg.append(" must be a string");
      return fail(e, code::kInvalidRequest, std::move(msg));
    }
    m.has_name = true;
  }
  return true;
}

std::string_view printed(const char* begin, const char* end) {
  return std::string_view(begin, static_cast<size_t>(end - begin));
}

// The top-level id of a single message, for an error found before the message is read
// (duplicate keys): null when unreadable or when "id" itself is the duplicate.
RequestId idOf(object o, std::string_view doc, const StructureCheck& sc) {
  element id;
  if ((sc.dup_depth == 1 && sc.dup_key == "id") || !member(o, "id", id)) {
    return RequestId::null();
  }
  const element_type t = id.type();
  if (t != element_type::STRING && t != element_type::INT64 && t != element_type::UINT64 &&
      t != element_type::DOUBLE) {
    return RequestId::null();
  }
  return requestIdOf(id, doc);
}

bool copyValue(ValueArena& arena, std::string_view v, std::string_view& out) {
  if (v.empty()) {
    out = {};
    return true;
  }
  char* p = arena.allocate(v.size());
  if (p == nullptr) {
    return false;
  }
  std::memcpy(p, v.data(), v.size());
  out = std::string_view(p, v.size());
  return true;
}

// params.arguments.<path...> of `o`; false when a step is missing or not an object.
bool resolveArgument(object o, const std::vector<std::string>& path, element& out) {
  element e;
  object cur;
  if (path.empty() || !member(o, "params", e) || e.get_object().get(cur) != simdjson::SUCCESS ||
      !member(cur, "arguments", e) || e.get_object().get(cur) != simdjson::SUCCESS) {
    return false;
  }
  return argumentAt(cur, path, out);
}

}  // namespace

bool LegacyBody::parse(std::string_view body, LegacyError& error, size_t max_depth) {
  ThreadState& st = state();
  body_ = body;
  batch_ = false;
  msgs_.clear();
  st.objects.clear();
  error = LegacyError{};
  error.id = RequestId::null();

  if (body.size() >= 3 && static_cast<unsigned char>(body[0]) == 0xEF &&
      static_cast<unsigned char>(body[1]) == 0xBB && static_cast<unsigned char>(body[2]) == 0xBF) {
    return fail(error, code::kParseError, "Parse error: byte order mark");
  }
  element root;
  const auto err = st.parser.parse(body.data(), body.size(), false).get(root);
  if (err == simdjson::DEPTH_ERROR) {
    return fail(error, code::kInvalidRequest, "Invalid Request: nesting too deep");
  }
  if (err != simdjson::SUCCESS) {
    return fail(error, code::kParseError,
                err == simdjson::UTF8_ERROR ? "Parse error: invalid UTF-8" : "Parse error");
  }
  const element_type root_type = root.type();
  if (root_type != element_type::OBJECT && root_type != element_type::ARRAY) {
    return fail(error, code::kInvalidRequest,
                "Invalid Request: the body is not a JSON object or batch array");
  }
  batch_ = root_type == element_type::ARRAY;
  const StructureCheck sc = checkStructure(root, max_depth);
  if (!sc.ok) {
    if (sc.too_deep) {
      return fail(error, code::kInvalidRequest, "Invalid Request: nesting too deep");
    }
    std::string m = "Invalid Request: duplicate key ";
    appendQuotedValue(m, sc.dup_key);
    object o;
    if (!batch_ && root.get_object().get(o) == simdjson::SUCCESS) {
      error.id = idOf(o, body, sc);
    }
    return fail(error, code::kInvalidRequest, std::move(m));
  }
  if (!batch_) {
    object o;
    if (root.get_object().get(o) != simdjson::SUCCESS) {
      return fail(error, code::kInvalidRequest, "Invalid Request: the body is not a JSON object");
    }
    LegacyMessage m;
    if (!readMessage(o, body, m, error)) {
      return false;
    }
    msgs_.push_back(std::move(m));
    st.objects.push_back(o);
    return true;
  }
  simdjson::dom::array a;
  if (root.get_array().get(a) != simdjson::SUCCESS || a.size() == 0) {
    return fail(error, code::kInvalidRequest, "Invalid Request: empty batch");
  }
  LegacyError element_error;
  for (element child : a) {
    object o;
    if (child.get_object().get(o) != simdjson::SUCCESS) {
      return fail(error, code::kInvalidRequest,
                  "Invalid Request: a batch element is not a JSON object");
    }
    LegacyMessage m;
    if (!readMessage(o, {}, m, element_error)) {
      element_error.message += " (in a batch)";
      error = std::move(element_error);
      error.id = RequestId::null();
      return false;
    }
    msgs_.push_back(std::move(m));
    st.objects.push_back(o);
  }
  return true;
}

bool LegacyBody::fillView(size_t i, ValueArena& arena, McpHeaders& out) const {
  const LegacyMessage& m = msgs_.at(i);
  out.params.clear();
  out.has_method = m.kind != BodyKind::kResponse;
  out.has_name = m.has_name;
  out.name = McpValue{};
  if (!copyValue(arena, m.method, out.method)) {
    return false;
  }
  if (m.has_name) {
    if (!copyValue(arena, m.name, out.name.value)) {
      return false;
    }
    out.name.raw = out.name.value;
  }
  return true;
}

bool LegacyBody::fillParams(size_t i, const ToolSchema* tool, ValueArena& arena,
                            McpHeaders& out) const {
  out.params.clear();
  const LegacyMessage& m = msgs_.at(i);
  if (tool == nullptr || m.method != "tools/call" || !m.has_name || m.name != tool->tool) {
    return true;
  }
  const object o = state().objects.at(i);
  for (const HeaderParam& hp : tool->params) {
    element arg;
    if (!resolveArgument(o, hp.path, arg)) {
      continue;
    }
    char buf[32];
    std::string_view text;
    std::string_view str;
    int64_t si = 0;
    uint64_t ui = 0;
    double d = 0;
    bool b = false;
    switch (arg.type()) {
      case element_type::STRING:
        if (arg.get_string().get(str) != simdjson::SUCCESS) {
          continue;
        }
        text = str;
        break;
      case element_type::INT64:
        if (arg.get_int64().get(si) != simdjson::SUCCESS) {
          continue;
        }
        text = printed(buf, std::to_chars(buf, buf + sizeof buf, si).ptr);
        break;
      case element_type::UINT64:
        if (arg.get_uint64().get(ui) != simdjson::SUCCESS) {
          continue;
        }
        text = printed(buf, std::to_chars(buf, buf + sizeof buf, ui).ptr);
        break;
      case element_type::DOUBLE: {
        static constexpr std::string_view kArgs[] = {"params", "arguments"};
        if (!batch_ && rawMemberText(body_, kArgs, hp.path, text)) {
          break;
        }
        if (arg.get_double().get(d) != simdjson::SUCCESS) {
          continue;
        }
        text = printed(buf, std::to_chars(buf, buf + sizeof buf, d).ptr);
        break;
      }
      case element_type::BOOL:
        if (arg.get_bool().get(b) != simdjson::SUCCESS) {
          continue;
        }
        text = b ? "true" : "false";
        break;
      default:
        continue;  // null, object, array: no header value
    }
    McpParam p;
    if (!copyValue(arena, hp.header, p.name) || !copyValue(arena, text, p.v.value)) {
      return false;
    }
    p.v.raw = p.v.value;
    out.params.push_back(p);
  }
  return true;
}

}  // namespace gw::mcp
