// server/: the token fetcher (token_fetcher.h).

#include "gateway/server/token_fetcher.h"

#include <event2/event.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <utility>

#include "gateway/client/http_client.h"
#include "gateway/core/clock.h"
#include "gateway/event/dns.h"
#include "gateway/event/owners.h"
#include "gateway/policy/token_answer.h"

namespace gw::server {

namespace {

using State = policy::CredentialStore::State;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr milliseconds kTick{1000};
constexpr seconds kMinBackoff{1};
constexpr seconds kMaxBackoff{60};
// A refused exchange or introspection is remembered this long (a retry loop does not hammer
// the identity provider); an unreachable endpoint, this long.
constexpr seconds kRefusalMemory{5};
constexpr seconds kFailureMemory{1};
// An exchanged token is used until `expires_in` minus this, and never longer than kMaxUse.
constexpr seconds kExpiryMargin{30};
constexpr seconds kMaxUse{3600};
constexpr size_t kMaxAnswer = 256 * 1024;

core::Nanos steadyNanos() {
  return std::chrono::duration_cast<core::Nanos>(core::steadyNow().time_since_epoch());
}

}  // namespace

struct TokenFetcher::Impl {
  Impl(metrics::Registry& m, std::function<std::vector<policy::TokenJob>()> w)
      : metrics(m), wanted(std::move(w)) {}

  // A client_credentials token the fetcher keeps fresh.
  struct Kept {
    core::Nanos refresh_at{};
    seconds backoff{0};
    bool running = false;
  };

  metrics::Registry& metrics;
  std::function<std::vector<policy::TokenJob>()> wanted;
  policy::CredentialStore& store = policy::CredentialStore::instance();
  event::BasePtr base;
  event::DnsBasePtr dns;
  std::unique_ptr<client::HttpClient> http;  // before dns and base go
  event::EventPtr tick;
  event::EventPtr jobs;              // activated from any thread when a job is queued
  std::map<std::string, Kept> kept;  // by key

