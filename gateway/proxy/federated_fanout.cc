// The federated target's fan-outs (see federated_target.h): the shared ownership refresh an
// unknown name waits for, a list method or server/discover sent to every upstream and
// merged (or a client notification sent to all), the merged answer (maybe cut for this
// caller), and the merged subscriptions/listen stream.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "gateway/core/ascii.h"
#include "gateway/core/clock.h"
#include "gateway/federation/federation.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/mcp/schema.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/federated_target.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

namespace {

int64_t unixMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(core::wallNow().time_since_epoch())
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

}  // namespace

// The lists of `kind` are fetched again (once per request; concurrent misses on this worker
// share one fetch): kStop, and the refresh resumes the kOwner step, which looks again.
filters::FilterStatus FederatedTarget::waitForRefresh(federation::ListKind kind) {
  fed_refreshed_ = true;
  const federation::ListKind fetch =
      kind == federation::ListKind::kTemplates ? federation::ListKind::kResources : kind;
  FederationRefresh* found = nullptr;
  for (auto& r : x_.worker().fed_refreshes) {
    if (r->catalog.get() == catalog_ && r->kind == fetch) {
      found = r.get();
      break;
    }
  }
  if (found == nullptr) {
    // Refreshes of catalogs no snapshot uses any more are dropped (idle ones only).
    std::erase_if(x_.worker().fed_refreshes, [](const std::unique_ptr<FederationRefresh>& r) {
      return !r->fan.running() && r->catalog.use_count() == 1;
    });
    auto r = std::make_unique<FederationRefresh>();
    r->catalog = *x_.snapshot()->catalogFor(*x_.ctx().route);
    r->kind = fetch;
    found = r.get();
    x_.worker().fed_refreshes.push_back(std::move(r));
  }
  found->waiters.push_back(this);
  waiting_ = found;
  if (found->fan.running()) {
    return filters::FilterStatus::kStop;  // joins the refresh in flight
  }
  found->snap = x_.snapshot();
  found->w = &x_.worker();
  found->version.assign(x_.ctx().mcp.has_version
                            ? x_.ctx().mcp.version
                            : std::string_view(x_.settings().mcp.protocol_versions[0]));
  x_.forward().buildUpstreamHead();  // the forwarded fields (the fan-out copies them)
  const std::string request = refreshBody(fetch, found->version);
  found->fan.authorize(x_.upstreamAuth().forRoute(*x_.ctx().route));
  if (!found->fan.start(x_.worker(), x_.snapshot()->settings, *x_.ctx().route, FanOut::Mode::kList,
                        fetch, federation::methodOf(fetch), request, x_.forward().upstreamFields(),
                        x_.now(), found)) {
    leaveRefresh();
    return unknownName(kind);
  }
  return filters::FilterStatus::kStop;
}

void FederatedTarget::leaveRefresh() noexcept {
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
    w->metrics->federation_conflicts.at({s.server_name, catalog->route()}).add(1);
  }
  for (size_t i = 0; i < f.report().parts.size(); ++i) {
    const auto& p = f.report().parts[i];
    w->metrics->federation_fetches
        .at({s.server_name, catalog->route(), catalog->upstreams()[i], federation::methodOf(done),
             p.ok ? std::string_view("ok") : std::string_view(p.outcome)})
        .add(1);
    if (p.ok) {
      reportDroppedItems(*w, s.server_name, catalog->upstreams()[i], done, p.page.dropped);
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
  std::vector<FederatedTarget*> woken;
  woken.swap(waiters);
  snap.reset();
  for (FederatedTarget* t : woken) {
    t->onRefreshed();
  }
}

void FederatedTarget::onRefreshed() {
  waiting_ = nullptr;
  x_.resume(filters::FilterStatus::kContinue);
}

mcp::RequestId FederatedTarget::requestId() {
  std::string id = requestIdJson();
  return id == "null" ? mcp::RequestId::null()
                      : mcp::RequestId{mcp::RequestId::Kind::kJson, std::move(id)};
}

std::string FederatedTarget::requestIdJson() {
  mcp::RequestId id;
  if (x_.body.size() > 0) {
    id = mcp::extractId(x_.body.view());
  }
  return id.kind == mcp::RequestId::Kind::kJson ? id.json : std::string("null");
}

// The request to every upstream: a list (merged by onFanOutDone) or a notification.
void FederatedTarget::fanOut(FanOut::Mode mode, federation::ListKind kind) {
  if (!fanout_) {
    fanout_ = std::make_unique<FanOut>();
  }
  x_.forward().buildUpstreamHead();
  std::string_view b;
  std::string copy;
  if (!front_body_.empty()) {
    b = front_body_;  // a 2025-era client's request, made a 2026-07-28 one
  } else if (x_.body.size() > 0) {
    b = x_.body.view();
  }
  // The client's Mcp-Method, or none when it sent none (a notification may omit it).
  const std::string_view method = front_init_               ? std::string_view("server/discover")
                                  : x_.ctx().mcp.has_method ? x_.ctx().mcp.method
                                                            : std::string_view{};
  x_.noteForwarded();
  fanout_->authorize(x_.upstreamAuth().forRoute(*x_.ctx().route));
  fanout_->traceWith(x_.trace().link(x_.spanName()));
  if (!fanout_->start(x_.worker(), x_.snapshot()->settings, *x_.ctx().route, mode, kind, method, b,
                      x_.forward().upstreamFields(), x_.now(), this)) {
    x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                      "Bad Gateway: the federation fan-out could not be started",
                      core::Outcome::kConnectFailed);
  }
}

