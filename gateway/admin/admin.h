#pragma once
// admin/: the read-only operator endpoints of a running gateway, served off the data path.
// The admin listener (loopback by default): /healthz, /readyz, /metrics, /config, /explain,
// /pins, /federation; with admin_auth, all but /healthz and /readyz need the Bearer token
// (auth.h).
// It runs on its own thread and event_base with libevent's evhttp (acceptable off the data
// path) and only reads what proxy::Shared publishes: the snapshot, the atomics, the metrics
// registry and (peeking, never spending) the local rate-limit buckets.

#include <cstdint>
#include <memory>
#include <thread>

#include "gateway/event/owners.h"
#include "gateway/proxy/proxy_context.h"
#include "gateway/settings/settings.h"

struct evhttp;
struct evhttp_request;

namespace gw::admin {

class AdminServer {
 public:
  explicit AdminServer(proxy::Shared& shared) : shared_(shared) {}
  ~AdminServer();

  // Binds and starts serving on its own thread. False (with errno-style text in `error`)
  // when the address cannot be bound.
  bool start(const settings::Address& addr, std::string& error);
  void stop();
  // The port start() bound (the one the kernel chose when the address names port 0); 0
  // before a successful start.
  uint16_t port() const noexcept { return port_; }

 private:
  static void onRequest(evhttp_request* req, void* arg);

  proxy::Shared& shared_;
  event::BasePtr base_;
  // Activated by stop(): breaks the loop from inside it, so a stop that comes before the
  // thread reached its loop is not lost (event_base_loopbreak's flag would be).
  event::EventPtr stop_;
  struct evhttp* http_ = nullptr;
  std::thread thread_;
  uint16_t port_ = 0;
};

}  // namespace gw::admin
