// One request to every upstream of a federated route (see fanout.h).

#include "gateway/proxy/fanout.h"

#include <spdlog/spdlog.h>

#include <unordered_set>

#include "gateway/core/ascii.h"
#include "gateway/core/assert.h"
#include "gateway/http/forwarding.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

namespace {

// Bounds on one upstream's answers: bytes of one page, of an error answer kept for relaying,
// and pages of one list.
constexpr size_t kMaxPageBytes = 16 * 1024 * 1024;
constexpr size_t kMaxErrorBytes = 64 * 1024;
constexpr size_t kMaxPages = 1000;

bool isEventStream(const http::ResponseHead& r) {
  const http::HeaderField* ct = http::findField(r.fields, "content-type");
  return ct != nullptr && core::istartsWith(ct->value, "text/event-stream");
}

// Fields the fan-out writes itself (or must not repeat from the client's request). A
// client's Mcp-Session-Id names a session on one server at most: it never goes to them all.
bool replacedField(std::string_view name) {
  return core::iequals(name, "mcp-method") || core::iequals(name, "mcp-name") ||
         core::istartsWith(name, "mcp-param-") || core::iequals(name, "content-type") ||
         core::iequals(name, "accept") || core::iequals(name, "content-length") ||
         core::iequals(name, "host") || core::iequals(name, "mcp-session-id");
}

std::string_view errorName(upstream::UpstreamError e) {
  using upstream::UpstreamError;
  switch (e) {
    case UpstreamError::kConnectFailed:
    case UpstreamError::kConnectRefused:
    case UpstreamError::kSessionEndpointDown:
      return "connect_failed";
    case UpstreamError::kConnectTimeout:
      return "connect_timeout";
    case UpstreamError::kResponseTimeout:
      return "timeout";
    case UpstreamError::kClosedBeforeAnswer:
    case UpstreamError::kReset:
      return "upstream_reset";
    case UpstreamError::kMalformed:
    case UpstreamError::kBadChunk:
      return "upstream_malformed";
    case UpstreamError::kMaxDuration:
    case UpstreamError::kStreamIdle:
      return "timeout";
    case UpstreamError::kTls:
      return "tls";
    case UpstreamError::kUnavailable:
      return "upstream_unavailable";
    case UpstreamError::kOverflow:
      return "upstream_overflow";
  }
  return "error";
}

}  // namespace

bool FanOut::start(ProxyContext& w, std::shared_ptr<const settings::Settings> s,
                   const settings::Route& route, Mode mode, federation::ListKind kind,
                   std::string_view method, std::string_view body,
                   std::span<const http::Field> fields, core::Nanos started, FanOutDone* done) {
  cancel();
  w_ = &w;
  s_ = std::move(s);
  route_ = &route;
  mode_ = mode;
  kind_ = kind;
  done_ = done;
  started_ = started;
  base_body_.assign(body);
  if (!w.flush_queue->ready(w.base)) {
    return false;
  }
  if (fields.data() != fields_.fields().data()) {
    fields_.assign(fields, method);
  } else {
    fields_.setMethod(method);  // again(): the same fields
  }

  const size_t n = route.upstream_indexes.size();
  while (slots_.size() < n) {
    auto slot = std::make_unique<Slot>();
    slot->owner = this;
    slot->index = slots_.size();
    slot->timer.reset(evtimer_new(w.base, &FanOut::onTimer, slot.get()));
    if (!slot->timer) {
      return false;
    }
    slots_.push_back(std::move(slot));
  }
  report_.parts.assign(n, federation::FetchReport::Part{});
  statuses_.assign(n, 0);
  pending_ = n;
  for (size_t i = 0; i < n; ++i) {
    Slot& slot = *slots_[i];
    slot.up.init(w.base, w.pools.get(), w.parser.get(), w.clock, this);
    slot.done = false;
    slot.bridge_retried = false;
    slot.pages = 0;
    slot.cursor.clear();
    slot.body = base_body_;
    const settings::Duration limit =
        mode == Mode::kList ? s_->federation.list_timeout
                            : s_->upstreams[route.upstream_indexes[i]].response_timeout;
    timeval tv = event::toTimeval(limit);
    evtimer_add(slot.timer.get(), &tv);
  }
  // Started after every slot is set up: a slot may fail at once (and the last one to end
  // calls done).
  for (size_t i = 0; i < n && i < slots_.size(); ++i) {
    if (!slots_[i]->done) {
      startSlot(*slots_[i]);
    }
  }
  return true;
}

