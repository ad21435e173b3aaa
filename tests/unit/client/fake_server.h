#pragma once
// Test helpers for client::HttpClient: bounded loop runs, certificates made at test time by
// the openssl CLI, and a fake HTTP/1.1 server (plain or TLS) on 127.0.0.1 port 0, driven on
// the caller's event loop.

#include <arpa/inet.h>
#include <event2/bufferevent_ssl.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include <catch.hpp>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "gateway/event/owners.h"

namespace gw::client::test {

using namespace std::chrono_literals;

// Runs the loop until `done` or 5 s (at most 20000 turns).
template <class Pred>
bool runUntil(event_base* base, Pred done, std::chrono::milliseconds limit = 5000ms) {
  const auto end = std::chrono::steady_clock::now() + limit;
  for (int i = 0; i < 20000 && !done() && std::chrono::steady_clock::now() < end; ++i) {
    event_base_loop(base, EVLOOP_NONBLOCK);
    std::this_thread::sleep_for(1ms);
  }
  return done();
}

inline void runFor(event_base* base, std::chrono::milliseconds d) {
  runUntil(
      base, [] { return false; }, d);
}

// A CA, a leaf for gw-client.test signed by it, an unrelated CA, and a hosts file that maps
// gw-client.test and other.test to 127.0.0.1. Made once for the whole run.
class Certs {
 public:
  Certs() {
    char tmpl[] = "/tmp/gw-client-unit-XXXXXX";
    const char* d = ::mkdtemp(tmpl);
    REQUIRE(d != nullptr);
    dir_ = d;
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
        "-subj /CN=client-ca -keyout ca.key -out ca.pem");
    run("openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 "
        "-subj /CN=other-ca -keyout other-ca.key -out other-ca.pem");
    run("openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes "
        "-subj /CN=gw-client.test -keyout leaf.key -out leaf.csr");
    std::ofstream(file("leaf.ext")) << "subjectAltName=DNS:gw-client.test\n";
    run("openssl x509 -req -in leaf.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 "
        "-extfile leaf.ext -out leaf.pem");
    std::ofstream(file("hosts")) << "127.0.0.1 gw-client.test\n127.0.0.1 other.test\n";
  }
  ~Certs() {
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }
  std::string file(const std::string& name) const { return dir_ + "/" + name; }

 private:
  void run(const std::string& cmd) const {
    const std::string full = "cd '" + dir_ + "' && " + cmd + " >/dev/null 2>&1";
    REQUIRE(std::system(full.c_str()) == 0);
  }
  std::string dir_;
};

inline const Certs& certs() {
  static const Certs c;
  return c;
}

// The fake server: answers each whole request (head and Content-Length body) with the bytes
// `answer` returns; an empty answer means never answer. Closes after the answer when
// `close_after` says so.
class FakeServer {
 public:
  struct Seen {
    std::string request;
    int connection = 0;  // 1-based, in accept order
  };

  explicit FakeServer(event_base* base, bool tls = false) : base_(base) {
    if (tls) {
      ctx_ = SSL_CTX_new(TLS_server_method());
      REQUIRE(ctx_ != nullptr);
      REQUIRE(SSL_CTX_use_certificate_chain_file(ctx_, certs().file("leaf.pem").c_str()) == 1);
      REQUIRE(SSL_CTX_use_PrivateKey_file(ctx_, certs().file("leaf.key").c_str(),
                                          SSL_FILETYPE_PEM) == 1);
    }
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sin.sin_port = 0;
    listener_.reset(evconnlistener_new_bind(base, &FakeServer::onAccept, this,
                                            LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
                                            reinterpret_cast<sockaddr*>(&sin), sizeof(sin)));
    REQUIRE(listener_ != nullptr);
    sockaddr_in bound{};
    socklen_t len = sizeof(bound);
    REQUIRE(getsockname(evconnlistener_get_fd(listener_.get()), reinterpret_cast<sockaddr*>(&bound),
                        &len) == 0);
    port_ = ntohs(bound.sin_port);
  }
  ~FakeServer() {
    peers_.clear();
    listener_.reset();
    SSL_CTX_free(ctx_);
  }

