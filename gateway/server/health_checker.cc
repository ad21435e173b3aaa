// server/: active health checks (health_checker.h).

#include "gateway/server/health_checker.h"

#include <event2/bufferevent.h>
#include <event2/dns.h>
#include <event2/event.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <map>
#include <random>
#include <utility>
#include <vector>

#include "gateway/client/http_client.h"
#include "gateway/core/clock.h"
#include "gateway/event/owners.h"
#include "gateway/policy/token_answer.h"
#include "gateway/upstream/health.h"
#include "gateway/upstream/pool.h"

namespace gw::server {

namespace {

using std::chrono::milliseconds;
constexpr milliseconds kTick{100};

int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(core::steadyNow().time_since_epoch())
      .count();
}

// The whole _meta envelope a 2026-07-28 server checks on every request.
constexpr char kPing[] = R"({"jsonrpc":"2.0","id":"gw-health","method":"ping","params":{"_meta":{)"
                         R"("io.modelcontextprotocol/protocolVersion":"2026-07-28",)"
                         R"("io.modelcontextprotocol/clientInfo":)"
                         R"({"name":"mcp-gateway-health","version":"1"},)"
                         R"("io.modelcontextprotocol/clientCapabilities":{}}}})";

}  // namespace

struct HealthChecker::Impl {
  explicit Impl(std::function<std::shared_ptr<const settings::Settings>()> c)
      : current(std::move(c)) {}

  // One endpoint's schedule.
  struct Due {
    int64_t next = 0;
    bool running = false;
    std::shared_ptr<upstream::EndpointState> state;
  };
  // A tcp probe in flight.
  struct TcpProbe {
    Impl* owner = nullptr;
    std::string key;
    std::shared_ptr<upstream::EndpointState> state;
    settings::HealthCheck hc;
    event::BufferEventPtr bev;
  };

  std::function<std::shared_ptr<const settings::Settings>()> current;
  event::BasePtr base;
  std::unique_ptr<client::HttpClient> http;
  event::EventPtr tick;
  std::map<std::string, Due> due;  // "upstream|endpoint"
  std::map<std::string, std::unique_ptr<TcpProbe>> tcp;
  std::mt19937_64 rng{std::random_device{}()};

  void onTick();
  void probe(const settings::Upstream& up, size_t index, Due& d, const std::string& key);
  void done(const std::string& key, const std::shared_ptr<upstream::EndpointState>& state,
            const settings::HealthCheck& hc, bool ok, const std::string& why);
  int64_t jittered(const settings::HealthCheck& hc) {
    const int64_t span = std::chrono::nanoseconds(hc.interval).count();
    std::uniform_int_distribution<int64_t> d(-span / 10, span / 10);
    return span + d(rng);
  }
};

HealthChecker::HealthChecker(std::function<std::shared_ptr<const settings::Settings>()> current)
    : impl_(std::make_unique<Impl>(std::move(current))) {}

HealthChecker::~HealthChecker() {
  stop();
}

bool HealthChecker::start(std::string& error) {
  Impl& m = *impl_;
  m.base.reset(event_base_new());
  if (!m.base) {
    error = "health checker: cannot create an event loop";
    return false;
  }
  m.http = std::make_unique<client::HttpClient>(m.base.get(), nullptr);
  m.tick.reset(event_new(
      m.base.get(), -1, EV_PERSIST,
      [](evutil_socket_t, short, void* arg) { static_cast<Impl*>(arg)->onTick(); }, &m));
  if (!m.tick) {
    error = "health checker: cannot create its timer";
    return false;
  }
  const timeval every = event::toTimeval(kTick);
  event_add(m.tick.get(), &every);
  thread_ = std::thread([this] { event_base_dispatch(impl_->base.get()); });
  return true;
}

void HealthChecker::stop() {
  if (thread_.joinable()) {
    event_base_loopbreak(impl_->base.get());
    thread_.join();
  }
  impl_->tcp.clear();
  impl_->http.reset();
  impl_->tick.reset();
}

void HealthChecker::Impl::onTick() {
  const std::shared_ptr<const settings::Settings> s = current ? current() : nullptr;
  if (!s) {
    return;
  }
  const int64_t now = steadyNs();
  std::map<std::string, Due> still;
  struct Start {
    const settings::Upstream* up;
    size_t index;
    std::string key;
  };
  std::vector<Start> starts;
  for (const settings::Upstream& up : s->upstreams) {
    if (!up.health_check) {
      continue;
    }
    const auto state = upstream::HealthRegistry::instance().upstream(up);
    const auto eps = state->endpoints();
    for (size_t i = 0; i < up.endpoints.size() && i < eps.size(); ++i) {
      const std::string key = up.name + "|" + up.endpoints[i].text;
      auto it = due.find(key);
      Due d;
      if (it != due.end()) {
        d = std::move(it->second);
      } else {
        // First seen: somewhere in the first interval, so endpoints do not probe together.
        std::uniform_int_distribution<int64_t> first(
            0, std::chrono::nanoseconds(up.health_check->interval).count());
        d.next = now + first(rng);
      }
      d.state = eps[i];
      if (!d.running && now >= d.next) {
        d.running = true;
        d.next = now + jittered(*up.health_check);
        starts.push_back(Start{&up, i, key});
      }
      still[key] = std::move(d);
    }
  }
  due = std::move(still);  // endpoints a reload removed are forgotten
  for (const Start& st : starts) {
    probe(*st.up, st.index, due[st.key], st.key);
  }
}