bool FanOut::again(federation::ListKind kind, std::string_view method, std::string_view body,
                   FanOutDone* done) {
  return start(*w_, s_, *route_, mode_, kind, method, body, fields_.fields(), started_, done);
}

void OwnedFields::assign(std::span<const http::Field> fields, std::string_view method) {
  text_.clear();
  for (const http::Field& f : fields) {
    if (!replacedField(f.name)) {
      text_.emplace_back(f.name);
      text_.emplace_back(f.value);
    }
  }
  method_.assign(method);
  view();
}

void OwnedFields::setMethod(std::string_view method) {
  method_.assign(method);
  view();
}

void OwnedFields::view() {
  views_.clear();
  for (size_t i = 0; i + 1 < text_.size(); i += 2) {
    views_.push_back(http::Field{text_[i], text_[i + 1]});
  }
  if (!method_.empty()) {
    views_.push_back(http::Field{"Mcp-Method", method_});  // (a notification may have none)
  }
  views_.push_back(http::Field{"Content-Type", "application/json"});
  views_.push_back(http::Field{"Accept", "application/json, text/event-stream"});
}

void FanOut::startSlot(Slot& slot) {
  const settings::Upstream& up = s_->upstreams[route_->upstream_indexes[slot.index]];
  slot.head.method = "POST";
  slot.head.query = {};
  slot.head.fields = fields_.fields();
  if (trace_.sink != nullptr) {
    // tracing: this member's own CLIENT span, named by its traceparent.
    slot.span_id = trace::newSpanId();
    slot.span_start_ns = RequestTrace::nowNanos();
    trace::formatTraceparent(trace_.trace_id, slot.span_id, trace_.flags, slot.traceparent);
    const std::string_view value(slot.traceparent, sizeof slot.traceparent);
    bool set = false;
    for (http::Field& f : slot.head.fields) {
      if (core::iequals(f.name, "traceparent")) {
        f.value = value;
        set = true;
      }
    }
    if (!set) {
      slot.head.fields.push_back(http::Field{"traceparent", value});
    }
  }
  slot.head.authorization = slot.index < auth_.values.size()
                                ? std::string_view(auth_.values[slot.index])
                                : std::string_view{};
  slot.head.client_host = false;
  slot.head.content_length = slot.body.size();
  slot.head.length_field = true;
  slot.head.pinned_endpoint = -1;
  slot.resp.clear();
  slot.sse = false;
  slot.error_status = 0;
  slot.content_type.clear();
  slot.too_large = false;
  slot.over_budget = false;
  slot.hold.release();
  slot.finish_pending = false;
  slot.answer.reset();
  if (slot.index < auth_.missing.size() && auth_.missing[slot.index]) {
    // upstreams[].auth: no credential could be made for it (the token endpoint refused, or
    // could not be asked): left out, like an upstream that cannot be reached.
    finishSlot(slot, false, "upstream_auth", "no credential for this upstream");
    return;
  }
  if (!bridgeSlot(slot)) {
    return;
  }
  upstream::UpstreamError error{};
  if (!slot.up.start(up, slot.head, started_, error)) {
    finishSlot(slot, false, errorName(error), "the upstream connection could not be started");
    return;
  }
  evbuffer_add(slot.up.output(), slot.body.data(), slot.body.size());
  slot.up.requestComplete();
  scheduleFlush();
}

void FanOut::scheduleFlush() {
  if (w_ != nullptr) {
    w_->flush_queue->schedule(w_->base, *this);
  }
}

void FanOut::flushOutbound() noexcept {
  for (auto& slot : slots_) {
    if (!slot->done && slot->up.active() && !slot->up.writing() &&
        slot->up.sendNow() == event::Sent::kDrained) {
      slot->up.onFlushed();
    }
  }
}

void FanOut::afterFlush() {
  // SSE answers whose response event is in (onUpstreamData): their streams are closed.
  for (auto& slot : slots_) {
    if (slot->finish_pending && !slot->done) {
      slot->finish_pending = false;
      const bool last = pending_ == 1;  // then its end may end the fan-out and its owner
      slot->up.release(false);
      pageDone(*slot);
      if (last) {
        return;
      }
    }
  }
}

