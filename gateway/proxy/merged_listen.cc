// One subscriptions/listen stream over every upstream of a federated route (see
// merged_listen.h).

#include "gateway/proxy/merged_listen.h"

#include <chrono>

#include "gateway/core/ascii.h"
#include "gateway/core/assert.h"
#include "gateway/mcp/bridge.h"
#include "gateway/mcp/id_scan.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

namespace {

constexpr size_t kMaxEventBytes = 4 * 1024 * 1024;
constexpr size_t kMaxHeldBytes = 4 * 1024 * 1024;
constexpr std::chrono::milliseconds kHealthLook{1000};  // watchHealth's period

bool isEventStream(const http::ResponseHead& r) {
  const http::HeaderField* ct = http::findField(r.fields, "content-type");
  return ct != nullptr && core::istartsWith(ct->value, "text/event-stream");
}

// The method of a notification (a bounded look: `"method":"…"` among its first members).
std::string_view methodOf(std::string_view json) {
  const size_t k = json.find("\"method\"");
  if (k == std::string_view::npos || k > 256) {
    return {};
  }
  size_t q = json.find('"', json.find(':', k + 8));
  if (q == std::string_view::npos) {
    return {};
  }
  const size_t end = json.find('"', q + 1);
  return end == std::string_view::npos ? std::string_view{} : json.substr(q + 1, end - q - 1);
}

}  // namespace

bool MergedListen::start(ProxyContext& w, std::shared_ptr<const settings::Settings> s,
                         const settings::Route& route, std::string_view body,
                         std::span<const http::Field> fields, ListenOwner* owner,
                         std::string_view client) {
  close();
  w_ = &w;
  client_.assign(client);
  s_ = std::move(s);
  route_ = &route;
  owner_ = owner;
  body_.assign(body);
  filter_ = federation::listenFilterOf(body_);
  fields_.assign(fields, "subscriptions/listen");
  ready_ = false;
  closed_ = false;
  held_.clear();
  held_bytes_ = 0;
  if (!ready_timer_) {
    ready_timer_.reset(evtimer_new(w.base, &MergedListen::onReadyTimer, this));
    if (!ready_timer_ || !w.flush_queue->ready(w.base)) {
      return false;
    }
  }
  const size_t n = route.upstream_indexes.size();
  while (slots_.size() < n) {
    auto slot = std::make_unique<Slot>();
    slot->owner = this;
    slot->index = slots_.size();
    slot->timer.reset(evtimer_new(w.base, &MergedListen::onReopen, slot.get()));
    if (!slot->timer) {
      return false;
    }
    slots_.push_back(std::move(slot));
  }
  for (size_t i = 0; i < n; ++i) {
    Slot& slot = *slots_[i];
    slot.up.init(w.base, w.pools.get(), w.parser.get(), w.clock, this);
    slot.ack.clear();
    slot.acked = slot.streaming = slot.failed = false;
    slot.bridge = Slot::Bridge::kOff;
    slot.waiting = true;
    slot.backoff_ms = 0;
    slot.usable = w.pools->stateOf(upstreamOf(slot)).anyUsable(w.clock->now().count());
  }
  timeval tv = event::toTimeval(s_->federation.list_timeout);
  evtimer_add(ready_timer_.get(), &tv);
  for (size_t i = 0; i < n && !closed_; ++i) {
    open(*slots_[i]);
  }
  return true;
}

const settings::Upstream& MergedListen::upstreamOf(const Slot& slot) const noexcept {
  return s_->upstreams[route_->upstream_indexes[slot.index]];
}

void MergedListen::open(Slot& slot) {
  const settings::Upstream& up = upstreamOf(slot);
  slot.head.method = "POST";
  slot.head.query = {};
  slot.head.fields = fields_.fields();
  slot.head.authorization = slot.index < auth_.values.size()
                                ? std::string_view(auth_.values[slot.index])
                                : std::string_view{};
  slot.head.content_length = body_.size();
  slot.head.length_field = true;
  slot.head.pinned_endpoint = -1;
  slot.framer.reset();
  slot.streaming = false;
  slot.opened = w_->clock->now();
  if (slot.index < auth_.missing.size() && auth_.missing[slot.index]) {
    ended(slot, true);  // upstreams[].auth: no credential for it (left out, as unreachable)
    return;
  }
  if (!bridgeOpen(slot)) {
    return;
  }
  const bool get = slot.bridge == Slot::Bridge::kOn;
  upstream::UpstreamError error{};
  if (!slot.up.start(up, slot.head, slot.opened, error)) {
    ended(slot, true);
    return;
  }
  if (!get) {
    evbuffer_add(slot.up.output(), body_.data(), body_.size());
  }
  slot.up.requestComplete();
  onUpstreamOutput(slot.up);
  if (get && !slot.acked) {
    // A 2025 stream has no acknowledgement, and a server may send its head only with its
    // first event: the GET in a live session is taken as acknowledged, for the list changes
    // asked, once sent.
    slot.ack = filter_.ackObject();  // its list changes, filtered here
    slot.acked = true;
    if (slot.waiting) {
      slot.waiting = false;
      maybeReady();
    }
  }
}

