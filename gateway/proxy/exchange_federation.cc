// The exchange on a federated route (`upstreams:`): list methods and server/discover fanned
// out and merged (or served from the route's cache), calls sent to the upstream that owns
// the name (an unknown name waits for one shared refresh), `names: prefix` rewritten to the
// owner's own name, client notifications sent to every upstream, task ids remembered. The
// pure half (merge, ownership, rewrite) is federation/; the shared state federation/registry.

#include <spdlog/spdlog.h>

#include <chrono>
#include <cstring>
#include <optional>

#include "gateway/core/ascii.h"
#include "gateway/federation/federation.h"
#include "gateway/filters/pipeline.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/sentinel.h"
#include "gateway/mcp/verifier.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/worker_context.h"

namespace gw::proxy {

namespace {

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// The gateway's own list request for an ownership refresh.
std::string refreshBody(federation::ListKind kind, std::string_view version) {
  std::string body = "{\"jsonrpc\":\"2.0\",\"id\":\"mcp-gateway-refresh\",\"method\":";
  federation::appendJsonString(body, federation::methodOf(kind));
  body += ",\"params\":{\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":";
  federation::appendJsonString(body, version);
  body += ",\"io.modelcontextprotocol/clientCapabilities\":{}}}}";
  return body;
}

federation::NamesMode namesOf(const settings::Route& r) {
  return r.names == settings::FederationNames::kPrefix ? federation::NamesMode::kPrefix
                                                       : federation::NamesMode::kKeep;
}

bool isNotification(const filters::RequestContext& ctx) {
  if (!ctx.mcp.has_method) {
    return ctx.body_kind == mcp::BodyKind::kNotification;
  }
  return ctx.mcp.method.starts_with("notifications/");
}

// Whether the client takes only text/event-stream (then a merged answer is one SSE event).
bool acceptsOnlySse(const http::RequestHead& head) {
  const http::HeaderField* accept = http::findField(head.fields, "accept");
  if (accept == nullptr) {
    return false;
  }
  return core::icontains(accept->value, "text/event-stream") &&
         !core::icontains(accept->value, "application/json") &&
         !core::icontains(accept->value, "application/*") && !core::icontains(accept->value, "*/*");
}

// The call kinds routed by the owner of their name.
std::optional<federation::ListKind> namedCallKind(std::string_view method) {
  if (method == "tools/call") {
    return federation::ListKind::kTools;
  }
  if (method == "prompts/get") {
    return federation::ListKind::kPrompts;
  }
  if (method == "resources/read") {
    return federation::ListKind::kResources;
  }
  return std::nullopt;
}

}  // namespace

// The kOwner step. A named call on a federated route (modern traffic) goes to the upstream
// that owns the name (kContinue with fed_routed_; kStop while the lists are fetched again;
// kLocalReply when no upstream has it). Legacy traffic on a `names: prefix` route must name
// a prefixed tool or prompt of the route's first upstream (legacyPrefixed). Anything else
// goes on to federate().
filters::FilterStatus Exchange::ownerStep() {
  const settings::Route* r = ctx_.route;
  if (r == nullptr || !r->federated()) {
    return filters::FilterStatus::kContinue;
  }
  if (ctx_.legacy) {
    return r->prefixesNames() ? legacyPrefixed() : filters::FilterStatus::kContinue;
  }
  const std::string_view method = ctx_.mcp.has_method ? ctx_.mcp.method : std::string_view{};
  const std::optional<federation::ListKind> kind = namedCallKind(method);
  if (!kind || isNotification(ctx_)) {
    return filters::FilterStatus::kContinue;
  }
  catalog_ = snap_->catalogOf(*r);
  if (catalog_ == nullptr) {
    return filters::FilterStatus::kContinue;  // federate() sends it to the first upstream
  }
  return routeByName(*kind);
}

// Chooses what a request on a federated route becomes: a fan-out, a merged stream, a merged
// answer from the cache, or a request to one upstream. connectUpstream() calls it once,
// before anything goes upstream, unless the kOwner step chose the owner already; a request
// it sends to one upstream comes back to connectUpstream() with that upstream chosen.
void Exchange::federate() {
  catalog_ = snap_->catalogOf(*ctx_.route);
  if (catalog_ == nullptr) {
    proceedTo(0);
    return;
  }
  const std::string_view method = ctx_.mcp.has_method ? ctx_.mcp.method : std::string_view{};
  if (isNotification(ctx_)) {
    fanOut(FanOut::Mode::kNotify, federation::ListKind::kTools);
    return;
  }
  if (method == "subscriptions/listen") {
    startListen();
    return;
  }
  if (auto kind = federation::listKindOf(method)) {
    uint64_t ttl_left = 0;
    if (auto cached = catalog_->cached(*kind, now(), ttl_left)) {
      fed_log_ = "cached";
      serveMerged(*cached, ttl_left, true);
      return;
    }
    fanOut(FanOut::Mode::kList, *kind);
    return;
  }
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") {
    const int owner = ctx_.mcp.has_name ? catalog_->taskOwner(ctx_.mcp.name.value, now()) : -1;
    proceedTo(owner >= 0 ? static_cast<size_t>(owner) : 0);
  } else {
    proceedTo(0);  // any other method: the route's first upstream
  }
}

