#pragma once
// One request sent to every upstream of a federated route at once (federation): a list
// method or server/discover (each answer, JSON or SSE, read whole and parsed, every page
// followed through nextCursor up to federation.max_items, each upstream bounded by
// federation.list_timeout), or a client notification (only the status matters). The fan-out
// owns one upstream::Http1Upstream per upstream and copies what it sends, so it may outlive
// the request that started it (a shared ownership refresh). Its upstream output is written
// once per loop turn by the worker's flush queue (event/flush_queue.h), with the client
// connections' upstream output.

#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/event/flush_queue.h"
#include "gateway/event/owners.h"
#include "gateway/federation/registry.h"
#include "gateway/filters/snapshot.h"
#include "gateway/http/message.h"
#include "gateway/proxy/answer_hold.h"
#include "gateway/proxy/legacy_sessions.h"
#include "gateway/proxy/request_trace.h"
#include "gateway/proxy/sse_response.h"
#include "gateway/proxy/upstream_auth.h"
#include "gateway/settings/settings.h"
#include "gateway/upstream/http1_upstream.h"

namespace gw::proxy {

struct ProxyContext;
class FanOut;

// The forwarded request fields sent to every upstream of a fan-out, owned (a fan-out may
// outlive the request), with the fan-out's own Mcp-Method, Content-Type and Accept (the
// client's Mcp-Method, Mcp-Name, Mcp-Param-*, Content-Type, Accept, Content-Length, Host and
// Mcp-Session-Id are not repeated).
class OwnedFields {
 public:
  void assign(std::span<const http::Field> fields, std::string_view method);
  void setMethod(std::string_view method);
  const std::vector<http::Field>& fields() const noexcept { return views_; }

 private:
  void view();
  std::vector<std::string> text_;  // name, value, name, value…
  std::string method_;
  std::vector<http::Field> views_;
};

// Items dropped from `upstream`'s list answer because no client could take them (issue #24):
// one warning naming the faults, and mcp_gateway_federation_items_dropped_total{upstream,
// reason}. Nothing when none was dropped.
void reportDroppedItems(ProxyContext& w, std::string_view server, std::string_view upstream,
                        federation::ListKind kind, const federation::ItemDrops& dropped);

class FanOutDone {
 public:
  // Every upstream answered, failed or timed out. The last thing the fan-out does: the
  // callee may destroy it.
  virtual void onFanOutDone(FanOut& f) = 0;

 protected:
  ~FanOutDone() = default;
};

class FanOut final : public upstream::UpstreamCallbacks, public event::Flushable {
 public:
  enum class Mode : uint8_t { kList, kNotify };

  FanOut() = default;
  FanOut(const FanOut&) = delete;
  FanOut& operator=(const FanOut&) = delete;
  ~FanOut() { cancel(); }

  // Sends `body` (a JSON-RPC request or notification) to every upstream of `route` with
  // `fields` (the forwarded request fields; Mcp-Method, Mcp-Name, Mcp-Param-*, Content-Type
  // and Accept are replaced by the fan-out's own). `method` is the Mcp-Method sent.
  // False: no timer could be had (nothing started, done is not called).
  bool start(ProxyContext& w, std::shared_ptr<const settings::Settings> s,
             const settings::Route& route, Mode mode, federation::ListKind kind,
             std::string_view method, std::string_view body, std::span<const http::Field> fields,
             core::Nanos started, FanOutDone* done);
  // The same upstreams and forwarded fields again, for another list method (only once the
  // previous run is done, e.g. from onFanOutDone).
  bool again(federation::ListKind kind, std::string_view method, std::string_view body,
             FanOutDone* done);
  // The Authorization each upstream of the route gets (upstreams[].auth; route order; "" for
  // none made), and the upstreams left out for want of one, for the next start(). Kept across
  // again().
  void authorize(UpstreamAuth::RouteCredentials c) { auth_ = std::move(c); }
  // tracing: each member request gets a CLIENT span of the request's trace, its own
  // traceparent naming it (before start(); `link.sink` null: off).
  void traceWith(RequestTrace::Link link) { trace_ = std::move(link); }
  // Closes every upstream request (never pooled); done is not called.
  void cancel() noexcept;
  bool running() const noexcept { return pending_ > 0; }

  federation::ListKind kind() const noexcept { return kind_; }
  // Route order. For kNotify only ok and outcome/status are set.
  federation::FetchReport& report() noexcept { return report_; }
  std::span<const int> statuses() const noexcept { return statuses_; }
  const settings::Route* route() const noexcept { return route_; }

