// server/: the JWKS fetcher (see jwks_fetcher.h).

#include "gateway/server/jwks_fetcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "gateway/client/http_client.h"
#include "gateway/core/clock.h"
#include "gateway/event/dns.h"
#include "gateway/event/owners.h"
#include "gateway/http/whole_response.h"
#include "gateway/policy/jwks_source.h"
#include "gateway/policy/jwt.h"
#include "gateway/tls/tls.h"

namespace gw::server {

namespace {

using Clock = std::chrono::steady_clock;
using Result = metrics::Registry::JwksFetch;
using policy::JwksSource;

constexpr std::chrono::milliseconds kTick{200};
constexpr std::chrono::seconds kFetchTimeout{10};
constexpr std::chrono::seconds kRetryAfterFailure{30};
constexpr size_t kMaxBody = 1024 * 1024;

// The fetch result a client error is counted as.
Result resultOf(client::Error e) noexcept {
  switch (e) {
    case client::Error::kNone:
      return Result::kOk;
    case client::Error::kTls:
      return Result::kTlsError;
    case client::Error::kTimeout:
      return Result::kTimeout;
    case client::Error::kTooLarge:
      return Result::kParseError;
    case client::Error::kBadResponse:
      return Result::kHttpError;
    case client::Error::kInvalidRequest:
    case client::Error::kDns:
    case client::Error::kConnect:
      return Result::kConnectError;
  }
  return Result::kConnectError;
}

}  // namespace

struct JwksFetcher::Impl {
  struct State;

  // One GET in flight (client_ holds the request); owned by its State, freed when it ends.
  struct Fetch {
    std::shared_ptr<JwksSource> source;
    const char* why = "";  // what started it, for the log
  };

  // What the fetcher knows about one source.
  struct State {
    std::weak_ptr<JwksSource> source;
    tls::ContextPtr tls;  // made on the first https fetch (jwks_ca read then, once per source)
    Clock::time_point due{};
    std::unique_ptr<Fetch> fetch;
  };

  explicit Impl(metrics::Registry& m) : metrics(m) {}

  metrics::Registry& metrics;
  event::BasePtr base;
  event::DnsBasePtr dns;
  std::unique_ptr<client::HttpClient> http;  // before dns and base go
  event::EventPtr tick;
  std::map<const JwksSource*, State> states;  // nodes never move

