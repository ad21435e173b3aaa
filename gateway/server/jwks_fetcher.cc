// server/: the JWKS fetcher (see jwks_fetcher.h).

#include "gateway/server/jwks_fetcher.h"

#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <optional>
#include <string>

#include "gateway/core/clock.h"
#include "gateway/event/dns.h"
#include "gateway/event/owners.h"
#include "gateway/http/whole_response.h"
#include "gateway/policy/jwks_source.h"
#include "gateway/policy/jwt.h"
#include "gateway/tls/tls.h"
#include "gateway/upstream/pool.h"

namespace gw::server {

namespace {

using Clock = std::chrono::steady_clock;
using Result = metrics::Registry::JwksFetch;
using policy::JwksSource;

constexpr std::chrono::milliseconds kTick{200};
constexpr std::chrono::seconds kFetchTimeout{10};
constexpr std::chrono::seconds kRetryAfterFailure{30};
constexpr size_t kMaxHead = 16 * 1024;
constexpr size_t kMaxBody = 1024 * 1024;

}  // namespace

struct JwksFetcher::Impl {
  struct State;

  // One GET in flight; owned by its State, freed when it ends.
  struct Fetch {
    Impl* impl = nullptr;
    State* state = nullptr;
    std::shared_ptr<JwksSource> source;
    event::BufferEventPtr bev;
    event::EventPtr deadline;
    std::string bytes;  // the response so far
    bool connected = false;
    const char* why = "";  // what started it, for the log
  };

  // What the fetcher knows about one source.
  struct State {
    std::weak_ptr<JwksSource> source;
    tls::ContextPtr tls;  // made on the first https fetch
    Clock::time_point due{};
    std::unique_ptr<Fetch> fetch;
  };

  explicit Impl(metrics::Registry& m) : metrics(m) {}

  metrics::Registry& metrics;
  event::BasePtr base;
  event::DnsBasePtr dns;
  event::EventPtr tick;
  std::map<const JwksSource*, State> states;  // nodes never move

