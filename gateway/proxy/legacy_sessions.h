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

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

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

class LegacySessions {
 public:
  enum class Era : uint8_t { kUnknown, kModern, kLegacy };
  using Session = LegacySession;

  explicit LegacySessions(event_base* base);
  ~LegacySessions();
  LegacySessions(const LegacySessions&) = delete;
  LegacySessions& operator=(const LegacySessions&) = delete;

  // What a 2026-07-28 request to `up` needs: kModern (configured, or probed) goes as it is,
  // kLegacy is bridged, kUnknown waits for the probe. Cheap: one lookup, none for `modern`.
  Era era(const settings::Upstream& up) const;
  // The endpoint a bridged request to `up` uses next (round robin over its endpoints).
  size_t pickEndpoint(const settings::Upstream& up);
  // The session of `up`'s endpoint `index` (null: none yet).
  const Session* session(const settings::Upstream& up, size_t index) const;
  // Waits for the era of `up` (probed at endpoint `index` when unknown) and, when legacy,
  // the session of endpoint `index` (initialized when it has none). False: nothing to wait
  // for (era modern, or the session ready); true: `w` is called later.
  bool wait(const settings::Upstream& up, size_t index, BridgeWaiter& w);
  void leave(BridgeWaiter& w) noexcept;
  // The session `generation` of `up`'s endpoint `index` was lost by the server (404): it is
  // dropped (a later generation is kept), and for `auto` the era is probed again.
  void expire(const settings::Upstream& up, size_t index, uint64_t generation);
  // Sends `body` (a JSON-RPC response: mcp::bridge::refusalFor) to `up`'s endpoint `index` in
  // its session: the answer to a server-to-client request made inside a bridged call. Fire
  // and forget (a failure is logged).
  void answerServer(const settings::Upstream& up, size_t index, std::string body);
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

  event_base* base_;
  std::unique_ptr<client::HttpClient> http_;
  // By upstream name and path (a reload that changes its endpoints starts new sessions).
  std::unordered_map<std::string, Upstream> upstreams_;
  std::unordered_map<uint64_t, Own> own_;  // sessions of their own, by token
  uint64_t own_tokens_ = 0;
  // The waiter lists done() is calling (leave() clears a waiter from them too).
  std::vector<std::vector<BridgeWaiter*>*> notifying_;
};

}  // namespace gw::proxy
