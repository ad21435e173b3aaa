// The sessions LegacySessions holds for one 2025-era client of a federated route (see
// legacy_sessions.h): made when first needed, ended with the client's session (its DELETE on
// every worker, through EndedClients) or after kClientIdle.

#include <spdlog/spdlog.h>

#include <algorithm>
#include <string>
#include <utility>

#include "gateway/proxy/legacy_sessions.h"

namespace gw::proxy {

LegacySessions::Client* LegacySessions::findClient(std::string_view client,
                                                   const settings::Upstream& up) {
  return const_cast<Client*>(std::as_const(*this).findClient(client, up));
}

const LegacySessions::Client* LegacySessions::findClient(std::string_view client,
                                                         const settings::Upstream& up) const {
  if (client.empty()) {
    return nullptr;
  }
  const auto it = clients_.find(std::string(client));
  if (it == clients_.end()) {
    return nullptr;
  }
  const auto c = it->second.find(up.name);
  return c == it->second.end() ? nullptr : &c->second;
}

bool LegacySessions::waitClient(const std::string& client, const settings::Upstream& up,
                                size_t index, BridgeWaiter& w) {
  Client& c = clients_[client][up.name];
  std::vector<BridgeWaiter*> stale;
  if (c.up && (c.up->endpoints.size() != up.endpoints.size() || c.up->path != up.path)) {
    // A reload changed the upstream's endpoints: the old session ends, a new one is made.
    stale = std::exchange(c.waiters, {});
    endSession(c, *c.up, c.index);
    c.up.reset();
  }
  if (!c.up) {
    c.up = std::make_shared<const settings::Upstream>(up);
    c.index = index;
    if (!sweep_timer_) {
      sweep_timer_ = event::makeTimer<LegacySessions, &LegacySessions::sweep>(base_, this);
    }
    if (sweep_timer_ && evtimer_pending(sweep_timer_.get(), nullptr) == 0) {
      const timeval tv = event::toTimeval(kSweep);
      evtimer_add(sweep_timer_.get(), &tv);
    }
  }
  c.used = clock_->now();
  bool waits = false;
  if (c.session.state != Session::State::kReady) {
    waits = true;
    c.waiters.push_back(&w);
    if (c.handle == 0) {
      const std::string name = up.name;
      handshake(
          c.up, c.index,
          [this, client, name]() -> Handshaking* {
            auto it = clients_.find(client);
            if (it == clients_.end()) {
              return nullptr;
            }
            auto found = it->second.find(name);
            return found == it->second.end() ? nullptr : &found->second;
          },
          [this, client, name](bool ok) { clientDone(client, name, ok); });
    }
  }
  if (!stale.empty()) {
    notify(stale, false, "the upstream's settings changed");
  }
  return waits;
}

void LegacySessions::clientDone(const std::string& client, const std::string& name, bool ok) {
  auto it = clients_.find(client);
  if (it == clients_.end()) {
    return;
  }
  auto found = it->second.find(name);
  if (found == it->second.end()) {
    return;
  }
  Client& c = found->second;
  c.used = clock_->now();
  std::vector<BridgeWaiter*> waiters = std::exchange(c.waiters, {});
  notify(waiters, ok, ok ? "" : "Bad Gateway: the 2025-era upstream could not be initialized");
}

void LegacySessions::hold(std::string_view client, const settings::Upstream& up, bool on) noexcept {
  if (Client* c = findClient(client, up)) {
    c->holds += on ? 1 : -1;
    c->used = clock_->now();
  }
}

void LegacySessions::closeClient(std::string_view client) {
  if (client.empty()) {
    return;
  }
  endClient(std::string(client), "Bad Gateway: the client's session ended");
  if (ended_ != nullptr) {
    ended_->add(std::string(client));
  }
}

// Every session of `client` ends (DELETE to each); what waits for one hears `why`.
void LegacySessions::endClient(const std::string& client, const char* why) {
  auto it = clients_.find(client);
  if (it == clients_.end()) {
    return;
  }
  ClientUpstreams ups = std::move(it->second);
  clients_.erase(it);
  for (auto& [name, c] : ups) {
    if (c.up) {
      endSession(c, *c.up, c.index);
      spdlog::debug("upstream '{}': a 2025-era client's session with it ended", name);
    }
    notify(c.waiters, false, why);
  }
}

size_t LegacySessions::clientSessions() const noexcept {
  size_t n = 0;
  for (const auto& [id, ups] : clients_) {
    n += ups.size();
  }
  return n;
}

// Once a second while clients hold sessions: the clients other workers saw end, and the
// sessions idle for kClientIdle (no request, no stream, nothing in flight), end here.
void LegacySessions::sweep() {
  if (ended_ != nullptr) {
    std::vector<std::string> ended;
    if (ended_->since(ended_seen_, ended)) {
      for (const std::string& id : ended) {
        endClient(id, "Bad Gateway: the client's session ended");
      }
    }
  }
  const core::Nanos now = clock_->now();
  for (auto it = clients_.begin(); it != clients_.end();) {
    ClientUpstreams& ups = it->second;
    for (auto c = ups.begin(); c != ups.end();) {
      Client& s = c->second;
      if (s.holds <= 0 && s.handle == 0 && s.waiters.empty() && now - s.used >= kClientIdle) {
        if (s.up) {
          endSession(s, *s.up, s.index);
        }
        c = ups.erase(c);
      } else {
        ++c;
      }
    }
    it = ups.empty() ? clients_.erase(it) : std::next(it);
  }
  if (!clients_.empty() && sweep_timer_) {
    const timeval tv = event::toTimeval(kSweep);
    evtimer_add(sweep_timer_.get(), &tv);
  }
}

}  // namespace gw::proxy