// The owner of the call's Mcp-Name (decoded; for resources/read the URI). With
// `names: prefix` tools and prompts are owned by the upstream their prefix names.
filters::FilterStatus Exchange::routeByName(federation::ListKind kind) {
  if (!ctx_.mcp.has_name) {
    return chooseOwner(0);  // (the pipeline already refused a call without Mcp-Name)
  }
  const std::string_view name = ctx_.mcp.name.value;
  const settings::Route& r = *ctx_.route;
  if (r.names == settings::FederationNames::kPrefix && kind != federation::ListKind::kResources) {
    std::vector<std::string_view> names(r.upstreams.begin(), r.upstreams.end());
    size_t owner = 0;
    std::string_view inner;
    if (!federation::splitPrefixed(name, names, s_->federation.separator, owner, inner)) {
      return rejectUnknownName(kind);
    }
    fed_name_.assign(inner);
    return chooseOwner(owner);
  }
  int owner = catalog_->owner(kind, name);
  if (owner < 0 && kind == federation::ListKind::kResources) {
    owner = catalog_->owner(federation::ListKind::kTemplates, name);
  }
  if (owner >= 0 && !catalog_->stale(kind, now())) {
    return chooseOwner(static_cast<size_t>(owner));
  }
  if (!fed_refreshed_) {
    return waitForRefresh(kind);
  }
  if (owner >= 0) {
    return chooseOwner(static_cast<size_t>(owner));
  }
  return unknownName(kind);
}

// The lists of `kind` are fetched again (once per request; concurrent misses on this worker
// share one fetch): kStop, and the refresh resumes the kOwner step, which looks again.
filters::FilterStatus Exchange::waitForRefresh(federation::ListKind kind) {
  fed_refreshed_ = true;
  const federation::ListKind fetch =
      kind == federation::ListKind::kTemplates ? federation::ListKind::kResources : kind;
  FederationRefresh* found = nullptr;
  for (auto& r : w_->fed_refreshes) {
    if (r->catalog.get() == catalog_ && r->kind == fetch) {
      found = r.get();
      break;
    }
  }
  if (found == nullptr) {
    // Refreshes of catalogs no snapshot uses any more are dropped (idle ones only).
    std::erase_if(w_->fed_refreshes, [](const std::unique_ptr<FederationRefresh>& r) {
      return !r->fan.running() && r->catalog.use_count() == 1;
    });
    auto r = std::make_unique<FederationRefresh>();
    r->catalog = *snap_->catalogFor(*ctx_.route);
    r->kind = fetch;
    found = r.get();
    w_->fed_refreshes.push_back(std::move(r));
  }
  found->waiters.push_back(this);
  waiting_ = found;
  if (found->fan.running()) {
    return filters::FilterStatus::kStop;  // joins the refresh in flight
  }
  found->snap = snap_;
  found->w = w_;
  found->version.assign(ctx_.mcp.has_version ? ctx_.mcp.version
                                             : std::string_view(s_->mcp.protocol_versions[0]));
  buildUpstreamHead();  // the forwarded fields (the fan-out copies them)
  const std::string request = refreshBody(fetch, found->version);
  if (!found->fan.start(*w_, snap_->settings, *ctx_.route, FanOut::Mode::kList, fetch,
                        federation::methodOf(fetch), request, up_head_.fields, now(), found)) {
    leaveRefresh();
    return unknownName(kind);
  }
  return filters::FilterStatus::kStop;
}

