// Explain (see explain.h): builds a request, runs the real stages on it, renders JSON.

#include "gateway/filters/explain.h"

#include <simdjson.h>

#include <cinttypes>
#include <cstdio>

#include "gateway/core/ascii.h"
#include "gateway/filters/limits.h"
#include "gateway/filters/pipeline.h"
#include "gateway/http/parser.h"
#include "gateway/mcp/arena.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/sentinel.h"
#include "gateway/mcp/verifier.h"

namespace gw::filters {

namespace {

void str(std::string& out, std::string_view s) {
  out += '"';
  mcp::appendJsonEscaped(out, s);
  out += '"';
}

void strOrNull(std::string& out, bool present, std::string_view s) {
  if (present) {
    str(out, s);
  } else {
    out += "null";
  }
}

// A header value as a client would send it: plain when it can be, else a base64 sentinel.
std::string headerValue(std::string_view v) {
  return mcp::needsSentinel(v) ? mcp::encodeSentinel(v) : std::string(v);
}

bool safeFieldText(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f) {
      return false;
    }
  }
  return true;
}

// The JSON-RPC message a client would send for these inputs.
std::string defaultBody(const ExplainInput& in) {
  std::string b = "{\"jsonrpc\":\"2.0\",";
  if (!in.method.starts_with("notifications/")) {
    b += "\"id\":1,";
  }
  b += "\"method\":";
  str(b, in.method);
  b += ",\"params\":{";
  bool first = true;
  auto member = [&](std::string_view k) {
    if (!first) {
      b += ',';
    }
    first = false;
    str(b, k);
    b += ':';
  };
  if (in.name) {
    if (in.method == "resources/read") {
      member("uri");
    } else if (in.method.starts_with("tasks/")) {
      member("taskId");
    } else {
      member("name");
    }
    str(b, *in.name);
  }
  if (!in.params.empty()) {
    member("arguments");
    b += '{';
    for (size_t i = 0; i < in.params.size(); ++i) {
      if (i > 0) {
        b += ',';
      }
      str(b, in.params[i].first);
      b += ':';
      str(b, in.params[i].second);
    }
    b += '}';
  }
  b += "}}";
  return b;
}

const char* authName(policy::AuthResult a) {
  switch (a) {
    case policy::AuthResult::kAnonymous:
      return "anonymous";
    case policy::AuthResult::kAuthenticated:
      return "authenticated";
    case policy::AuthResult::kMissing:
      return "missing";
    case policy::AuthResult::kInvalid:
      return "invalid";
  }
  return "anonymous";
}

// application/x-www-form-urlencoded decoding: %XX → byte, '+' → space. False on a '%' not
// followed by two hex digits.
bool percentDecode(std::string_view in, std::string& out) {
  out.clear();
  for (size_t i = 0; i < in.size(); ++i) {
    char c = in[i];
    if (c == '+') {
      out += ' ';
    } else if (c != '%') {
      out += c;
    } else {
      int hi = i + 2 < in.size() ? core::hexValue(in[i + 1]) : -1;
      int lo = hi >= 0 ? core::hexValue(in[i + 2]) : -1;
      if (lo < 0) {
        return false;
      }
      out += static_cast<char>(hi * 16 + lo);
      i += 2;
    }
  }
  return true;
}

// At most 64 bytes of s, for error messages (the JSON writer escapes the rest).
std::string clip(std::string_view s) {
  return std::string(s.substr(0, 64));
}

struct LimitResult {
  const LimitCheck* check;
  bool evaluated = false;
  ratelimit::Decision decision;
};