bool MergedListen::bridgeOpen(Slot& slot) {
  const settings::Upstream& up = upstreamOf(slot);
  if (up.era == settings::UpstreamEra::kModern) {
    return true;
  }
  LegacySessions& ls = w_->legacySessions();
  const LegacySessions::Era era = ls.era(up);
  if (era == LegacySessions::Era::kModern) {
    slot.bridge = Slot::Bridge::kOff;
    return true;
  }
  if (era == LegacySessions::Era::kUnknown && slot.bridge == Slot::Bridge::kOff) {
    slot.bridge = Slot::Bridge::kTrying;  // as it is: the answer tells
    return true;
  }
  if (era == LegacySessions::Era::kUnknown) {
    // The listen request was refused as a 2025 server refuses it: the probe decides.
    if (slot.bridge != Slot::Bridge::kWaiting) {
      slot.bridge_endpoint = ls.pickEndpoint(up);
    }
    if (ls.wait(up, slot.bridge_endpoint, slot)) {
      slot.bridge = Slot::Bridge::kWaiting;  // onBridgeReady opens it
      return false;
    }
    if (ls.era(up) != LegacySessions::Era::kLegacy) {
      slot.bridge = Slot::Bridge::kOff;
      return true;
    }
  }
  if (!client_.empty()) {
    if (!clientSession(slot)) {
      return false;
    }
  } else if (slot.own == 0) {
    // A session of the stream's own, then the GET in it (onOwnSession opens it).
    slot.bridge_endpoint = ls.pickEndpoint(up);
    slot.bridge = Slot::Bridge::kWaiting;
    slot.own_ready = false;
    slot.own = ls.openOwn(up, slot.bridge_endpoint, slot);
    return false;
  } else if (!slot.own_ready) {
    return false;  // its handshake is still going
  }
  slot.bridge = Slot::Bridge::kOn;
  // The 2025 standalone stream: GET in the session, no body.
  slot.fields.clear();
  for (const http::Field& f : fields_.fields()) {
    if (core::iequals(f.name, "mcp-method") || core::iequals(f.name, "content-type") ||
        core::iequals(f.name, "accept") || core::iequals(f.name, "mcp-protocol-version")) {
      continue;
    }
    slot.fields.push_back(f);
  }
  slot.fields.push_back(http::Field{"Accept", "text/event-stream"});
  slot.fields.push_back(http::Field{"MCP-Protocol-Version", slot.bridge_version});
  if (!slot.bridge_session.empty()) {
    slot.fields.push_back(http::Field{"Mcp-Session-Id", slot.bridge_session});
  }
  slot.head.method = "GET";
  slot.head.fields = slot.fields;
  slot.head.content_length = 0;
  slot.head.length_field = false;
  slot.head.pinned_endpoint = static_cast<int>(slot.bridge_endpoint);
  return true;
}

void MergedListen::Slot::onBridgeReady(bool ok, const char*) {
  MergedListen& m = *owner;
  if (bridge != Bridge::kWaiting || m.closed_) {
    return;
  }
  if (!ok) {
    bridge = Bridge::kOff;
    m.ended(*this, true);
    return;
  }
  m.open(*this);
}

void MergedListen::Slot::onOwnSession(bool ok, const LegacySession* session) {
  MergedListen& m = *owner;
  if (m.closed_) {
    return;
  }
  if (!ok || session == nullptr) {
    m.dropOwn(*this, true);
    bridge = Bridge::kOff;
    m.ended(*this, true);  // opened again after the backoff, with a new session
    return;
  }
  own_ready = true;
  bridge_version = session->init.version;
  bridge_session = session->id;
  m.open(*this);
}