void Exchange::leaveRefresh() noexcept {
  if (waiting_ != nullptr) {
    std::erase(waiting_->waiters, this);
    waiting_ = nullptr;
  }
}

void FederationRefresh::onFanOutDone(FanOut& f) {
  federation::RouteCatalog::Answer answer;
  std::vector<std::string> conflicts;
  const settings::Settings& s = *snap->settings;
  const federation::ListKind done = f.kind();
  catalog->record(done, f.report(), namesOf(*f.route()), s.federation.separator,
                  s.mcp.protocol_versions, w->clock->now(), unixMs(), answer, conflicts);
  for (const std::string& c : conflicts) {
    spdlog::warn("federation: route '{}': {}", catalog->route(), c);
    w->metrics->federation_conflicts.at({catalog->route()}).add(1);
  }
  for (size_t i = 0; i < f.report().parts.size(); ++i) {
    const auto& p = f.report().parts[i];
    w->metrics->federation_fetches
        .at({catalog->route(), catalog->upstreams()[i], federation::methodOf(done),
             p.ok ? std::string_view("ok") : std::string_view(p.outcome)})
        .add(1);
    if (p.ok) {
      reportDroppedItems(*w, catalog->upstreams()[i], done, p.page.dropped);
    }
  }
  if (done == federation::ListKind::kResources) {
    // A URI may be owned through a template only: the templates are fetched next, and the
    // waiters wake after both.
    if (f.again(federation::ListKind::kTemplates,
                federation::methodOf(federation::ListKind::kTemplates),
                refreshBody(federation::ListKind::kTemplates, version), this)) {
      return;
    }
  }
  std::vector<Exchange*> woken;
  woken.swap(waiters);
  snap.reset();
  for (Exchange* x : woken) {
    x->onRefreshed();
  }
}

void Exchange::onRefreshed() {
  waiting_ = nullptr;
  resume(filters::FilterStatus::kContinue);
}

// A tool or prompt no upstream lists, even after the lists were fetched again: the gateway
// answers what a server answers for a name it does not have (-32602, in band, id echoed; no
// upstream is called, so a name no rule was written for reaches no server). The body is
// read for this answer only: a request whose Mcp-Name disagrees with its body gets the
// 400 -32020 a server owes it (the conformance suite's sep-2243), verify mode or not.
// A resource URI no upstream lists or templates goes, as sent, to the first upstream: a
// server may serve URIs it never listed.
filters::FilterStatus Exchange::unknownName(federation::ListKind kind) {
  fed_name_.clear();
  fed_unknown_ = true;
  if (kind != federation::ListKind::kTools && kind != federation::ListKind::kPrompts) {
    return chooseOwner(0);
  }
  if (body_read && body && verify_buf_.size() >= mcp::bodyPadding()) {
    const size_t len = evbuffer_get_length(body.get());
    mcp::VerifyOptions opts;
    opts.check_headers = true;
    mcp::VerifyResult vr =
        mcp::verifyBody(std::string_view(verify_buf_.data(), len), ctx_.mcp, nullptr, opts);
    if (!vr.ok) {
      filters::setReply(ctx_, 400, vr.code, std::move(vr.message), vr.reason, false);
      ctx_.reply.id = std::move(vr.id);
      if (ctx_.reply.id.kind == mcp::RequestId::Kind::kAbsent) {
        ctx_.reply.id = mcp::RequestId::null();
      }
      return filters::FilterStatus::kLocalReply;
    }
  }
  return rejectUnknownName(kind);
}