  void onTick();
  void begin(State& st, const std::shared_ptr<JwksSource>& src, const char* why);
  void onAnswer(State& st, client::Result&& r);
  void complete(State& st, const client::Response& resp);
  // Ends the fetch of `st` (counted as `r`; `reason` logged unless ok) and schedules the next.
  void end(State& st, Result r, const std::string& reason,
           std::chrono::seconds next = kRetryAfterFailure);
};

JwksFetcher::JwksFetcher(metrics::Registry& metrics) : impl_(std::make_unique<Impl>(metrics)) {}

JwksFetcher::~JwksFetcher() {
  stop();
}

bool JwksFetcher::start(std::string& error) {
  impl_->base.reset(event_base_new());
  if (impl_->base == nullptr) {
    error = "jwks: cannot create an event loop";
    return false;
  }
  impl_->dns = event::makeResolver(impl_->base.get());
  impl_->http = std::make_unique<client::HttpClient>(impl_->base.get(), impl_->dns.get());
  impl_->tick.reset(event_new(
      impl_->base.get(), -1, EV_PERSIST,
      [](evutil_socket_t, short, void* arg) { static_cast<Impl*>(arg)->onTick(); }, impl_.get()));
  const timeval every = event::toTimeval(kTick);
  event_add(impl_->tick.get(), &every);
  event_active(impl_->tick.get(), EV_TIMEOUT, 0);  // the first fetches at once
  thread_ = std::thread([this] { event_base_dispatch(impl_->base.get()); });
  return true;
}

void JwksFetcher::stop() {
  if (thread_.joinable()) {
    event_base_loopbreak(impl_->base.get());
    thread_.join();
  }
  // Requests in flight are dropped unanswered (their callbacks name the states below).
  impl_->http.reset();
  // A fetch cut short still ends: nothing may wait for it (proxy/exchange.cc).
  for (auto& [key, st] : impl_->states) {
    if (st.fetch != nullptr) {
      st.fetch->source->fetchEnded();
    }
  }
  impl_->states.clear();
}

void JwksFetcher::Impl::onTick() {
  const Clock::time_point now = core::steadyNow();
  std::vector<std::shared_ptr<JwksSource>> live = JwksSource::live();
  std::erase_if(states, [](const auto& kv) {
    return kv.second.source.expired() && kv.second.fetch == nullptr;
  });
  for (const std::shared_ptr<JwksSource>& src : live) {
    auto [it, made] = states.try_emplace(src.get());
    State& st = it->second;
    if (made) {
      st.source = src;
      st.due = now;
    }
    if (st.fetch != nullptr) {
      continue;
    }
    const bool asked = src->takeAsk();
    if (now >= st.due) {
      src->fetchBegins(now, false);
      begin(st, src, made ? "start" : "refresh");
    } else if (asked && src->askAllowed(now)) {
      src->fetchBegins(now, true);
      begin(st, src, "a token named a key the set lacks");
    }
  }
}

void JwksFetcher::Impl::begin(State& st, const std::shared_ptr<JwksSource>& src, const char* why) {
  const policy::JwksUrl& u = src->parsed();
  auto f = std::make_unique<Fetch>();
  f->source = src;
  f->why = why;
  st.fetch = std::move(f);
  spdlog::debug("jwks: fetching {} ({})", src->url(), why);
  client::Request req;
  client::Url url{.https = u.https, .host = u.host, .port = u.port, .target = u.target};
  req.url = std::string(u.https ? "https://" : "http://") + url.authority() + u.target;
  req.headers = {{"Accept", "application/json, application/jwk-set+json"}};
  if (u.https) {
    if (st.tls == nullptr) {
      std::string error;
      st.tls = tls::makeClientContext(src->caFile(), "", "", error);
      if (st.tls == nullptr) {
        end(st, Result::kTlsError, error);
        return;
      }
    }
    req.tls_context = st.tls;
  }
  req.connect_timeout = kFetchTimeout;
  req.total_timeout = kFetchTimeout;
  req.max_body_bytes = kMaxBody;
  req.keep_alive = false;
  http->send(std::move(req), [this, &st](client::Result&& r) { onAnswer(st, std::move(r)); });
}

void JwksFetcher::Impl::onAnswer(State& st, client::Result&& r) {
  if (!r.ok()) {
    std::string reason = std::move(r.reason);
    if (r.error == client::Error::kTimeout) {
      reason = "no complete answer within " + std::to_string(kFetchTimeout.count()) + " s";
    } else if (r.error == client::Error::kBadResponse || r.error == client::Error::kTooLarge) {
      reason = "malformed response: " + reason;
    }
    end(st, resultOf(r.error), reason);
    return;
  }
  complete(st, r.response);
}

void JwksFetcher::Impl::complete(State& st, const client::Response& resp) {
  Fetch& f = *st.fetch;
  if (resp.status != 200) {
    end(st, Result::kHttpError, "HTTP status " + std::to_string(resp.status));
    return;
  }
  std::vector<policy::Jwk> keys;
  std::string why;
  if (!policy::parseJwks(resp.body, keys, why)) {
    end(st, Result::kParseError, "not a usable JWKS: " + why);
    return;
  }
  std::chrono::seconds next = f.source->refresh();
  if (const std::string* cc = resp.header("cache-control")) {
    if (std::optional<int64_t> age = http::cacheMaxAge(*cc)) {
      next = std::clamp(std::chrono::seconds(*age), JwksSource::kMinRefresh, next);
    }
  }
  auto before = f.source->keys();
  const size_t n = f.source->publish(resp.body, std::move(keys));
  metrics.setJwksKeys(static_cast<int64_t>(n));
  auto after = f.source->keys();
  if (before != after) {
    spdlog::info("jwks: {} keys from {} ({}); next fetch in {} s", n, f.source->url(), f.why,
                 next.count());
  } else {
    spdlog::debug("jwks: {} unchanged; next fetch in {} s", f.source->url(), next.count());
  }
  end(st, Result::kOk, "", next);
}

void JwksFetcher::Impl::end(State& st, Result r, const std::string& reason,
                            std::chrono::seconds next) {
  metrics.jwksFetched(r);
  Fetch& f = *st.fetch;
  if (r != Result::kOk) {
    auto held = f.source->keys();
    if (held != nullptr) {
      spdlog::warn("jwks: fetching {} failed ({}: {}); keeping the last key set ({} keys)",
                   f.source->url(), metrics::Registry::jwksFetchLabel(r), reason,
                   held->keys.size());
    } else {
      spdlog::warn("jwks: fetching {} failed ({}: {}); no key set yet, JWTs are refused",
                   f.source->url(), metrics::Registry::jwksFetchLabel(r), reason);
    }
  }
  // Tokens that asked while this fetch ran were answered by it (or will be retried with the
  // next ask): they must not start a second fetch, nor use up the asked-for interval.
  f.source->takeAsk();
  st.due = core::steadyNow() + next;
  // Requests waiting for this fetch (proxy/exchange.cc) go on when they see the count move.
  f.source->fetchEnded();
  st.fetch.reset();  // frees f
}

}  // namespace gw::server
