#pragma once
// proxy/: what answers a request on a federated route (`upstreams:`), chosen after routing:
// list methods and server/discover fanned out and merged (or served from the route's cache),
// calls sent to the upstream that owns the name (an unknown name waits for one shared
// refresh), `names: prefix` rewritten to the owner's own name, client notifications sent to
// every upstream, subscriptions/listen merged into one stream, task ids remembered. The pure
// half (merge, ownership, rewrite) is federation/; the shared state federation/registry.
//
// The target lives inside its Exchange (one per exchange, reused with it from the
// ExchangePool; reset() per request) and reaches the request lifetime through it: the
// request's context, snapshot and body, the response start (respond, startResponse,
// sendLocalReply, upstreamFailed), and the forwarding target (forward_target.h: the
// forwarded head, the list filter, pin observation, and connect() once it has chosen one
// upstream).
// Exchange names it a friend for that, since those are private to the connection's side:
// the target calls Exchange's methods (exchange.h lists them) and touches none of its
// private fields but the request's head, body (request_body.h) and outcome.
//
// federated_target.cc: the choice of owner and the request's own bookkeeping;
// federated_fanout.cc: the shared refresh, the fan-out and its merged answer, the merged
// subscriptions/listen stream.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "gateway/federation/registry.h"
#include "gateway/filters/context.h"
#include "gateway/filters/pipeline.h"
#include "gateway/proxy/fanout.h"
#include "gateway/proxy/merged_listen.h"

namespace gw::proxy {

class Exchange;

class FederatedTarget final : public FanOutDone, public ListenOwner {
 public:
  explicit FederatedTarget(Exchange& x) noexcept : x_(x) {}
  FederatedTarget(const FederatedTarget&) = delete;
  FederatedTarget& operator=(const FederatedTarget&) = delete;
  ~FederatedTarget() = default;

  // A new request on the exchange: nothing chosen, nothing to log.
  void reset() noexcept;
  // The exchange goes back to its pool: everything stopped, the catalog forgotten, and the
  // merged answer's buffer released when it grew past `keep_capacity` bytes.
  void recycle(size_t keep_capacity) noexcept;

  // The kOwner step. A named call on a federated route (modern traffic) goes to the
  // upstream that owns the name (kContinue with routed(); kStop while the lists are fetched
  // again; kLocalReply when no upstream has it). Legacy traffic on a `names: prefix` route
  // must name a prefixed tool or prompt of the route's first upstream (legacyPrefixed).
  // Anything else goes on to federate().
  filters::FilterStatus ownerStep();
  // Chooses what a request on a federated route becomes: a fan-out, a merged stream, a
  // merged answer from the cache, or a request to one upstream. Exchange::toTarget() calls it
  // once, before anything goes upstream, unless the kOwner step chose the owner already; a
  // request it sends to one upstream goes to ForwardTarget::connect() with that upstream
  // chosen.
  void federate();
  // The ownership refresh this request waits for (if any) will not resume it.
  void leaveRefresh() noexcept;
  // The ownership refresh this request waited for is recorded: the kOwner step runs again.
  void onRefreshed();
  void stopFederation() noexcept;  // fan-out, merged stream and refresh wait, all ended
  // A federated tools/call answer (JSON, or one SSE event's data) that may have created a
  // task: its id routes tasks/* to this owner.
  void captureTask(std::string_view json) noexcept;
  // The client drained below its low mark: the merged stream's paused reads go on.
  void resumeListen();
  // The access log's "federation" object (only on a federated route that had its catalog).
  void appendLogFields(std::string& line) const;

  // What the forwarding side reads.
  bool routed() const noexcept { return fed_routed_; }  // the owner is chosen
  bool capturesTask() const noexcept { return capture_task_; }
  bool listenOpen() const noexcept { return listen_open_; }  // the merged stream is relayed
  // The name the owner knows (names: prefix), or empty when the call's name goes as sent.
  std::string_view ownerName() const noexcept { return fed_name_; }
  // Its Mcp-Name value (a sentinel when it cannot be sent plain); valid until the next call.
  std::string_view ownerNameField();
  // The route's catalog (snapshot-owned), once the request looked at it; else null.
  federation::RouteCatalog* catalog() const noexcept { return catalog_; }

  // FanOutDone: a federated list, discover or notification fan-out ended.
  void onFanOutDone(FanOut& f) override;
  // ListenOwner: the merged subscriptions/listen stream.
  void onListenReady(std::string_view notifications) override;
  void onListenEvent(std::string_view bytes) override;
  void onListChanged(federation::ListKind kind) override;
  bool listenBackedUp() const noexcept override;

 private:
  static bool isNotification(const filters::RequestContext& ctx);
  filters::FilterStatus routeByName(federation::ListKind kind);
  filters::FilterStatus waitForRefresh(federation::ListKind kind);
  filters::FilterStatus unknownName(federation::ListKind kind);
  filters::FilterStatus rejectUnknownName(federation::ListKind kind);
  filters::FilterStatus chooseOwner(size_t owner);
  void proceedTo(size_t owner);
  // federated_front.cc: a 2025-era client on the route.
  void federateLegacy();
  void startInitialize();
  void startFrontListen();
  void refuseFrontListen();
  void answerInitialize(std::string_view members);
  bool frontVersionOk();
  bool frontSessionOk();
  void frontRefusal(int status, int code, std::string message, const char* why);
  bool modernizeBody();
  void useFrontBody();
  void localAnswer(int status, std::string_view body);
  bool rewriteForOwner();
  void fanOut(FanOut::Mode mode, federation::ListKind kind);
  void listOrForward(std::string_view method, bool discover);
  // How long one request's refresh of an expired cached list holds off the others' (they get
  // the expired answer meanwhile): a page's list_timeout twice, ended early by its record().
  core::Nanos refreshBound() const;
  mcp::RequestId requestId();  // the body's id (null when none): the id of a local answer
  void startListen();
  void serveMerged(const std::shared_ptr<const std::string>& members, uint64_t ttl_ms,
                   bool public_scope);
  void recordFetches(const FanOut& f);
  bool relayRefusal(FanOut& f);
  void learnFederatedTools(const FanOut& f);
  std::string requestIdJson();

  Exchange& x_;
  federation::RouteCatalog* catalog_ = nullptr;  // the route's (snapshot-owned)
  bool fed_routed_ = false;                      // the owner is chosen (toTarget goes upstream)
  bool fed_refreshed_ = false;                   // one ownership refresh was waited for already
  bool capture_task_ = false;                    // a federated call's answer may carry a taskId
  bool fed_unknown_ = false;  // no upstream lists the call's name (sent to the first)
  size_t fed_owner_ = 0;      // the owner's index in the route's upstreams
  FederationRefresh* waiting_ = nullptr;
  std::unique_ptr<FanOut> fanout_;
  std::unique_ptr<MergedListen> listen_;
  bool listen_open_ = false;     // the merged stream is being relayed
  std::string fed_name_;         // the name the owner knows (names: prefix)
  std::string fed_name_header_;  // its Mcp-Name value (plain or sentinel)
  std::string fed_log_;          // access-log "federation" field (upstreams left out of a list)
  std::string fed_body_;         // a merged answer
  // A 2025-era client (federated_front.cc): its request made a 2026-07-28 one, the
  // initialize being answered (the version negotiated) and the session id it gets.
  bool front_init_ = false;
  bool front_listen_ = false;  // its GET stream is the merged subscription stream
  std::string front_body_;
  std::string front_version_;
  std::string front_session_;
};

}  // namespace gw::proxy