  void onTick();
  void begin(State& st, const std::shared_ptr<JwksSource>& src, const char* why);
  void onRead(Fetch& f);
  void onEvent(Fetch& f, short what);
  void complete(Fetch& f, const http::WholeResponse& resp);
  // Ends `f` (counted as `r`; `reason` logged unless ok) and schedules the next fetch.
  void end(Fetch& f, Result r, const std::string& reason,
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
  impl_->dns.reset(evdns_base_new(impl_->base.get(), EVDNS_BASE_INITIALIZE_NAMESERVERS));
  if (impl_->dns == nullptr) {
    // No resolv.conf: names in /etc/hosts and IP literals still work.
    impl_->dns.reset(evdns_base_new(impl_->base.get(), 0));
    if (impl_->dns != nullptr) {
      evdns_base_load_hosts(impl_->dns.get(), nullptr);
    }
  }
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
  f->impl = this;
  f->state = &st;
  f->source = src;
  f->why = why;
  Fetch& fr = *f;
  st.fetch = std::move(f);
  spdlog::debug("jwks: fetching {} ({})", src->url(), why);
  constexpr int kOpts = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;
  if (u.https) {
    if (st.tls == nullptr) {
      std::string error;
      st.tls = tls::makeClientContext(src->caFile(), "", "", error);
      if (st.tls == nullptr) {
        end(fr, Result::kTlsError, error);
        return;
      }
    }
    SSL* ssl = SSL_new(st.tls.get());
    if (ssl == nullptr || !tls::prepareClient(ssl, u.host)) {
      SSL_free(ssl);
      end(fr, Result::kTlsError, "cannot set up the TLS connection");
      return;
    }
    fr.bev.reset(
        bufferevent_openssl_socket_new(base.get(), -1, ssl, BUFFEREVENT_SSL_CONNECTING, kOpts));
    if (fr.bev != nullptr) {
      bufferevent_openssl_set_allow_dirty_shutdown(fr.bev.get(), 1);
    }
  } else {
    fr.bev.reset(bufferevent_socket_new(base.get(), -1, kOpts));
  }
  if (fr.bev == nullptr) {
    end(fr, Result::kConnectError, "cannot make a socket");
    return;
  }
  bufferevent_setcb(
      fr.bev.get(),
      [](bufferevent*, void* arg) {
        auto* x = static_cast<Fetch*>(arg);
        x->impl->onRead(*x);
      },
      nullptr,
      [](bufferevent*, short what, void* arg) {
        auto* x = static_cast<Fetch*>(arg);
        x->impl->onEvent(*x, what);
      },
      &fr);
  fr.deadline.reset(evtimer_new(
      base.get(),
      [](evutil_socket_t, short, void* arg) {
        auto* x = static_cast<Fetch*>(arg);
        x->impl->end(*x, Result::kTimeout,
                     "no complete answer within " + std::to_string(kFetchTimeout.count()) + " s");
      },
      &fr));
  const timeval limit = event::toTimeval(kFetchTimeout);
  evtimer_add(fr.deadline.get(), &limit);
  std::string host = u.host.find(':') != std::string::npos ? "[" + u.host + "]" : u.host;
  if (u.port != (u.https ? 443 : 80)) {
    host += ":" + std::to_string(u.port);
  }
  const std::string request = "GET " + u.target + " HTTP/1.1\r\nHost: " + host +
                              "\r\nAccept: application/json, application/jwk-set+json\r\n"
                              "User-Agent: mcp-gateway\r\nConnection: close\r\n\r\n";
  bufferevent_write(fr.bev.get(), request.data(), request.size());
  bufferevent_enable(fr.bev.get(), EV_READ | EV_WRITE);
  if (bufferevent_socket_connect_hostname(fr.bev.get(), dns.get(), AF_UNSPEC, u.host.c_str(),
                                          u.port) != 0 &&
      st.fetch != nullptr) {
    end(fr, Result::kConnectError, "cannot connect");
  }
}

void JwksFetcher::Impl::onRead(Fetch& f) {
  evbuffer* in = bufferevent_get_input(f.bev.get());
  const size_t n = evbuffer_get_length(in);
  if (f.bytes.size() + n > kMaxHead + kMaxBody + 64 * 1024) {
    end(f, Result::kParseError, "response larger than 1 MiB");
    return;
  }
  const size_t at = f.bytes.size();
  f.bytes.resize(at + n);
  evbuffer_remove(in, f.bytes.data() + at, n);
  http::WholeResponse resp;
  std::string error;
  switch (http::readWholeResponse(f.bytes, false, kMaxHead, kMaxBody, resp, error)) {
    case http::WholeResult::kNeedMore:
      return;
    case http::WholeResult::kError:
      end(f,
          error.find("too large") != std::string::npos ? Result::kParseError : Result::kHttpError,
          "malformed response: " + error);
      return;
    case http::WholeResult::kDone:
      complete(f, resp);
      return;
  }
}

void JwksFetcher::Impl::onEvent(Fetch& f, short what) {
  if ((what & BEV_EVENT_CONNECTED) != 0) {
    f.connected = true;
    return;
  }
  if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) == 0) {
    return;
  }
  bufferevent* bev = f.bev.get();
  if (!f.connected) {
    if (int dns_error = bufferevent_socket_get_dns_error(bev); dns_error != 0) {
      end(f, Result::kConnectError,
          "cannot resolve " + f.source->parsed().host + ": " + evutil_gai_strerror(dns_error));
      return;
    }
    if (f.source->parsed().https) {
      if (std::optional<std::string> why = upstream::tlsHandshakeFailure(bev)) {
        end(f, Result::kTlsError, *why);
        return;
      }
    }
    const int err = EVUTIL_SOCKET_ERROR();
    end(f, Result::kConnectError,
        std::string("cannot connect: ") +
            (err != 0 ? evutil_socket_error_to_string(err) : "connection closed"));
    return;
  }
  // Read what is left, then take the close as the end of the response.
  evbuffer* in = bufferevent_get_input(bev);
  if (size_t n = evbuffer_get_length(in); n > 0 && f.bytes.size() + n <= kMaxHead + kMaxBody) {
    const size_t at = f.bytes.size();
    f.bytes.resize(at + n);
    evbuffer_remove(in, f.bytes.data() + at, n);
  }
  http::WholeResponse resp;
  std::string error;
  if (http::readWholeResponse(f.bytes, true, kMaxHead, kMaxBody, resp, error) ==
      http::WholeResult::kDone) {
    complete(f, resp);
    return;
  }
  end(f, Result::kHttpError, "malformed response: " + error);
}

void JwksFetcher::Impl::complete(Fetch& f, const http::WholeResponse& resp) {
  if (resp.status != 200) {
    end(f, Result::kHttpError, "HTTP status " + std::to_string(resp.status));
    return;
  }
  std::vector<policy::Jwk> keys;
  std::string why;
  if (!policy::parseJwks(resp.body, keys, why)) {
    end(f, Result::kParseError, "not a usable JWKS: " + why);
    return;
  }
  std::chrono::seconds next = f.source->refresh();
  if (const std::string* cc = resp.field("cache-control")) {
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
  end(f, Result::kOk, "", next);
}

void JwksFetcher::Impl::end(Fetch& f, Result r, const std::string& reason,
                            std::chrono::seconds next) {
  metrics.jwksFetched(r);
  State& st = *f.state;
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
