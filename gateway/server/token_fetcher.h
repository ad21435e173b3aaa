#pragma once
// server/: the token fetcher — the I/O half of upstreams[].auth and identity.introspection
// (policy/credential_store.h holds the answers). One thread with its own event_base and the
// one outbound HTTP client (client/http_client.h), beside the workers and the JWKS fetcher:
// - the calls requests ask for (a token exchange for a caller, an introspection), made as
//   soon as they are queued, each one POST with the job's timeout;
// - for every upstream with auth type client_credentials in the running configuration, its
//   token: fetched at start (and when a reload brings a new one), refreshed when three
//   quarters of its lifetime have passed, retried after a failure with a doubling backoff
//   (1 s … 60 s). A failed refresh keeps the token in use until it expires.
// Every call is counted and timed (mcp_gateway_token_requests_total,
// mcp_gateway_token_request_duration_seconds); errors are logged with the upstream and the
// OAuth error code, never a token or a secret.

#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gateway/metrics/metrics.h"
#include "gateway/policy/credential_store.h"

namespace gw::server {

class TokenFetcher {
 public:
  // `wanted` lists the client_credentials jobs of the running configuration (called on the
  // fetcher's thread once a second; it must be thread-safe).
  TokenFetcher(metrics::Registry& metrics, std::function<std::vector<policy::TokenJob>()> wanted);
  ~TokenFetcher();  // stops the thread
  TokenFetcher(const TokenFetcher&) = delete;
  TokenFetcher& operator=(const TokenFetcher&) = delete;

  bool start(std::string& error);
  void stop();

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
};

}  // namespace gw::server