// names: prefix, a name with no upstream prefix of this route: the JSON-RPC error a server
// gives for a name it does not have (HTTP 200, in band), made by the gateway — the name is
// nobody's, and sending it on unprefixed would let a client call a tool by a name no policy
// rule was written for. -32602 (a resource would get -32602 with data.uri too: 2026-07-28
// retired -32002, SEP-2164; URIs are never prefixed, so only tools and prompts come here).
filters::FilterStatus Exchange::rejectUnknownName(federation::ListKind kind) {
  std::string message;
  const int code = -32602;
  const std::string_view name = ctx_.mcp.name.value.substr(0, 256);
  if (kind == federation::ListKind::kTools) {
    message = "Tool " + std::string(name) + " not found";
  } else if (kind == federation::ListKind::kPrompts) {
    message = "Prompt " + std::string(name) + " not found";
  } else {
    message = "Resource " + std::string(name) + " not found";
  }
  filters::setReply(ctx_, 200, code, std::move(message), "unknown_name", false);
  if (kind != federation::ListKind::kTools && kind != federation::ListKind::kPrompts) {
    std::string data = "{\"uri\":";
    federation::appendJsonString(data, name);
    data += '}';
    ctx_.reply.data_json = std::move(data);
  }
  ctx_.reply.id = mcp::RequestId::absent();
  if (body_read && body) {
    ctx_.reply.id = mcp::extractId(
        std::string_view(reinterpret_cast<const char*>(evbuffer_pullup(body.get(), -1)),
                         evbuffer_get_length(body.get())));
  }
  if (ctx_.reply.id.kind == mcp::RequestId::Kind::kAbsent) {
    ctx_.reply.id = mcp::RequestId::null();
  }
  outcome = Outcome::kUnknownName;
  return filters::FilterStatus::kLocalReply;
}

// A legacy (2025-era) request on a `names: prefix` route goes to the route's first upstream
// (its session lives there), but sees that upstream's tools and prompts by the names the
// route lists — "<upstream><separator><name>" — like a modern client: its lists are
// prefixed (list_filter.cc), and a call must name a prefixed tool or prompt of that
// upstream, which is sent on by its own name. Rules, limits, visibility, pins, metrics and
// logs see one name in both eras (issue #24). kLocalReply: -32602, the name is not one the
// route lists for this client (or its body names another).
filters::FilterStatus Exchange::legacyPrefixed() {
  const settings::Route& r = *ctx_.route;
  legacy_prefix_ = r.upstream;
  legacy_prefix_ += s_->federation.separator;
  const std::string_view method = ctx_.mcp.has_method ? ctx_.mcp.method : std::string_view{};
  const bool tool = method == "tools/call";
  if ((!tool && method != "prompts/get") || !ctx_.mcp.has_name) {
    return filters::FilterStatus::kContinue;
  }
  const std::string_view first[] = {r.upstream};
  size_t index = 0;
  std::string_view inner;
  if (!federation::splitPrefixed(ctx_.mcp.name.value, first, s_->federation.separator, index,
                                 inner)) {
    return rejectUnknownName(tool ? federation::ListKind::kTools : federation::ListKind::kPrompts);
  }
  fed_name_.assign(inner);
  return rewriteForOwner() ? filters::FilterStatus::kContinue : filters::FilterStatus::kLocalReply;
}

// The call goes to route upstream `owner` (index in `upstreams`). kLocalReply: the body's
// name could not be rewritten for it.
filters::FilterStatus Exchange::chooseOwner(size_t owner) {
  fed_routed_ = true;
  fed_owner_ = owner;
  const settings::Route& r = *ctx_.route;
  up_index_ = owner < r.upstream_indexes.size() ? r.upstream_indexes[owner] : r.upstream_index;
  if (!fed_name_.empty() && !rewriteForOwner()) {
    return filters::FilterStatus::kLocalReply;
  }
  const std::string_view method = ctx_.mcp.has_method ? ctx_.mcp.method : std::string_view{};
  capture_task_ = method == "tools/call";
  return filters::FilterStatus::kContinue;
}

// federate() sends the request to route upstream `owner` itself.
void Exchange::proceedTo(size_t owner) {
  if (chooseOwner(owner) == filters::FilterStatus::kLocalReply) {
    sendLocalReply();
    return;
  }
  connectUpstream();
}