void FederatedTarget::onFanOutDone(FanOut& f) {
  x_.releaseBody();
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
      fed_log_ += x_.ctx().route->upstreams[i];
      fed_log_ += ':';
      fed_log_ += parts[i].outcome;
    }
  }
  recordFetches(f);
  if (isNotification(x_.ctx())) {
    bool accepted = false;
    for (const auto& p : parts) {
      accepted = accepted || p.ok;
    }
    if (!accepted && relayRefusal(f)) {
      return;
    }
    if (!accepted) {
      filters::setReply(x_.ctx(), 502, mcp::code::kUpstreamUnavailable,
                        "Bad Gateway: no upstream accepted the notification",
                        "notification_refused", false);
      x_.ctx().reply.id = mcp::RequestId::null();
      x_.outcome = core::Outcome::kNotificationRefused;
      x_.sendLocalReply();
      return;
    }
    x_.responseFields().clear();
    x_.respond(202, "Accepted", {});
    return;
  }
  learnFederatedTools(f);
  federation::RouteCatalog::Answer answer;
  std::vector<std::string> conflicts;
  const bool ok = catalog_->record(
      f.kind(), f.report(), namesOf(*x_.ctx().route), x_.settings().federation.separator,
      x_.settings().mcp.protocol_versions, x_.now(), unixMs(), answer, conflicts);
  for (const std::string& c : conflicts) {
    spdlog::warn("federation: route '{}': {}", x_.ctx().route->name, c);
    x_.worker().metrics->federation_conflicts.at({x_.serverLabel(), x_.ctx().route->name}).add(1);
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
    filters::setReply(x_.ctx(), 502, mcp::code::kUpstreamUnavailable, std::move(message),
                      "federation_failed", false);
    x_.ctx().reply.id = requestId();
    x_.outcome = core::Outcome::kFederationFailed;
    x_.sendLocalReply();
    return;
  }
  if (front_init_) {
    answerInitialize(*answer.members);  // a 2025-era client's initialize
    return;
  }
  serveMerged(answer.members, answer.ttl_ms, answer.public_scope);
}

// No upstream succeeded, but one answered with an error of its own (a 4xx, or a JSON-RPC
// error: the client's request is as wrong for every server): the first such answer is relayed
// as it came — status, Content-Type, body (the upstream echoed the client's id). False when
// none answered at all (the caller's 502).
bool FederatedTarget::relayRefusal(FanOut& f) {
  for (const federation::FetchReport::Part& p : f.report().parts) {
    if (p.status == 0 || p.body.empty() || p.status < 200 || p.status >= 500) {
      continue;
    }
    fed_body_ = p.body;
    x_.responseFields().clear();
    x_.responseFields().push_back(
        http::Field{"Content-Type", p.content_type.empty() ? std::string_view("application/json")
                                                           : std::string_view(p.content_type)});
    x_.respond(p.status, http::reasonPhrase(p.status), fed_body_);
    return true;
  }
  return false;
}