void FanOut::onTimer(evutil_socket_t, short, void* arg) {
  auto* slot = static_cast<Slot*>(arg);
  if (slot->done) {
    return;
  }
  slot->up.release(false);
  slot->owner->finishSlot(*slot, false, "timeout",
                          slot->owner->mode_ == Mode::kList
                              ? "no answer within federation.list_timeout"
                              : "no answer within response_timeout");
}

FanOut::Slot& FanOut::slotOf(upstream::Http1Upstream& from) noexcept {
  for (auto& slot : slots_) {
    if (&slot->up == &from) {
      return *slot;
    }
  }
  GW_ASSERT(false);
  return *slots_.front();
}

bool FanOut::onUpstreamHeaders(upstream::Http1Upstream& from, const http::ResponseHead& resp) {
  Slot& slot = slotOf(from);
  if (slot.bridge == Slot::Bridge::kTrying) {
    // era: auto, unknown: a 2xx says modern; a 400, 404 or 405 is what a 2025 server
    // answers a 2026-07-28 request (read to its end, then asked again after the probe).
    if (resp.status >= 200 && resp.status < 300) {
      w_->legacySessions().noteModern(s_->upstreams[route_->upstream_indexes[slot.index]]);
      slot.bridge = Slot::Bridge::kOff;
    } else if (resp.status == 400 || resp.status == 404 || resp.status == 405) {
      slot.bridge = Slot::Bridge::kTried;
    } else {
      slot.bridge = Slot::Bridge::kOff;
    }
  }
  statuses_[slot.index] = resp.status;
  const bool good =
      mode_ == Mode::kNotify ? resp.status >= 200 && resp.status < 300 : resp.status == 200;
  if (!good) {
    // An error answer: its body is kept (bounded) in case every upstream refuses alike.
    slot.error_status = resp.status;
    const http::HeaderField* ct = http::findField(resp.fields, "content-type");
    slot.content_type.assign(ct != nullptr ? ct->value : std::string_view{});
    return true;
  }
  if (mode_ == Mode::kNotify) {
    return true;  // the body (if any) is drained
  }
  slot.sse = isEventStream(resp);
  if (slot.sse) {
    slot.answer.begin(kMaxPageBytes);
  } else if (resp.framing == http::BodyFraming::kContentLength &&
             resp.content_length <= kMaxPageBytes) {
    slot.resp.reserve(resp.content_length);  // one allocation of the answer's size
  }
  return true;
}

void FanOut::onUpstreamData(upstream::Http1Upstream& from, evbuffer* src, size_t n) {
  Slot& slot = slotOf(from);
  if (slot.error_status != 0) {
    const size_t take = std::min(n, kMaxErrorBytes - std::min(kMaxErrorBytes, slot.resp.size()));
    if (take > 0) {
      const size_t at = slot.resp.size();
      slot.resp.resize(at + take);
      evbuffer_copyout(src, slot.resp.data() + at, take);
    }
    evbuffer_drain(src, n);
    return;
  }
  if (mode_ == Mode::kNotify || slot.too_large || slot.over_budget) {
    evbuffer_drain(src, n);
    return;
  }
  if (!slot.hold.take(w_->shared->buffered_answer_bytes, s_->limits.max_buffered_answer_bytes, n)) {
    slot.over_budget = true;
    w_->metrics->list_answers_refused.at({s_->server_name, "answer_buffer_full"}).add(1);
    evbuffer_drain(src, n);
    from.pauseReading();
    slot.finish_pending = true;  // left out on the next turn, not after the whole answer
    scheduleFlush();
    return;
  }
  if (slot.sse) {
    slot.answer.feed(src, n);
  } else if (slot.resp.size() + n > kMaxPageBytes) {
    slot.too_large = true;
  } else {
    const size_t at = slot.resp.size();
    slot.resp.resize(at + n);
    evbuffer_copyout(src, slot.resp.data() + at, n);
  }
  evbuffer_drain(src, n);
  if (slot.sse && slot.answer.done() && !slot.finish_pending) {
    // The answer is in: the rest of the stream (a server that keeps it open) is not waited
    // for. The page is finished on the fan-out's next turn (onFlush), outside the upstream
    // request's read, which may still end the answer itself (onUpstreamComplete, first).
    from.pauseReading();
    slot.finish_pending = true;
    scheduleFlush();
  }
}

