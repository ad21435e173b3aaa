// Legacy inspection (issue #13): a 2025-era POST's body is the view — route and policy
// decided on it (see pipeline.h).

#include <chrono>

#include "gateway/core/ascii.h"
#include "gateway/core/clock.h"
#include "gateway/federation/federation.h"
#include "gateway/filters/pipeline.h"
#include "gateway/filters/stages.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/legacy.h"
#include "gateway/mcp/methods.h"

namespace gw::filters::detail {

using core::istartsWith;

// ---- legacy inspection (issue #13): route and policy on the body's view ----------------

bool looksAtMcp(const policy::Match& m) noexcept {
  return m.method || m.name || !m.params.empty();
}

// Would any decision change with the view? Routes with a method/name/params match (unless
// a legacy:true route takes all legacy traffic), a `names: prefix` route (its names are
// rewritten), rules and rate limits whose match or unless looks at method/name/params, a
// `require`, a limit keyed on method/name/param:X, lists filtered or observed.
bool viewNeeded(const Snapshot& snap) noexcept {
  bool legacy_route = false;
  bool route_needs = false;
  for (const settings::Route& r : snap.settings->routes) {
    legacy_route = legacy_route || r.legacy;
    route_needs =
        route_needs || (r.has_match && (r.match.method || r.match.name || !r.match.params.empty()));
    if (r.federated()) {
      return true;  // a legacy client gets the federated view: lists merged, calls by name
    }
  }
  if (snap.policy->filtersLists() || snap.pins != nullptr) {
    return true;
  }
  if (route_needs && !legacy_route) {
    return true;
  }
  for (const policy::Rule& r : snap.policy->rules()) {
    if (looksAtMcp(r.match) || (r.unless && looksAtMcp(*r.unless)) || r.require) {
      return true;
    }
  }
  for (const policy::RateLimitSpec& l : snap.policy->rateLimits()) {
    if (looksAtMcp(l.match)) {
      return true;
    }
    for (const std::string& part : l.key) {
      if (part == "method" || part == "name" || istartsWith(part, "param:")) {
        return true;
      }
    }
  }
  return false;
}

FilterStatus viewTooLarge(RequestContext& ctx) {
  setReply(ctx, 400, mcp::code::kInvalidRequest,
           "Invalid Request: the method, name and annotated arguments are too long to inspect",
           "body_invalid", false);
  ctx.reply.id = mcp::RequestId::null();
  return FilterStatus::kLocalReply;
}

FilterStatus noRoute(RequestContext& ctx, const mcp::RequestId& id) {
  setReply(ctx, 502, mcp::code::kNoRoute, "Bad Gateway: no route for this request", "no_route",
           false);
  ctx.reply.id = id;
  return FilterStatus::kLocalReply;
}

struct LegacyParams {
  RequestContext* ctx;
  const mcp::LegacyBody* body;
  size_t index;
  mcp::McpHeaders* view;
  bool arena_full = false;
};

// Message `p.index`'s params for `route`: its tools/call arguments by the x-mcp-header
// annotations learned (per upstream) from the route's upstream's tools/list.
void fillLegacyParams(LegacyParams& p, const settings::Route& route) {
  const mcp::LegacyMessage& msg = p.body->messages()[p.index];
  std::shared_ptr<const mcp::ToolSchema> tool;
  if (msg.has_name && msg.method == "tools/call") {
    const auto now = core::steadyNow();
    if (route.prefixesNames()) {
      // The owner its prefix names knows the tool by its own name.
      const std::vector<std::string_view> names(route.upstreams.begin(), route.upstreams.end());
      size_t index = 0;
      std::string_view inner;
      if (federation::splitPrefixed(
              msg.name, names, p.ctx->snapshot->settings->federation.separator, index, inner)) {
        tool = p.ctx->snapshot->schemas->find(route.upstreams[index], inner, now);
      }
    } else if (route.federated()) {
      // names: keep — the first upstream that lists it (as the route's ownership does).
      for (const std::string& up : route.upstreams) {
        if ((tool = p.ctx->snapshot->schemas->find(up, msg.name, now))) {
          break;
        }
      }
    } else {
      tool = p.ctx->snapshot->schemas->find(route.upstream, msg.name, now);
    }
  }
  if (!p.body->fillParams(p.index, tool.get(), *p.ctx->arena, *p.view)) {
    p.arena_full = true;
  }
}

// The route of message `p.index` (params are computed for each candidate route whose
// match has params, from that route's upstream's annotations).
const settings::Route* routeLegacy(LegacyParams& p) {
  router::RouteInput in;
  in.body_view = true;
  in.method = p.view->has_method ? p.view->method : std::string_view{};
  in.mcp = p.view;
  in.fields = &p.ctx->head->fields;
  in.params_for = [](void* user, const settings::Route& route) {
    fillLegacyParams(*static_cast<LegacyParams*>(user), route);
  };
  in.params_user = &p;
  return p.ctx->snapshot->routes.match(in);
}

// Why a batch for `route` must be sent as separate requests ("" when it need not): a list the
// gateway filters, observes or renames is read from a single answer (in a batch's array answer
// it would pass unread), and on a `names: prefix` route each named call's body is rewritten.
std::string batchRefusal(const RequestContext& ctx, const settings::Route& route,
                         const std::vector<mcp::LegacyMessage>& msgs) {
  const bool lists_read = ctx.snapshot->policy->filtersLists() || ctx.snapshot->pins != nullptr ||
                          route.prefixesNames();
  if (route.federated()) {
    // The gateway answers for the route's servers (initialize, lists, calls by owner): one
    // message at a time.
    return "Invalid Request: on route '" + quoted(route.name) +
           "' (federated) send one JSON-RPC message per request, not a batch";
  }
  for (const mcp::LegacyMessage& m : msgs) {
    if (m.kind != mcp::BodyKind::kRequest) {
      continue;
    }
    if (lists_read &&
        (m.method == "tools/list" || m.method == "prompts/list" || m.method == "resources/list")) {
      return "Invalid Request: send " + quoted(m.method) +
             " on its own, not in a batch: its answer is filtered for each caller";
    }
    if (route.prefixesNames() && m.has_name &&
        (m.method == "tools/call" || m.method == "prompts/get")) {
      return "Invalid Request: on route '" + quoted(route.name) +
             "' (names: prefix) send tools/call and prompts/get one per request, not in a batch";
    }
  }
  return {};
}

// A legacy POST's body: parse, view, route, params, policy. Limits follow in proxy/
// (collectLimits reads the view), as for any request.
FilterStatus legacyBodyStage(RequestContext& ctx, std::string_view body) noexcept {
  thread_local mcp::LegacyBody lb;
  mcp::LegacyError err;
  if (!lb.parse(body, err)) {
    // An id that is not a string or number is refused whatever else looks at the view: the
    // answer could not be matched to its request (issue #24).
    if (viewNeeded(*ctx.snapshot) || std::string_view(err.reason) == "id_invalid") {
      setReply(ctx, 400, err.code, std::move(err.message), err.reason, false);
      ctx.reply.id = std::move(err.id);
      return FilterStatus::kLocalReply;
    }
    // Nothing would look at the view: forwarded unchanged to the untrusted route, as before
    // inspection existed (the server answers the unreadable body itself).
    router::RouteInput in;
    in.fields = &ctx.head->fields;
    ctx.route = ctx.snapshot->routes.match(in);
    if (ctx.route == nullptr) {
      return noRoute(ctx, mcp::RequestId::null());
    }
    ctx.forward_credentials = ctx.forward_credentials || ctx.route->forward_credentials;
    return FilterStatus::kContinue;
  }
  const std::vector<mcp::LegacyMessage>& msgs = lb.messages();
  ctx.batch.resize(msgs.size() - 1);
  auto viewAt = [&](size_t i) -> mcp::McpHeaders& { return i == 0 ? ctx.mcp : ctx.batch[i - 1]; };
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (!lb.fillView(i, *ctx.arena, viewAt(i))) {
      return viewTooLarge(ctx);
    }
  }
  ctx.body_view = true;