// A 2025-era client's stream: the GET goes in the client's session with the upstream
// (made when first needed). True: it is up; false: waiting (onBridgeReady opens the
// stream), or it could not be had (ended).
bool MergedListen::clientSession(Slot& slot) {
  LegacySessions& ls = w_->legacySessions();
  const settings::Upstream& up = upstreamOf(slot);
  slot.bridge_endpoint = ls.pickEndpoint(up, client_);  // the session's, once it has one
  if (ls.wait(up, slot.bridge_endpoint, slot, client_)) {
    slot.bridge = Slot::Bridge::kWaiting;
    return false;
  }
  const LegacySession* session = ls.session(up, slot.bridge_endpoint, client_);
  if (session == nullptr) {
    slot.bridge = Slot::Bridge::kOff;
    ended(slot, true);
    return false;
  }
  if (!slot.held) {
    ls.hold(client_, up, true);
    slot.held = true;
  }
  slot.bridge_version = session->init.version;
  slot.bridge_session = session->id;
  slot.bridge_generation = session->generation;
  return true;
}

void MergedListen::dropOwn(Slot& slot, bool lost) noexcept {
  if (slot.held && w_ != nullptr) {
    const settings::Upstream& up = upstreamOf(slot);
    if (lost) {
      w_->legacySessions().expire(up, slot.bridge_endpoint, slot.bridge_generation, client_);
    }
    w_->legacySessions().hold(client_, up, false);
    slot.held = false;
  }
  if (slot.own != 0 && w_ != nullptr) {
    w_->legacySessions().closeOwn(slot.own, lost);
  }
  slot.own = 0;
  slot.own_ready = false;
}

void MergedListen::leaveBridge(Slot& slot) noexcept {
  if (slot.bridge == Slot::Bridge::kWaiting && w_ != nullptr) {
    w_->legacySessions().leave(slot);
  }
  dropOwn(slot, false);
  slot.bridge = Slot::Bridge::kOff;
}

void MergedListen::onUpstreamOutput(upstream::Http1Upstream&) {
  w_->flush_queue->schedule(w_->base, *this);
}

void MergedListen::flushOutbound() noexcept {
  for (auto& slot : slots_) {
    if (slot->up.active() && !slot->up.writing() && slot->up.sendNow() == event::Sent::kDrained) {
      slot->up.onFlushed();
    }
  }
}

MergedListen::Slot& MergedListen::slotOf(upstream::Http1Upstream& from) noexcept {
  for (auto& slot : slots_) {
    if (&slot->up == &from) {
      return *slot;
    }
  }
  GW_ASSERT(false);
  return *slots_.front();
}

bool MergedListen::onUpstreamHeaders(upstream::Http1Upstream& from,
                                     const http::ResponseHead& resp) {
  Slot& slot = slotOf(from);
  if (slot.bridge == Slot::Bridge::kTrying) {
    if (resp.status >= 200 && resp.status < 300) {
      w_->legacySessions().noteModern(upstreamOf(slot));
      slot.bridge = Slot::Bridge::kOff;
    } else if (resp.status == 400 || resp.status == 404 || resp.status == 405) {
      // What a 2025 server answers subscriptions/listen: probed, then its GET stream.
      slot.bridge = Slot::Bridge::kTried;
      from.release(false);
      timeval now{0, 0};
      evtimer_add(slot.timer.get(), &now);  // open() again on the next turn
      return false;
    } else {
      slot.bridge = Slot::Bridge::kOff;
    }
  }
  if (slot.bridge == Slot::Bridge::kOn && resp.status == 404) {
    dropOwn(slot, true);  // the server lost the session: a new one when the stream reopens
  }
  if (resp.status != 200 || !isEventStream(resp)) {
    from.release(false);
    ended(slot, true);  // an error answer (JSON) or no stream: this upstream does not listen
    return false;
  }
  slot.streaming = true;
  slot.framer = std::make_unique<sse::Framer>(&slot, kMaxEventBytes);
  return true;
}