std::string render(const Snapshot& snap, const RequestContext& ctx, bool forward,
                   const std::vector<LimitResult>& limits) {
  const settings::Settings& s = *snap.settings;
  std::string out = "{\"decision\":";
  out += forward ? "\"forward\"" : "\"reject\"";
  if (forward) {
    out += ",\"status\":null,\"reason\":null,\"error\":null";
  } else {
    char num[32];
    std::snprintf(num, sizeof(num), "%d", ctx.reply.status);
    out += ",\"status\":";
    out += num;
    out += ",\"reason\":";
    str(out, ctx.reply.reason);
    out += ",\"error\":";
    if (ctx.reply.json_rpc) {
      std::snprintf(num, sizeof(num), "%d", ctx.reply.code);
      out += "{\"code\":";
      out += num;
      out += ",\"message\":";
      str(out, ctx.reply.message);
      if (!ctx.reply.data_json.empty()) {
        out += ",\"data\":";
        out += ctx.reply.data_json;
      }
      out += '}';
    } else {
      out += "null";
    }
  }
  out += ",\"trusted\":";
  out += ctx.trusted ? "true" : "false";
  out += ",\"legacy\":";
  out += ctx.legacy ? "true" : "false";
  out += ",\"mcp_method\":";
  strOrNull(out, ctx.mcp.has_method, ctx.mcp.method);
  out += ",\"mcp_name\":";
  strOrNull(out, ctx.mcp.has_name, ctx.mcp.name.value);
  out += ",\"route\":";
  strOrNull(out, ctx.route != nullptr, ctx.route ? std::string_view(ctx.route->name) : "");
  out += ",\"upstream\":";
  if (ctx.route) {
    const settings::Upstream& up = s.upstreams[ctx.route->upstream_index];
    out += "{\"name\":";
    str(out, up.name);
    out += ",\"path\":";
    str(out, up.path);
    out += ",\"endpoints\":[";
    for (size_t i = 0; i < up.endpoints.size(); ++i) {
      if (i > 0) {
        out += ',';
      }
      str(out, up.endpoints[i].text);
    }
    out += "]}";
  } else {
    out += "null";
  }
  out += ",\"verify_body\":";
  out += ctx.verify_body ? "true" : "false";
  out += ",\"params\":";
  str(out, paramCheckName(ctx.param_check));
  out += ",\"identity\":{\"auth\":";
  str(out, authName(ctx.auth));
  out += ",\"subject\":";
  strOrNull(out, ctx.identity.authenticated, ctx.identity.subject);
  out += ",\"groups\":[";
  for (size_t i = 0; i < ctx.identity.groups.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    str(out, ctx.identity.groups[i]);
  }
  out += "]},\"policy_rule\":";
  strOrNull(out, !ctx.policy_rule.empty(), ctx.policy_rule);
  out += ",\"forward_credentials\":";
  out += ctx.forward_credentials ? "true" : "false";
  out += ",\"rate_limits\":[";
  for (size_t i = 0; i < limits.size(); ++i) {
    const LimitResult& l = limits[i];
    if (i > 0) {
      out += ',';
    }
    out += "{\"name\":";
    str(out, l.check->spec->name);
    out += ",\"key\":";
    str(out, l.check->key);
    out += ",\"rate\":";
    str(out, l.check->spec->rate_text);
    out += ",\"backend\":";
    bool redis = l.check->spec->backend == policy::RateLimitSpec::Backend::kRedis &&
                 snap.policy->redis().present;
    out += redis ? "\"redis\"" : "\"local\"";
    out += ",\"allowed\":";
    if (l.evaluated) {
      char num[64];
      std::snprintf(num, sizeof(num), "%s,\"remaining\":%" PRIu64,
                    l.decision.allowed ? "true" : "false", l.decision.remaining);
      out += num;
    } else {
      out += "null";
    }
    out += '}';
  }
  out += "]}";
  return out;
}

}  // namespace

bool addExplainField(std::string_view key, std::string_view value, ExplainInput& out,
                     std::string& error) {
  if (key == "method") {
    out.method = value;
  } else if (key == "name") {
    out.name = std::string(value);
  } else if (key == "version" || key == "protocol_version") {
    out.protocol_version = std::string(value);
  } else if (key == "token") {
    out.headers.emplace_back("Authorization", "Bearer " + std::string(value));
  } else if (key == "body") {
    out.body = std::string(value);
  } else if (key.starts_with("param.") && key.size() > 6) {
    out.params.emplace_back(key.substr(6), value);
  } else if (key.starts_with("header.") && key.size() > 7) {
    out.headers.emplace_back(key.substr(7), value);
  } else {
    error = "unknown explain input '" + std::string(key.substr(0, 64)) +
            "' (expected method, name, version, token, body, param.<Name>, header.<Name>)";
    return false;
  }
  return true;
}

bool parseExplainQuery(std::string_view query, ExplainInput& out, std::string& error) {
  std::string key;
  std::string value;
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
    if (pair.empty()) {
      continue;
    }
    size_t eq = pair.find('=');
    if (eq == std::string_view::npos) {
      error = "query parameter '" + clip(pair) + "' has no '=value'";
      return false;
    }
    if (!percentDecode(pair.substr(0, eq), key) || !percentDecode(pair.substr(eq + 1), value)) {
      error = "query parameter '" + clip(pair) + "' has a malformed %-escape";
      return false;
    }
    if (!addExplainField(key, value, out, error)) {
      return false;
    }
  }
  return true;
}