// names: prefix — params.name in the body becomes the owner's own name (only that JSON
// string changes; Content-Length follows the new length), and so does Mcp-Name (in
// buildUpstreamHead).
bool Exchange::rewriteForOwner() {
  if (body_mode != BodyMode::kBuffer || !body) {
    return true;
  }
  const size_t len = evbuffer_get_length(body.get());
  const auto* p = reinterpret_cast<const char*>(evbuffer_pullup(body.get(), -1));
  std::string out;
  if (p == nullptr || !federation::rewriteParamsName(std::string_view(p, len), fed_name_, out)) {
    filters::setReply(ctx_, 400, -32602,
                      "Invalid params: params.name must be one string naming the tool or prompt",
                      "body_invalid", false);
    ctx_.reply.id = mcp::extractId(std::string_view(p != nullptr ? p : "", p != nullptr ? len : 0));
    if (ctx_.reply.id.kind == mcp::RequestId::Kind::kAbsent) {
      ctx_.reply.id = mcp::RequestId::null();
    }
    return false;
  }
  evbuffer_drain(body.get(), len);
  evbuffer_add(body.get(), out.data(), out.size());
  return true;
}

std::string Exchange::requestIdJson() {
  mcp::RequestId id;
  if (body && evbuffer_get_length(body.get()) > 0) {
    const size_t len = evbuffer_get_length(body.get());
    id = mcp::extractId(
        std::string_view(reinterpret_cast<const char*>(evbuffer_pullup(body.get(), -1)), len));
  }
  return id.kind == mcp::RequestId::Kind::kJson ? id.json : std::string("null");
}

// The request to every upstream: a list (merged by onFanOutDone) or a notification.
void Exchange::fanOut(FanOut::Mode mode, federation::ListKind kind) {
  if (!fanout_) {
    fanout_ = std::make_unique<FanOut>();
  }
  buildUpstreamHead();
  std::string_view b;
  std::string copy;
  if (body && evbuffer_get_length(body.get()) > 0) {
    const size_t len = evbuffer_get_length(body.get());
    b = std::string_view(reinterpret_cast<const char*>(evbuffer_pullup(body.get(), -1)), len);
  }
  // The client's Mcp-Method, or none when it sent none (a notification may omit it).
  const std::string_view method = ctx_.mcp.has_method ? ctx_.mcp.method : std::string_view{};
  forwarded_ = true;
  if (!fanout_->start(*w_, snap_->settings, *ctx_.route, mode, kind, method, b, up_head_.fields,
                      now(), this)) {
    upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                   "Bad Gateway: the federation fan-out could not be started",
                   Outcome::kConnectFailed);
  }
}

void Exchange::onFanOutDone(FanOut& f) {
  releaseBody();
  if (f.report().parts.empty()) {
    return;
  }
  const auto& parts = f.report().parts;
  fed_log_.clear();
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].ok) {
      if (!fed_log_.empty()) {
        fed_log_ += ',';
      }
      fed_log_ += ctx_.route->upstreams[i];
      fed_log_ += ':';
      fed_log_ += parts[i].outcome;
    }
  }
  recordFetches(f);
  if (isNotification(ctx_)) {
    bool accepted = false;
    for (const auto& p : parts) {
      accepted = accepted || p.ok;
    }
    if (!accepted && relayRefusal(f)) {
      return;
    }
    if (!accepted) {
      filters::setReply(ctx_, 502, mcp::code::kUpstreamUnavailable,
                        "Bad Gateway: no upstream accepted the notification",
                        "notification_refused", false);
      ctx_.reply.id = mcp::RequestId::null();
      outcome = Outcome::kNotificationRefused;
      sendLocalReply();
      return;
    }
    resp_fields_.clear();
    respond(202, "Accepted", {});
    return;
  }
  learnFederatedTools(f);
  federation::RouteCatalog::Answer answer;
  std::vector<std::string> conflicts;
  const bool ok =
      catalog_->record(f.kind(), f.report(), namesOf(*ctx_.route), s_->federation.separator,
                       s_->mcp.protocol_versions, now(), unixMs(), answer, conflicts);
  for (const std::string& c : conflicts) {
    spdlog::warn("federation: route '{}': {}", ctx_.route->name, c);
    w_->metrics->federation_conflicts.at({ctx_.route->name}).add(1);
  }
  if (!ok && answer.error.empty() && relayRefusal(f)) {
    return;
  }
  if (!ok) {
    std::string message = answer.error.empty()
                              ? "Bad Gateway: no upstream of the federated route answered " +
                                    std::string(federation::methodOf(f.kind()))
                              : "Bad Gateway: " + answer.error;
    if (!fed_log_.empty()) {
      message += " (" + fed_log_ + ")";
    }
    filters::setReply(ctx_, 502, mcp::code::kUpstreamUnavailable, std::move(message),
                      "federation_failed", false);
    ctx_.reply.id = mcp::RequestId{};
    std::string id = requestIdJson();
    ctx_.reply.id = id == "null" ? mcp::RequestId::null()
                                 : mcp::RequestId{mcp::RequestId::Kind::kJson, std::move(id)};
    outcome = Outcome::kFederationFailed;
    sendLocalReply();
    return;
  }
  serveMerged(*answer.members, answer.ttl_ms, answer.public_scope);
}