void HealthChecker::Impl::probe(const settings::Upstream& up, size_t index, Due& d,
                                const std::string& key) {
  const settings::HealthCheck hc = *up.health_check;
  const settings::Address& a = up.endpoints[index];
  const auto state = d.state;
  if (hc.probe == settings::HealthCheck::Probe::kTcp) {
    upstream::Endpoint ep;
    auto p = std::make_unique<TcpProbe>();
    p->owner = this;
    p->key = key;
    p->state = state;
    p->hc = hc;
    p->bev.reset(bufferevent_socket_new(base.get(), -1, BEV_OPT_CLOSE_ON_FREE));
    if (!upstream::resolveEndpoint(a, ep) || !p->bev) {
      done(key, state, hc, false, "cannot start a connection");
      return;
    }
    const timeval tv = event::toTimeval(hc.timeout);
    bufferevent_set_timeouts(p->bev.get(), &tv, &tv);
    bufferevent_setcb(
        p->bev.get(), nullptr, nullptr,
        [](bufferevent*, short what, void* arg) {
          auto* probe = static_cast<TcpProbe*>(arg);
          Impl* owner = probe->owner;
          const std::string k = probe->key;
          const auto st = probe->state;
          const settings::HealthCheck h = probe->hc;
          const bool ok = (what & BEV_EVENT_CONNECTED) != 0;
          owner->tcp.erase(k);  // frees probe and its connection
          owner->done(k, st, h, ok,
                      ok                           ? ""
                      : (what & BEV_EVENT_TIMEOUT) ? "connect timeout"
                                                   : "connect failed");
        },
        p.get());
    bufferevent_enable(p->bev.get(), EV_WRITE);
    if (bufferevent_socket_connect(p->bev.get(), reinterpret_cast<sockaddr*>(&ep.addr),
                                   static_cast<int>(ep.addr_len)) != 0) {
      done(key, state, hc, false, "connect failed");
      return;
    }
    tcp[key] = std::move(p);
    return;
  }
  client::Request req;
  const bool v6 = a.ip.find(':') != std::string::npos;
  std::string host = up.tls ? (up.tls->server_name.empty() ? a.host : up.tls->server_name)
                            : (v6 ? "[" + a.ip + "]" : a.ip);
  req.url = std::string(up.tls ? "https://" : "http://") + host + ":" + std::to_string(a.port);
  if (up.tls) {
    req.tls_context = up.tls->ctx;
  }
  req.connect_timeout = std::chrono::duration_cast<milliseconds>(hc.timeout);
  req.total_timeout = req.connect_timeout;
  req.max_body_bytes = 64 * 1024;
  if (hc.probe == settings::HealthCheck::Probe::kHttp) {
    req.method = "GET";
    req.url += hc.path;
  } else {
    req.method = "POST";
    req.url += up.path;
    req.headers = {{"Accept", "application/json, text/event-stream"},
                   {"MCP-Protocol-Version", "2026-07-28"},
                   {"Mcp-Method", "ping"}};
    for (const auto& [name, value] : up.headers) {
      req.headers.emplace_back(name, value);
    }
    if (up.auth && up.auth->type == settings::UpstreamAuthType::kClientCredentials) {
      // The gateway's own token, as its requests carry (none yet: the probe goes without).
      std::string authorization =
          policy::clientCredentialsAuthorization(up, core::SteadyClock::instance().now());
      if (!authorization.empty()) {
        req.headers.emplace_back("Authorization", std::move(authorization));
      }
    }
    req.setJson(kPing);
  }
  const bool mcp = hc.probe == settings::HealthCheck::Probe::kMcp;
  http->send(std::move(req), [this, key, state, hc, mcp](client::Result&& r) {
    bool ok = false;
    std::string why;
    if (!r.ok()) {
      why = r.error == client::Error::kTimeout ? "probe timeout" : r.reason;
    } else if (mcp) {
      // A result; or, from a 2026-07-28 server (the revision removed ping), 404 with the
      // JSON-RPC -32601 "Method not found": either way an MCP server answered.
      const std::string& b = r.response.body;
      const bool jsonrpc = b.find("\"jsonrpc\"") != std::string::npos;
      ok = jsonrpc && ((r.response.status == 200 && b.find("\"result\"") != std::string::npos) ||
                       (r.response.status == 404 && b.find("-32601") != std::string::npos));
      why = ok ? "" : "ping answered HTTP " + std::to_string(r.response.status);
    } else {
      ok = r.response.status >= 200 && r.response.status < 300;
      why = ok ? "" : "HTTP " + std::to_string(r.response.status);
    }
    done(key, state, hc, ok, why);
  });
}

void HealthChecker::Impl::done(const std::string& key,
                               const std::shared_ptr<upstream::EndpointState>& state,
                               const settings::HealthCheck& hc, bool ok, const std::string& why) {
  auto it = due.find(key);
  if (it != due.end()) {
    it->second.running = false;
  }
  if (!ok) {
    state->noteFailure(
        std::chrono::duration_cast<std::chrono::seconds>(core::wallNow().time_since_epoch())
            .count(),
        "health check: " + why);
  }
  if (upstream::reportProbe(*state, hc, ok)) {
    if (ok) {
      spdlog::info("upstream '{}' endpoint {} is up (health check)", state->upstream,
                   state->endpoint);
    } else {
      spdlog::warn("upstream '{}' endpoint {} is down (health check: {})", state->upstream,
                   state->endpoint, why);
    }
  }
  if (ok && upstream::endEjectionOnProbe(*state, steadyNs())) {
    spdlog::info("upstream '{}' endpoint {} is back: its ejection ended (health check passed)",
                 state->upstream, state->endpoint);
  }
}

}  // namespace gw::server
