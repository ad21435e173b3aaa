// Explain (see explain.h): builds a request, runs the real stages on it, renders JSON.

#include "gateway/filters/explain.h"

#include <cstdio>
#include <optional>

#include "gateway/federation/federation.h"
#include "gateway/trace/trace.h"

#include <simdjson.h>

#include <algorithm>

#include "gateway/core/ascii.h"
#include "gateway/core/hex.h"
#include "gateway/filters/json_writer.h"
#include "gateway/filters/limits.h"
#include "gateway/filters/pipeline.h"
#include "gateway/http/parser.h"
#include "gateway/mcp/arena.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/sentinel.h"
#include "gateway/mcp/verifier.h"
#include "gateway/pins/book.h"
#include "gateway/policy/credential_store.h"
#include "gateway/policy/token_answer.h"

namespace gw::filters {

namespace {

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

// The JSON-RPC message a client would send for these inputs (with the _meta protocol
// version a 2026-07-28 client mirrors, so verify mode explains the request, not the gap).
std::string defaultBody(const ExplainInput& in, std::string_view version) {
  JsonWriter j;
  j.open('{').key("jsonrpc").str("2.0");
  if (!in.method.starts_with("notifications/")) {
    j.key("id").num(1);
  }
  j.key("method").str(in.method).key("params").open('{');
  if (in.name) {
    if (in.method == "resources/read") {
      j.key("uri");
    } else if (in.method.starts_with("tasks/")) {
      j.key("taskId");
    } else {
      j.key("name");
    }
    j.str(*in.name);
  }
  if (!in.params.empty()) {
    j.key("arguments").open('{');
    for (const auto& [k, v] : in.params) {
      j.key(k).str(v);
    }
    j.close('}');
  }
  if (!version.empty()) {
    j.key("_meta").open('{').key("io.modelcontextprotocol/protocolVersion").str(version);
    j.close('}');
  }
  j.close('}').close('}');
  return j.take();
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
    case policy::AuthResult::kUnsupported:
      return "unsupported";
    case policy::AuthResult::kMalformed:
      return "malformed";
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

// Where a federated route would send the request: the owner of the name (as the gateway
// knows it now; an unknown name is refetched once when a real request names it), every
// upstream (lists, discover, notifications, subscriptions/listen), or the first upstream.
void federationJson(JsonWriter& j, const Snapshot& snap, const settings::Route& r,
                    const RequestContext& ctx) {
  const settings::Settings& s = *snap.settings;
  j.open('{').key("names").str(r.names == settings::FederationNames::kPrefix ? "prefix" : "keep");
  const std::string_view method = ctx.mcp.has_method ? ctx.mcp.method : std::string_view{};
  if (ctx.legacy && (method == "initialize" || method == "ping" || !ctx.mcp.has_method ||
                     method.starts_with("notifications/"))) {
    // A 2025-era client's handshake, ping and notifications: the gateway is its server.
    j.key("sends_to").str("gateway (answers the 2025-era client itself)");
    j.close('}');
    return;
  }
  auto fanOut = [&](const char* what) {
    j.key("sends_to").str(what).key("upstreams").strings(r.upstreams);
  };
  federation::RouteCatalog* catalog = snap.catalogOf(r);
  std::optional<federation::ListKind> kind;
  if (method == "tools/call") {
    kind = federation::ListKind::kTools;
  } else if (method == "prompts/get") {
    kind = federation::ListKind::kPrompts;
  } else if (method == "resources/read") {
    kind = federation::ListKind::kResources;
  }
  if (federation::listKindOf(method) || method == "subscriptions/listen" || !ctx.mcp.has_method ||
      method.starts_with("notifications/")) {
    fanOut(method == "subscriptions/listen" ? "every upstream (one merged stream)"
                                            : "every upstream (merged)");
  } else if (kind && ctx.mcp.has_name) {
    const std::string_view name = ctx.mcp.name.value;
    int owner = -1;
    std::string_view inner = name;
    if (r.names == settings::FederationNames::kPrefix && kind != federation::ListKind::kResources) {
      std::vector<std::string_view> names(r.upstreams.begin(), r.upstreams.end());
      size_t index = 0;
      if (federation::splitPrefixed(name, names, s.federation.separator, index, inner)) {
        owner = static_cast<int>(index);
      }
    } else if (catalog != nullptr) {
      owner = catalog->owner(*kind, name);
      if (owner < 0 && kind == federation::ListKind::kResources) {
        owner = catalog->owner(federation::ListKind::kTemplates, name);
      }
    }
    j.key("sends_to").str(owner >= 0 ? "owner" : "unknown");
    j.key("owner").strOrNull(owner >= 0, owner >= 0 ? std::string_view(r.upstreams[owner]) : "");
    j.key("upstream_name").strOrNull(owner >= 0, inner);
  } else if ((method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") &&
             ctx.mcp.has_name && catalog != nullptr) {
    // The upstream whose tools/call answer returned this taskId (the proxy's clock is steady).
    const int owner = catalog->taskOwner(ctx.mcp.name.value, core::SteadyClock::instance().now());
    j.key("sends_to").str(owner >= 0 ? "task owner" : "first upstream");
    j.key("owner").str(r.upstreams[owner >= 0 ? static_cast<size_t>(owner) : 0]);
  } else {
    j.key("sends_to").str("first upstream").key("owner").str(r.upstreams.front());
  }
  j.close('}');
}

// tool_pinning: block — the upstream and tool a tools/call goes to await approval.
bool pinBlocked(const Snapshot& snap, const RequestContext& ctx, std::string_view& upstream) {
  if (!snap.pins || !snap.pins->blocks() || ctx.route == nullptr || !ctx.mcp.has_method ||
      !ctx.mcp.has_name || ctx.mcp.method != "tools/call") {
    return false;
  }
  const settings::Route& r = *ctx.route;
  const std::string_view name = ctx.mcp.name.value;
  if (!r.federated()) {
    upstream = snap.settings->upstreams[r.upstream_index].name;
    return snap.pins->blocked(upstream, name);
  }
  if (r.names == settings::FederationNames::kPrefix) {
    std::vector<std::string_view> names(r.upstreams.begin(), r.upstreams.end());
    size_t owner = 0;
    std::string_view inner;
    if (!federation::splitPrefixed(name, names, snap.settings->federation.separator, owner,
                                   inner)) {
      return false;
    }
    upstream = r.upstreams[owner];
    return snap.pins->blocked(upstream, inner);
  }
  const federation::RouteCatalog* catalog = snap.catalogOf(r);
  const int owner = catalog != nullptr ? catalog->owner(federation::ListKind::kTools, name) : -1;
  if (owner < 0) {
    return false;
  }
  upstream = r.upstreams[static_cast<size_t>(owner)];
  return snap.pins->blocked(upstream, name);
}

std::string render(const Snapshot& snap, const RequestContext& ctx, bool forward,
                   const std::vector<LimitResult>& limits) {
  const settings::Settings& s = *snap.settings;
  JsonWriter j;
  j.open('{').key("decision").str(forward ? "forward" : "reject");
  if (forward) {
    j.key("status").null().key("reason").null().key("error").null();
  } else {
    j.key("status").integer(ctx.reply.status).key("reason").str(ctx.reply.reason);
    j.key("error");
    if (ctx.reply.json_rpc) {
      j.open('{').key("code").integer(ctx.reply.code).key("message").str(ctx.reply.message);
      if (!ctx.reply.data_json.empty()) {
        j.key("data").raw(ctx.reply.data_json);
      }
      j.close('}');
    } else {
      j.null();
    }
  }
  j.key("trusted").boolean(ctx.trusted).key("legacy").boolean(ctx.legacy);
  j.key("mcp_method").strOrNull(ctx.mcp.has_method, ctx.mcp.method);
  j.key("mcp_name").strOrNull(ctx.mcp.has_name, ctx.mcp.name.value);
  j.key("route").strOrNull(ctx.route != nullptr,
                           ctx.route ? std::string_view(ctx.route->name) : "");
  j.key("upstream");
  if (ctx.route) {
    const settings::Upstream& up = s.upstreams[ctx.route->upstream_index];
    j.open('{').key("name").str(up.name).key("path").str(up.path).key("endpoints").open('[');
    for (const settings::Address& e : up.endpoints) {
      j.str(e.text);
    }
    j.close(']').close('}');
  } else {
    j.null();
  }
  if (ctx.route != nullptr && ctx.route->federated()) {
    j.key("federation");
    federationJson(j, snap, *ctx.route, ctx);
  }
  j.key("verify_body").boolean(ctx.verify_body);
  j.key("params").str(paramCheckName(ctx.param_check));
  j.key("identity").open('{').key("auth").str(authName(ctx.auth));
  j.key("subject").strOrNull(ctx.identity.authenticated, ctx.identity.subject);
  j.key("groups").strings(ctx.identity.groups);
  j.key("scopes").strings(ctx.identity.scopes).close('}');
  j.key("policy_rule").strOrNull(!ctx.policy_rule.empty(), ctx.policy_rule);
  // mode: audit — what each audit rule and limit that applied would have decided.
  j.key("audit").open('[');
  for (const policy::Verdict& v : ctx.verdicts) {
    if (v.audit) {
      j.open('{').key("name").str(v.name).key("kind").str(v.limit ? "rate_limit" : "rule");
      j.key("decision").str(v.allow ? "allow" : "deny").key("reason").str(v.reason).close('}');
    }
  }
  j.close(']');
  // tracing: whether this request would be sampled (parent-based; roots at sample_ratio).
  j.key("trace");
  if (s.tracing) {
    const size_t fields =
        ctx.head != nullptr ? http::countFields(ctx.head->fields, "traceparent") : 0;
    const std::string_view field =
        fields != 0 ? http::findField(ctx.head->fields, "traceparent")->value : std::string_view{};
    trace::TraceParent parent;
    const bool has_parent = fields == 1 && trace::parseTraceparent(field, parent);
    j.open('{').key("parent").strOrNull(has_parent, field);
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%g", s.tracing->sample_ratio);
    if (has_parent) {
      j.key("sampled").boolean(parent.sampled());
      j.key("reason").str(parent.sampled() ? "the client's traceparent is sampled"
                                           : "the client's traceparent is not sampled");
    } else {
      const double r = s.tracing->sample_ratio;
      j.key("sampled");
      if (r <= 0.0 || r >= 1.0) {
        j.boolean(r >= 1.0);
      } else {
        j.null();
      }
      j.key("reason").str(
          std::string(fields == 0 ? "no traceparent" : "the traceparent is not valid (ignored)") +
          ": a new trace, sampled at sample_ratio " + ratio);
    }
    j.close('}');
  } else {
    j.null();
  }
  j.key("forward_credentials").boolean(ctx.forward_credentials);
  j.key("forward_credentials_source")
      .strOrNull(ctx.route != nullptr,
                 ctx.route ? credentialForwarding(*ctx.route, *snap.policy, s).source : "");
  // upstreams[].auth of the upstreams this request may reach, and whether a credential the
  // gateway holds now would be used (null: signed per caller on the request path).
  j.key("upstream_auth").open('[');
  if (ctx.route != nullptr) {
    const std::vector<size_t> one{ctx.route->upstream_index};
    for (size_t index : ctx.route->federated() ? ctx.route->upstream_indexes : one) {
      const settings::Upstream& up = s.upstreams[index];
      if (!up.auth) {
        continue;
      }
      j.open('{')
          .key("upstream")
          .str(up.name)
          .key("type")
          .str(settings::authTypeName(up.auth->type));
      j.key("cached");
      if (up.auth->type == settings::UpstreamAuthType::kForward ||
          up.auth->type == settings::UpstreamAuthType::kSignedIdentity ||
          (up.auth->type == settings::UpstreamAuthType::kTokenExchange &&
           ctx.bearer_token.empty())) {
        j.raw("null");
      } else {
        const policy::TokenJob job = policy::upstreamTokenJob(up, ctx.bearer_token);
        const auto now =
            std::chrono::duration_cast<core::Nanos>(core::steadyNow().time_since_epoch());
        j.boolean(policy::CredentialStore::instance().find(job.key, now).state ==
                  policy::CredentialStore::State::kReady);
      }
      j.close('}');
    }
  }
  j.close(']');
  j.key("rate_limits").open('[');
  for (const LimitResult& l : limits) {
    bool redis = l.check->spec->backend == policy::RateLimitSpec::Backend::kRedis &&
                 snap.policy->redis().present;
    j.open('{').key("name").str(l.check->spec->name).key("key").str(l.check->key);
    j.key("rate").str(l.check->spec->rate_text).key("backend").str(redis ? "redis" : "local");
    j.key("mode").str(l.check->spec->audit ? "audit" : "enforce");
    j.key("allowed");
    if (l.evaluated) {
      j.boolean(l.decision.allowed).key("remaining").num(l.decision.remaining);
    } else {
      j.null();
    }
    j.close('}');
  }
  j.close(']').close('}');
  return j.take();
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
  } else if (key == "server") {
    out.server = std::string(value);
  } else if (key == "host") {
    out.host = std::string(value);
  } else if (key == "path") {
    out.path = std::string(value);
  } else if (key.starts_with("param.") && key.size() > 6) {
    out.params.emplace_back(key.substr(6), value);
  } else if (key.starts_with("header.") && key.size() > 7) {
    out.headers.emplace_back(key.substr(7), value);
  } else {
    error = "unknown explain input '" + std::string(key.substr(0, 64)) +
            "' (expected method, name, version, token, body, server, host, path, param.<Name>, "
            "header.<Name>)";
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

namespace {

core::Result<std::string> explainOn(const Snapshot& snap, const ExplainInput& in,
                                    const ratelimit::LocalLimiter* limiter);

std::string serverNames(const Snapshot& root) {
  std::string names;
  for (const Snapshot* sv : root.everyServer()) {
    names += names.empty() ? "" : ", ";
    names += sv->name();
  }
  return names;
}

}  // namespace

const Snapshot* explainServer(const Snapshot& root, const ExplainInput& in, std::string& error) {
  if (in.server) {
    if (const Snapshot* sv = root.server(*in.server)) {
      return sv;
    }
    error = "no server '" + in.server->substr(0, 64) + "' (servers: " + serverNames(root) + ")";
    return nullptr;
  }
  if (in.host || in.path) {
    const std::string path = in.path.value_or(root.servers.empty() ? root.settings->endpoint : "");
    if (const Snapshot* sv = root.select(in.host.value_or(""), path);
        sv != nullptr && (sv != &root || path == root.settings->endpoint)) {
      return sv;
    }
    error = "no server answers host '" + in.host.value_or("").substr(0, 64) + "' and path '" +
            path.substr(0, 64) + "' (servers: " + serverNames(root) + ")";
    return nullptr;
  }
  if (root.servers.empty()) {
    return &root;
  }
  if (root.servers.size() == 1) {
    return root.servers.front().get();
  }
  error =
      "name the server to ask: server=NAME, or host and path (servers: " + serverNames(root) + ")";
  return nullptr;
}

core::Result<std::string> explain(const Snapshot& snap, const ExplainInput& in,
                                  const ratelimit::LocalLimiter* limiter) {
  std::string error;
  const Snapshot* server = explainServer(snap, in, error);
  if (server == nullptr) {
    return core::fail(error);
  }
  return explainOn(*server, in, limiter);
}

namespace {

core::Result<std::string> explainOn(const Snapshot& snap, const ExplainInput& in,
                                    const ratelimit::LocalLimiter* limiter) {
  const settings::Settings& s = *snap.settings;
  std::string version = in.protocol_version.value_or(
      s.mcp.protocol_versions.empty() ? std::string() : s.mcp.protocol_versions.front());
  std::string body = in.body ? *in.body : defaultBody(in, version);

  // The request a client would send, field by field.
  std::string raw = "POST " + s.endpoint + " HTTP/1.1\r\nHost: explain\r\n";
  // A header.Content-Type input replaces the default (to ask about charsets and media types).
  const bool own_content_type =
      std::any_of(in.headers.begin(), in.headers.end(),
                  [](const auto& h) { return core::iequals(h.first, "content-type"); });
  if (!own_content_type) {
    raw += "Content-Type: application/json\r\n";
  }
  raw += "Accept: application/json, text/event-stream\r\n";
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
  http::HeadLimits hl{s.limits.max_request_line, s.limits.max_header_bytes, s.limits.max_headers,
                      s.limits.max_header_line};
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
      if (c.spec->audit) {
        ctx.verdicts.push_back(policy::Verdict{c.spec->name,
                                               r.decision.allowed ? "" : "rate limited",
                                               r.decision.allowed, true, true});
      } else if (!r.decision.allowed && forward) {
        setRateLimitedReply(ctx, c, r.decision);
        forward = false;
      }
    }
    results.push_back(r);
  }
  std::string_view upstream;
  if (forward && pinBlocked(snap, ctx, upstream)) {
    setReply(ctx, 403, mcp::code::kPolicyDenied, pins::kBlockedMessage, "tool_pin_blocked", true);
    ctx.reply.data_json = pins::blockedData(upstream);
    forward = false;
  }
  return render(snap, ctx, forward, results);
}

}  // namespace

}  // namespace gw::filters
