#pragma once
// proxy/: the gateway as a 2025 client of legacy upstreams (issue #26), one store per worker
// (ProxyContext::legacySessions). For each upstream it knows the era (upstreams[].era, or
// what the server/discover probe found for `auto`), and for each endpoint of a legacy
// upstream one session: the initialize handshake (mcp/bridge.h bodies, sent through the one
// outbound client, client/http_client.h, on the worker's loop), the server's Mcp-Session-Id
// and its initialize result, shared by every bridged request of the worker to that endpoint.
//
// era: auto costs a modern server nothing: while the era is unknown a request goes as it
// is, and its answer decides — a 2xx makes the upstream modern (noteModern), a 400, 404 or
// 405 (what a 2025 server answers a 2026-07-28 request) makes the proxy probe with
// server/discover before it sends the request again, bridged or not.
//
// A request that needs an era or a session not known yet waits: wait() registers a
// BridgeWaiter, which is called once, on the loop, when the probe or handshake ends —
// unless it leaves first (leave(): the exchange ended or was cancelled). Failures are not
// cached: the next request probes or initializes again (an `auto` upstream whose endpoint
// failed is probed again). A session the server lost (404) is dropped with expire(), and
// the next wait() initializes a new one. Plain routes use it through ForwardTarget; a
// fan-out can wait on the same sessions.
//
// A 2025-era client of a federated route (the gateway is its server: federated_front.cc)
// gets sessions of its own with the legacy upstreams its requests reach — a 2025 server
// keeps state per session (log level, resource subscriptions, its one standalone stream),
// so one client's must not be another's. They are named by the client's front session id
// (`client` below), made when first needed (its first call to that upstream, or its GET
// stream), on the endpoint the first one picked, and ended with the client's session: its
// DELETE (closeClient; every worker hears it through EndedClients), or kClientIdle without
// a request or an open stream. Lists and discover fan-outs (one merged cache for every
// client) stay in the worker's shared sessions.

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gateway/core/clock.h"
#include "gateway/event/owners.h"
#include "gateway/mcp/bridge.h"
#include "gateway/settings/settings.h"

struct event_base;

namespace gw::client {
class HttpClient;
}

namespace gw::proxy {

// What waits for an upstream's era or session.
class BridgeWaiter {
 public:
  // The probe or handshake ended: ready (the era is known, and for a legacy upstream the
  // session is up), or it failed (`why` says how, for the client's 502).
  virtual void onBridgeReady(bool ok, const char* why) = 0;

 protected:
  ~BridgeWaiter() = default;
};

// One 2025 session the gateway holds with an upstream's endpoint.
struct LegacySession {
  enum class State : uint8_t { kNone, kStarting, kReady };
  State state = State::kNone;
  std::string id;  // the server's Mcp-Session-Id ("" for a server that gives none)
  mcp::bridge::InitResult init;
  uint64_t generation = 0;  // bumped on every new handshake (expire() names one)
};

// What waits for a session of its own (LegacySessions::openOwn).
class OwnWaiter {
 public:
  // The handshake ended: `session` is the new session (null when it failed); it stays valid
  // until closeOwn.
  virtual void onOwnSession(bool ok, const LegacySession* session) = 0;

 protected:
  ~OwnWaiter() = default;
};

// The front session ids of 2025-era clients that ended (DELETE), for every worker: the
// DELETE reaches one worker, and each holds the client's upstream sessions it made. Bounded:
// the newest kKeep are kept (a worker reads them within a second).
class EndedClients {
 public:
  void add(std::string client);
  // Appends the ids added since `seen` to `out` and moves `seen` on; false when there are
  // none (one atomic load).
  bool since(uint64_t& seen, std::vector<std::string>& out) const;
  uint64_t added() const noexcept { return added_.load(std::memory_order_acquire); }

 private:
  static constexpr size_t kKeep = 4096;
  mutable std::mutex mu_;
  std::deque<std::string> ids_;
  std::atomic<uint64_t> added_{0};
};

class LegacySessions {
 public:
  enum class Era : uint8_t { kUnknown, kModern, kLegacy };
  using Session = LegacySession;
  // A client's upstream session with no request and no open stream for this long is ended.
  static constexpr std::chrono::minutes kClientIdle{10};

  LegacySessions(event_base* base, const core::Clock* clock, EndedClients* ended);
  ~LegacySessions();
  LegacySessions(const LegacySessions&) = delete;
  LegacySessions& operator=(const LegacySessions&) = delete;