// No upstream succeeded, but one answered with an error of its own (a 4xx, or a JSON-RPC
// error: the client's request is as wrong for every server): the first such answer is relayed
// as it came — status, Content-Type, body (the upstream echoed the client's id). False when
// none answered at all (the caller's 502).
bool Exchange::relayRefusal(FanOut& f) {
  for (const federation::FetchReport::Part& p : f.report().parts) {
    if (p.status == 0 || p.body.empty() || p.status < 200 || p.status >= 500) {
      continue;
    }
    fed_body_ = p.body;
    resp_fields_.clear();
    resp_fields_.push_back(http::Field{"Content-Type", p.content_type.empty()
                                                           ? std::string_view("application/json")
                                                           : std::string_view(p.content_type)});
    respond(p.status, http::reasonPhrase(p.status), fed_body_);
    return true;
  }
  return false;
}

// Each upstream's outcome of a list fetch: a warning for a miss, a metric either way.
void Exchange::recordFetches(const FanOut& f) {
  const auto& parts = const_cast<FanOut&>(f).report().parts;
  const std::string_view method = federation::methodOf(f.kind());
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string_view up = ctx_.route->upstreams[i];
    const std::string_view what = isNotification(ctx_) ? std::string_view("notification") : method;
    w_->metrics->federation_fetches
        .at({ctx_.route->name, up, what, parts[i].ok ? std::string_view("ok") : parts[i].outcome})
        .add(1);
    if (!parts[i].ok) {
      spdlog::warn("federation: route '{}': upstream '{}' left out of {}: {} ({})",
                   ctx_.route->name, up, what, parts[i].outcome, parts[i].detail);
    } else {
      reportDroppedItems(*w_, up, f.kind(), parts[i].page.dropped);
    }
  }
}

// x-mcp-header schemas are learned per owner from each upstream's own tools/list answer.
void Exchange::learnFederatedTools(const FanOut& f) {
  if (f.kind() != federation::ListKind::kTools) {
    return;
  }
  auto& parts = const_cast<FanOut&>(f).report().parts;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].ok) {
      continue;
    }
    observePins(ctx_.route->upstreams[i], parts[i].page.items);  // tool_pinning (pinning.cc)
    std::string json = "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"tools\":[";
    for (size_t k = 0; k < parts[i].page.items.size(); ++k) {
      if (k > 0) {
        json += ',';
      }
      json += parts[i].page.items[k];
    }
    json += "],\"ttlMs\":" + std::to_string(parts[i].page.ttl_ms) + "}}";
    std::vector<mcp::ToolSchema> tools;
    uint64_t ttl = 0;
    if (mcp::parseToolsList(json, tools, ttl)) {
      const settings::Upstream& up = s_->upstreams[ctx_.route->upstream_indexes[i]];
      snap_->schemas->learn(up.name, std::move(tools), ttl, std::chrono::steady_clock::now());
    }
  }
}

// A merged answer to the client: JSON, or one SSE event when the client accepts only that.
void Exchange::serveMerged(std::string_view members, uint64_t ttl_ms, bool public_scope) {
  const bool sse = acceptsOnlySse(head);
  std::string json;
  federation::appendResponse(json, requestIdJson(), members, ttl_ms, public_scope);
  if (cutsLists() && ctx_.mcp.has_method) {
    // visibility: filter — the merged (maybe cached, shared) answer cut for this caller.
    const auto kind = federation::listKindOf(ctx_.mcp.method);
    std::string filtered;
    if (kind && *kind != federation::ListKind::kDiscover &&
        *kind != federation::ListKind::kTemplates && filterForCaller(*kind, json, filtered)) {
      json = std::move(filtered);
    }
  }
  fed_body_.clear();
  if (sse) {
    fed_body_ = "event: message\ndata: ";
    fed_body_ += json;
    fed_body_ += "\n\n";
  } else {
    fed_body_ = std::move(json);
  }
  releaseBody();
  resp_fields_.clear();
  resp_fields_.push_back(
      http::Field{"Content-Type", sse ? "text/event-stream" : "application/json"});
  if (sse) {
    resp_fields_.push_back(http::Field{"Cache-Control", "no-cache"});
    resp_fields_.push_back(http::Field{"X-Accel-Buffering", "no"});
  }
  respond(200, "OK", fed_body_);
}

