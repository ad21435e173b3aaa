// JSON-RPC error bodies and JSON string escaping for the replies the gateway makes itself
// (reject paths of every stage), plus a best-effort id reader for those replies.

#include "gateway/mcp/jsonrpc.h"

#include "gateway/core/json_escape.h"
#include "gateway/mcp/json_internal.h"

#include <simdjson.h>

#include <charconv>
#include <cstdint>
#include <utility>

namespace gw::mcp {

namespace {

// The member `key` (compared after unescaping) of an on-demand object; the first match.
bool findMember(simdjson::ondemand::object& obj, std::string_view key,
                simdjson::ondemand::value& out) {
  for (auto result : obj) {
    simdjson::ondemand::field field;
    if (std::move(result).get(field) != simdjson::SUCCESS) {
      return false;
    }
    std::string_view k;
    if (field.unescaped_key().get(k) != simdjson::SUCCESS) {
      return false;
    }
    if (k == key) {
      out = field.value();
      return true;
    }
  }
  return false;
}

}  // namespace

void appendJsonEscaped(std::string& out, std::string_view s) {
  core::appendJsonEscaped(out, s, {.escape_del = true, .replace_invalid_utf8 = true});
}

std::string errorBody(const RequestId& id, int code, std::string_view message,
                      std::string_view data_json) {
  std::string out;
  out.reserve(64 + message.size() + data_json.size() + id.json.size());
  out.append(R"({"jsonrpc":"2.0",)");
  switch (id.kind) {
    case RequestId::Kind::kAbsent:
      break;
    case RequestId::Kind::kNull:
      out.append(R"("id":null,)");
      break;
    case RequestId::Kind::kJson:
      out.append(R"("id":)");
      out.append(id.json);
      out.push_back(',');
      break;
  }
  out.append(R"("error":{"code":)");
  char num[16];
  const auto res = std::to_chars(num, num + sizeof num, code);
  out.append(num, res.ptr);
  out.append(R"(,"message":")");
  appendJsonEscaped(out, message);
  out.push_back('"');
  if (!data_json.empty()) {
    out.append(R"(,"data":)");
    out.append(data_json);
  }
  out.append("}}");
  return out;
}

bool rawMemberText(std::string_view padded_doc, std::span<const std::string_view> prefix,
                   std::span<const std::string> rest, std::string_view& out) {
  thread_local simdjson::ondemand::parser parser;
  simdjson::ondemand::document doc;
  if (parser
          .iterate(padded_doc.data(), padded_doc.size(),
                   padded_doc.size() + simdjson::SIMDJSON_PADDING)
          .get(doc) != simdjson::SUCCESS) {
    return false;
  }
  simdjson::ondemand::object obj;
  if (doc.get_object().get(obj) != simdjson::SUCCESS) {
    return false;
  }
  const size_t total = prefix.size() + rest.size();
  if (total == 0) {
    return false;
  }
  simdjson::ondemand::value v;
  for (size_t k = 0; k < total; ++k) {
    const std::string_view key =
        k < prefix.size() ? prefix[k] : std::string_view(rest[k - prefix.size()]);
    if (!findMember(obj, key, v)) {
      return false;
    }
    if (k + 1 < total && v.get_object().get(obj) != simdjson::SUCCESS) {
      return false;
    }
  }
  std::string_view raw = v.raw_json_token();
  while (!raw.empty() &&
         (raw.back() == ' ' || raw.back() == '\t' || raw.back() == '\n' || raw.back() == '\r')) {
    raw.remove_suffix(1);
  }
  out = raw;
  return !raw.empty();
}

RequestId requestIdOf(simdjson::dom::element id, std::string_view padded_doc) {
  static constexpr std::string_view kIdPath[] = {"id"};
  RequestId out;
  out.kind = RequestId::Kind::kJson;
  char num[40];
  switch (id.type()) {
    case simdjson::dom::element_type::STRING: {
      std::string_view s;
      if (id.get_string().get(s) != simdjson::SUCCESS) {
        return RequestId::null();
      }
      out.json.reserve(s.size() + 2);
      out.json.push_back('"');
      appendJsonEscaped(out.json, s);
      out.json.push_back('"');
      return out;
    }
    case simdjson::dom::element_type::INT64: {
      int64_t v = 0;
      if (id.get_int64().get(v) != simdjson::SUCCESS) {
        return RequestId::null();
      }
      std::string_view raw;
      if (v == 0 && !padded_doc.empty() && rawMemberText(padded_doc, kIdPath, {}, raw)) {
        out.json.assign(raw);  // `-0` as written
        return out;
      }
      out.json.assign(num, std::to_chars(num, num + sizeof num, v).ptr);
      return out;
    }
    case simdjson::dom::element_type::UINT64: {
      uint64_t v = 0;
      if (id.get_uint64().get(v) != simdjson::SUCCESS) {
        return RequestId::null();
      }
      out.json.assign(num, std::to_chars(num, num + sizeof num, v).ptr);
      return out;
    }
    case simdjson::dom::element_type::DOUBLE: {
      // Echo the number as written: `1.50` stays `1.50`, `1e3` stays `1e3`.
      std::string_view raw;
      if (!padded_doc.empty() && rawMemberText(padded_doc, kIdPath, {}, raw)) {
        out.json.assign(raw);
        return out;
      }
      double v = 0;
      if (id.get_double().get(v) != simdjson::SUCCESS) {
        return RequestId::null();
      }
      out.json.assign(num, std::to_chars(num, num + sizeof num, v).ptr);
      return out;
    }
    default:
      return RequestId::null();
  }
}

void appendQuotedValue(std::string& out, std::string_view value, size_t max_bytes) {
  bool truncated = false;
  if (value.size() > max_bytes) {
    size_t cut = max_bytes;
    // Back off to a UTF-8 sequence start so a valid character is not turned into \ufffd.
    while (cut > 0 && (static_cast<unsigned char>(value[cut]) & 0xC0) == 0x80 &&
           max_bytes - cut < 3) {
      --cut;
    }
    value = value.substr(0, cut);
    truncated = true;
  }
  out.push_back('\'');
  appendJsonEscaped(out, value);
  if (truncated) {
    out.append("...");
  }
  out.push_back('\'');
}

RequestId extractId(std::string_view body) {
  // A parser of its own: this runs on reject paths while a VerifyResult from verifyBody()
  // (whose method view lives in verifyBody's parser) may still be in use.
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body.data(), body.size(), true).get(root) != simdjson::SUCCESS) {
    return RequestId::null();
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    return RequestId::null();
  }
  simdjson::dom::element id;
  if (obj.at_key("id").get(id) != simdjson::SUCCESS) {
    return RequestId::absent();
  }
  int64_t zero = 1;
  if (id.type() == simdjson::dom::element_type::DOUBLE ||
      (id.get_int64().get(zero) == simdjson::SUCCESS && zero == 0)) {
    // The body is not padded here; a padded copy, on this reject path only, to echo the
    // number exactly as written.
    const simdjson::padded_string padded(body);
    return requestIdOf(id, std::string_view(padded.data(), padded.size()));
  }
  return requestIdOf(id);
}

bool argumentAt(simdjson::dom::object args, const std::vector<std::string>& path,
                simdjson::dom::element& out) {
  simdjson::dom::object cur = args;
  for (size_t k = 0; k < path.size(); ++k) {
    simdjson::dom::element e;
    if (cur.at_key(path[k]).get(e) != simdjson::SUCCESS) {
      return false;
    }
    if (k + 1 == path.size()) {
      out = e;
      return true;
    }
    if (e.get_object().get(cur) != simdjson::SUCCESS) {
      return false;
    }
  }
  return false;
}

}  // namespace gw::mcp
