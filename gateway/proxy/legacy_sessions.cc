// The gateway's sessions with legacy upstreams, per worker (see legacy_sessions.h); the
// sessions of one 2025-era client are in legacy_client_sessions.cc.

#include "gateway/proxy/legacy_sessions.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <functional>
#include <string_view>
#include <utility>

#include "gateway/client/http_client.h"
#include "gateway/core/ascii.h"
#include "gateway/core/clock.h"
#include "gateway/policy/token_answer.h"

namespace gw::proxy {

namespace {

constexpr std::string_view kModernVersion = "2026-07-28";

bool isSse(const client::Response& r) {
  const std::string* ct = r.header("content-type");
  return ct != nullptr && core::istartsWith(*ct, "text/event-stream");
}

// A POST to `up`'s endpoint `index` with the upstream's own fields (upstreams[].headers).
client::Request requestTo(const settings::Upstream& up, size_t index, std::string body) {
  const config::Address& a = up.endpoints[index];
  client::Request req;
  req.method = "POST";
  const bool v6 = a.ip.find(':') != std::string::npos;
  req.url = up.tls ? "https://" : "http://";
  req.url += up.tls ? a.host : (v6 ? "[" + a.ip + "]" : a.ip);
  req.url += ':';
  req.url += std::to_string(a.port);
  req.url += up.path;
  if (up.tls) {
    req.tls_context = up.tls->ctx;
  }
  req.connect_timeout = up.connect_timeout;
  req.total_timeout = up.response_timeout;
  req.keep_alive = true;
  req.headers.emplace_back("Accept", "application/json, text/event-stream");
  for (const auto& [name, value] : up.headers) {
    req.headers.emplace_back(name, value);
  }
  if (up.auth && up.auth->type == settings::UpstreamAuthType::kClientCredentials) {
    // The gateway's own session with the server carries the gateway's own token (a session
    // shared by callers cannot carry one caller's credential).
    const auto now = std::chrono::duration_cast<core::Nanos>(core::steadyNow().time_since_epoch());
    if (std::string auth = policy::clientCredentialsAuthorization(up, now); !auth.empty()) {
      req.headers.emplace_back("Authorization", std::move(auth));
    }
  }
  req.setJson(std::move(body));
  return req;
}

}  // namespace

void EndedClients::add(std::string client) {
  std::lock_guard lock(mu_);
  ids_.push_back(std::move(client));
  if (ids_.size() > kKeep) {
    ids_.pop_front();
  }
  added_.fetch_add(1, std::memory_order_release);
}

bool EndedClients::since(uint64_t& seen, std::vector<std::string>& out) const {
  if (added_.load(std::memory_order_acquire) == seen) {
    return false;
  }
  std::lock_guard lock(mu_);
  const uint64_t added = added_.load(std::memory_order_relaxed);
  const uint64_t first = added - ids_.size();  // the number of ids_.front()
  for (uint64_t n = std::max(seen, first); n < added; ++n) {
    out.push_back(ids_[n - first]);
  }
  seen = added;
  return true;
}

LegacySessions::LegacySessions(event_base* base, const core::Clock* clock, EndedClients* ended)
    : base_(base),
      clock_(clock),
      ended_(ended),
      ended_seen_(ended != nullptr ? ended->added() : 0) {}

LegacySessions::~LegacySessions() = default;

const LegacySessions::Upstream* LegacySessions::find(const settings::Upstream& up) const {
  const auto it = upstreams_.find(up.name);
  return it == upstreams_.end() ? nullptr : &it->second;
}

LegacySessions::Upstream& LegacySessions::entry(const settings::Upstream& up) {
  Upstream& u = upstreams_[up.name];
  if (u.endpoints.size() != up.endpoints.size()) {
    // New settings for this upstream (a reload changed its endpoints): new sessions; a
    // handshake in flight finishes into the old ones' waiters (done() checks the index).
    for (Endpoint& e : u.endpoints) {
      if (e.handle != 0 && http_) {
        http_->cancel(e.handle);
      }
      for (BridgeWaiter* w : std::exchange(e.waiters, {})) {
        w->onBridgeReady(false, "the upstream's settings changed");
      }
    }
    u.endpoints.clear();
    u.endpoints.resize(up.endpoints.size());
    u.era = Era::kUnknown;
  }
  return u;
}

LegacySessions::Era LegacySessions::era(const settings::Upstream& up) const {
  switch (up.era) {
    case settings::UpstreamEra::kModern:
      return Era::kModern;
    case settings::UpstreamEra::kLegacy:
      return Era::kLegacy;
    case settings::UpstreamEra::kAuto:
      break;
  }
  const Upstream* u = find(up);
  return u != nullptr && u->endpoints.size() == up.endpoints.size() ? u->era : Era::kUnknown;
}

size_t LegacySessions::pickEndpoint(const settings::Upstream& up, std::string_view client) {
  if (const Client* c = findClient(client, up)) {
    return c->index;
  }
  Upstream& u = entry(up);
  return u.endpoints.empty() ? 0 : u.next++ % u.endpoints.size();
}

const LegacySessions::Session* LegacySessions::session(const settings::Upstream& up, size_t index,
                                                       std::string_view client) const {
  if (!client.empty()) {
    const Client* c = findClient(client, up);
    return c != nullptr && c->index == index && c->session.state == Session::State::kReady
               ? &c->session
               : nullptr;
  }
  const Upstream* u = find(up);
  if (u == nullptr || index >= u->endpoints.size() ||
      u->endpoints[index].session.state != Session::State::kReady) {
    return nullptr;
  }
  return &u->endpoints[index].session;
}

bool LegacySessions::wait(const settings::Upstream& up, size_t index, BridgeWaiter& w,
                          std::string_view client) {
  Upstream& u = entry(up);
  if (index >= u.endpoints.size()) {
    return false;
  }
  if (up.era == settings::UpstreamEra::kModern) {
    return false;
  }
  if (up.era == settings::UpstreamEra::kLegacy) {
    u.era = Era::kLegacy;
  }
  if (u.era == Era::kModern) {
    return false;
  }
  if (u.era == Era::kLegacy && !client.empty()) {
    return waitClient(std::string(client), up, index, w);
  }
  Endpoint& e = u.endpoints[index];
  if (u.era == Era::kLegacy && e.session.state == Session::State::kReady) {
    return false;
  }
  e.waiters.push_back(&w);
  if (e.handle == 0) {
    if (u.era == Era::kUnknown) {
      probe(up, index);
    } else {
      initialize(up, index);
    }
  }
  return true;
}

void LegacySessions::leave(BridgeWaiter& w) noexcept {
  for (auto& [name, u] : upstreams_) {
    for (Endpoint& e : u.endpoints) {
      std::erase(e.waiters, &w);
    }
  }
  for (auto& [id, ups] : clients_) {
    for (auto& [name, c] : ups) {
      std::erase(c.waiters, &w);
    }
  }
  for (std::vector<BridgeWaiter*>* list : notifying_) {
    std::replace(list->begin(), list->end(), &w, static_cast<BridgeWaiter*>(nullptr));
  }
}

void LegacySessions::expire(const settings::Upstream& up, size_t index, uint64_t generation,
                            std::string_view client) {
  if (!client.empty()) {
    Client* c = findClient(client, up);
    if (c != nullptr && c->index == index && c->session.generation == generation &&
        c->session.state == Session::State::kReady) {
      c->session.state = Session::State::kNone;
      c->session.id.clear();
    }
    return;
  }
  Upstream& u = entry(up);
  if (index >= u.endpoints.size()) {
    return;
  }
  Session& s = u.endpoints[index].session;
  if (s.generation == generation && s.state == Session::State::kReady) {
    s.state = Session::State::kNone;
    s.id.clear();
  }
}

void LegacySessions::noteModern(const settings::Upstream& up) {
  if (up.era != settings::UpstreamEra::kAuto) {
    return;
  }
  Upstream& u = entry(up);
  if (u.era == Era::kUnknown) {
    u.era = Era::kModern;
  }
}

void LegacySessions::forgetEra(const settings::Upstream& up) {
  if (up.era != settings::UpstreamEra::kAuto) {
    return;
  }
  Upstream& u = entry(up);
  u.era = Era::kUnknown;
  for (Endpoint& e : u.endpoints) {
    if (e.handle == 0) {
      e.session.state = Session::State::kNone;
      e.session.id.clear();
    }
  }
}

// era: auto — a server/discover with the 2026-07-28 envelope: a result with
// supportedVersions means modern; anything else (the 2025 SDK's 400 "Server not
// initialized", a 404, a 405) means legacy. A transport failure decides nothing.
void LegacySessions::probe(const settings::Upstream& up, size_t index) {
  if (!http_) {
    http_ = std::make_unique<client::HttpClient>(base_, nullptr);
  }
  client::Request req = requestTo(up, index, mcp::bridge::discoverProbe(kModernVersion));
  req.headers.emplace_back("MCP-Protocol-Version", std::string(kModernVersion));
  req.headers.emplace_back("Mcp-Method", "server/discover");
  Endpoint& e = upstreams_[up.name].endpoints[index];
  e.session.state = Session::State::kStarting;
  // The settings may be replaced while the probe runs: what initialize needs is copied.
  auto copy = std::make_shared<settings::Upstream>(up);
  e.handle = http_->send(std::move(req), [this, copy, index](client::Result&& r) {
    Upstream& u = upstreams_[copy->name];
    if (index >= u.endpoints.size()) {
      return;
    }
    u.endpoints[index].handle = 0;
    if (!r.ok()) {
      spdlog::warn("upstream '{}' endpoint {}: era probe failed: {}", copy->name,
                   copy->endpoints[index].text, r.reason);
      done(copy->name, index, false, "Bad Gateway: the upstream could not be reached");
      return;
    }
    if (mcp::bridge::probeSaysModern(r.response.status, r.response.body, isSse(r.response))) {
      u.era = Era::kModern;
      spdlog::info("upstream '{}': speaks 2026-07-28 (era: auto)", copy->name);
      done(copy->name, index, true, "");
      return;
    }
    u.era = Era::kLegacy;
    spdlog::info("upstream '{}': no server/discover (HTTP {}), bridged as a 2025 server",
                 copy->name, r.response.status);
    initialize(*copy, index);
  });
}

// The handshake with `up`'s endpoint `index`: initialize, then notifications/initialized.
// Between the steps the state is found again through `locate` (null: its owner is gone, the
// answer is dropped), never held; `finished` runs once at the end unless the owner is gone.
void LegacySessions::handshake(std::shared_ptr<const settings::Upstream> up, size_t index,
                               Locate locate, Finished finished) {
  if (!http_) {
    http_ = std::make_unique<client::HttpClient>(base_, nullptr);
  }
  Handshaking* h = locate();
  h->session.state = Session::State::kStarting;
  ++h->session.generation;
  client::Request req = requestTo(*up, index, mcp::bridge::initializeRequest(GW_VERSION));
  h->handle =
      http_->send(std::move(req), [this, up, index, locate, finished](client::Result&& r) mutable {
        Handshaking* hs = locate();
        if (hs == nullptr) {
          return;
        }
        hs->handle = 0;
        std::string why;
        if (!r.ok()) {
          why = r.reason;
        } else if (r.response.status != 200) {
          why = "HTTP " + std::to_string(r.response.status);
        } else if (mcp::bridge::parseInitializeAnswer(r.response.body, isSse(r.response),
                                                      hs->session.init, why)) {
          const std::string* sid = r.response.header("mcp-session-id");
          hs->session.id = sid != nullptr ? *sid : std::string();
          sendInitialized(std::move(up), index, std::move(locate), std::move(finished));
          return;
        }
        spdlog::warn("upstream '{}' endpoint {}: initialize failed: {}", up->name,
                     up->endpoints[index].text, why);
        hs->session.state = Session::State::kNone;
        finished(false);
      });
}

void LegacySessions::sendInitialized(std::shared_ptr<const settings::Upstream> up, size_t index,
                                     Locate locate, Finished finished) {
  Handshaking* h = locate();
  client::Request req = requestTo(*up, index, std::string(mcp::bridge::initializedNotification()));
  req.headers.emplace_back("MCP-Protocol-Version", h->session.init.version);
  if (!h->session.id.empty()) {
    req.headers.emplace_back("Mcp-Session-Id", h->session.id);
  }
  h->handle = http_->send(std::move(req), [up, index, locate, finished](client::Result&& r) {
    Handshaking* hs = locate();
    if (hs == nullptr) {
      return;
    }
    hs->handle = 0;
    if (!r.ok() || r.response.status >= 300) {
      spdlog::warn("upstream '{}' endpoint {}: notifications/initialized refused: {}", up->name,
                   up->endpoints[index].text,
                   r.ok() ? "HTTP " + std::to_string(r.response.status) : r.reason);
      hs->session.state = Session::State::kNone;
      finished(false);
      return;
    }
    hs->session.state = Session::State::kReady;
    spdlog::info("upstream '{}' endpoint {}: 2025 session up (protocol {})", up->name,
                 up->endpoints[index].text, hs->session.init.version);
    finished(true);
  });
}

// The worker's shared session with `up`'s endpoint `index`.
void LegacySessions::initialize(const settings::Upstream& up, size_t index) {
  auto copy = std::make_shared<const settings::Upstream>(up);
  const std::string name = up.name;
  handshake(
      copy, index,
      [this, name, index]() -> Handshaking* {
        auto it = upstreams_.find(name);
        return it == upstreams_.end() || index >= it->second.endpoints.size()
                   ? nullptr
                   : &it->second.endpoints[index];
      },
      [this, copy, index](bool ok) {
        if (!ok && copy->era == settings::UpstreamEra::kAuto) {
          upstreams_[copy->name].era = Era::kUnknown;  // probed again next time
        }
        done(copy->name, index, ok,
             ok ? "" : "Bad Gateway: the 2025-era upstream could not be initialized");
      });
}

uint64_t LegacySessions::openOwn(const settings::Upstream& up, size_t index, OwnWaiter& w) {
  const uint64_t token = ++own_tokens_;
  Own& own = own_[token];
  own.up = std::make_shared<const settings::Upstream>(up);
  own.index = index;
  own.waiter = &w;
  handshake(
      own.up, index,
      [this, token]() -> Handshaking* {
        auto it = own_.find(token);
        return it == own_.end() ? nullptr : &it->second;
      },
      [this, token](bool ok) {
        auto it = own_.find(token);
        if (it == own_.end()) {
          return;
        }
        OwnWaiter* waiter = it->second.waiter;
        waiter->onOwnSession(ok, ok ? &it->second.session : nullptr);
      });
  return token;
}

void LegacySessions::closeOwn(uint64_t token, bool lost) noexcept {
  auto it = own_.find(token);
  if (it == own_.end()) {
    return;
  }
  Own& own = it->second;
  if (lost) {
    own.session.state = Session::State::kNone;
  }
  endSession(own, *own.up, own.index);
  own_.erase(it);
}

// A session made for one user ends: a handshake in flight is cancelled, a ready session
// gets DELETE, the 2025 end of a session (fire and forget; a server may answer 405).
void LegacySessions::endSession(Handshaking& h, const settings::Upstream& up, size_t index) {
  if (h.handle != 0 && http_) {
    http_->cancel(h.handle);
    h.handle = 0;
  }
  if (h.session.state == Session::State::kReady && !h.session.id.empty() && http_) {
    client::Request req = requestTo(up, index, {});
    req.method = "DELETE";
    req.body.clear();
    req.content_type.clear();
    req.headers.emplace_back("MCP-Protocol-Version", h.session.init.version);
    req.headers.emplace_back("Mcp-Session-Id", h.session.id);
    http_->send(std::move(req), [](client::Result&&) {});
  }
  h.session.state = Session::State::kNone;
}

void LegacySessions::answerServer(const settings::Upstream& up, size_t index, std::string body,
                                  std::string_view client) {
  if (const Session* s = session(up, index, client)) {
    sendInSession(up, index, *s, std::move(body));
  }
}

void LegacySessions::answerOwn(uint64_t token, std::string body) {
  auto it = own_.find(token);
  if (it != own_.end() && it->second.session.state == Session::State::kReady) {
    sendInSession(*it->second.up, it->second.index, it->second.session, std::move(body));
  }
}

// A JSON-RPC response to a server-to-client request, sent in `s` (fire and forget; a
// failure is logged).
void LegacySessions::sendInSession(const settings::Upstream& up, size_t index, const Session& s,
                                   std::string body) {
  if (!http_) {
    return;
  }
  client::Request req = requestTo(up, index, std::move(body));
  req.headers.emplace_back("MCP-Protocol-Version", s.init.version);
  if (!s.id.empty()) {
    req.headers.emplace_back("Mcp-Session-Id", s.id);
  }
  http_->send(std::move(req), [name = up.name](client::Result&& r) {
    if (!r.ok() || r.response.status >= 300) {
      spdlog::warn("upstream '{}': the refusal of its server-to-client request was not taken: {}",
                   name, r.ok() ? "HTTP " + std::to_string(r.response.status) : r.reason);
    }
  });
}

// The probe or handshake of `key`'s endpoint `index` ended: every waiter hears it (a waiter
// may wait again from its callback: the list is taken first).
void LegacySessions::done(const std::string& key, size_t index, bool ok, const char* why) {
  Endpoint& e = upstreams_[key].endpoints[index];
  if (!ok) {
    e.session.state = Session::State::kNone;
  }
  // A waiter's callback may end other waiters (a fan-out done with its last part ends the
  // request that owns it): one that left meanwhile is skipped (leave() clears its entry).
  std::vector<BridgeWaiter*> waiters = std::exchange(e.waiters, {});
  notify(waiters, ok, why);
}

void LegacySessions::notify(std::vector<BridgeWaiter*>& waiters, bool ok, const char* why) {
  notifying_.push_back(&waiters);
  for (BridgeWaiter*& w : waiters) {
    if (BridgeWaiter* next = std::exchange(w, nullptr)) {
      next->onBridgeReady(ok, why);
    }
  }
  notifying_.pop_back();
}

}  // namespace gw::proxy
