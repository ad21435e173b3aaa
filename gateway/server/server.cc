// Workers, listeners, signals and drain (see server.h).

#include "gateway/server/server.h"

#include <arpa/inet.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <spdlog/sinks/basic_file_sink.h>
#include <spdlog/sinks/stdout_sinks.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <set>

#include "gateway/admin/admin.h"
#include "gateway/core/clock.h"
#include "gateway/downstream/http1_connection.h"
#include "gateway/filters/snapshot.h"
#include "gateway/http/parser.h"
#include "gateway/policy/token_answer.h"
#include "gateway/proxy/answer_hold.h"
#include "gateway/server/health_checker.h"
#include "gateway/server/jwks_fetcher.h"
#include "gateway/server/token_fetcher.h"
#include "gateway/server/trace_exporter.h"
#include "gateway/server/worker.h"
#include "gateway/tls/server_context.h"
#include "gateway/upstream/health.h"
#include "gateway/upstream/pool.h"

namespace gw::server {

namespace {

// Changes to watched files are coalesced: one reload this long after the last one.
constexpr std::chrono::milliseconds kWatchDebounce{150};
// The same stop signal repeated sooner than this after the first is one request delivered
// twice (GNU timeout signals the process and then its group within microseconds), not an
// operator asking to exit at once. A person cannot send a second one this fast.
constexpr std::chrono::milliseconds kRepeatSignalWindow{100};

// A served certificate that expires within this long is warned about at start and reload.
constexpr std::chrono::hours kCertificateWarning{14 * 24};

// The served certificate's expiry: exported as a gauge, and a warning when it is near or past.
void noteCertificate(const tls::CertificateInfo& cert, metrics::Registry& metrics) {
  metrics.setTlsCertificateExpiry(cert.not_after_unix);
  if (cert.not_after_unix == 0) {
    return;
  }
  const auto now =
      std::chrono::duration_cast<std::chrono::seconds>(core::wallNow().time_since_epoch()).count();
  const int64_t left = cert.not_after_unix - now;
  if (left <= 0) {
    spdlog::warn("TLS certificate {} (subject '{}') expired at {}: clients will refuse it",
                 cert.fingerprint, cert.subject, cert.not_after);
  } else if (left < std::chrono::seconds(kCertificateWarning).count()) {
    spdlog::warn("TLS certificate {} (subject '{}') expires at {}, in {} h", cert.fingerprint,
                 cert.subject, cert.not_after, left / 3600);
  }
}

std::shared_ptr<spdlog::logger> makeAccessLog(const settings::AccessLog& cfg) {
  if (cfg.path == "off") {
    return nullptr;
  }
  std::shared_ptr<spdlog::logger> log;
  try {
    if (cfg.path == "-") {
      log = std::make_shared<spdlog::logger>("access",
                                             std::make_shared<spdlog::sinks::stdout_sink_mt>());
    } else {
      log = std::make_shared<spdlog::logger>(
          "access", std::make_shared<spdlog::sinks::basic_file_sink_mt>(cfg.path));
    }
  } catch (const std::exception& e) {
    spdlog::error("cannot open access log {}: {}", cfg.path, e.what());
    return nullptr;
  }
  log->set_pattern("%v");
  // The access log is not the error log: every request's line is written whatever log_level
  // says (log_level: warn quiets the error log only).
  log->set_level(spdlog::level::info);
  log->flush_on(spdlog::level::info);
  return log;
}

// Writes `text` to `path` atomically (a temp file beside it, renamed over it): a reader sees
// no file or the whole of it. False with the reason in `error`.
bool writePortsFile(const std::string& path, const std::string& text, std::string& error) {
  const std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = fd >= 0 && ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  if (fd >= 0) {
    ok = ::close(fd) == 0 && ok;
  }
  ok = ok && ::rename(tmp.c_str(), path.c_str()) == 0;
  if (!ok) {
    error = "cannot write the ports file " + path + ": " + std::strerror(errno);
    ::unlink(tmp.c_str());
  }
  return ok;
}

}  // namespace

Server::Server(std::shared_ptr<const filters::Snapshot> snapshot, std::string config_path)
    : config_path_(std::move(config_path)) {
  shared_.setAccessLog(makeAccessLog(snapshot->settings->access_log));
  shared_.limiter = std::make_unique<ratelimit::LocalLimiter>(core::SteadyClock::instance());
  shared_.snapshot.store(std::move(snapshot));
}

Server::~Server() = default;

void Server::reload() {
  auto old = shared_.snapshot.load();
  std::vector<settings::Diagnostic> errors;
  auto next = filters::Snapshot::load(config_path_, old.get(), errors);
  if (!next) {
    for (const auto& d : errors) {
      spdlog::error("reload: {}", d.str());
    }
    spdlog::error("reload failed; keeping the running configuration");
    shared_.metrics.reloaded(false);
    return;
  }
  const settings::Settings& was = *old->settings;
  const settings::Settings& now = *next->settings;
  // A certificate every client would refuse (expired, not valid yet) does not replace one
  // they accept, on any listener: refused like a key that does not match its certificate.
  const int64_t unix_now =
      std::chrono::duration_cast<std::chrono::seconds>(core::wallNow().time_since_epoch()).count();
  for (size_t i = 0; i < now.listeners.size(); ++i) {
    const auto running = shared_.listenerTls(i);
    const std::optional<settings::ListenTls>& wanted = now.listeners[i].tls;
    if (!running || !wanted) {
      continue;
    }
    const std::string why =
        tls::refusedReplacement(running->certificate(), wanted->context->certificate(), unix_now);
    if (!why.empty()) {
      spdlog::error("reload: tls.cert {}: {}; the running certificate {} stays", wanted->cert, why,
                    running->fingerprint());
      spdlog::error("reload failed; keeping the running configuration");
      shared_.metrics.reloaded(false);
      return;
    }
  }
  if (admin_exposed_ && !now.admin_auth) {
    spdlog::error(
        "reload: {}: admin stays on {} (not loopback) until a restart; it cannot lose "
        "admin_auth before then",
        now.source_file, shared_.bound.admin.value_or("?"));
    spdlog::error("reload failed; keeping the running configuration");
    shared_.metrics.reloaded(false);
    return;
  }
  // Bound once at start: a change is reported, and the running value stays.
  auto restartOnly = [](const char* key, const std::string& running, const std::string& wanted) {
    if (running != wanted) {
      spdlog::warn("reload: `{}` changed ({} -> {}); it takes effect at restart, still {}", key,
                   running, wanted, running);
    }
  };
  const filters::Bound& b = shared_.bound;
  restartOnly("listen", b.listen, now.listen.text);
  restartOnly("workers", std::to_string(b.workers), std::to_string(now.workers));
  restartOnly("admin", b.admin.value_or("off"), now.admin ? now.admin->text : "off");
  // The exporter is made at start; sample_ratio follows the file.
  restartOnly("tracing", b.tracing, now.tracing ? now.tracing->otlp_endpoint : "off");
  // Whether the port speaks TLS is fixed at start; its certificate, key, client CAs and
  // minimum version follow the file (new connections; open ones keep theirs).
  restartOnly("tls", shared_.tls_on ? "on" : "off", now.tls ? "on" : "off");
  {
    std::vector<std::string> file;
    for (const settings::Listener& l : now.listeners) {
      file.push_back(filters::listenerText(l));
    }
    if (filters::laterListenersDiffer(b.listeners, file)) {
      std::string running;
      std::string wanted;
      for (const std::string& l : b.listeners) {
        running += (running.empty() ? "" : ", ") + l;
      }
      for (const std::string& l : file) {
        wanted += (wanted.empty() ? "" : ", ") + l;
      }
      restartOnly("listeners", running, wanted);
    }
  }
  // Later listeners' certificates follow the file like the first's (when still TLS).
  for (size_t i = 1; i < now.listeners.size() && i - 1 < shared_.more_tls.size(); ++i) {
    auto& l = *shared_.more_tls[i - 1];
    if (l.on && now.listeners[i].tls) {
      l.context.store(now.listeners[i].tls->context, std::memory_order_release);
    }
  }
  if (shared_.tls_on && now.tls) {
    auto running = shared_.tls.load(std::memory_order_acquire);
    if (running->fingerprint() != now.tls->context->fingerprint()) {
      spdlog::info("reload: TLS certificate {} (sha256) replaces {}",
                   now.tls->context->fingerprint(), running->fingerprint());
    }
    shared_.tls.store(now.tls->context, std::memory_order_release);
    noteCertificate(now.tls->context->certificate(), shared_.metrics);
  }
  // The access log is reopened on every reload (a rotated file is let go); if the new path
  // cannot be opened the old log stays.
  if (now.access_log.path == "off") {
    shared_.setAccessLog(nullptr);
  } else if (auto log = makeAccessLog(now.access_log)) {
    shared_.setAccessLog(std::move(log));
  } else {
    spdlog::error("reload: keeping the access log at {}", was.access_log.path);
  }
  spdlog::set_level(spdlog::level::from_str(now.log_level));
  for (const settings::Diagnostic& d : now.warnings) {
    spdlog::warn("reload: {}", d.str());
  }
  shared_.snapshot.store(std::move(next));
  shared_.metrics.reloaded(true);
  spdlog::info("reloaded {}", config_path_);
  watchFiles();
}

// (Re)arms the file watcher on the running snapshot's config, policy, pins store and admin
// token files; a no-op when `watch_files` is off.
void Server::watchFiles() {
  auto s = shared_.snapshot.load()->settings;
  if (main_base_ == nullptr) {
    return;
  }
  if (!s->watch_files) {
    // Emptied, not destroyed: this may run from the watcher's own callback.
    if (watcher_) {
      std::string ignored;
      watcher_->watch({}, ignored);
    }
    return;
  }
  if (!watcher_) {
    watcher_ = std::make_unique<FileWatcher>(
        main_base_,
        [this](const std::set<std::string>& changed) {
          // The gateway's own write of a pins store is not a change to reload for.
          if (changed.size() == 1) {
            const auto snap = shared_.snapshot.load();
            for (const filters::Snapshot* sv : snap->everyServer()) {
              const auto& pins = sv->pins;
              if (pins &&
                  *changed.begin() == std::filesystem::path(pins->path()).filename().string() &&
                  pins->isOwnWrite()) {
                return;
              }
            }
          }
          spdlog::info("config files changed; reloading");
          reload();
        },
        kWatchDebounce);
  }
  const auto snap = shared_.snapshot.load();
  std::vector<std::string> files{s->source_file};
  for (const filters::Snapshot* sv : snap->everyServer()) {
    const auto& policies = sv->settings->policy_files;
    files.insert(files.end(), policies.begin(), policies.end());
    if (sv->pins) {
      files.push_back(sv->pins->path());  // `mcp-gateway pins approve` rewrites it
    }
    if (const policy::Introspection* in = sv->policy->introspection()) {
      files.push_back(in->client_secret_file);  // a rotated client secret applies
    }
  }
  for (const settings::Listener& l : s->listeners) {
    if (l.tls) {
      // A renewed certificate (cert-manager, certbot) is picked up like a config edit.
      for (const std::string* f : {&l.tls->cert, &l.tls->key, &l.tls->client_ca}) {
        if (!f->empty()) {
          files.push_back(*f);
        }
      }
    }
  }
  for (const settings::Upstream& u : s->upstreams) {
    if (u.auth) {
      // A rotated client secret or signing key applies like a config edit.
      for (const std::string* f : {&u.auth->client_secret_file, &u.auth->key_file}) {
        if (!f->empty()) {
          files.push_back(*f);
        }
      }
    }
  }
  if (s->admin_auth) {
    files.push_back(s->admin_auth->token_file);  // a rotated token (a Secret's update) applies
  }
  std::string error;
  if (!watcher_->watch(files, error)) {
    spdlog::warn("{}; reload on SIGHUP only", error);
  }
}

void Server::beginDrain() {
  if (drain_started_) {
    return;
  }
  drain_started_ = true;
  drain_started_at_ = core::steadyNow();
  shared_.draining.store(true);
  auto s = shared_.snapshot.load()->settings;
  drain_deadline_ = drain_started_at_ + s->drain_timeout;
  spdlog::info("draining: {} connections open, up to {} ms", shared_.connections.load(),
               s->drain_timeout.count());
  for (auto& w : workers_) {
    w->requestDrain();
  }
}

// A second SIGTERM/SIGINT during a drain (another signal, or the same one at least
// kRepeatSignalWindow after the first): the operator wants out now (as Caddy and Traefik
// do). Streams still open are cut; the logs are flushed first.
void Server::exitNow(int sig) {
  spdlog::warn("{} during the drain: exiting now, cutting {} connections",
               sig == SIGINT ? "SIGINT" : "SIGTERM", shared_.connections.load());
  if (auto log = shared_.accessLog()) {
    log->flush();
  }
  spdlog::default_logger()->flush();
  std::_Exit(1);
}

void Server::onDrainTick() {
  proxy::trimAfterLargeAnswers();  // large list answers' memory back to the system when quiet
  if (!drain_started_) {
    return;
  }
  bool done = shared_.connections.load() == 0;
  if (done || core::steadyNow() >= drain_deadline_) {
    if (!done) {
      spdlog::warn("drain timeout: closing {} connections", shared_.connections.load());
    }
    event_base_loopbreak(main_base_);
  }
}

int Server::run() {
  evthread_use_pthreads();
  std::signal(SIGPIPE, SIG_IGN);
  // Signals are caught before the first connection can be accepted.
  event::BasePtr base(event_base_new());
  main_base_ = base.get();
  auto on_signal = [](evutil_socket_t sig, short, void* arg) {
    auto* self = static_cast<Server*>(arg);
    if (sig == SIGHUP) {
      self->reload();
    } else if (self->drain_started_) {
      // `timeout`, shells and some supervisors deliver one stop request twice: to the
      // process and to its process group. Only a signal sent well after the first is a
      // second request.
      if (static_cast<int>(sig) != self->drain_signal_ ||
          core::steadyNow() - self->drain_started_at_ >= kRepeatSignalWindow) {
        self->exitNow(static_cast<int>(sig));
      }
      spdlog::info("{} again within {} ms of the first: already draining",
                   sig == SIGINT ? "SIGINT" : "SIGTERM", kRepeatSignalWindow.count());
    } else {
      self->drain_signal_ = static_cast<int>(sig);
      self->beginDrain();
    }
  };
  event::EventPtr sigterm(evsignal_new(main_base_, SIGTERM, on_signal, this));
  event::EventPtr sigint(evsignal_new(main_base_, SIGINT, on_signal, this));
  event::EventPtr sighup(evsignal_new(main_base_, SIGHUP, on_signal, this));
  event_add(sigterm.get(), nullptr);
  event_add(sigint.get(), nullptr);
  event_add(sighup.get(), nullptr);
  auto snap = shared_.snapshot.load();
  const settings::Settings& s = *snap->settings;
  shared_.bound.listen = s.listen.text;
  shared_.bound.workers = s.workers;
  shared_.bound.tracing = s.tracing ? s.tracing->otlp_endpoint : "off";
  shared_.bound.tls = s.tls.has_value();
  if (s.admin) {
    shared_.bound.admin = s.admin->text;
    admin_exposed_ = !settings::isLoopback(s.admin->ip);
  }
  if (s.tls) {
    shared_.tls_on = true;
    shared_.tls.store(s.tls->context);
  }
  for (size_t i = 0; i < s.listeners.size(); ++i) {
    shared_.bound.listeners.push_back(filters::listenerText(s.listeners[i]));
    if (i > 0) {
      auto l = std::make_unique<proxy::Shared::ListenerTls>();
      l->on = s.listeners[i].tls.has_value();
      if (l->on) {
        l->context.store(s.listeners[i].tls->context);
      }
      shared_.more_tls.push_back(std::move(l));
    }
  }
  unsigned n = s.workers != 0 ? s.workers : std::max(1u, std::thread::hardware_concurrency());
  // The admin listener first: once the data port accepts, /healthz and /readyz answer too
  // (probes and tests may look at both as soon as the data port is up).
  admin::AdminServer admin(shared_);
  if (s.admin) {
    std::string error;
    if (!admin.start(*s.admin, error)) {
      spdlog::critical("{}", error);
      return 1;
    }
  }
  // Every listener; one on port 0: the first worker's bind picks the port, the others share it.
  std::vector<settings::Address> addrs;
  for (const settings::Listener& l : s.listeners) {
    addrs.push_back(l.address);
  }
  for (unsigned i = 0; i < n; ++i) {
    auto w = std::make_unique<Worker>(static_cast<int>(i), shared_);
    std::string error;
    if (!w->bind(addrs, error)) {
      spdlog::critical("{}", error);
      return 1;
    }
    for (size_t k = 0; k < addrs.size(); ++k) {
      if (addrs[k].port == 0) {
        addrs[k].port = w->port(k);
      }
    }
    workers_.push_back(std::move(w));
  }
  const settings::Address listen = addrs.front();
  // The watch is armed before the data port accepts: an edit made as soon as the gateway
  // answers is never missed (inotify queues it until the loop below runs).
  watchFiles();
  // identity.jwt.jwks_url: fetched beside the workers (the first fetch starts now; until it
  // succeeds, JWTs are refused). Sources a reload adds are picked up on its next tick.
  JwksFetcher jwks(shared_.metrics);
  if (std::string error; !jwks.start(error)) {
    spdlog::critical("{}", error);
    return 1;
  }
  // upstreams[].auth and identity.introspection: the calls to OAuth endpoints, beside the
  // workers (client_credentials tokens are fetched now, and for upstreams a reload adds).
  TokenFetcher tokens(shared_.metrics, [this] {
    const auto running = shared_.snapshot.load();
    return running ? policy::clientCredentialJobs(running->settings->upstreams)
                   : std::vector<policy::TokenJob>{};
  });
  if (std::string error; !tokens.start(error)) {
    spdlog::critical("{}", error);
    return 1;
  }
  shared_.metrics.setTokenCacheSizes([] {
    const policy::CredentialStore& store = policy::CredentialStore::instance();
    std::vector<std::pair<std::string, int64_t>> out;
    for (auto k :
         {policy::TokenJob::Kind::kClientCredentials, policy::TokenJob::Kind::kTokenExchange,
          policy::TokenJob::Kind::kIntrospection, policy::TokenJob::Kind::kSignedIdentity}) {
      out.emplace_back(policy::tokenJobKindName(k), static_cast<int64_t>(store.size(k)));
    }
    return out;
  });
  // tracing: spans exported beside the workers (configured at start; a reload's change
  // waits for a restart, but for sample_ratio).
  std::unique_ptr<TraceExporter> tracer;
  if (s.tracing) {
    tracer = std::make_unique<TraceExporter>(shared_.metrics, *s.tracing);
    if (std::string error; !tracer->start(error)) {
      spdlog::critical("{}", error);
      return 1;
    }
    shared_.tracer.store(tracer.get());
    spdlog::info("tracing: OTLP/HTTP JSON to {}, sample_ratio {}", s.tracing->otlp_endpoint,
                 s.tracing->sample_ratio);
  }
  // upstreams[].health_check: probed beside the workers.
  HealthChecker checker([this]() -> std::shared_ptr<const settings::Settings> {
    const auto running = shared_.snapshot.load();
    return running ? running->settings : nullptr;
  });
  if (std::string error; !checker.start(error)) {
    spdlog::critical("{}", error);
    return 1;
  }
  shared_.metrics.setEndpointHealth([this] {
    std::vector<metrics::Registry::EndpointHealthSample> out;
    const auto running = shared_.snapshot.load();
    if (!running) {
      return out;
    }
    const int64_t now =
        std::chrono::duration_cast<std::chrono::nanoseconds>(core::steadyNow().time_since_epoch())
            .count();
    for (const settings::Upstream& up : running->settings->upstreams) {
      const auto state = upstream::HealthRegistry::instance().upstream(up);
      for (const auto& e : state->endpoints()) {
        out.push_back({e->upstream, e->endpoint, e->usable(now), e->ejected_total.load(),
                       e->went_down.load(), e->came_up.load()});
      }
    }
    return out;
  });
  // Written once every listener is bound (what connects before the workers run waits in the
  // backlog): whoever waits for the file can connect at once.
  if (!ports_file_.empty()) {
    std::string text = "listen " + std::to_string(listen.port) + "\n";
    for (size_t k = 0; k < addrs.size(); ++k) {
      text += "listener" + std::to_string(k) + " " + std::to_string(addrs[k].port) + "\n";
    }
    if (s.admin) {
      text += "admin " + std::to_string(admin.port()) + "\n";
    }
    if (std::string error; !writePortsFile(ports_file_, text, error)) {
      spdlog::critical("{}", error);
      return 1;
    }
  }
  for (auto& w : workers_) {
    w->start();
  }
  spdlog::info("mcp-gateway listening on {}{} ({} workers), endpoint {}, admin {}", s.listen.text,
               s.tls ? " (HTTPS)" : "", n, s.endpoint, s.admin ? s.admin->text : "off");
  if (s.listen.port == 0 || (s.admin && s.admin->port == 0)) {
    spdlog::info("bound ports: listen {}, admin {}", listen.port,
                 s.admin ? std::to_string(admin.port()) : "off");
  }
  for (const settings::Diagnostic& d : s.warnings) {
    spdlog::warn("{}", d.str());
  }
  if (s.tls) {
    const tls::CertificateInfo& cert = s.tls->context->certificate();
    spdlog::info("TLS certificate {} (sha256), minimum version {}{}; subject '{}', valid until {}",
                 cert.fingerprint, s.tls->min_version,
                 s.tls->client_ca.empty() ? "" : ", client certificates required", cert.subject,
                 cert.not_after);
    noteCertificate(s.tls->context->certificate(), shared_.metrics);
  }

  event::EventPtr tick(event_new(
      main_base_, -1, EV_PERSIST,
      [](evutil_socket_t, short, void* arg) { static_cast<Server*>(arg)->onDrainTick(); }, this));
  timeval every{0, 50 * 1000};
  event_add(tick.get(), &every);

  event_base_dispatch(main_base_);

  for (auto& w : workers_) {
    w->requestStop();
  }
  workers_.clear();  // joins the threads, closes what is left
  if (tracer) {
    shared_.tracer.store(nullptr);
    const auto running = shared_.snapshot.load();
    tracer->stop(running ? running->settings->drain_timeout : s.drain_timeout);
  }
  jwks.stop();
  tokens.stop();
  checker.stop();
  admin.stop();
  sigterm.reset();
  sigint.reset();
  sighup.reset();
  tick.reset();
  watcher_.reset();
  main_base_ = nullptr;
  spdlog::info("stopped");
  return 0;
}

}  // namespace gw::server
