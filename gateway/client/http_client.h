#pragma once
// client/: the gateway's one outbound HTTP/1.1 client, for the documents and calls it makes
// for itself (the JWKS of identity.jwt.jwks_url today; token exchange, introspection, health
// checks and trace export next) — never for relayed traffic, which upstream/ carries.
//
// Asynchronous, on one event_base: send() queues a request and returns at once; the callback
// runs later on the loop, exactly once, unless the request is cancelled first. Each request:
// its host resolved through the given evdns_base, a TCP connect, for https a TLS handshake
// (SNI and the certificate verified against the request's CA file or the system store, for
// the URL's host name; tls/), the request written whole, the response read whole into memory
// (http/whole_response.h: Content-Length, chunked, or until the close; 1xx skipped; no body
// after HEAD, 204, 304), limited by connect_timeout, total_timeout and max_body_bytes.
// A request with keep_alive reuses an idle connection to the same scheme, host, port and CA
// file (or TLS context), and gives its connection back after a clean response that leaves it open;
// a request on a reused connection that closes before any answer byte is retried once on a new one
// when its method is idempotent. Nothing here throws.
//
// Limits: the response is held in memory (for small documents, not streams); no proxies,
// no redirects followed, no request body streaming, no HTTP/2; no cap on concurrent
// connections (callers send few requests).

#include <event2/dns.h>
#include <event2/event.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "gateway/client/request.h"
#include "gateway/tls/tls.h"

namespace gw::client {

// Runs on the loop; may send() and cancel() other requests, and may destroy the client.
using Callback = std::move_only_function<void(Result&&)>;

class HttpClient {
 public:
  struct Options {
    size_t max_idle_per_origin = 4;                 // idle connections kept per scheme+host+port
    std::chrono::milliseconds idle_timeout{30000};  // an idle connection is closed after this
    size_t max_head_bytes = 16 * 1024;              // the response head (status line and fields)
  };

  // `base` and `dns` must outlive the client. `dns` may be null: then only IP literals (and
  // whatever a blocking getaddrinfo answers) can be reached; pass one to resolve names
  // without blocking the loop.
  HttpClient(event_base* base, evdns_base* dns);
  HttpClient(event_base* base, evdns_base* dns, Options options);
  // Requests in flight end without their callbacks; idle connections are closed.
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Queues `req`; `done` runs on the loop once it ends (never from inside send(), even when
  // the request is refused at once). Returns the request's handle, never 0.
  uint64_t send(Request req, Callback done);
  // Stops a request in flight: its connection is closed and its callback never runs. False
  // when `handle` is not in flight (it has ended, or never was).
  bool cancel(uint64_t handle) noexcept;

  size_t inFlight() const noexcept { return exchanges_.size(); }
  size_t idleConnections() const noexcept;

  struct Conn;
  struct Exchange;

 private:
  friend struct Exchange;
  friend struct Conn;

  void start(Exchange& ex);
  void connectFresh(Exchange& ex);
  static void attach(Exchange& ex);
  void onConnectTimer(Exchange& ex);
  // The raw response bytes an exchange may hold: head, body and chunk framing.
  size_t rawCap(const Exchange& ex) const noexcept;
  void onRead(Exchange& ex);
  void onEvent(Exchange& ex, short what);
  void parse(Exchange& ex, bool eof);
  void complete(Exchange& ex, size_t consumed, bool eof, bool keep_open, Response&& resp);
  // Ends `ex`: it leaves the map and is freed (its connection closed unless already taken),
  // then its callback runs with `result`. Nothing may touch `this` afterwards.
  void finish(Exchange& ex, Result result);
  void fail(Exchange& ex, Error e, std::string reason);
  void park(std::unique_ptr<Conn> conn);
  void dropIdle(Conn& conn) noexcept;
  tls::ContextPtr contextFor(const std::string& ca_file, std::string& error);

  event_base* base_;
  evdns_base* dns_;
  Options options_;
  uint64_t next_handle_ = 1;
  std::unordered_map<uint64_t, std::unique_ptr<Exchange>> exchanges_;
  // Idle connections by origin ("https://host:port ca_file"), the most recently parked last.
  std::unordered_map<std::string, std::vector<std::unique_ptr<Conn>>> idle_;
  std::map<std::string, tls::ContextPtr> contexts_;  // by CA file; made on first use
};

}  // namespace gw::client