// Each upstream's outcome of a list fetch: a warning for a miss, a metric either way.
void FederatedTarget::recordFetches(const FanOut& f) {
  const auto& parts = const_cast<FanOut&>(f).report().parts;
  const std::string_view method = federation::methodOf(f.kind());
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string_view up = x_.ctx().route->upstreams[i];
    const std::string_view what =
        isNotification(x_.ctx()) ? std::string_view("notification") : method;
    x_.worker()
        .metrics->federation_fetches
        .at({x_.serverLabel(), x_.ctx().route->name, up, what,
             parts[i].ok ? std::string_view("ok") : parts[i].outcome})
        .add(1);
    if (!parts[i].ok) {
      spdlog::warn("federation: route '{}': upstream '{}' left out of {}: {} ({})",
                   x_.ctx().route->name, up, what, parts[i].outcome, parts[i].detail);
    } else {
      reportDroppedItems(x_.worker(), x_.serverLabel(), up, f.kind(), parts[i].page.dropped);
    }
  }
}

// x-mcp-header schemas are learned per owner from each upstream's own tools/list answer.
void FederatedTarget::learnFederatedTools(const FanOut& f) {
  if (f.kind() != federation::ListKind::kTools) {
    return;
  }
  auto& parts = const_cast<FanOut&>(f).report().parts;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (!parts[i].ok) {
      continue;
    }
    x_.forward().observePins(x_.ctx().route->upstreams[i],
                             parts[i].page.items);  // tool_pinning (forward_pins.cc)
    std::string json = "{\"jsonrpc\":\"2.0\",\"id\":0,\"result\":{\"tools\":[";
    for (size_t k = 0; k < parts[i].page.items.size(); ++k) {
      if (k > 0) {
        json += ',';
      }
      json += parts[i].page.items[k];
    }
    json += "],\"ttlMs\":" + std::to_string(parts[i].page.ttl_ms) + "}}";
    // The same list as this worker learned last is renewed, not parsed again (SeenAnswers).
    const settings::Upstream& up = x_.settings().upstreams[x_.ctx().route->upstream_indexes[i]];
    x_.worker().seen_answers.learn(x_.snapshot()->schemas, up.name, json, core::steadyNow());
  }
}

// A merged answer to the client: JSON, or one SSE event when the client accepts only that.
namespace {

// Whether `text` holds a line break: raw in JSON only as whitespace between tokens (a server
// that pretty-prints), but an SSE line's end, so it must not reach a `data:` line as it is.
bool hasLineBreak(std::string_view text) noexcept {
  // Two memchr passes (vector code) rather than one find_first_of (a byte loop): a cached
  // list is looked at once per SSE-only request.
  return std::memchr(text.data(), '\n', text.size()) != nullptr ||
         std::memchr(text.data(), '\r', text.size()) != nullptr;
}

// An SSE event carrying `json` as its data: line breaks (JSON whitespace, never inside a
// string, where they are escaped) become spaces, so the event stays one `data:` line.
void appendSseEvent(std::string& out, std::string_view json) {
  out += "event: message\ndata: ";
  const size_t at = out.size();
  out += json;
  std::replace_if(
      out.begin() + static_cast<std::ptrdiff_t>(at), out.end(),
      [](char c) { return c == '\r' || c == '\n'; }, ' ');
  out += "\n\n";
}

}  // namespace

void FederatedTarget::serveMerged(const std::shared_ptr<const std::string>& shared, uint64_t ttl_ms,
                                  bool public_scope) {
  const std::string_view members = *shared;
  const bool sse = acceptsOnlySse(x_.head);
  const std::string id = requestIdJson();  // before the body goes
  x_.releaseBody();
  x_.responseFields().clear();
  x_.responseFields().push_back(
      http::Field{"Content-Type", sse ? "text/event-stream" : "application/json"});
  if (sse) {
    x_.responseFields().push_back(http::Field{"Cache-Control", "no-cache"});
    x_.responseFields().push_back(http::Field{"X-Accel-Buffering", "no"});
  }
  if (!x_.forward().cutsLists() && !(sse && hasLineBreak(members))) {
    // As it is for every caller: the members (maybe a cached answer, shared by every client
    // it goes to) by reference, between the response's two ends (an SSE event's too); no
    // copy of the list.
    std::string head = sse ? "event: message\ndata: " : "";
    federation::appendResponseHead(head, id);
    std::string tail;
    federation::appendResponseTail(tail, members.empty(), ttl_ms, public_scope);
    if (sse) {
      tail += "\n\n";
    }
    event::EvBufferPtr b = event::makeBuffer();
    evbuffer_add(b.get(), head.data(), head.size());
    if (!members.empty()) {
      auto* hold = new std::shared_ptr<const std::string>(shared);
      if (evbuffer_add_reference(
              b.get(), members.data(), members.size(),
              [](const void*, size_t, void* extra) {
                delete static_cast<std::shared_ptr<const std::string>*>(extra);
              },
              hold) != 0) {
        delete hold;
        evbuffer_add(b.get(), members.data(), members.size());
      }
    }
    evbuffer_add(b.get(), tail.data(), tail.size());
    x_.respond(200, "OK", b.get(), head.size() + members.size() + tail.size());
    return;
  }
  std::string json;
  const auto kind =
      x_.ctx().mcp.has_method ? federation::listKindOf(x_.ctx().mcp.method) : std::nullopt;
  std::string filtered;
  if (x_.forward().cutsLists() && kind && *kind != federation::ListKind::kDiscover &&
      *kind != federation::ListKind::kTemplates &&
      x_.forward().filterMerged(*kind, shared, filtered)) {
    // visibility: filter — the merged (maybe cached, shared) answer cut for this caller, once
    // per merged list and visibility set (ListMemo); the scope is then private.
    federation::appendResponse(json, id, filtered, ttl_ms, false);
  } else {
    federation::appendResponse(json, id, members, ttl_ms, public_scope);
  }
  fed_body_.clear();
  if (sse) {
    appendSseEvent(fed_body_, json);
  } else {
    fed_body_ = std::move(json);
  }
  x_.respond(200, "OK", fed_body_);
}