 private:
  // One upstream's part. A 2025-era upstream (upstreams[].era, or found by the probe) is
  // asked in the worker's session with it (legacy_sessions.h): the slot waits for the era and
  // the session (era: auto asks as it is first: see Bridge), sends with the session's
  // MCP-Protocol-Version and Mcp-Session-Id, and a
  // server/discover is answered from the session's initialize result; a 404 (the server lost
  // the session) is asked again once in a new one.
  struct Slot final : BridgeWaiter {
    // kTrying: era auto, era unknown — sent as it is, the answer tells (as on a plain
    // route); kTried: it was a 2025 server's refusal, so the slot waits for the probe.
    enum class Bridge : uint8_t { kOff, kTrying, kTried, kWaiting, kOn };
    void onBridgeReady(bool ok, const char* why) override;

    FanOut* owner = nullptr;
    size_t index = 0;
    // tracing: this member request's CLIENT span and the traceparent naming it.
    trace::SpanId span_id{};
    uint64_t span_start_ns = 0;
    char traceparent[trace::kTraceparentSize] = {};
    upstream::Http1Upstream up;
    upstream::UpstreamRequestHead head;
    std::string body;    // the current page's request
    std::string resp;    // the JSON answer
    SseResponse answer;  // an SSE answer, read until its response event
    bool sse = false;
    bool finish_pending = false;  // the response event is in: finished by the next onFlush
    int error_status = 0;         // a non-2xx answer (its body is kept, bounded, in resp)
    std::string content_type;     // of that answer
    bool done = true;
    bool too_large = false;
    bool over_budget = false;  // limits.max_buffered_answer_bytes reached: left out
    AnswerHold hold;           // the page's bytes against that budget
    size_t pages = 0;
    std::string cursor;  // the last cursor asked for
    event::EventPtr timer;
    Bridge bridge = Bridge::kOff;
    bool bridge_retried = false;  // a lost session was made again once for this request
    size_t bridge_endpoint = 0;
    uint64_t bridge_generation = 0;
    std::string bridge_version;       // the session's MCP-Protocol-Version
    std::string bridge_session;       // its Mcp-Session-Id
    std::vector<http::Field> fields;  // the fan-out's fields in that session (view the above)
  };

  void startSlot(Slot& slot);
  // The bridge's part of startSlot: true when the slot's request goes out now (as it is, or
  // in its session); false when it waits for the era or session, or was finished here.
  bool bridgeSlot(Slot& slot);
  void bridgeReady(Slot& slot, bool ok, const char* why);
  void leaveBridge(Slot& slot) noexcept;
  void finishSlot(Slot& slot, bool ok, std::string_view outcome, std::string detail);
  void pageDone(Slot& slot);
  void scheduleFlush();
  // event::Flushable: every slot's request bytes go out, then the SSE pages whose response
  // event is in are finished.
  void flushOutbound() noexcept override;
  void afterFlush() override;
  static void onTimer(evutil_socket_t, short, void* arg);
  Slot& slotOf(upstream::Http1Upstream& from) noexcept;

  bool onUpstreamHeaders(upstream::Http1Upstream& from, const http::ResponseHead& resp) override;
  void onUpstreamData(upstream::Http1Upstream& from, evbuffer* src, size_t n) override;
  void onUpstreamComplete(upstream::Http1Upstream& from) override;
  void onUpstreamError(upstream::Http1Upstream& from, upstream::UpstreamError e) override;
  void onUpstreamWritable(upstream::Http1Upstream&) override {}
  void onUpstreamOutput(upstream::Http1Upstream&) override { scheduleFlush(); }
  void onUpstreamRetry(upstream::Http1Upstream&, core::Nanos) override {}

  ProxyContext* w_ = nullptr;
  std::shared_ptr<const settings::Settings> s_;
  const settings::Route* route_ = nullptr;
  Mode mode_ = Mode::kList;
  federation::ListKind kind_ = federation::ListKind::kTools;
  FanOutDone* done_ = nullptr;
  core::Nanos started_{};
  std::string base_body_;
  OwnedFields fields_;
  UpstreamAuth::RouteCredentials auth_;  // authorize()
  RequestTrace::Link trace_;             // traceWith()
  std::vector<std::unique_ptr<Slot>> slots_;
  federation::FetchReport report_;
  std::vector<int> statuses_;
  size_t pending_ = 0;
};

class FederatedTarget;

// A refresh of one list method of one federated route that calls naming an unknown tool,
// prompt or resource wait for (concurrent misses on a worker share it). Kept by the worker
// (one per route and method), reused; its result goes to the route's catalog.
struct FederationRefresh final : FanOutDone {
  std::shared_ptr<federation::RouteCatalog> catalog;
  std::shared_ptr<const filters::Snapshot> snap;
  federation::ListKind kind = federation::ListKind::kTools;
  ProxyContext* w = nullptr;
  std::string version;  // MCP-Protocol-Version of the refresh requests
  FanOut fan;
  std::vector<FederatedTarget*> waiters;
  void onFanOutDone(FanOut& f) override;
};

}  // namespace gw::proxy
