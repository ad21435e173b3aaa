// The federated target's choice (see federated_target.h): what a request on a federated
// route becomes, the owner of a named call (by prefix, or by the route's catalog), unknown
// names answered by the gateway, `names: prefix` rewritten for the owner, and the request's
// own bookkeeping (reset, stop, the access-log fields). The fan-out, the shared refresh and
// the merged answers are in federated_fanout.cc.

#include "gateway/proxy/federated_target.h"

#include <optional>

#include "gateway/federation/federation.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/sentinel.h"
#include "gateway/mcp/verifier.h"
#include "gateway/proxy/exchange.h"

namespace gw::proxy {

namespace {

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

void FederatedTarget::reset() noexcept {
  catalog_ = nullptr;
  fed_routed_ = fed_refreshed_ = capture_task_ = fed_unknown_ = false;
  fed_owner_ = 0;
  fed_name_.clear();
  fed_log_.clear();
  front_init_ = front_listen_ = false;
  front_body_.clear();
}

void FederatedTarget::recycle(size_t keep_capacity) noexcept {
  stopFederation();
  catalog_ = nullptr;
  if (fed_body_.capacity() > keep_capacity) {
    std::string().swap(fed_body_);
  } else {
    fed_body_.clear();
  }
}

bool FederatedTarget::isNotification(const filters::RequestContext& ctx) {
  if (!ctx.mcp.has_method) {
    return ctx.body_kind == mcp::BodyKind::kNotification;
  }
  return ctx.mcp.method.starts_with("notifications/");
}

filters::FilterStatus FederatedTarget::ownerStep() {
  const settings::Route* r = x_.ctx().route;
  if (r == nullptr || !r->federated()) {
    return filters::FilterStatus::kContinue;
  }
  const std::string_view method =
      x_.ctx().mcp.has_method ? x_.ctx().mcp.method : std::string_view{};
  const std::optional<federation::ListKind> kind = namedCallKind(method);
  if (!kind || isNotification(x_.ctx())) {
    return filters::FilterStatus::kContinue;
  }
  if (x_.ctx().legacy && (!frontVersionOk() || !frontSessionOk())) {
    return filters::FilterStatus::kLocalReply;  // a 2025 client's call, outside a session
  }
  catalog_ = x_.snapshot()->catalogOf(*r);
  if (catalog_ == nullptr) {
    return filters::FilterStatus::kContinue;  // federate() sends it to the first upstream
  }
  return routeByName(*kind);
}

void FederatedTarget::federate() {
  catalog_ = x_.snapshot()->catalogOf(*x_.ctx().route);
  if (catalog_ == nullptr) {
    proceedTo(0);
    return;
  }
  if (x_.ctx().legacy) {
    federateLegacy();
    return;
  }
  const std::string_view method =
      x_.ctx().mcp.has_method ? x_.ctx().mcp.method : std::string_view{};
  if (isNotification(x_.ctx())) {
    fanOut(FanOut::Mode::kNotify, federation::ListKind::kTools);
    return;
  }
  if (method == "subscriptions/listen") {
    startListen();
    return;
  }
  listOrForward(method, true);
}

// A list (merged: from the cache, or fanned out; server/discover only when `discover`), a
// task call to the task's owner, or any other method to the route's first upstream.
void FederatedTarget::listOrForward(std::string_view method, bool discover) {
  if (auto kind = federation::listKindOf(method);
      kind && (discover || *kind != federation::ListKind::kDiscover)) {
    uint64_t ttl_left = 0;
    if (auto cached = catalog_->cachedOrRefresh(*kind, x_.now(), refreshBound(), ttl_left)) {
      fed_log_ = "cached";
      serveMerged(cached, ttl_left, true);
      return;
    }
    fanOut(FanOut::Mode::kList, *kind);
    return;
  }
  if (method == "tasks/get" || method == "tasks/update" || method == "tasks/cancel") {
    const int owner =
        x_.ctx().mcp.has_name ? catalog_->taskOwner(x_.ctx().mcp.name.value, x_.now()) : -1;
    proceedTo(owner >= 0 ? static_cast<size_t>(owner) : 0);
  } else {
    proceedTo(0);  // any other method: the route's first upstream
  }
}

core::Nanos FederatedTarget::refreshBound() const {
  return std::chrono::duration_cast<core::Nanos>(2 * x_.settings().federation.list_timeout);
}

// The owner of the call's Mcp-Name (decoded; for resources/read the URI). With
// `names: prefix` tools and prompts are owned by the upstream their prefix names.
filters::FilterStatus FederatedTarget::routeByName(federation::ListKind kind) {
  if (!x_.ctx().mcp.has_name) {
    return chooseOwner(0);  // (the pipeline already refused a call without Mcp-Name)
  }
  const std::string_view name = x_.ctx().mcp.name.value;
  const settings::Route& r = *x_.ctx().route;
  if (r.names == settings::FederationNames::kPrefix && kind != federation::ListKind::kResources) {
    std::vector<std::string_view> names(r.upstreams.begin(), r.upstreams.end());
    size_t owner = 0;
    std::string_view inner;
    if (!federation::splitPrefixed(name, names, x_.settings().federation.separator, owner, inner)) {
      return rejectUnknownName(kind);
    }
    fed_name_.assign(inner);
    return chooseOwner(owner);
  }
  int owner = catalog_->owner(kind, name);
  if (owner < 0 && kind == federation::ListKind::kResources) {
    owner = catalog_->owner(federation::ListKind::kTemplates, name);
  }
  if (owner >= 0 && !catalog_->stale(kind, x_.now())) {
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

// A tool or prompt no upstream lists, even after the lists were fetched again: the gateway
// answers what a server answers for a name it does not have (-32602, in band, id echoed; no
// upstream is called, so a name no rule was written for reaches no server). The body is
// read for this answer only: a request whose Mcp-Name disagrees with its body gets the
// 400 -32020 a server owes it (the conformance suite's sep-2243), verify mode or not.
// A resource URI no upstream lists or templates goes, as sent, to the first upstream: a
// server may serve URIs it never listed.
filters::FilterStatus FederatedTarget::unknownName(federation::ListKind kind) {
  fed_name_.clear();
  fed_unknown_ = true;
  if (kind != federation::ListKind::kTools && kind != federation::ListKind::kPrompts) {
    return chooseOwner(0);
  }
  if (x_.body.whole && x_.verifyBuffer().size() >= mcp::bodyPadding()) {
    const size_t len = x_.body.size();
    mcp::VerifyOptions opts;
    opts.check_headers = true;
    mcp::VerifyResult vr = mcp::verifyBody(std::string_view(x_.verifyBuffer().data(), len),
                                           x_.ctx().mcp, nullptr, opts);
    if (!vr.ok) {
      filters::setReply(x_.ctx(), 400, vr.code, std::move(vr.message), vr.reason, false);
      x_.ctx().reply.id = std::move(vr.id);
      if (x_.ctx().reply.id.kind == mcp::RequestId::Kind::kAbsent) {
        x_.ctx().reply.id = mcp::RequestId::null();
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
filters::FilterStatus FederatedTarget::rejectUnknownName(federation::ListKind kind) {
  std::string message;
  const int code = -32602;
  const std::string_view name = x_.ctx().mcp.name.value.substr(0, 256);
  if (kind == federation::ListKind::kTools) {
    message = "Tool " + std::string(name) + " not found";
  } else if (kind == federation::ListKind::kPrompts) {
    message = "Prompt " + std::string(name) + " not found";
  } else {
    message = "Resource " + std::string(name) + " not found";
  }
  filters::setReply(x_.ctx(), 200, code, std::move(message), "unknown_name", false);
  if (kind != federation::ListKind::kTools && kind != federation::ListKind::kPrompts) {
    std::string data = "{\"uri\":";
    federation::appendJsonString(data, name);
    data += '}';
    x_.ctx().reply.data_json = std::move(data);
  }
  x_.ctx().reply.id = mcp::RequestId::absent();
  if (x_.body.whole) {
    x_.ctx().reply.id = mcp::extractId(x_.body.view());
  }
  if (x_.ctx().reply.id.kind == mcp::RequestId::Kind::kAbsent) {
    x_.ctx().reply.id = mcp::RequestId::null();
  }
  x_.outcome = core::Outcome::kUnknownName;
  return filters::FilterStatus::kLocalReply;
}

// The call goes to route upstream `owner` (index in `upstreams`). kLocalReply: the body's
// name could not be rewritten for it.
filters::FilterStatus FederatedTarget::chooseOwner(size_t owner) {
  fed_routed_ = true;
  fed_owner_ = owner;
  const settings::Route& r = *x_.ctx().route;
  x_.forward().useUpstream(owner < r.upstream_indexes.size() ? r.upstream_indexes[owner]
                                                             : r.upstream_index);
  if (!fed_name_.empty() && !rewriteForOwner()) {
    return filters::FilterStatus::kLocalReply;
  }
  if (x_.ctx().legacy) {
    // A 2025-era client's request goes as a 2026-07-28 one (a 2025-era owner ignores the
    // envelope: mcp/bridge.h).
    if (!modernizeBody()) {
      return filters::FilterStatus::kLocalReply;
    }
    useFrontBody();
  }
  const std::string_view method =
      x_.ctx().mcp.has_method ? x_.ctx().mcp.method : std::string_view{};
  capture_task_ = method == "tools/call";
  return filters::FilterStatus::kContinue;
}

// federate() sends the request to route upstream `owner` itself.
void FederatedTarget::proceedTo(size_t owner) {
  if (chooseOwner(owner) == filters::FilterStatus::kLocalReply) {
    x_.sendLocalReply();
    return;
  }
  x_.forward().connect();
}

// names: prefix — params.name in the body becomes the owner's own name (only that JSON
// string changes; Content-Length follows the new length), and so does Mcp-Name (in
// buildUpstreamHead).
bool FederatedTarget::rewriteForOwner() {
  if (x_.body.mode != Exchange::BodyMode::kBuffer || !x_.body.buf) {
    return true;
  }
  const size_t len = x_.body.size();
  const auto* p = reinterpret_cast<const char*>(evbuffer_pullup(x_.body.buf.get(), -1));
  std::string out;
  if (p == nullptr || !federation::rewriteParamsName(std::string_view(p, len), fed_name_, out)) {
    filters::setReply(x_.ctx(), 400, -32602,
                      "Invalid params: params.name must be one string naming the tool or prompt",
                      "body_invalid", false);
    x_.ctx().reply.id =
        mcp::extractId(std::string_view(p != nullptr ? p : "", p != nullptr ? len : 0));
    return false;
  }
  evbuffer_drain(x_.body.buf.get(), len);
  evbuffer_add(x_.body.buf.get(), out.data(), out.size());
  return true;
}

void FederatedTarget::stopFederation() noexcept {
  leaveRefresh();
  if (fanout_) {
    fanout_->cancel();
  }
  if (listen_) {
    listen_->close();
  }
  listen_open_ = false;
}

void FederatedTarget::captureTask(std::string_view json) noexcept {
  if (catalog_ == nullptr || json.find("\"taskId\"") == std::string_view::npos) {
    return;
  }
  if (auto id = federation::taskIdOf(json)) {
    catalog_->putTask(*id, static_cast<int>(fed_owner_), x_.now());
  }
}

void FederatedTarget::resumeListen() {
  if (listen_open_) {
    listen_->resume();
  }
}

std::string_view FederatedTarget::ownerNameField() {
  fed_name_header_ = mcp::needsSentinel(fed_name_) ? mcp::encodeSentinel(fed_name_) : fed_name_;
  return fed_name_header_;
}

void FederatedTarget::appendLogFields(std::string& line) const {
  if (catalog_ == nullptr) {
    return;
  }
  // Federated route: the owner a call went to, the upstreams a list left out (and why),
  // or that the merged answer came from the cache.
  const settings::Route* route = x_.ctx().route;
  line += ",\"federation\":{\"owner\":";
  if (fed_routed_ && route != nullptr && fed_owner_ < route->upstreams.size()) {
    line += '"';
    mcp::appendJsonEscaped(line, route->upstreams[fed_owner_]);
    line += '"';
  } else {
    line += "null";
  }
  line += ",\"unknown_name\":";
  line += fed_unknown_ ? "true" : "false";
  line += ",\"missed\":\"";
  mcp::appendJsonEscaped(line, fed_log_ == "cached" ? std::string_view{} : fed_log_);
  line += "\",\"cached\":";
  line += fed_log_ == "cached" ? "true" : "false";
  line += '}';
}

}  // namespace gw::proxy