// ---- subscriptions/listen -----------------------------------------------------------------

void FederatedTarget::startListen() {
  if (!listen_) {
    listen_ = std::make_unique<MergedListen>();
  }
  x_.forward().buildUpstreamHead();
  std::string_view b;
  if (!front_body_.empty()) {
    b = front_body_;  // a 2025-era client's request, made a 2026-07-28 one
  } else if (x_.body.size() > 0) {
    b = x_.body.view();
  }
  x_.noteForwarded();
  listen_->authorize(x_.upstreamAuth().forRoute(*x_.ctx().route));
  if (!listen_->start(x_.worker(), x_.snapshot()->settings, *x_.ctx().route, b,
                      x_.forward().upstreamFields(), this, x_.forward().frontClient())) {
    listen_->close();
    x_.upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                      "Bad Gateway: the subscription could not be started",
                      core::Outcome::kConnectFailed);
  }
}

void FederatedTarget::onListenReady(std::string_view notifications) {
  x_.releaseBody();
  if (notifications.empty() && front_listen_) {
    listen_->close();
    refuseFrontListen();
    return;
  }
  if (notifications.empty()) {
    listen_->close();
    filters::setReply(x_.ctx(), 502, mcp::code::kUpstreamUnavailable,
                      "Bad Gateway: no upstream of the federated route accepted the subscription",
                      "federation_failed", false);
    x_.ctx().reply.id = requestId();
    x_.outcome = core::Outcome::kFederationFailed;
    x_.sendLocalReply();
    return;
  }
  x_.responseFields().clear();
  x_.responseFields().push_back(http::Field{"Content-Type", "text/event-stream"});
  x_.responseFields().push_back(http::Field{"Cache-Control", "no-cache"});
  x_.responseFields().push_back(http::Field{"X-Accel-Buffering", "no"});
  downstream::ResponseHeaders h;
  h.status = 200;
  h.reason = "OK";
  h.fields = &x_.responseFields();
  h.framing = http::BodyFraming::kChunked;
  listen_open_ = true;
  x_.startSseResponse(h);
  if (front_listen_) {
    x_.armKeepalive();  // a 2025 client's stream: no acknowledgement
    return;
  }
  fed_body_ = "event: message\ndata: ";
  fed_body_ += federation::ackMessage(notifications, requestIdJson());
  fed_body_ += "\n\n";
  onListenEvent(fed_body_);
  x_.armKeepalive();
}

void FederatedTarget::onListenEvent(std::string_view bytes) {
  if (!listen_open_) {
    return;
  }
  event::EvBufferPtr b = event::makeBuffer();
  evbuffer_add(b.get(), bytes.data(), bytes.size());
  x_.stream()->encodeData(b.get(), bytes.size());
  x_.armKeepalive();
}

void FederatedTarget::onListChanged(federation::ListKind kind) {
  if (catalog_ == nullptr) {
    return;
  }
  catalog_->markStale(kind);
  if (kind == federation::ListKind::kResources) {
    catalog_->markStale(federation::ListKind::kTemplates);
  }
}

bool FederatedTarget::listenBackedUp() const noexcept {
  return x_.stream() != nullptr &&
         x_.stream()->bufferedBytes() > downstream::Stream::kHighWatermark;
}

}  // namespace gw::proxy
