#pragma once
// subscriptions/listen on a federated route: the client's listen request sent to every
// upstream, one SSE stream back. Each upstream's first event (its
// notifications/subscriptions/acknowledged) is held until every upstream acknowledged or
// failed (bounded by federation.list_timeout); the client then gets one acknowledgement with
// the union, then every later upstream event as it completes (whole events only, re-framed
// by the gateway; `id:` lines are not kept since several servers share one stream). An
// upstream stream that ends or fails is reopened with backoff (1 s doubling to 30 s, back to
// 1 s only after a stream that stayed open 30 s: federation::reopenBackoffMs) while the
// client stays, and its new acknowledgement is not repeated to the client. The owner
// closing it (the client went away: cancellation) closes every upstream stream at once.
//
// Once ready, the stream looks at its upstreams' health every second (upstream/health.h):
// when an upstream leaves (no endpoint usable: down, ejected) or comes back, the client gets
// notifications/tools/list_changed, …/prompts/… and …/resources/list_changed (those its
// listen request asked for), so that it lists again and finds the merged lists without, or
// with, that upstream's items; the route's catalog is marked stale the same way.
//
// A 2025-era upstream (era: legacy, or found by the probe after it refused the listen
// request with a 400, 404 or 405) has no subscriptions/listen: its standalone GET stream, in
// a session of the stream's own (legacy_sessions.h: a 2025 SDK server allows one standalone
// stream per session; ended with DELETE when the stream closes), stands for it. It counts as
// acknowledged
// ({}) once the stream is open; its notifications are relayed like any other's, and a
// server-to-client request on it is refused in the session (-32601), never relayed.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/event/flush_queue.h"
#include "gateway/event/owners.h"
#include "gateway/federation/federation.h"
#include "gateway/http/message.h"
#include "gateway/proxy/fanout.h"
#include "gateway/proxy/legacy_sessions.h"
#include "gateway/settings/settings.h"
#include "gateway/sse/framer.h"
#include "gateway/upstream/http1_upstream.h"

namespace gw::proxy {

struct ProxyContext;

class ListenOwner {
 public:
  // Every upstream acknowledged or failed: the merged acknowledgement's `notifications`
  // object, or empty when none acknowledged (the owner answers 502).
  virtual void onListenReady(std::string_view notifications) = 0;
  // Whole SSE event bytes for the client (after onListenReady).
  virtual void onListenEvent(std::string_view bytes) = 0;
  // An upstream said a list changed (the owner marks the route's catalog stale).
  virtual void onListChanged(federation::ListKind kind) = 0;
  // True while the client's output is above its high mark (upstream reads pause).
  virtual bool listenBackedUp() const noexcept = 0;

 protected:
  ~ListenOwner() = default;
};

class MergedListen final : public upstream::UpstreamCallbacks, public event::Flushable {
 public:
  MergedListen() = default;
  MergedListen(const MergedListen&) = delete;
  MergedListen& operator=(const MergedListen&) = delete;
  ~MergedListen() { close(); }

  // False: no timer could be had. `client`: a 2025-era client's front session id (its GET
  // stream): a 2025-era upstream's stream is then opened in that client's session with it
  // (LegacySessions), not in one of the stream's own.
  bool start(ProxyContext& w, std::shared_ptr<const settings::Settings> s,
             const settings::Route& route, std::string_view body,
             std::span<const http::Field> fields, ListenOwner* owner, std::string_view client = {});
  // The Authorization each upstream of the route gets (upstreams[].auth; route order; "" for
  // none made), and the upstreams left out for want of one, for the next start(). Kept across
  // again().
  void authorize(UpstreamAuth::RouteCredentials c) { auth_ = std::move(c); }
  void close() noexcept;
  // The client drained below its low mark: paused upstream reads go on.
  void resume();
  size_t open() const noexcept;  // upstream streams open now

