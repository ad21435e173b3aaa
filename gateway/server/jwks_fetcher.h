#pragma once
// server/: the JWKS fetcher — the I/O half of identity.jwt.jwks_url (policy/jwks_source.h
// holds the keys). One thread with its own event_base, beside the workers: every live
// JwksSource is fetched at start (the first tick), then again after its refresh interval
// (jwks_refresh, or a shorter Cache-Control max-age, never under 30 s), or sooner when a token
// named a kid the set lacks (at most once per 30 s per source). A fetch is one GET, made by
// client::HttpClient on the fetcher's loop, over HTTPS (SNI, the certificate verified against
// jwks_ca or the system store, the host name checked), HTTP/1.1 with `Connection: close`, 200 only,
// at most 1 MiB, 10 s in all; the body goes through parseJwks and is published whole. A failed
// fetch keeps the last good set and is retried after 30 s. Every fetch is counted
// (mcp_gateway_jwks_fetches_total).

#include <memory>
#include <thread>

#include "gateway/metrics/metrics.h"

namespace gw::server {

class JwksFetcher {
 public:
  explicit JwksFetcher(metrics::Registry& metrics);
  ~JwksFetcher();  // stops the thread
  JwksFetcher(const JwksFetcher&) = delete;
  JwksFetcher& operator=(const JwksFetcher&) = delete;

  // Starts the thread; false with `error` when the event loop cannot be made.
  bool start(std::string& error);
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
};

}  // namespace gw::server