bool parseExplainJson(std::string_view json, ExplainInput& out, std::string& error) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(json);
  simdjson::dom::element root;
  if (parser.parse(padded).get(root) != simdjson::SUCCESS) {
    error = "the body is not valid JSON";
    return false;
  }
  simdjson::dom::object obj;
  if (root.get_object().get(obj) != simdjson::SUCCESS) {
    error = "the body must be a JSON object";
    return false;
  }
  for (auto field : obj) {
    std::string_view key = field.key;
    if (key == "params" || key == "headers") {
      simdjson::dom::object inner;
      if (field.value.get_object().get(inner) != simdjson::SUCCESS) {
        error = "'" + std::string(key) + "' must be an object of strings";
        return false;
      }
      for (auto kv : inner) {
        std::string_view v;
        if (kv.value.get_string().get(v) != simdjson::SUCCESS) {
          error = "'" + std::string(key) + "." + std::string(kv.key.substr(0, 64)) +
                  "' must be a string";
          return false;
        }
        auto& dst = key == "params" ? out.params : out.headers;
        dst.emplace_back(kv.key, v);
      }
      continue;
    }
    std::string_view v;
    if (field.value.get_string().get(v) != simdjson::SUCCESS) {
      error = "'" + std::string(key.substr(0, 64)) + "' must be a string";
      return false;
    }
    if (!addExplainField(key, v, out, error)) {
      return false;
    }
  }
  return true;
}

core::Result<std::string> explain(const Snapshot& snap, const ExplainInput& in,
                                  const ratelimit::LocalLimiter* limiter) {
  const settings::Settings& s = *snap.settings;
  std::string version = in.protocol_version.value_or(
      s.mcp.protocol_versions.empty() ? std::string() : s.mcp.protocol_versions.front());
  std::string body = in.body ? *in.body : defaultBody(in);

  // The request a client would send, field by field.
  std::string raw = "POST " + s.endpoint + " HTTP/1.1\r\nHost: explain\r\n";
  raw += "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n";
  auto field = [&](std::string_view name, std::string_view value) {
    raw += name;
    raw += ": ";
    raw += value;
    raw += "\r\n";
  };
  if (!safeFieldText(version)) {
    return core::fail("the protocol version has control characters");
  }
  if (!version.empty()) {
    field("MCP-Protocol-Version", version);
  }
  if (!in.method.empty()) {
    field("Mcp-Method", headerValue(in.method));
  }
  if (in.name) {
    field("Mcp-Name", headerValue(*in.name));
  }
  for (const auto& [k, v] : in.params) {
    if (!core::isToken(k)) {
      return core::fail("param name '" + clip(k) + "' is not a header token");
    }
    field("Mcp-Param-" + k, headerValue(v));
  }
  for (const auto& [k, v] : in.headers) {
    if (!core::isToken(k) || !safeFieldText(v)) {
      return core::fail("header '" + clip(k) + "' has an invalid name or value");
    }
    field(k, v);
  }
  field("Content-Length", std::to_string(body.size()));
  raw += "\r\n";
  size_t head_len = raw.size();
  raw += body;

  http::RequestHead head;
  auto parser = http::makeHttp1Parser();
  http::HeadLimits hl{s.limits.max_request_line, s.limits.max_header_bytes, s.limits.max_headers};
  http::ParseResult pr = parser->parseRequest(std::string_view(raw).substr(0, head_len), hl, head);
  if (pr.status != http::ParseStatus::kComplete) {
    return core::fail(std::string("the request would be refused before the pipeline: ") +
                      pr.reason);
  }

  RequestContext ctx;
  mcp::ValueArena arena(64 * 1024);
  ctx.snapshot = &snap;
  ctx.head = &head;
  ctx.client_ip = in.client_ip;
  std::vector<LimitResult> results;
  std::vector<LimitCheck> checks;
  if (body.size() > s.limits.max_body_bytes) {
    setReply(ctx, 413, mcp::code::kBodyTooLarge,
             "Content Too Large: the body exceeds max_body_bytes", "body_too_large", false);
    return render(snap, ctx, false, results);
  }
  FilterStatus st = Pipeline::onHeaders(ctx, arena);
  if (st == FilterStatus::kNeedBody) {
    std::string padded = body;
    padded.append(mcp::bodyPadding(), '\0');
    st = Pipeline::onBody(ctx, std::string_view(padded.data(), body.size()));
  }
  if (st == FilterStatus::kLocalReply) {
    return render(snap, ctx, false, results);
  }
  collectLimits(ctx, checks);
  bool forward = true;
  for (const LimitCheck& c : checks) {
    LimitResult r{&c};
    // As the proxy does: Redis-backed limits go to Redis when it is configured, else local.
    bool redis =
        c.spec->backend == policy::RateLimitSpec::Backend::kRedis && snap.policy->redis().present;
    if (limiter && !redis) {
      r.evaluated = true;
      r.decision = limiter->peek(c.key, c.rate);
      if (!r.decision.allowed && forward) {
        setRateLimitedReply(ctx, c, r.decision);
        forward = false;
      }
    }
    results.push_back(r);
  }
  return render(snap, ctx, forward, results);
}

}  // namespace gw::filters