  void onTick();
  void onJobs();
  void send(policy::TokenJob job);
  void answer(const policy::TokenJob& job, core::Nanos started, client::Result&& r);
};

TokenFetcher::TokenFetcher(metrics::Registry& metrics,
                           std::function<std::vector<policy::TokenJob>()> wanted)
    : impl_(std::make_unique<Impl>(metrics, std::move(wanted))) {}

TokenFetcher::~TokenFetcher() {
  stop();
}

bool TokenFetcher::start(std::string& error) {
  Impl& m = *impl_;
  m.base.reset(event_base_new());
  if (m.base == nullptr) {
    error = "token fetcher: cannot create an event loop";
    return false;
  }
  m.dns = event::makeResolver(m.base.get());
  m.http = std::make_unique<client::HttpClient>(m.base.get(), m.dns.get());
  m.tick.reset(event_new(
      m.base.get(), -1, EV_PERSIST,
      [](evutil_socket_t, short, void* arg) { static_cast<Impl*>(arg)->onTick(); }, &m));
  m.jobs.reset(event_new(
      m.base.get(), -1, 0,
      [](evutil_socket_t, short, void* arg) { static_cast<Impl*>(arg)->onJobs(); }, &m));
  if (!m.tick || !m.jobs) {
    error = "token fetcher: cannot create its events";
    return false;
  }
  const timeval every = event::toTimeval(kTick);
  event_add(m.tick.get(), &every);
  event_active(m.tick.get(), EV_TIMEOUT, 0);  // client_credentials tokens at once
  ::event* jobs_ev = m.jobs.get();
  m.store.setWaker([jobs_ev] { event_active(jobs_ev, EV_TIMEOUT, 0); });
  event_active(jobs_ev, EV_TIMEOUT, 0);  // jobs queued before the thread ran
  thread_ = std::thread([this] { event_base_dispatch(impl_->base.get()); });
  return true;
}

void TokenFetcher::stop() {
  impl_->store.setWaker(nullptr);
  if (thread_.joinable()) {
    event_base_loopbreak(impl_->base.get());
    thread_.join();
  }
  impl_->http.reset();  // calls in flight end unanswered
  impl_->jobs.reset();
  impl_->tick.reset();
}

void TokenFetcher::Impl::onJobs() {
  for (policy::TokenJob& job : store.takeJobs()) {
    send(std::move(job));
  }
}

void TokenFetcher::Impl::onTick() {
  const core::Nanos now = steadyNanos();
  std::vector<policy::TokenJob> want = wanted ? wanted() : std::vector<policy::TokenJob>{};
  std::map<std::string, Kept> still;
  for (policy::TokenJob& job : want) {
    auto it = kept.find(job.key);
    Kept k = it != kept.end() ? it->second : Kept{};
    if (!k.running && now >= k.refresh_at && store.markPending(job.key, now)) {
      k.running = true;
      const std::string key = job.key;
      still[key] = k;
      send(std::move(job));
      continue;
    }
    still[job.key] = k;
  }
  kept = std::move(still);  // upstreams a reload removed are forgotten
}

void TokenFetcher::Impl::send(policy::TokenJob job) {
  client::Request req;
  req.method = "POST";
  req.url = job.endpoint;
  req.headers.emplace_back("Accept", "application/json");
  if (!job.client_auth_post) {
    req.headers.emplace_back("Authorization",
                             policy::basicCredentials(job.client_id, job.client_secret));
  }
  req.setForm(policy::tokenForm(job));
  req.ca_file = job.ca;
  req.connect_timeout = job.timeout;
  req.total_timeout = job.timeout;
  req.max_body_bytes = kMaxAnswer;
  req.keep_alive = true;
  const core::Nanos started = steadyNanos();
  auto shared = std::make_shared<policy::TokenJob>(std::move(job));
  http->send(std::move(req), [this, shared, started](client::Result&& r) {
    answer(*shared, started, std::move(r));
  });
}

void TokenFetcher::Impl::answer(const policy::TokenJob& job, core::Nanos started,
                                client::Result&& r) {
  const core::Nanos now = steadyNanos();
  const bool introspection = job.kind == policy::TokenJob::Kind::kIntrospection;
  policy::TokenAnswer a;
  if (!r.ok()) {
    a.state = State::kFailed;
    a.error = r.error == client::Error::kTimeout
                  ? "no answer within " + std::to_string(job.timeout.count()) + " ms"
                  : std::string(client::errorName(r.error)) + ": " + r.reason;
  } else if (introspection) {
    const int64_t now_unix =
        std::chrono::duration_cast<seconds>(core::wallNow().time_since_epoch()).count();
    a = policy::parseIntrospection(r.response.status, r.response.body, now_unix, job.cache);
  } else {
    a = policy::parseTokenAnswer(r.response.status, r.response.body);
  }
  const char* what = policy::tokenJobKindName(job.kind);
  metrics.tokenRequest(what, job.label,
                       a.state == State::kReady     ? "ok"
                       : a.state == State::kRefused ? "refused"
                                                    : "failed",
                       now - started);
  Kept* k = nullptr;
  if (job.kind == policy::TokenJob::Kind::kClientCredentials) {
    auto it = kept.find(job.key);
    k = it != kept.end() ? &it->second : nullptr;
  }
  switch (a.state) {
    case State::kReady: {
      seconds use = a.lifetime;
      if (!introspection) {
        use = std::min(use > kExpiryMargin * 2 ? use - kExpiryMargin : use / 2, kMaxUse);
      }
      // Upstream tokens are kept as the Authorization value they are sent as.
      std::string value = introspection ? std::move(a.value) : "Bearer " + a.value;
      store.publish(job.key, State::kReady, std::move(value), "", now + use, now);
      if (k != nullptr) {
        k->running = false;
        k->backoff = seconds{0};
        k->refresh_at = now + std::max<core::Nanos>(use * 3 / 4, kMinBackoff);
        spdlog::info("auth: {} token for upstream '{}' (valid {} s)", what, job.label, use.count());
      }
      return;
    }
    case State::kRefused:
      if (!introspection) {
        spdlog::warn("auth: {} for upstream '{}' refused by {}: {}", what, job.label, job.endpoint,
                     a.error);
      }
      break;
    default:
      spdlog::warn("auth: {} for '{}' at {} failed: {}", what, job.label, job.endpoint, a.error);
      a.state = State::kFailed;
      break;
  }
  if (k != nullptr) {
    // client_credentials: a token still valid stays in use; the next try backs off.
    k->running = false;
    k->backoff = std::clamp(k->backoff * 2, kMinBackoff, kMaxBackoff);
    k->refresh_at = now + k->backoff;
    const policy::CredentialStore::Found held = store.find(job.key, now);
    if (held.state == State::kReady) {  // a failed refresh: the token in use stays
      store.publish(job.key, State::kReady, held.value, "", held.until, now);
      return;
    }
    store.publish(job.key, a.state, "", a.error, now + k->backoff, now);
    return;
  }
  store.publish(job.key, a.state, "", a.error,
                now + (a.state == State::kRefused ? kRefusalMemory : kFailureMemory), now);
}

}  // namespace gw::server