void MergedListen::onUpstreamData(upstream::Http1Upstream& from, evbuffer* src, size_t n) {
  Slot& slot = slotOf(from);
  evbuffer_iovec vecs[8];
  size_t seen = 0;
  evbuffer_ptr pos;
  evbuffer_ptr_set(src, &pos, 0, EVBUFFER_PTR_SET);
  while (seen < n && slot.framer && !closed_) {
    int k = std::min(evbuffer_peek(src, static_cast<ev_ssize_t>(n - seen), &pos, vecs, 8), 8);
    if (k <= 0) {
      break;
    }
    for (int i = 0; i < k && seen < n && !closed_; ++i) {
      size_t len = std::min(vecs[i].iov_len, n - seen);
      slot.framer->feed(std::string_view(static_cast<const char*>(vecs[i].iov_base), len));
      seen += len;
    }
    evbuffer_ptr_set(src, &pos, seen, EVBUFFER_PTR_SET);
  }
  evbuffer_drain(src, n);
  if (!closed_ && owner_->listenBackedUp()) {
    for (auto& s : slots_) {
      if (s->up.active()) {
        s->up.pauseReading();
      }
    }
  }
}

void MergedListen::resume() {
  for (auto& s : slots_) {
    if (s->up.active() && s->up.paused()) {
      s->up.resumeReading();
    }
  }
}

void MergedListen::Slot::onEvent(std::string_view event, std::string_view data) noexcept {
  MergedListen& m = *owner;
  if (m.closed_) {
    return;
  }
  if (bridge == Bridge::kOn) {
    std::string id;
    if (data.empty()) {
      return;  // a 2025 server's priming event (its reconnection id)
    }
    if (mcp::bridge::serverRequest(data, id)) {
      // Sampling, elicitation, roots, ping: refused in the session, never relayed.
      if (held) {
        m.w_->legacySessions().answerServer(m.upstreamOf(*this), bridge_endpoint,
                                            mcp::bridge::refusalFor(id), m.client_);
      } else {
        m.w_->legacySessions().answerOwn(own, mcp::bridge::refusalFor(id));
      }
      return;
    }
    // Only the list changes asked for: a 2025 server sends what it likes on its stream
    // (request-scoped notifications and resource updates never go on a listen stream).
    const auto kind = federation::changedListOf(methodOf(data));
    if (!kind || !m.filter_.wants(*kind)) {
      return;
    }
  } else if (waiting || !acked) {
    std::string notifications;
    if (federation::ackNotifications(data, notifications)) {
      if (!acked) {
        ack = std::move(notifications);
        acked = true;
      }
      if (waiting) {
        waiting = false;
        m.maybeReady();
      }
      return;
    }
  } else if (federation::ackNotifications(data, ack)) {
    return;  // a reopened stream's acknowledgement: the client has one already
  }
  if (mcp::looksLikeResponse(data)) {
    return;  // the upstream ended its subscription (it is reopened when the stream ends)
  }
  if (auto kind = federation::changedListOf(methodOf(data))) {
    m.owner_->onListChanged(*kind);
  }
  m.relay(event, data);
}

// A complete event for the client, re-framed: `event:` and one `data:` line per line.
void MergedListen::relay(std::string_view event, std::string_view data) {
  scratch_.clear();
  scratch_ += "event: ";
  scratch_ += event.empty() ? std::string_view("message") : event;
  scratch_ += '\n';
  size_t start = 0;
  while (true) {
    const size_t nl = data.find('\n', start);
    scratch_ += "data: ";
    scratch_.append(data.substr(start, nl == std::string_view::npos ? nl : nl - start));
    scratch_ += '\n';
    if (nl == std::string_view::npos) {
      break;
    }
    start = nl + 1;
  }
  scratch_ += '\n';
  if (!ready_) {
    if (held_bytes_ + scratch_.size() <= kMaxHeldBytes) {
      held_bytes_ += scratch_.size();
      held_.push_back(scratch_);
    }
    return;
  }
  owner_->onListenEvent(scratch_);
}

void MergedListen::onUpstreamComplete(upstream::Http1Upstream& from) {
  ended(slotOf(from), false);
}

void MergedListen::onUpstreamError(upstream::Http1Upstream& from, upstream::UpstreamError) {
  Slot& slot = slotOf(from);
  if (slot.bridge == Slot::Bridge::kOn) {
    dropOwn(slot, true);  // its endpoint failed: a new session (and for auto, a new probe)
    w_->legacySessions().forgetEra(upstreamOf(slot));
  }
  ended(slot, true);
}