  // What a 2026-07-28 request to `up` needs: kModern (configured, or probed) goes as it is,
  // kLegacy is bridged, kUnknown waits for the probe. Cheap: one lookup, none for `modern`.
  Era era(const settings::Upstream& up) const;
  // The endpoint a bridged request to `up` uses next (round robin over its endpoints; for a
  // `client` that holds a session with `up`, that session's endpoint).
  size_t pickEndpoint(const settings::Upstream& up, std::string_view client = {});
  // The session of `up`'s endpoint `index` (null: none yet) — the worker's shared one, or
  // the `client`'s own.
  const Session* session(const settings::Upstream& up, size_t index,
                         std::string_view client = {}) const;
  // Waits for the era of `up` (probed at endpoint `index` when unknown) and, when legacy,
  // the session of endpoint `index` (initialized when it has none; the `client`'s own when
  // one is named). False: nothing to wait for (era modern, or the session ready); true: `w`
  // is called later.
  bool wait(const settings::Upstream& up, size_t index, BridgeWaiter& w,
            std::string_view client = {});
  void leave(BridgeWaiter& w) noexcept;
  // The session `generation` of `up`'s endpoint `index` (the `client`'s own when named) was
  // lost by the server (404): it is dropped (a later generation is kept).
  void expire(const settings::Upstream& up, size_t index, uint64_t generation,
              std::string_view client = {});
  // Sends `body` (a JSON-RPC response: mcp::bridge::refusalFor) to `up`'s endpoint `index` in
  // its session (the `client`'s own when named): the answer to a server-to-client request
  // made inside a bridged call. Fire and forget (a failure is logged).
  void answerServer(const settings::Upstream& up, size_t index, std::string body,
                    std::string_view client = {});
  // An open stream uses the `client`'s session with `up` (`on`), or no longer does: a held
  // session is not ended for idleness.
  void hold(std::string_view client, const settings::Upstream& up, bool on) noexcept;
  // The `client`'s front session ended (its DELETE): its upstream sessions end here (DELETE
  // to each), and every other worker is told (EndedClients).
  void closeClient(std::string_view client);
  size_t clientSessions() const noexcept;  // the clients' sessions this worker holds
  // A session of its own with `up`'s endpoint `index`, for one long-lived user: a merged
  // listen stream's GET (a 2025 SDK server allows one standalone stream per session, so
  // streams cannot share the worker's session). Initialized like the shared one; `w` hears
  // the end of the handshake once (unless closed first). The token names it for closeOwn.
  uint64_t openOwn(const settings::Upstream& up, size_t index, OwnWaiter& w);
  // Ends it: a handshake in flight is cancelled, a ready session gets DELETE (the 2025 end of
  // a session) unless the server `lost` it already. `w` is not called after this.
  void closeOwn(uint64_t token, bool lost = false) noexcept;
  // answerServer, in a session of its own.
  void answerOwn(uint64_t token, std::string body);
  // An `auto` upstream answered a 2026-07-28 request as a modern server does (2xx).
  void noteModern(const settings::Upstream& up);
  // A bridged request to `up` could not connect: for `auto`, probe again next time.
  void forgetEra(const settings::Upstream& up);

 private:
  // A session being made or held, and the outbound request of its handshake.
  struct Handshaking {
    Session session;
    uint64_t handle = 0;  // the outbound request in flight (0: none)
  };
  struct Endpoint : Handshaking {
    std::vector<BridgeWaiter*> waiters;
  };
  struct Own : Handshaking {
    std::shared_ptr<const settings::Upstream> up;
    size_t index = 0;
    OwnWaiter* waiter = nullptr;
  };
  // A 2025-era client's session with one upstream (by the upstream's name).
  struct Client : Endpoint {
    std::shared_ptr<const settings::Upstream> up;
    size_t index = 0;
    core::Nanos used{};  // its last request (clock)
    int holds = 0;       // open streams in it
  };
  using ClientUpstreams = std::unordered_map<std::string, Client>;
  using Locate = std::function<Handshaking*()>;
  using Finished = std::function<void(bool ok)>;
  struct Upstream {
    Era era = Era::kUnknown;
    size_t next = 0;  // pickEndpoint's round robin
    std::vector<Endpoint> endpoints;
  };
  Upstream& entry(const settings::Upstream& up);
  const Upstream* find(const settings::Upstream& up) const;
  void probe(const settings::Upstream& up, size_t index);
  void initialize(const settings::Upstream& up, size_t index);
  void sendInSession(const settings::Upstream& up, size_t index, const Session& s,
                     std::string body);
  void handshake(std::shared_ptr<const settings::Upstream> up, size_t index, Locate locate,
                 Finished finished);
  void sendInitialized(std::shared_ptr<const settings::Upstream> up, size_t index, Locate locate,
                       Finished finished);
  void done(const std::string& key, size_t index, bool ok, const char* why);
  void notify(std::vector<BridgeWaiter*>& waiters, bool ok, const char* why);
  Client* findClient(std::string_view client, const settings::Upstream& up);
  const Client* findClient(std::string_view client, const settings::Upstream& up) const;
  bool waitClient(const std::string& client, const settings::Upstream& up, size_t index,
                  BridgeWaiter& w);
  void clientDone(const std::string& client, const std::string& name, bool ok);
  void endClient(const std::string& client, const char* why);
  void endSession(Handshaking& h, const settings::Upstream& up, size_t index);
  void sweep();

  event_base* base_;
  const core::Clock* clock_;
  EndedClients* ended_;  // null: no other worker to hear of DELETEs (tests)
  uint64_t ended_seen_ = 0;
  std::unique_ptr<client::HttpClient> http_;
  // By upstream name and path (a reload that changes its endpoints starts new sessions).
  std::unordered_map<std::string, Upstream> upstreams_;
  std::unordered_map<uint64_t, Own> own_;  // sessions of their own, by token
  uint64_t own_tokens_ = 0;
  // The clients' sessions, by front session id; swept every kSweep while there are any.
  std::unordered_map<std::string, ClientUpstreams> clients_;
  event::EventPtr sweep_timer_;
  static constexpr std::chrono::seconds kSweep{1};
  // The waiter lists done() is calling (leave() clears a waiter from them too).
  std::vector<std::vector<BridgeWaiter*>*> notifying_;
};

}  // namespace gw::proxy