void Exchange::stopFederation() noexcept {
  leaveRefresh();
  if (fanout_) {
    fanout_->cancel();
  }
  if (listen_) {
    listen_->close();
  }
  listen_open_ = false;
}

// ---- subscriptions/listen -----------------------------------------------------------------

void Exchange::startListen() {
  if (!listen_) {
    listen_ = std::make_unique<MergedListen>();
  }
  buildUpstreamHead();
  std::string_view b;
  if (body && evbuffer_get_length(body.get()) > 0) {
    const size_t len = evbuffer_get_length(body.get());
    b = std::string_view(reinterpret_cast<const char*>(evbuffer_pullup(body.get(), -1)), len);
  }
  forwarded_ = true;
  if (!listen_->start(*w_, snap_->settings, *ctx_.route, b, up_head_.fields, this)) {
    listen_->close();
    upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                   "Bad Gateway: the subscription could not be started", Outcome::kConnectFailed);
  }
}

void Exchange::onListenReady(std::string_view notifications) {
  releaseBody();
  if (notifications.empty()) {
    listen_->close();
    filters::setReply(ctx_, 502, mcp::code::kUpstreamUnavailable,
                      "Bad Gateway: no upstream of the federated route accepted the subscription",
                      "federation_failed", false);
    std::string id = requestIdJson();
    ctx_.reply.id = id == "null" ? mcp::RequestId::null()
                                 : mcp::RequestId{mcp::RequestId::Kind::kJson, std::move(id)};
    outcome = Outcome::kFederationFailed;
    sendLocalReply();
    return;
  }
  resp_fields_.clear();
  resp_fields_.push_back(http::Field{"Content-Type", "text/event-stream"});
  resp_fields_.push_back(http::Field{"Cache-Control", "no-cache"});
  resp_fields_.push_back(http::Field{"X-Accel-Buffering", "no"});
  downstream::ResponseHeaders h;
  h.status = 200;
  h.reason = "OK";
  h.fields = &resp_fields_;
  h.framing = http::BodyFraming::kChunked;
  resp_sse_ = true;
  listen_open_ = true;
  countSse(true);
  startResponse(h);
  fed_body_ = "event: message\ndata: ";
  fed_body_ += federation::ackMessage(notifications, requestIdJson());
  fed_body_ += "\n\n";
  onListenEvent(fed_body_);
  armKeepalive();
}

void Exchange::onListenEvent(std::string_view bytes) {
  if (!listen_open_) {
    return;
  }
  event::EvBufferPtr b = event::makeBuffer();
  evbuffer_add(b.get(), bytes.data(), bytes.size());
  stream_->encodeData(b.get(), bytes.size());
  armKeepalive();
}

void Exchange::onListChanged(federation::ListKind kind) {
  if (catalog_ == nullptr) {
    return;
  }
  catalog_->markStale(kind);
  if (kind == federation::ListKind::kResources) {
    catalog_->markStale(federation::ListKind::kTemplates);
  }
}

bool Exchange::listenBackedUp() const noexcept {
  return stream_ != nullptr && stream_->bufferedBytes() > downstream::Stream::kHighWatermark;
}

// A federated tools/call answer that created a task: its id routes tasks/* to this owner.
void Exchange::captureTask(std::string_view json) noexcept {
  if (catalog_ == nullptr || json.find("\"taskId\"") == std::string_view::npos) {
    return;
  }
  if (auto id = federation::taskIdOf(json)) {
    catalog_->putTask(*id, static_cast<int>(fed_owner_), now());
  }
}

}  // namespace gw::proxy