  // Route: every request and notification must go to the same route; responses follow.
  const settings::Route* route = nullptr;
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (msgs[i].kind == mcp::BodyKind::kResponse) {
      continue;
    }
    LegacyParams p{&ctx, &lb, i, &viewAt(i), false};
    const settings::Route* r = routeLegacy(p);
    if (p.arena_full) {
      return viewTooLarge(ctx);
    }
    if (r == nullptr) {
      return noRoute(ctx, msgs[i].id);
    }
    if (route != nullptr && r != route) {
      std::string msg = "Invalid Request: the batch's messages go to different routes (";
      msg += "'" + quoted(route->name) + "' and '" + quoted(r->name) + "'";
      msg += "); send them in separate requests";
      setReply(ctx, 400, mcp::code::kInvalidRequest, std::move(msg), "batch_split", false);
      ctx.reply.id = mcp::RequestId::null();
      return FilterStatus::kLocalReply;
    }
    route = r;
  }
  if (route == nullptr) {  // responses only
    LegacyParams p{&ctx, &lb, 0, &ctx.mcp, false};
    route = routeLegacy(p);
    if (route == nullptr) {
      return noRoute(ctx, mcp::RequestId::null());
    }
  }
  ctx.route = route;
  ctx.forward_credentials = ctx.forward_credentials || route->forward_credentials;
  if (lb.batch()) {
    if (const std::string why = batchRefusal(ctx, *route, msgs); !why.empty()) {
      setReply(ctx, 400, mcp::code::kInvalidRequest, why, "batch_split", false);
      ctx.reply.id = mcp::RequestId::null();
      return FilterStatus::kLocalReply;
    }
  }

  // The params every later check sees: those of the chosen route's upstream.
  for (size_t i = 0; i < msgs.size(); ++i) {
    LegacyParams p{&ctx, &lb, i, &viewAt(i), false};
    fillLegacyParams(p, *route);
    if (p.arena_full) {
      return viewTooLarge(ctx);
    }
  }

  // Policy: message by message; the first refusal refuses the whole body.
  std::string_view first_rule;
  for (size_t i = 0; i < msgs.size(); ++i) {
    if (msgs[i].kind == mcp::BodyKind::kResponse) {
      continue;  // an answer to the server's own request: nothing to match
    }
    if (policyCheck(ctx, viewOf(viewAt(i))) != FilterStatus::kContinue) {
      ctx.reply.echo_id = false;
      ctx.reply.id = msgs[i].kind == mcp::BodyKind::kRequest ? msgs[i].id : mcp::RequestId::null();
      return FilterStatus::kLocalReply;
    }
    if (first_rule.empty()) {
      first_rule = ctx.policy_rule;
    }
  }
  ctx.policy_rule = first_rule;
  ctx.learn_tools = !lb.batch() && ctx.mcp.has_method && ctx.mcp.method == "tools/list";
  return FilterStatus::kContinue;
}

}  // namespace gw::filters::detail
