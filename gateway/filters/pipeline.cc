// The request pipeline stages (see pipeline.h for the order and contract).

#include "gateway/filters/pipeline.h"
#include "gateway/filters/stages.h"

#include <algorithm>
#include <chrono>

#include "gateway/core/ascii.h"
#include "gateway/core/clock.h"
#include "gateway/federation/federation.h"
#include "gateway/http/host.h"
#include "gateway/http/message.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/legacy.h"
#include "gateway/mcp/methods.h"
#include "gateway/mcp/session.h"

namespace gw::filters {

namespace {

using core::iequals;
using core::istartsWith;
using detail::kMaxEchoedValue;
using detail::policyCheck;
using detail::quoted;

bool methodNeedsName(std::string_view m) noexcept {
  return m == "tools/call" || m == "prompts/get" || m == "resources/read" || m == "tasks/get" ||
         m == "tasks/update" || m == "tasks/cancel";
}

enum class MediaCheck : uint8_t { kOk, kNotJson, kCharset };

bool isUtf8Label(std::string_view label) noexcept {
  return iequals(label, "utf-8") || iequals(label, "utf8");
}

// Content-Type (RFC 9110 §8.3.1, §5.6.6): `application/json` with optional parameters;
// a `charset` parameter must name UTF-8 (RFC 8259 §8.1: JSON is UTF-8; a server that honours
// another charset would read a different message than the gateway checked). `utf-8` and
// `utf8` in any case, token or quoted-string, are UTF-8. Malformed parameters → kNotJson,
// two charset parameters → kCharset.
MediaCheck checkContentType(std::string_view v) noexcept {
  const size_t semi = v.find(';');
  if (!iequals(core::trimOws(v.substr(0, semi)), "application/json")) {
    return MediaCheck::kNotJson;
  }
  const size_t n = v.size();
  auto isOws = [&](size_t k) { return k < n && (v[k] == ' ' || v[k] == '\t'); };
  bool seen_charset = false;
  size_t i = semi;
  while (i < n) {  // at a ';'
    ++i;
    while (isOws(i)) {
      ++i;
    }
    if (i == n) {
      break;
    }
    if (v[i] == ';') {
      continue;  // empty parameter
    }
    const size_t name_start = i;
    while (i < n && core::isTchar(static_cast<unsigned char>(v[i]))) {
      ++i;
    }
    const std::string_view name = v.substr(name_start, i - name_start);
    if (name.empty() || i == n || v[i] != '=') {
      return MediaCheck::kNotJson;
    }
    ++i;
    char buf[8];
    size_t len = 0;
    bool overflow = false;
    auto keep = [&](char c) {
      if (len < sizeof buf) {
        buf[len++] = c;
      } else {
        overflow = true;
      }
    };
    if (i < n && v[i] == '"') {
      ++i;
      bool closed = false;
      while (i < n) {
        const auto c = static_cast<unsigned char>(v[i]);
        if (c == '"') {
          closed = true;
          ++i;
          break;
        }
        if (c == '\\') {
          if (i + 1 == n) {
            break;
          }
          ++i;
        } else if ((c < 0x20 && c != '\t') || c == 0x7f) {
          return MediaCheck::kNotJson;
        }
        keep(v[i]);
        ++i;
      }
      if (!closed) {
        return MediaCheck::kNotJson;
      }
    } else {
      const size_t start = i;
      while (i < n && core::isTchar(static_cast<unsigned char>(v[i]))) {
        keep(v[i]);
        ++i;
      }
      if (i == start) {
        return MediaCheck::kNotJson;
      }
    }
    while (isOws(i)) {
      ++i;
    }
    if (i < n && v[i] != ';') {
      return MediaCheck::kNotJson;
    }
    if (iequals(name, "charset")) {
      if (seen_charset || overflow || !isUtf8Label(std::string_view(buf, len))) {
        return MediaCheck::kCharset;
      }
      seen_charset = true;
    }
  }
  return MediaCheck::kOk;
}

// 405 for anything but POST on the MCP endpoint (GET/DELETE belong to legacy servers).
FilterStatus methodNotAllowed(RequestContext& ctx) {
  setReply(ctx, 405, mcp::code::kMethodNotAllowed, "Method not allowed.", "method_not_allowed",
           false);
  ctx.reply.id = mcp::RequestId::null();
  ctx.reply.addField("Allow", "POST");
  return FilterStatus::kLocalReply;
}

// ---- stage 1: transport rules (Host, method/target form, path, Origin) ------------------
// Decided from the head alone, before the MCP contract and before legacy passthrough can
// admit anything: a Host outside mcp.allowed_hosts is 403 (DNS-rebinding protection);
// CONNECT, TRACE and the asterisk-form target are never forwarded (405, Allow: POST).
FilterStatus transportStage(RequestContext& ctx) noexcept {
  const auto& s = *ctx.snapshot->settings;
  const auto& head = *ctx.head;
  if (!http::hostAllowed(s.mcp.allowed_hosts, head.host)) {
    setReply(ctx, 403, mcp::code::kHostForbidden, "Forbidden: Host not allowed", "host_forbidden",
             false);
    return FilterStatus::kLocalReply;
  }
  if (head.method == "CONNECT" || head.method == "TRACE" || head.target == "*") {
    return methodNotAllowed(ctx);
  }
  if (head.path != s.endpoint) {
    if (const policy::ResourceMetadata* m = detail::metadataFor(*ctx.snapshot, head.path)) {
      return detail::metadataReply(ctx, *m);
    }
    notFound(ctx);
    return FilterStatus::kLocalReply;
  }
  if (const http::HeaderField* origin = http::findField(head.fields, "origin")) {
    bool allowed = std::any_of(s.mcp.allowed_origins.begin(), s.mcp.allowed_origins.end(),
                               [&](const std::string& o) { return o == origin->value; });
    if (!allowed || http::countFields(head.fields, "origin") != 1) {
      setReply(ctx, 403, mcp::code::kOriginForbidden, "Forbidden: Origin not allowed",
               "origin_forbidden", false);
      ctx.reply.omit_id = true;
      return FilterStatus::kLocalReply;
    }
  }
  return FilterStatus::kContinue;
}

// ---- stage 2: MCP contract (headers, version gate, method rules) ----------------------
FilterStatus contractStage(RequestContext& ctx, mcp::ValueArena& arena) noexcept {
  const auto& s = *ctx.snapshot->settings;
  const auto& head = *ctx.head;
  mcp::ContractResult cr =
      mcp::readMcpHeaders(head.fields, arena, ctx.mcp, s.mcp.max_param_headers);
  if (cr.error == mcp::ContractError::kTooManyParams) {
    setReply(ctx, 431, mcp::code::kTooManyParamHeaders,
             "Request Header Fields Too Large: more than " +
                 std::to_string(s.mcp.max_param_headers) + " Mcp-Param headers",
             "too_many_param_headers", false);
    return FilterStatus::kLocalReply;
  }
  if (cr.error != mcp::ContractError::kNone) {
    std::string msg = "Header mismatch: ";
    msg += cr.header;
    msg += ": ";
    msg += cr.reason;
    setReply(ctx, 400, mcp::code::kHeaderMismatch, std::move(msg), "header_invalid");
    return FilterStatus::kLocalReply;
  }

  const auto& versions = s.mcp.protocol_versions;
  ctx.trusted = ctx.mcp.has_version &&
                std::find(versions.begin(), versions.end(), ctx.mcp.version) != versions.end();
  if (!ctx.trusted) {
    if (s.mcp.legacy == settings::LegacyMode::kPassthrough) {
      // The 2025 transport has POST, GET (the standalone stream) and DELETE (the end of a
      // session); HEAD and OPTIONS (CORS preflight) carry no call. Any other method would
      // reach the server with a body no rule ever saw (a PUT carrying a tools/call).
      if (head.method != "POST" && head.method != "GET" && head.method != "DELETE" &&
          head.method != "HEAD" && head.method != "OPTIONS") {
        FilterStatus st = methodNotAllowed(ctx);
        ctx.reply.addField("Allow", "POST, GET, DELETE");
        return st;
      }
      ctx.legacy = true;  // headers not trusted for any decision
      const bool has_body =
          head.framing == http::BodyFraming::kChunked ||
          (head.framing == http::BodyFraming::kContentLength && head.content_length > 0);
      if (head.method == "POST" && has_body) {
        // Issue #13: the body is the view. Route and policy wait for it (onBody).
        ctx.legacy_inspect = true;
        ctx.need_body = true;
      }
      return FilterStatus::kContinue;
    }
    if (head.method != "POST") {
      return methodNotAllowed(ctx);
    }
    return unsupportedVersion(ctx);
  }

  // Modern traffic: POST only; a JSON body.
  if (head.method != "POST") {
    return methodNotAllowed(ctx);
  }
  const http::HeaderField* ct = http::findField(head.fields, "content-type");
  const MediaCheck media = ct == nullptr || http::countFields(head.fields, "content-type") != 1
                               ? MediaCheck::kNotJson
                               : checkContentType(ct->value);
  if (media == MediaCheck::kNotJson) {
    setReply(ctx, 415, mcp::code::kUnsupportedMediaType,
             "Unsupported Media Type: Content-Type must be application/json",
             "unsupported_media_type");
    return FilterStatus::kLocalReply;
  }
  if (media == MediaCheck::kCharset) {
    setReply(ctx, 415, mcp::code::kUnsupportedMediaType,
             "Unsupported Media Type: a JSON body must be UTF-8 (charset=utf-8 or none)",
             "charset_unsupported");
    return FilterStatus::kLocalReply;
  }
  // RFC 9110 §8.4, §15.5.16: the gateway verifies and routes the bytes as sent, so a coded
  // body (gzip, or even the meaningless `identity`) is refused rather than passed on.
  if (http::findField(head.fields, "content-encoding") != nullptr) {
    setReply(ctx, 415, mcp::code::kUnsupportedMediaType,
             "Unsupported Media Type: Content-Encoding is not accepted on requests",
             "content_encoding_unsupported");
    ctx.reply.addField("Accept-Encoding", "identity");
    return FilterStatus::kLocalReply;
  }
  if (!ctx.mcp.has_method) {
    // A notification needs no Mcp-Method (spec item 11): read the body to tell.
    ctx.classify_body = true;
    ctx.need_body = true;
    return FilterStatus::kContinue;
  }
  if (methodNeedsName(ctx.mcp.method) && !ctx.mcp.has_name) {
    setReply(ctx, 400, mcp::code::kHeaderMismatch,
             "Header mismatch: the Mcp-Name header is required for " + quoted(ctx.mcp.method),
             "header_missing");
    return FilterStatus::kLocalReply;
  }
  // Spec item 38: Mcp-Name mirrors params.name/uri/taskId of the methods that have one;
  // on a known method without one it is a header nothing in the body backs.
  if (ctx.mcp.has_name && mcp::definesNoName(ctx.mcp.method)) {
    setReply(ctx, 400, mcp::code::kHeaderMismatch,
             "Header mismatch: Mcp-Name is not defined for " + quoted(ctx.mcp.method),
             "name_unexpected");
    return FilterStatus::kLocalReply;
  }
  ctx.learn_tools = ctx.mcp.method == "tools/list";
  return FilterStatus::kContinue;
}

// ---- stage 3: route --------------------------------------------------------------------
// A legacy GET (the standalone SSE stream) or DELETE (the end of a session) carrying one
// session id the gateway handed out: the index of the upstream whose endpoint token it
// carries, or -1 (not such a request, or a token of no configured upstream).
int sessionUpstream(const RequestContext& ctx) noexcept {
  if (!ctx.legacy || ctx.head == nullptr ||
      (ctx.head->method != "GET" && ctx.head->method != "DELETE") ||
      http::countFields(ctx.head->fields, "mcp-session-id") != 1) {
    return -1;
  }
  const mcp::WrappedSession w =
      mcp::unwrapSessionId(http::findField(ctx.head->fields, "mcp-session-id")->value);
  if (w.error != mcp::SessionError::kNone) {
    return -1;
  }
  const auto& ups = ctx.snapshot->settings->upstreams;
  for (size_t i = 0; i < ups.size(); ++i) {
    if (mcp::findSessionEndpoint(ups[i].session_tokens, w.token) >= 0) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

// A trusted list request whose answer the gateway reads whole (list_filter.cc).
bool readsListAnswer(const RequestContext& ctx) noexcept {
  if (!ctx.mcp.has_method) {
    return false;
  }
  const std::string_view m = ctx.mcp.method;
  if (m == "tools/list") {
    return ctx.snapshot->pins != nullptr || ctx.snapshot->policy->filtersLists();
  }
  return (m == "prompts/list" || m == "resources/list") && ctx.snapshot->policy->filtersLists();
}

FilterStatus routeStage(RequestContext& ctx) noexcept {
  router::RouteInput in;
  in.trusted = ctx.trusted;
  in.method = ctx.trusted ? ctx.mcp.method : std::string_view{};
  in.mcp = &ctx.mcp;
  in.fields = &ctx.head->fields;
  ctx.route = ctx.snapshot->routes.match(in);
  // A legacy session's GET/DELETE names no method to route by: it goes where its session
  // was created (the upstream its token names), even when that was not the legacy route.
  if (const int up = sessionUpstream(ctx); up >= 0) {
    const auto index = static_cast<size_t>(up);
    if (ctx.route == nullptr || ctx.route->upstream_index != index) {
      if (const settings::Route* r = ctx.snapshot->routes.forUpstream(index)) {
        ctx.route = r;
      }
    }
    ctx.session_route = ctx.route != nullptr && ctx.route->upstream_index == index;
  }
  if (ctx.route == nullptr) {
    setReply(ctx, 502, mcp::code::kNoRoute, "Bad Gateway: no route for this request", "no_route");
    return FilterStatus::kLocalReply;
  }
  if (ctx.trusted) {
    ctx.verify_body = ctx.route->verify_body.value_or(ctx.snapshot->settings->mcp.verify_body);
    if (ctx.route->federated()) {
      // The gateway stands for the route's servers (it merges, routes by name, bridges
      // 2025-era ones), so it checks headers against body as a 2026-07-28 server does, and
      // the `_meta` envelope of the server/discover it answers itself. (A request bridged to
      // a 2025-era owner has its envelope checked there: forward_bridge.cc.)
      ctx.verify_body = true;
      ctx.verify_envelope = ctx.mcp.has_method && ctx.mcp.method == "server/discover";
    }
    // The body is read (and its JSON-RPC shape and id checked, as in verify mode) wherever
    // the gateway answers from it: a federated route (fan-out, name routing, its own errors)
    // and a list it reads whole (visibility, tool pinning), which it may refuse with the id.
    if (ctx.verify_body || ctx.route->federated() || readsListAnswer(ctx)) {
      ctx.need_body = true;
    }
  }
  return FilterStatus::kContinue;
}

// ---- stage 4: identity (API key / JWT): oauth.cc ------------------------------------------

// ---- stage 5: per-tool policy ------------------------------------------------------------

FilterStatus policyStage(RequestContext& ctx) noexcept {
  return policyCheck(ctx, policyView(ctx));
}

}  // namespace

namespace detail {

// A value from the request, escaped and shortened for an error message.
std::string quoted(std::string_view v) {
  std::string out;
  mcp::appendJsonEscaped(out, v.substr(0, kMaxEchoedValue));
  if (v.size() > kMaxEchoedValue) {
    out += "...";
  }
  return out;
}

FilterStatus policyCheck(RequestContext& ctx, const policy::RequestView& view) noexcept {
  const policy::PolicySet& p = *ctx.snapshot->policy;
  policy::Decision d = p.decide(view, ctx.identity, p.hasAudit() ? &ctx.verdicts : nullptr);
  // A legacy session's GET/DELETE names no method, so no method rule can allow it; what the
  // session does is decided message by message on its POSTs. Rules that match it anyway
  // (identity conditions) decide it; `default` does not, so `default: deny` does not cut a
  // legacy session off its notification stream.
  if (!d.allow && d.rule == "default" && ctx.session_route) {
    d.allow = true;
    d.rule = "session";
  }
  ctx.policy_rule = d.rule;
  if (!p.rules().empty() || !p.defaultAllow()) {
    ctx.verdicts.push_back(policy::Verdict{d.rule, d.reason, d.allow, false, false});
  }
  if (d.missing_scopes != nullptr) {
    // RFC 6750 §3.1: a credential without the scope is 403 insufficient_scope; no
    // credential at all is 401 with the scope to ask for.
    const bool anonymous = !ctx.identity.authenticated;
    setReply(ctx, anonymous ? 401 : 403,
             anonymous ? mcp::code::kUnauthorized : mcp::code::kPolicyDenied,
             anonymous ? "Unauthorized: this call needs a token with the required scopes"
                       : "Forbidden: the token lacks a scope this call requires",
             anonymous ? "auth_missing" : "insufficient_scope");
    ctx.reply.addField(
        "WWW-Authenticate",
        bearerChallenge(p, anonymous ? nullptr : "insufficient_scope", *d.missing_scopes));
    std::string data = "{\"rule\":\"";
    mcp::appendJsonEscaped(data, d.rule);
    data += "\",\"scopes\":[";
    for (size_t i = 0; i < d.missing_scopes->size(); ++i) {
      data += i > 0 ? ",\"" : "\"";
      mcp::appendJsonEscaped(data, (*d.missing_scopes)[i]);
      data += '"';
    }
    data += "]}";
    ctx.reply.data_json = std::move(data);
    return FilterStatus::kLocalReply;
  }
  if (!d.allow) {
    std::string msg = "Forbidden: ";
    msg += *d.reason ? d.reason : "denied by policy";
    setReply(ctx, 403, mcp::code::kPolicyDenied, std::move(msg), "policy_denied");
    std::string data = "{\"rule\":\"";
    mcp::appendJsonEscaped(data, d.rule);
    data += "\"}";
    ctx.reply.data_json = std::move(data);
    return FilterStatus::kLocalReply;
  }
  return FilterStatus::kContinue;
}

}  // namespace detail

const char* paramCheckName(ParamCheck c) noexcept {
  switch (c) {
    case ParamCheck::kVerified:
      return "verified";
    case ParamCheck::kUnverifiable:
      return "unverifiable";
    case ParamCheck::kNotChecked:
      break;
  }
  return "not_checked";
}

void notFound(RequestContext& ctx) {
  setReply(ctx, 404, mcp::code::kInvalidRequest, "Not Found: no MCP server at this path",
           "not_found", false);
  ctx.reply.id = mcp::RequestId::null();
}

void setReply(RequestContext& ctx, int status, int code, std::string message, const char* reason,
              bool echo_id) {
  ctx.reply = LocalReply{};
  ctx.reply.status = status;
  ctx.reply.code = code;
  ctx.reply.message = std::move(message);
  ctx.reply.reason = reason;
  ctx.reply.echo_id = echo_id;
}

CredentialForwarding credentialForwarding(const settings::Route& route,
                                          const policy::PolicySet& policy,
                                          const settings::Settings& s) noexcept {
  if (route.forward_credentials) {
    return {true, "route"};
  }
  if (policy.forwardCredentials()) {
    return {true, "policy"};
  }
  if (s.policy_files.empty()) {
    return {true, "no_policies"};
  }
  return {false, "default"};
}

FilterStatus Pipeline::onHeaders(RequestContext& ctx, mcp::ValueArena& arena) noexcept {
  ctx.arena = &arena;
  FilterStatus st = transportStage(ctx);
  if (st != FilterStatus::kContinue) {
    return st;
  }
  st = contractStage(ctx, arena);
  if (st != FilterStatus::kContinue) {
    return st;
  }
  if (ctx.legacy_inspect) {
    // Legacy POST: who is calling is known from the head (401 before the body is read);
    // route, policy and limits need the body's view (onBody, then proxy/'s limits).
    st = detail::identityStage(ctx);
    return st != FilterStatus::kContinue ? st : FilterStatus::kNeedBody;
  }
  st = routeStage(ctx);
  if (st != FilterStatus::kContinue) {
    return st;
  }
  st = detail::identityStage(ctx);
  if (st != FilterStatus::kContinue) {
    return st;
  }
  st = policyStage(ctx);
  if (st != FilterStatus::kContinue) {
    return st;
  }
  return ctx.need_body ? FilterStatus::kNeedBody : FilterStatus::kContinue;
}

namespace {

// The upstream whose learned x-mcp-header schema a tools/call is checked against, and the
// name that upstream knows the tool by: the route's upstream, or on a federated route the
// owner (by prefix, or as the route's catalog knows it now; unknown: the first upstream,
// whose schema then most likely does not have it, so the call is "unverifiable").
void schemaOwner(const RequestContext& ctx, std::string_view& upstream, std::string_view& tool) {
  const settings::Route& r = *ctx.route;
  upstream = r.upstream;
  tool = ctx.mcp.name.value;
  if (!r.federated()) {
    return;
  }
  if (r.names == settings::FederationNames::kPrefix) {
    std::vector<std::string_view> names(r.upstreams.begin(), r.upstreams.end());
    size_t index = 0;
    std::string_view inner;
    if (federation::splitPrefixed(tool, names, ctx.snapshot->settings->federation.separator, index,
                                  inner)) {
      upstream = r.upstreams[index];
      tool = inner;
    }
    return;
  }
  if (const federation::RouteCatalog* c = ctx.snapshot->catalogOf(r)) {
    const int owner = c->owner(federation::ListKind::kTools, tool);
    if (owner >= 0) {
      upstream = r.upstreams[static_cast<size_t>(owner)];
    }
  }
}

}  // namespace

FilterStatus Pipeline::onBody(RequestContext& ctx, std::string_view body) noexcept {
  if (ctx.legacy_inspect) {
    return detail::legacyBodyStage(ctx, body);
  }
  std::shared_ptr<const mcp::ToolSchema> tool;
  if (ctx.verify_body && ctx.mcp.has_method && ctx.mcp.method == "tools/call" && ctx.mcp.has_name) {
    std::string_view upstream;
    std::string_view name;
    schemaOwner(ctx, upstream, name);
    tool = ctx.snapshot->schemas->find(upstream, name, core::steadyNow());
    ctx.param_check = tool ? ParamCheck::kVerified : ParamCheck::kUnverifiable;
  }
  mcp::VerifyOptions opts;
  opts.check_headers = ctx.verify_body;
  opts.check_envelope = ctx.verify_envelope;
  mcp::VerifyResult vr = mcp::verifyBody(body, ctx.mcp, tool.get(), opts);
  ctx.body_kind = vr.kind;
  if (!vr.ok) {
    if (ctx.param_check == ParamCheck::kVerified) {
      ctx.param_check = ParamCheck::kNotChecked;
    }
    setReply(ctx, 400, vr.code, std::move(vr.message), vr.reason, false);
    ctx.reply.id = std::move(vr.id);
    return FilterStatus::kLocalReply;
  }
  if (ctx.classify_body && vr.kind != mcp::BodyKind::kNotification) {
    setReply(ctx, 400, mcp::code::kHeaderMismatch,
             "Header mismatch: the required Mcp-Method header is absent", "header_missing", false);
    ctx.reply.id = std::move(vr.id);
    return FilterStatus::kLocalReply;
  }
  return FilterStatus::kContinue;
}

FilterStatus unsupportedVersion(RequestContext& ctx) {
  const auto& versions = ctx.snapshot->settings->mcp.protocol_versions;
  // Both answers name the versions the gateway speaks, so a client can retry with one.
  std::string data = "{\"supported\":[";
  for (size_t i = 0; i < versions.size(); ++i) {
    data += i ? ",\"" : "\"";
    mcp::appendJsonEscaped(data, versions[i]);
    data += '"';
  }
  data += ']';
  if (!ctx.mcp.has_version) {
    setReply(ctx, 400, mcp::code::kHeaderMismatch,
             "Bad Request: the required MCP-Protocol-Version header is absent", "version_missing");
    ctx.reply.data_json = std::move(data) + '}';
    return FilterStatus::kLocalReply;
  }
  data += ",\"requested\":\"";
  mcp::appendJsonEscaped(data, ctx.mcp.version.substr(0, detail::kMaxEchoedValue));
  data += "\"}";
  setReply(ctx, 400, mcp::code::kUnsupportedProtocolVersion,
           "Unsupported protocol version: " + detail::quoted(ctx.mcp.version),
           "version_unsupported");
  ctx.reply.data_json = std::move(data);
  return FilterStatus::kLocalReply;
}

}  // namespace gw::filters