void FanOut::onUpstreamComplete(upstream::Http1Upstream& from) {
  Slot& slot = slotOf(from);
  if (slot.bridge == Slot::Bridge::kTried) {
    slot.up.release(false);
    startSlot(slot);  // waits for the probe, then goes in a session (or as it is)
    return;
  }
  if (slot.error_status == 404 && slot.bridge == Slot::Bridge::kOn && !slot.bridge_retried) {
    // The 2025-era server lost the session (restarted, expired): asked again, once, in a
    // new one.
    slot.bridge_retried = true;
    const settings::Upstream& up = s_->upstreams[route_->upstream_indexes[slot.index]];
    w_->legacySessions().expire(up, slot.bridge_endpoint, slot.bridge_generation);
    slot.up.release(false);
    startSlot(slot);
    return;
  }
  if (slot.error_status != 0) {
    federation::FetchReport::Part& part = report_.parts[slot.index];
    part.status = slot.error_status;
    part.content_type = std::move(slot.content_type);
    part.body = std::move(slot.resp);
    finishSlot(slot, false, "http_status",
               "the upstream answered HTTP " + std::to_string(slot.error_status));
    return;
  }
  if (mode_ == Mode::kNotify) {
    finishSlot(slot, true, "ok", {});
    return;
  }
  pageDone(slot);
}

void FanOut::onUpstreamError(upstream::Http1Upstream& from, upstream::UpstreamError e) {
  Slot& slot = slotOf(from);
  if (slot.bridge == Slot::Bridge::kOn) {
    // The session's endpoint failed: a new session next time (and for era: auto, a new probe).
    const settings::Upstream& up = s_->upstreams[route_->upstream_indexes[slot.index]];
    w_->legacySessions().expire(up, slot.bridge_endpoint, slot.bridge_generation);
    w_->legacySessions().forgetEra(up);
  }
  finishSlot(slot, false, errorName(e), std::string(core::outcomeName(upstream::outcomeOf(e))));
}

// One page is in: parsed, appended, and the next one asked for while nextCursor says so.
void FanOut::pageDone(Slot& slot) {
  if (slot.too_large) {
    finishSlot(slot, false, "too_large", "the answer exceeds 16 MiB");
    return;
  }
  if (slot.over_budget) {
    finishSlot(slot, false, "answer_buffer_full",
               "limits.max_buffered_answer_bytes reached (the gateway holds too many answers)");
    return;
  }
  if (slot.sse && !slot.answer.done()) {
    finishSlot(slot, false, "no_response", "the event stream ended without a response");
    return;
  }
  if (slot.sse) {
    slot.resp = std::move(slot.answer.response());  // the response event's JSON
  }
  federation::Page page;
  std::string detail;
  federation::PageError pe = federation::PageError::kNone;
  if (slot.pages == 0 && slot.cursor.empty() && kind_ != federation::ListKind::kDiscover) {
    // A first page the upstream sent last time too (its id aside) is not parsed again: its
    // items come from the worker's list memo (list_memo.h), as on a plain route.
    ListMemo::Match m;
    ListMemo::Entry* e = nullptr;
    federation::Page parsed;
    const federation::Page* read = nullptr;
    pe = w_->list_memo.read(s_->upstreams[route_->upstream_indexes[slot.index]].name, kind_,
                            slot.resp, m, parsed, read, e, detail);
    if (pe == federation::PageError::kNone) {
      page = read == &parsed ? std::move(parsed) : *read;
    }
  } else {
    pe = federation::parsePage(kind_, slot.resp, page, detail);
  }
  if (pe == federation::PageError::kRpcError && slot.pages == 0) {
    // A JSON-RPC error answer to the client's own request: kept for relaying as it came.
    federation::FetchReport::Part& part = report_.parts[slot.index];
    part.status = 200;
    part.content_type = "application/json";
    part.body = slot.resp.substr(0, kMaxErrorBytes);
  }
  if (pe != federation::PageError::kNone) {
    finishSlot(slot, false,
               pe == federation::PageError::kRpcError      ? "rpc_error"
               : pe == federation::PageError::kInvalidJson ? "invalid_json"
                                                           : "invalid_result",
               std::move(detail));
    return;
  }
  federation::FetchReport::Part& part = report_.parts[slot.index];
  ++slot.pages;
  if (slot.pages == 1) {
    part.page = std::move(page);
  } else {
    part.page.ttl_ms = std::min(part.page.ttl_ms, page.ttl_ms);
    part.page.public_scope = part.page.public_scope && page.public_scope;
    part.page.dropped.add(page.dropped);
    // A key an earlier page of this upstream listed is a duplicate too.
    const std::unordered_set<std::string> seen(part.page.keys.begin(), part.page.keys.end());
    for (size_t i = 0; i < page.items.size(); ++i) {
      if (seen.contains(page.keys[i])) {
        part.page.dropped.add(federation::ItemFault::kDuplicate);
        continue;
      }
      part.page.items.push_back(std::move(page.items[i]));
      part.page.keys.push_back(std::move(page.keys[i]));
    }
    part.page.has_next = page.has_next;
    part.page.next_cursor = std::move(page.next_cursor);
  }
  const uint64_t max_items = s_->federation.max_items;
  if (part.page.items.size() > max_items) {
    part.page.items.resize(max_items);
    part.page.keys.resize(max_items);
    part.truncated = true;
  }
  if (kind_ != federation::ListKind::kDiscover && part.page.has_next && !part.truncated &&
      part.page.items.size() < max_items) {
    if (part.page.next_cursor == slot.cursor || slot.pages >= kMaxPages) {
      finishSlot(slot, false, "invalid_result", "nextCursor repeats or too many pages");
      return;
    }
    slot.cursor = part.page.next_cursor;
    if (!federation::setParamsCursor(base_body_, slot.cursor, slot.body)) {
      finishSlot(slot, false, "invalid_request", "the list request's params is not an object");
      return;
    }
    startSlot(slot);
    return;
  }
  if (part.page.has_next) {
    part.truncated = true;  // max_items reached with more pages left
  }
  part.page.has_next = false;
  finishSlot(slot, true, "ok", {});
}