 private:
  struct Slot final : sse::EventSink, BridgeWaiter, OwnWaiter {
    enum class Bridge : uint8_t { kOff, kTrying, kTried, kWaiting, kOn };
    MergedListen* owner = nullptr;
    size_t index = 0;
    upstream::Http1Upstream up;
    upstream::UpstreamRequestHead head;
    std::unique_ptr<sse::Framer> framer;
    event::EventPtr timer;  // reopen backoff
    std::string ack;        // params.notifications of its first acknowledgement
    bool acked = false;     // acknowledged at least once
    bool waiting = false;   // the first answer is still awaited (before ready)
    bool streaming = false;
    bool failed = false;
    bool usable = true;       // some endpoint of its upstream was usable at the last look
    uint64_t backoff_ms = 0;  // the last reopen wait (0: none yet)
    core::Nanos opened{};     // when this stream was (re)opened (clock)
    Bridge bridge = Bridge::kOff;
    size_t bridge_endpoint = 0;
    std::string bridge_version;       // the session's MCP-Protocol-Version
    std::string bridge_session;       // its Mcp-Session-Id
    std::vector<http::Field> fields;  // the GET's fields in that session (view the above)
    void onEvent(std::string_view event, std::string_view data) noexcept override;
    void onBridgeReady(bool ok, const char* why) override;
    void onOwnSession(bool ok, const LegacySession* session) override;
    uint64_t own = 0;                // its session of its own (LegacySessions::openOwn; 0: none)
    bool own_ready = false;          // that session is up
    bool held = false;               // it holds the client's session (LegacySessions::hold)
    uint64_t bridge_generation = 0;  // that session's generation (LegacySessions::expire)
  };

  void open(Slot& slot);
  // The bridge's part of open(): true when the listen request (or, for a 2025-era upstream,
  // the GET in its session) goes out now; false when it waits or failed (ended).
  bool bridgeOpen(Slot& slot);
  void leaveBridge(Slot& slot) noexcept;
  // The slot's own session is over (closed with DELETE unless the server `lost` it); or,
  // for a client's stream, the slot lets the client's session go (dropped when `lost`).
  void dropOwn(Slot& slot, bool lost) noexcept;
  bool clientSession(Slot& slot);
  const settings::Upstream& upstreamOf(const Slot& slot) const noexcept;
  void ended(Slot& slot, bool failed);
  void firstAnswer(Slot& slot);
  void maybeReady();
  void relay(std::string_view event, std::string_view data);
  Slot& slotOf(upstream::Http1Upstream& from) noexcept;
  static void onReopen(evutil_socket_t, short, void* arg);
  static void onReadyTimer(evutil_socket_t, short, void* arg);
  // After ready: the upstreams' health, each second (the ready timer, re-armed).
  void watchHealth();
  // event::Flushable: every slot's request bytes go out with the worker's flush.
  void flushOutbound() noexcept override;
  void afterFlush() override {}

  bool onUpstreamHeaders(upstream::Http1Upstream& from, const http::ResponseHead& resp) override;
  void onUpstreamData(upstream::Http1Upstream& from, evbuffer* src, size_t n) override;
  void onUpstreamComplete(upstream::Http1Upstream& from) override;
  void onUpstreamError(upstream::Http1Upstream& from, upstream::UpstreamError e) override;
  void onUpstreamWritable(upstream::Http1Upstream&) override {}
  void onUpstreamOutput(upstream::Http1Upstream&) override;
  void onUpstreamRetry(upstream::Http1Upstream&, core::Nanos) override {}

  ProxyContext* w_ = nullptr;
  std::shared_ptr<const settings::Settings> s_;
  const settings::Route* route_ = nullptr;
  ListenOwner* owner_ = nullptr;
  std::string client_;  // start()'s `client`
  std::string body_;
  federation::ListenFilter filter_;  // what body_ asks for (a 2025 stream's filter and ack)
  OwnedFields fields_;
  UpstreamAuth::RouteCredentials auth_;  // authorize()
  std::vector<std::unique_ptr<Slot>> slots_;
  bool ready_ = false;
  bool closed_ = true;
  std::vector<std::string> held_;  // events that completed before ready (bounded)
  size_t held_bytes_ = 0;
  event::EventPtr ready_timer_;  // list_timeout until ready, then the health watch
  std::string scratch_;
};

}  // namespace gw::proxy
