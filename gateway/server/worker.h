#pragma once
// server/: one worker thread — its event_base, its listener (accept, the retry after an
// accept error, pausing while the process is out of descriptors), its control pipe (drain,
// stop), and what its connections and exchanges share: the connections'
// downstream::ConnectionContext, the exchanges' proxy::ProxyContext (upstream pools, Redis,
// spare exchanges), and the one flush queue both use. The worker wires them: its connections
// get their exchanges from proxy's pool (a downstream::StreamFactory). Only server.cc makes
// workers.

#include <event2/event.h>
#include <event2/listener.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gateway/downstream/context.h"
#include "gateway/downstream/http1_connection.h"
#include "gateway/event/flush_queue.h"
#include "gateway/event/owners.h"
#include "gateway/http/parser.h"
#include "gateway/proxy/proxy_context.h"
#include "gateway/settings/settings.h"
#include "gateway/upstream/pool.h"

namespace gw::server {

// One worker thread: its event_base, its listener, its pools and connections.
class Worker {
 public:
  // Idle upstream connections are closed before common server keep-alive timeouts (Node's
  // http server: 5 s) so a reused connection is rarely one the upstream is closing.
  static constexpr std::chrono::milliseconds kPoolIdleTimeout{4000};
  static constexpr timeval kListenerRetry{0, 100 * 1000};

  Worker(int id, proxy::Shared& shared) {
    ctx_.id = id;
    ctx_.shared = &shared;
    ctx_.metrics = &shared.metrics.addWorker();
    ctx_.flush_queue = &flush_queue_;
    conns_.shared = &shared;
    conns_.metrics = ctx_.metrics;
    conns_.flush_queue = &flush_queue_;
    conns_.streams = &ctx_.exchanges;
  }
  ~Worker() {
    if (thread_.joinable()) {
      thread_.join();
    }
    // Connections close themselves (and the reaper deletes them); the ones still open at exit
    // are closed and deleted here.
    while (!conns_.connections.empty()) {
      (*conns_.connections.begin())->closeNow();
    }
    downstream::Http1Connection::reapClosed(conns_);
    conns_.reaper.reset();
    conns_.garbage_timer.reset();
    listeners_.clear();
    retry_.reset();
    control_.reset();
    flush_queue_.clear();
    ctx_.exchanges.clear();
    ctx_.pools.reset();
    ctx_.redis.reset();
    ctx_.retired_redis.clear();  // all before base_ goes
    for (int fd : control_pipe_) {
      if (fd >= 0) {
        ::close(fd);
      }
    }
  }

  // Binds every address of `addrs` (Settings::listeners, in order; a port 0 as the caller
  // resolved it).
  bool bind(const std::vector<settings::Address>& addrs, std::string& error) {
    // Only this worker's thread touches its base: no lock. Other threads reach it through
    // the control pipe (requestDrain, requestStop).
    std::unique_ptr<event_config, void (*)(event_config*)> cfg(event_config_new(),
                                                               &event_config_free);
    event_config_set_flag(cfg.get(), EVENT_BASE_FLAG_NOLOCK);
    base_.reset(event_base_new_with_config(cfg.get()));
    if (!base_ || ::pipe2(control_pipe_, O_NONBLOCK | O_CLOEXEC) != 0) {
      error = std::string("cannot create a worker event loop: ") + std::strerror(errno);
      return false;
    }
    ctx_.base = base_.get();
    ctx_.parser = http::makeHttp1Parser();
    conns_.base = base_.get();
    conns_.parser = http::makeHttp1Parser();
    ctx_.pools = std::make_unique<upstream::Pools>(ctx_.base, kPoolIdleTimeout);
    accept_args_.resize(addrs.size());
    for (size_t i = 0; i < addrs.size(); ++i) {
      const settings::Address& a = addrs[i];
      sockaddr_storage ss{};
      socklen_t len = 0;
      if (!toSockaddr(a, ss, len)) {
        error = "cannot parse listen address " + a.text;
        return false;
      }
      accept_args_[i] = AcceptArg{this, static_cast<uint32_t>(i)};
      unsigned flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT |
                       LEV_OPT_CLOSE_ON_EXEC;
      event::ListenerPtr l(evconnlistener_new_bind(ctx_.base, &Worker::onAccept, &accept_args_[i],
                                                   flags, 1024, reinterpret_cast<sockaddr*>(&ss),
                                                   static_cast<int>(len)));
      if (!l) {
        error = "cannot listen on " + a.text + ": " + std::strerror(errno);
        return false;
      }
      evconnlistener_set_error_cb(l.get(), &Worker::onAcceptError);
      listeners_.push_back(std::move(l));
    }
    retry_.reset(evtimer_new(ctx_.base, &Worker::onRetry, this));
    control_.reset(
        event_new(ctx_.base, control_pipe_[0], EV_READ | EV_PERSIST, &Worker::onControl, this));
    event_add(control_.get(), nullptr);
    return true;
  }

  void start() {
    thread_ = std::thread([this] { event_base_dispatch(ctx_.base); });
  }

  // The port bind() bound for listener `i` (the kernel's choice when the address names port
  // 0); 0 if unknown.
  uint16_t port(size_t i = 0) const {
    sockaddr_storage ss{};
    socklen_t len = sizeof(ss);
    if (i >= listeners_.size() || ::getsockname(evconnlistener_get_fd(listeners_[i].get()),
                                                reinterpret_cast<sockaddr*>(&ss), &len) != 0) {
      return 0;
    }
    return ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                    : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }

  // Thread-safe: asks the worker to stop accepting and close idle connections.
  void requestDrain() { tell(kDrain); }
  // Thread-safe: ends the worker's loop.
  void requestStop() { tell(kStop); }

 private:
  static void onAccept(evconnlistener*, evutil_socket_t fd, sockaddr* sa, int, void* arg) {
    const auto* accepted = static_cast<const AcceptArg*>(arg);
    Worker* w = accepted->worker;
    const settings::Settings& s = *w->ctx_.shared->snapshot.load()->settings;
    if (w->ctx_.shared->connections.load(std::memory_order_relaxed) >=
        static_cast<int64_t>(s.limits.max_connections)) {
      // Full: refuse this one and stop accepting for a moment (no busy loop).
      evutil_closesocket(fd);
      w->ctx_.metrics->connections_refused.at({"max_connections"}).add(1);
      w->pauseAccepting();
      return;
    }
    char text[INET6_ADDRSTRLEN] = "?";
    core::IpAddress ip;
    if (sa->sa_family == AF_INET) {
      const auto* in = reinterpret_cast<sockaddr_in*>(sa);
      inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text));
      std::memcpy(ip.bytes.data(), &in->sin_addr, 4);
    } else if (sa->sa_family == AF_INET6) {
      const auto* in6 = reinterpret_cast<sockaddr_in6*>(sa);
      inet_ntop(AF_INET6, &in6->sin6_addr, text, sizeof(text));
      std::memcpy(ip.bytes.data(), &in6->sin6_addr, 16);
      ip.v6 = true;
    }
    // One address may hold at most max_connections_per_client: beyond it the socket is closed
    // at once (no answer: nothing was read), and counted.
    if (!w->ctx_.shared->client_counts.tryAcquire(ip, s.limits.max_connections_per_client)) {
      evutil_closesocket(fd);
      w->ctx_.metrics->connections_refused.at({"per_client_limit"}).add(1);
      return;
    }
    std::shared_ptr<const tls::ServerContext> tls = w->ctx_.shared->listenerTls(accepted->index);
    downstream::Http1Connection::start(w->conns_, fd, text, ip, tls.get(), accepted->index);
  }

  static void onAcceptError(evconnlistener*, void* arg) {
    int err = EVUTIL_SOCKET_ERROR();
    spdlog::warn("accept failed: {}; pausing accepts for 100ms",
                 evutil_socket_error_to_string(err));
    static_cast<const AcceptArg*>(arg)->worker->pauseAccepting();
  }

  void pauseAccepting() {
    for (const auto& l : listeners_) {
      evconnlistener_disable(l.get());
    }
    evtimer_add(retry_.get(), &kListenerRetry);
  }

  static void onRetry(evutil_socket_t, short, void* arg) {
    auto* w = static_cast<Worker*>(arg);
    if (!w->ctx_.shared->draining.load()) {
      for (const auto& l : w->listeners_) {
        evconnlistener_enable(l.get());
      }
    }
  }

  static constexpr char kDrain = 'd';
  static constexpr char kStop = 's';

  void tell(char what) {
    // One byte into a pipe nobody else fills: it cannot block or fall short.
    while (::write(control_pipe_[1], &what, 1) < 0 && errno == EINTR) {
    }
  }

  static void onControl(evutil_socket_t fd, short, void* arg) {
    auto* w = static_cast<Worker*>(arg);
    char what[16];
    ssize_t n = ::read(fd, what, sizeof(what));
    for (ssize_t i = 0; i < n; ++i) {
      if (what[i] == kStop) {
        event_base_loopbreak(w->ctx_.base);
        return;
      }
    }
    if (n > 0) {
      w->drain();
    }
  }

  void drain() {
    evtimer_del(retry_.get());
    // Closed, not just disabled: new connections are refused at once instead of waiting in
    // the backlog until the process exits.
    listeners_.clear();
    ctx_.pools->closeIdle();
    std::vector<downstream::Http1Connection*> all(conns_.connections.begin(),
                                                  conns_.connections.end());
    for (downstream::Http1Connection* c : all) {
      c->closeIfIdle();
    }
  }

  static bool toSockaddr(const settings::Address& a, sockaddr_storage& ss, socklen_t& len) {
    upstream::Endpoint ep;
    if (!upstream::resolveEndpoint(a, ep)) {
      return false;
    }
    ss = ep.addr;
    len = ep.addr_len;
    return true;
  }

  event::BasePtr base_;
  // Declared before the contexts whose entries it may hold, so it outlives them.
  event::FlushQueue flush_queue_;
  proxy::ProxyContext ctx_;              // the exchanges'
  downstream::ConnectionContext conns_;  // the connections'
  // What an accept callback is told: its worker and which listener accepted.
  struct AcceptArg {
    Worker* worker = nullptr;
    uint32_t index = 0;
  };
  std::vector<AcceptArg> accept_args_;  // sized once in bind(), before any listener exists
  std::vector<event::ListenerPtr> listeners_;
  event::EventPtr retry_;
  event::EventPtr control_;
  int control_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace gw::server