  uint16_t port() const { return port_; }
  // Closes every connection now, without waiting for the loop.
  void closeAll() {
    closed += static_cast<int>(peers_.size());
    peers_.clear();
  }
  std::string url(const std::string& path, const std::string& host = "127.0.0.1") const {
    return std::string(ctx_ != nullptr ? "https://" : "http://") + host + ":" +
           std::to_string(port_) + path;
  }

  std::function<std::string(const std::string& request)> answer = [](const std::string&) {
    return std::string("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  };
  bool close_after = false;
  int connections = 0;
  int closed = 0;
  std::vector<Seen> seen;
  std::vector<std::string> sni;  // the server name each TLS connection sent ("" for none)

 private:
  struct Peer {
    FakeServer* server = nullptr;
    event::BufferEventPtr bev;
    std::string buf;
    int number = 0;
    bool closing = false;
    bool named = false;
  };

  static void onAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
    auto* self = static_cast<FakeServer*>(arg);
    auto peer = std::make_unique<Peer>();
    peer->server = self;
    peer->number = ++self->connections;
    if (self->ctx_ != nullptr) {
      SSL* ssl = SSL_new(self->ctx_);
      peer->bev.reset(bufferevent_openssl_socket_new(
          self->base_, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE));
    } else {
      peer->bev.reset(bufferevent_socket_new(self->base_, fd, BEV_OPT_CLOSE_ON_FREE));
    }
    bufferevent_setcb(peer->bev.get(), &FakeServer::onRead, &FakeServer::onWrite,
                      &FakeServer::onEvent, peer.get());
    bufferevent_enable(peer->bev.get(), EV_READ | EV_WRITE);
    self->peers_.push_back(std::move(peer));
  }

  static void onRead(bufferevent* bev, void* arg) {
    auto* p = static_cast<Peer*>(arg);
    FakeServer* self = p->server;
    if (self->ctx_ != nullptr && !p->named) {
      p->named = true;
      const char* name =
          SSL_get_servername(bufferevent_openssl_get_ssl(bev), TLSEXT_NAMETYPE_host_name);
      self->sni.emplace_back(name != nullptr ? name : "");
    }
    evbuffer* in = bufferevent_get_input(bev);
    const size_t n = evbuffer_get_length(in);
    const size_t at = p->buf.size();
    p->buf.resize(at + n);
    evbuffer_remove(in, p->buf.data() + at, n);
    while (true) {
      const size_t end = p->buf.find("\r\n\r\n");
      if (end == std::string::npos) {
        return;
      }
      size_t length = 0;
      std::string lower = p->buf.substr(0, end);
      for (char& c : lower) {
        c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      }
      if (size_t cl = lower.find("\r\ncontent-length:"); cl != std::string::npos) {
        length = std::stoul(lower.substr(cl + 17));
      }
      if (p->buf.size() < end + 4 + length) {
        return;
      }
      std::string request = p->buf.substr(0, end + 4 + length);
      p->buf.erase(0, end + 4 + length);
      self->seen.push_back({request, p->number});
      const std::string out = self->answer(request);
      if (out.empty()) {
        continue;
      }
      bufferevent_write(bev, out.data(), out.size());
      if (self->close_after) {
        p->closing = true;
      }
    }
  }

  static void onWrite(bufferevent* bev, void* arg) {
    auto* p = static_cast<Peer*>(arg);
    if (p->closing && evbuffer_get_length(bufferevent_get_output(bev)) == 0) {
      p->server->drop(p);
    }
  }

  static void onEvent(bufferevent*, short what, void* arg) {
    if ((what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) != 0) {
      auto* p = static_cast<Peer*>(arg);
      p->server->drop(p);
    }
  }

  void drop(Peer* p) {
    ++closed;
    peers_.remove_if([p](const std::unique_ptr<Peer>& q) { return q.get() == p; });
  }

  event_base* base_;
  SSL_CTX* ctx_ = nullptr;
  event::ListenerPtr listener_;
  uint16_t port_ = 0;
  std::list<std::unique_ptr<Peer>> peers_;
};

}  // namespace gw::client::test
