// client/: the outbound HTTP/1.1 client (see http_client.h).

#include "gateway/client/http_client.h"

#include <event2/bufferevent_ssl.h>
#include <openssl/ssl.h>

#include <algorithm>
#include <optional>
#include <utility>

#include "gateway/core/ascii.h"
#include "gateway/event/owners.h"
#include "gateway/http/whole_response.h"
#include "gateway/upstream/pool.h"

namespace gw::client {

namespace {

// Raw bytes kept beyond head and body: chunk framing. A chunked body whose framing
// outweighs this is refused as too large.
constexpr size_t kFramingSlack = 64 * 1024;

bool idempotent(std::string_view method) noexcept {
  return method == "GET" || method == "HEAD" || method == "PUT" || method == "DELETE" ||
         method == "OPTIONS" || method == "TRACE";
}

bool validValue(std::string_view v) noexcept {
  for (char c : v) {
    if (!core::isFieldValueChar(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return v.empty() || (!core::isOws(v.front()) && !core::isOws(v.back()));
}

// Fields the client writes itself.
bool reserved(std::string_view name) noexcept {
  return core::iequals(name, "host") || core::iequals(name, "content-length") ||
         core::iequals(name, "transfer-encoding") || core::iequals(name, "connection") ||
         core::iequals(name, "content-type");
}

// Whether a Connection field value lists `close`.
bool listsClose(std::string_view v) noexcept {
  while (!v.empty()) {
    const size_t comma = v.find(',');
    std::string_view item = v.substr(0, comma);
    while (!item.empty() && core::isOws(item.front())) {
      item.remove_prefix(1);
    }
    while (!item.empty() && core::isOws(item.back())) {
      item.remove_suffix(1);
    }
    if (core::iequals(item, "close")) {
      return true;
    }
    v = comma == std::string_view::npos ? std::string_view() : v.substr(comma + 1);
  }
  return false;
}

std::string millis(std::chrono::milliseconds d) {
  return std::to_string(d.count()) + " ms";
}

}  // namespace

// One connection: in use by an Exchange, or idle in the pool.
struct HttpClient::Conn {
  HttpClient* client = nullptr;
  event::BufferEventPtr bev;
  std::string origin;
  event::EventPtr idle_timer;  // armed while idle
};

// One request in flight; owned by exchanges_.
struct HttpClient::Exchange {
  enum class Phase : uint8_t { kQueued, kConnecting, kSent };

  HttpClient* client = nullptr;
  uint64_t handle = 0;
  Request req;
  Url url;
  std::string origin;
  std::string wire;  // the request as sent
  Callback done;
  std::unique_ptr<Conn> conn;
  event::EventPtr total;  // total_timeout
  event::EventPtr step;   // activated by send() to start; then the connect timeout
  Phase phase = Phase::kQueued;
  Error refused = Error::kNone;  // found by send(), reported from start()
  std::string refused_reason;
  std::string bytes;  // the response so far
  bool head = false;
  bool reused = false;
  bool retried = false;
};

HttpClient::HttpClient(event_base* base, evdns_base* dns) : HttpClient(base, dns, Options{}) {}

HttpClient::HttpClient(event_base* base, evdns_base* dns, Options options)
    : base_(base), dns_(dns), options_(options) {}

HttpClient::~HttpClient() {
  exchanges_.clear();
  idle_.clear();
}

size_t HttpClient::idleConnections() const noexcept {
  size_t n = 0;
  for (const auto& [origin, conns] : idle_) {
    n += conns.size();
  }
  return n;
}

uint64_t HttpClient::send(Request req, Callback done) {
  auto owned = std::make_unique<Exchange>();
  Exchange& ex = *owned;
  ex.client = this;
  ex.handle = next_handle_++;
  ex.done = std::move(done);
  ex.req = std::move(req);
  ex.head = ex.req.method == "HEAD";
  std::string error;
  if (!parseUrl(ex.req.url, ex.url, error)) {
    ex.refused = Error::kInvalidRequest;
    ex.refused_reason = error;
  } else if (ex.req.method.empty() || !core::isToken(ex.req.method)) {
    ex.refused = Error::kInvalidRequest;
    ex.refused_reason = "invalid method";
  }
  std::string& w = ex.wire;
  w = ex.req.method + ' ' + ex.url.target + " HTTP/1.1\r\nHost: " + ex.url.authority() + "\r\n";
  bool agent = false;
  for (const auto& [name, value] : ex.req.headers) {
    if (!core::isToken(name) || reserved(name) || !validValue(value)) {
      ex.refused = Error::kInvalidRequest;
      ex.refused_reason = "header field not allowed: " + name;
      break;
    }
    agent = agent || core::iequals(name, "user-agent");
    w += name + ": " + value + "\r\n";
  }
  if (!agent) {
    w += "User-Agent: mcp-gateway\r\n";
  }
  if (!ex.req.content_type.empty()) {
    if (!validValue(ex.req.content_type)) {
      ex.refused = Error::kInvalidRequest;
      ex.refused_reason = "invalid content type";
    }
    w += "Content-Type: " + ex.req.content_type + "\r\n";
  }
  const std::string_view m = ex.req.method;
  if (!ex.req.body.empty() || m == "POST" || m == "PUT" || m == "PATCH") {
    w += "Content-Length: " + std::to_string(ex.req.body.size()) + "\r\n";
  }
  if (!ex.req.keep_alive) {
    w += "Connection: close\r\n";
  }
  w += "\r\n";
  w += ex.req.body;
  ex.req.body.clear();
  ex.origin = std::string(ex.url.https ? "https://" : "http://") + ex.url.authority() + ' ';
  if (ex.req.tls_context != nullptr) {
    // Connections made with one context are pooled apart from any other's.
    ex.origin += "context:" + std::to_string(reinterpret_cast<uintptr_t>(ex.req.tls_context.get()));
  } else {
    ex.origin += ex.req.ca_file;
  }

  ex.total.reset(evtimer_new(
      base_,
      [](evutil_socket_t, short, void* arg) {
        auto& x = *static_cast<Exchange*>(arg);
        x.client->fail(x, Error::kTimeout,
                       "no complete answer within " + millis(x.req.total_timeout));
      },
      &ex));
  ex.step.reset(evtimer_new(
      base_,
      [](evutil_socket_t, short, void* arg) {
        auto& x = *static_cast<Exchange*>(arg);
        if (x.phase == Exchange::Phase::kQueued) {
          x.client->start(x);
        } else {
          x.client->onConnectTimer(x);
        }
      },
      &ex));
  const uint64_t handle = ex.handle;
  if (ex.total == nullptr || ex.step == nullptr) {
    // Out of memory: nothing can report it later; the request is dropped unanswered.
    return handle;
  }
  const timeval limit = event::toTimeval(ex.req.total_timeout);
  evtimer_add(ex.total.get(), &limit);
  event_active(ex.step.get(), EV_TIMEOUT, 0);
  exchanges_.emplace(handle, std::move(owned));
  return handle;
}

bool HttpClient::cancel(uint64_t handle) noexcept {
  auto it = exchanges_.find(handle);
  if (it == exchanges_.end()) {
    return false;
  }
  exchanges_.erase(it);  // frees the exchange, closes its connection
  return true;
}

void HttpClient::start(Exchange& ex) {
  if (ex.refused != Error::kNone) {
    fail(ex, ex.refused, ex.refused_reason);
    return;
  }
  if (ex.req.keep_alive) {
    auto it = idle_.find(ex.origin);
    if (it != idle_.end() && !it->second.empty()) {
      ex.conn = std::move(it->second.back());
      it->second.pop_back();
      if (it->second.empty()) {
        idle_.erase(it);
      }
      event_del(ex.conn->idle_timer.get());
      ex.reused = true;
      ex.phase = Exchange::Phase::kSent;
      bufferevent* bev = ex.conn->bev.get();
      attach(ex);
      bufferevent_write(bev, ex.wire.data(), ex.wire.size());
      bufferevent_enable(bev, EV_READ | EV_WRITE);
      return;
    }
  }
  connectFresh(ex);
}

// The exchange's connection reports to it (reads and events).
void HttpClient::attach(Exchange& ex) {
  bufferevent_setcb(
      ex.conn->bev.get(),
      [](bufferevent*, void* arg) {
        auto& x = *static_cast<Exchange*>(arg);
        x.client->onRead(x);
      },
      nullptr,
      [](bufferevent*, short what, void* arg) {
        auto& x = *static_cast<Exchange*>(arg);
        x.client->onEvent(x, what);
      },
      &ex);
}

void HttpClient::connectFresh(Exchange& ex) {
  constexpr int kOpts = BEV_OPT_CLOSE_ON_FREE | BEV_OPT_DEFER_CALLBACKS;
  auto conn = std::make_unique<Conn>();
  conn->client = this;
  conn->origin = ex.origin;
  if (ex.url.https) {
    std::string error;
    tls::ContextPtr ctx =
        ex.req.tls_context != nullptr ? ex.req.tls_context : contextFor(ex.req.ca_file, error);
    if (ctx == nullptr) {
      fail(ex, Error::kTls, error);
      return;
    }
    SSL* ssl = SSL_new(ctx.get());
    if (ssl == nullptr || !tls::prepareClient(ssl, ex.url.host)) {
      SSL_free(ssl);
      fail(ex, Error::kTls, "cannot set up the TLS connection");
      return;
    }
    // The bufferevent owns `ssl` from here (BEV_OPT_CLOSE_ON_FREE), also when it fails.
    conn->bev.reset(
        bufferevent_openssl_socket_new(base_, -1, ssl, BUFFEREVENT_SSL_CONNECTING, kOpts));
    if (conn->bev != nullptr) {
      bufferevent_openssl_set_allow_dirty_shutdown(conn->bev.get(), 1);
    }
  } else {
    conn->bev.reset(bufferevent_socket_new(base_, -1, kOpts));
  }
  if (conn->bev == nullptr) {
    fail(ex, Error::kConnect, "cannot make a socket");
    return;
  }
  ex.conn = std::move(conn);
  ex.phase = Exchange::Phase::kConnecting;
  bufferevent* bev = ex.conn->bev.get();
  attach(ex);
  const timeval limit = event::toTimeval(ex.req.connect_timeout);
  evtimer_add(ex.step.get(), &limit);
  bufferevent_write(bev, ex.wire.data(), ex.wire.size());
  bufferevent_enable(bev, EV_READ | EV_WRITE);
  if (bufferevent_socket_connect_hostname(bev, dns_, AF_UNSPEC, ex.url.host.c_str(), ex.url.port) !=
      0) {
    if (int dns_error = bufferevent_socket_get_dns_error(bev); dns_error != 0) {
      fail(ex, Error::kDns,
           "cannot resolve " + ex.url.host + ": " + evutil_gai_strerror(dns_error));
      return;
    }
    fail(ex, Error::kConnect, "cannot connect");
  }
}

void HttpClient::onConnectTimer(Exchange& ex) {
  fail(ex, Error::kTimeout, "not connected within " + millis(ex.req.connect_timeout));
}

size_t HttpClient::rawCap(const Exchange& ex) const noexcept {
  return options_.max_head_bytes + ex.req.max_body_bytes +
         std::max(kFramingSlack, ex.req.max_body_bytes);
}

void HttpClient::onRead(Exchange& ex) {
  evbuffer* in = bufferevent_get_input(ex.conn->bev.get());
  const size_t n = evbuffer_get_length(in);
  if (ex.bytes.size() + n > rawCap(ex)) {
    fail(ex, Error::kTooLarge, "response larger than " + std::to_string(rawCap(ex)) + " bytes");
    return;
  }
  const size_t at = ex.bytes.size();
  ex.bytes.resize(at + n);
  evbuffer_remove(in, ex.bytes.data() + at, n);
  parse(ex, false);
}

void HttpClient::onEvent(Exchange& ex, short what) {
  bufferevent* bev = ex.conn->bev.get();
  if ((what & BEV_EVENT_CONNECTED) != 0) {
    if (ex.phase == Exchange::Phase::kConnecting) {
      ex.phase = Exchange::Phase::kSent;
      event_del(ex.step.get());
      upstream::setNoDelay(bufferevent_getfd(bev));
    }
    return;
  }
  if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) == 0) {
    return;
  }
  if (ex.phase == Exchange::Phase::kConnecting) {
    if (int dns_error = bufferevent_socket_get_dns_error(bev); dns_error != 0) {
      fail(ex, Error::kDns,
           "cannot resolve " + ex.url.host + ": " + evutil_gai_strerror(dns_error));
      return;
    }
    if (ex.url.https) {
      if (std::optional<std::string> why = upstream::tlsHandshakeFailure(bev)) {
        fail(ex, Error::kTls, *why);
        return;
      }
    }
    const int err = EVUTIL_SOCKET_ERROR();
    fail(ex, Error::kConnect,
         std::string("cannot connect: ") +
             (err != 0 ? evutil_socket_error_to_string(err) : "connection closed"));
    return;
  }
  evbuffer* in = bufferevent_get_input(bev);
  if (ex.reused && !ex.retried && ex.bytes.empty() && evbuffer_get_length(in) == 0 &&
      idempotent(ex.req.method)) {
    // The idle connection was closed as it was reused: once more, on a new one.
    ex.retried = true;
    ex.reused = false;
    ex.conn.reset();
    connectFresh(ex);
    return;
  }
  // Take what is left, then the close as the end of the response.
  if (const size_t n = evbuffer_get_length(in); n > 0) {
    if (ex.bytes.size() + n > rawCap(ex)) {
      fail(ex, Error::kTooLarge, "response larger than " + std::to_string(rawCap(ex)) + " bytes");
      return;
    }
    const size_t at = ex.bytes.size();
    ex.bytes.resize(at + n);
    evbuffer_remove(in, ex.bytes.data() + at, n);
  }
  parse(ex, true);
}

void HttpClient::parse(Exchange& ex, bool eof) {
  while (true) {
    http::WholeResponse resp;
    std::string error;
    switch (http::readWholeResponse(ex.bytes, eof, options_.max_head_bytes, ex.req.max_body_bytes,
                                    resp, error, ex.head)) {
      case http::WholeResult::kNeedMore:
        return;
      case http::WholeResult::kTooLarge:
        fail(ex, Error::kTooLarge, error);
        return;
      case http::WholeResult::kError:
        fail(ex, Error::kBadResponse, error);
        return;
      case http::WholeResult::kDone:
        break;
    }
    if (resp.status >= 200) {
      const std::string* connection = resp.field("connection");
      const bool keep_open =
          ex.bytes.starts_with("HTTP/1.1") && (connection == nullptr || !listsClose(*connection));
      Response out;
      out.status = resp.status;
      out.headers = std::move(resp.fields);
      out.body = std::move(resp.body);
      complete(ex, resp.consumed, eof, keep_open, std::move(out));
      return;
    }
    if (resp.status == 101) {
      fail(ex, Error::kBadResponse, "101 Switching Protocols without an upgrade asked");
      return;
    }
    ex.bytes.erase(0, resp.consumed);  // an interim 1xx: the final answer follows
  }
}

void HttpClient::complete(Exchange& ex, size_t consumed, bool eof, bool keep_open,
                          Response&& resp) {
  bufferevent* bev = ex.conn->bev.get();
  const bool reusable = ex.req.keep_alive && keep_open && !eof && consumed == ex.bytes.size() &&
                        evbuffer_get_length(bufferevent_get_input(bev)) == 0 &&
                        evbuffer_get_length(bufferevent_get_output(bev)) == 0;
  if (reusable) {
    park(std::move(ex.conn));
  }
  finish(ex, Result{Error::kNone, "", std::move(resp)});
}

void HttpClient::fail(Exchange& ex, Error e, std::string reason) {
  finish(ex, Result{e, std::move(reason), Response{}});
}

void HttpClient::finish(Exchange& ex, Result result) {
  auto it = exchanges_.find(ex.handle);
  std::unique_ptr<Exchange> owned = std::move(it->second);
  exchanges_.erase(it);
  Callback done = std::move(owned->done);
  owned.reset();  // closes the connection unless it was parked; frees the timers
  done(std::move(result));
}

void HttpClient::park(std::unique_ptr<Conn> conn) {
  std::vector<std::unique_ptr<Conn>>& idle = idle_[conn->origin];
  if (idle.size() >= options_.max_idle_per_origin) {
    return;  // closed
  }
  if (conn->idle_timer == nullptr) {
    conn->idle_timer.reset(evtimer_new(
        base_,
        [](evutil_socket_t, short, void* arg) {
          auto& c = *static_cast<Conn*>(arg);
          c.client->dropIdle(c);
        },
        conn.get()));
    if (conn->idle_timer == nullptr) {
      return;
    }
  }
  // Any byte or close while idle ends the connection: nothing is owed on it.
  bufferevent_setcb(
      conn->bev.get(),
      [](bufferevent*, void* arg) {
        auto& c = *static_cast<Conn*>(arg);
        c.client->dropIdle(c);
      },
      nullptr,
      [](bufferevent*, short, void* arg) {
        auto& c = *static_cast<Conn*>(arg);
        c.client->dropIdle(c);
      },
      conn.get());
  bufferevent_enable(conn->bev.get(), EV_READ);
  const timeval limit = event::toTimeval(options_.idle_timeout);
  evtimer_add(conn->idle_timer.get(), &limit);
  idle.push_back(std::move(conn));
}

void HttpClient::dropIdle(Conn& conn) noexcept {
  auto it = idle_.find(conn.origin);
  if (it == idle_.end()) {
    return;
  }
  std::erase_if(it->second, [&conn](const std::unique_ptr<Conn>& c) { return c.get() == &conn; });
  if (it->second.empty()) {
    idle_.erase(it);
  }
}

tls::ContextPtr HttpClient::contextFor(const std::string& ca_file, std::string& error) {
  auto it = contexts_.find(ca_file);
  if (it != contexts_.end()) {
    return it->second;
  }
  tls::ContextPtr ctx = tls::makeClientContext(ca_file, "", "", error);
  if (ctx != nullptr) {
    contexts_.emplace(ca_file, ctx);
  }
  return ctx;
}

}  // namespace gw::client