// An upstream stream is over: before ready it counts as this upstream's answer (failed when
// it never acknowledged); after, it is reopened with backoff while the client stays.
void MergedListen::ended(Slot& slot, bool failed) {
  slot.up.release(false);
  slot.framer.reset();
  slot.streaming = false;
  if (closed_) {
    return;
  }
  if (slot.waiting) {
    slot.waiting = false;
    slot.failed = failed || !slot.acked;
    maybeReady();
    if (closed_) {
      return;
    }
  }
  // Growing unless the stream had stayed open a while (an acknowledgement alone is no sign of
  // health: a server may acknowledge and drop at once).
  slot.backoff_ms = federation::reopenBackoffMs(slot.backoff_ms, w_->clock->now() - slot.opened);
  timeval tv = event::toTimeval(std::chrono::milliseconds(slot.backoff_ms));
  evtimer_add(slot.timer.get(), &tv);
}

void MergedListen::onReopen(evutil_socket_t, short, void* arg) {
  auto* slot = static_cast<Slot*>(arg);
  if (!slot->owner->closed_ && !slot->up.active()) {
    slot->owner->open(*slot);
  }
}

void MergedListen::onReadyTimer(evutil_socket_t, short, void* arg) {
  auto* m = static_cast<MergedListen*>(arg);
  if (m->ready_) {
    m->watchHealth();
    return;
  }
  for (auto& slot : m->slots_) {
    if (slot->waiting) {
      slot->waiting = false;  // too slow to acknowledge: left out of the union (its
      slot->failed = true;    // stream, if it comes, is relayed all the same)
    }
  }
  m->maybeReady();
}

// Every upstream acknowledged or failed: the client gets the union.
void MergedListen::maybeReady() {
  if (ready_ || closed_) {
    return;
  }
  std::vector<std::string_view> acks;
  for (size_t i = 0; i < route_->upstream_indexes.size(); ++i) {
    const Slot& slot = *slots_[i];
    if (slot.waiting) {
      return;
    }
    if (slot.acked) {
      acks.push_back(slot.ack);
    }
  }
  evtimer_del(ready_timer_.get());
  ready_ = true;
  const timeval tick = event::toTimeval(kHealthLook);
  evtimer_add(ready_timer_.get(), &tick);
  if (acks.empty()) {
    owner_->onListenReady({});
    return;
  }
  const std::string merged = federation::mergeObjects(acks);
  owner_->onListenReady(merged);
  std::vector<std::string> held;
  held.swap(held_);
  held_bytes_ = 0;
  for (const std::string& e : held) {
    if (closed_) {
      return;
    }
    owner_->onListenEvent(e);
  }
}

void MergedListen::watchHealth() {
  const int64_t now = w_->clock->now().count();
  bool changed = false;
  for (size_t i = 0; i < route_->upstream_indexes.size(); ++i) {
    Slot& slot = *slots_[i];
    const bool usable = w_->pools->stateOf(upstreamOf(slot)).anyUsable(now);
    changed = changed || usable != slot.usable;
    slot.usable = usable;
  }
  if (changed) {
    // Every kind the client asked for: an upstream's tools, prompts and resources all went
    // (or came back) with it.
    static constexpr std::pair<federation::ListKind, std::string_view> kChanged[] = {
        {federation::ListKind::kTools,
         R"({"jsonrpc":"2.0","method":"notifications/tools/list_changed"})"},
        {federation::ListKind::kPrompts,
         R"({"jsonrpc":"2.0","method":"notifications/prompts/list_changed"})"},
        {federation::ListKind::kResources,
         R"({"jsonrpc":"2.0","method":"notifications/resources/list_changed"})"},
    };
    for (const auto& [kind, message] : kChanged) {
      if (closed_) {
        return;
      }
      owner_->onListChanged(kind);  // resources: templates too
      if (filter_.wants(kind)) {
        relay("message", message);
      }
    }
  }
  if (!closed_) {
    const timeval tick = event::toTimeval(kHealthLook);
    evtimer_add(ready_timer_.get(), &tick);
  }
}

size_t MergedListen::open() const noexcept {
  size_t n = 0;
  for (const auto& slot : slots_) {
    n += slot->streaming ? 1 : 0;
  }
  return n;
}

void MergedListen::close() noexcept {
  closed_ = true;
  for (auto& slot : slots_) {
    if (slot->timer) {
      evtimer_del(slot->timer.get());
    }
    leaveBridge(*slot);
    slot->up.release(false);
    slot->streaming = false;  // (a framer may be feeding this call: it goes with the slot)
    slot->waiting = false;
  }
  if (ready_timer_) {
    evtimer_del(ready_timer_.get());
  }
  if (w_ != nullptr) {
    w_->flush_queue->remove(*this);
  }
  held_.clear();
  held_bytes_ = 0;
}

}  // namespace gw::proxy