void reportDroppedItems(ProxyContext& w, std::string_view server, std::string_view upstream,
                        federation::ListKind kind, const federation::ItemDrops& dropped) {
  if (dropped.total() == 0) {
    return;
  }
  for (size_t i = 0; i < federation::kItemFaults; ++i) {
    if (dropped.count[i] > 0) {
      w.metrics->federation_items_dropped
          .at({server, upstream, federation::itemFaultName(static_cast<federation::ItemFault>(i))})
          .add(dropped.count[i]);
    }
  }
  spdlog::warn("upstream '{}' listed {} {} item(s) no client could take; dropped them ({})",
               upstream, dropped.total(), federation::methodOf(kind), dropped.summary());
}

void FanOut::finishSlot(Slot& slot, bool ok, std::string_view outcome, std::string detail) {
  if (slot.done) {
    return;
  }
  slot.done = true;
  slot.finish_pending = false;
  if (trace_.sink != nullptr && trace_.sampled && slot.span_start_ns != 0) {
    const upstream::Endpoint* endpoint = slot.up.endpoint();
    trace_.sink->submit(RequestTrace::clientSpan(
        trace_, slot.span_id, s_->upstreams[route_->upstream_indexes[slot.index]].name,
        endpoint != nullptr ? std::string_view(endpoint->text) : std::string_view{},
        slot.span_start_ns, RequestTrace::nowNanos(), ok ? std::string_view{} : outcome,
        slot.error_status));
  }
  leaveBridge(slot);
  evtimer_del(slot.timer.get());
  slot.up.release(false);
  slot.answer.reset();
  federation::FetchReport::Part& part = report_.parts[slot.index];
  part.ok = ok;
  part.outcome.assign(outcome);
  part.detail = std::move(detail);
  if (!ok) {
    part.page = federation::Page{};
  } else {
    part.status = 0;
    part.body.clear();
  }
  std::string().swap(slot.resp);  // the answer's bytes are freed, then the hold given back
  slot.hold.release();
  if (--pending_ == 0 && done_ != nullptr) {
    done_->onFanOutDone(*this);
  }
}

void FanOut::cancel() noexcept {
  for (auto& slot : slots_) {
    if (slot->timer) {
      evtimer_del(slot->timer.get());
    }
    leaveBridge(*slot);
    slot->up.release(false);
    slot->answer.reset();
    std::string().swap(slot->resp);
    slot->hold.release();  // a client that left gives its share of the answer budget back
    slot->done = true;
  }
  if (w_ != nullptr) {
    w_->flush_queue->remove(*this);
  }
  pending_ = 0;
}

}  // namespace gw::proxy
