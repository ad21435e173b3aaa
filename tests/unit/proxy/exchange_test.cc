// proxy::Exchange driven in-process, as h2o's loopback connection drives a request: a fake
// downstream stream (records what the exchange encodes, hands it the body), a fake upstream
// (a listener on 127.0.0.1 in the same event loop, scripted per test), and a fake clock. No
// gateway process, no client socket: every outcome the exchange itself decides.

#include "gateway/proxy/exchange.h"

#include <event2/bufferevent.h>
#include <event2/listener.h>
#include <catch.hpp>

#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

#include "gateway/filters/pipeline.h"
#include "gateway/filters/snapshot.h"
#include "gateway/http/parser.h"
#include "gateway/proxy/proxy_context.h"
#include "gateway/upstream/pool.h"
#include "tests/unit/policy/test_util.h"

namespace {

using gw::core::Outcome;
using namespace std::chrono_literals;

// ---- the fake upstream ------------------------------------------------------------------

// Accepts connections on 127.0.0.1:<port> in the test's loop; each complete request (head
// plus Content-Length body) is handed to `respond`, which writes whatever it likes.
class FakeUpstream {
 public:
  using Respond = std::function<void(FakeUpstream&, bufferevent*, const std::string& request)>;

  FakeUpstream(event_base* base, Respond respond) : base_(base), respond_(std::move(respond)) {
    sockaddr_in sin{};
    sin.sin_family = AF_INET;
    sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    listener_.reset(evconnlistener_new_bind(base, &FakeUpstream::onAccept, this,
                                            LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE, 16,
                                            reinterpret_cast<sockaddr*>(&sin), sizeof(sin)));
    REQUIRE(listener_);
    sockaddr_in bound{};
    socklen_t len = sizeof(bound);
    getsockname(evconnlistener_get_fd(listener_.get()), reinterpret_cast<sockaddr*>(&bound), &len);
    port_ = ntohs(bound.sin_port);
  }
  ~FakeUpstream() {
    for (auto& c : conns_) {
      bufferevent_free(c.bev);
    }
  }
  int port() const { return port_; }
  const std::vector<std::string>& requests() const { return requests_; }
  bool sawClose() const { return closes_ > 0; }
  static void send(bufferevent* bev, std::string_view bytes) {
    bufferevent_write(bev, bytes.data(), bytes.size());
  }
  void closeAll() {
    for (auto& c : conns_) {
      bufferevent_free(c.bev);
    }
    conns_.clear();
  }

 private:
  struct Conn {
    bufferevent* bev;
    std::string buf;
  };
  static void onAccept(evconnlistener*, evutil_socket_t fd, sockaddr*, int, void* arg) {
    auto* u = static_cast<FakeUpstream*>(arg);
    bufferevent* bev = bufferevent_socket_new(u->base_, fd, BEV_OPT_CLOSE_ON_FREE);
    u->conns_.push_back(Conn{bev, {}});
    bufferevent_setcb(bev, &FakeUpstream::onRead, nullptr, &FakeUpstream::onEvent, u);
    bufferevent_enable(bev, EV_READ | EV_WRITE);
  }
  Conn* find(bufferevent* bev) {
    for (auto& c : conns_) {
      if (c.bev == bev) {
        return &c;
      }
    }
    return nullptr;
  }
  static void onRead(bufferevent* bev, void* arg) {
    auto* u = static_cast<FakeUpstream*>(arg);
    Conn* c = u->find(bev);
    evbuffer* in = bufferevent_get_input(bev);
    size_t n = evbuffer_get_length(in);
    std::string chunk(n, '\0');
    evbuffer_remove(in, chunk.data(), n);
    c->buf += chunk;
    for (;;) {
      size_t end = c->buf.find("\r\n\r\n");
      if (end == std::string::npos) {
        return;
      }
      size_t length = 0;
      size_t at = c->buf.find("Content-Length: ");
      if (at != std::string::npos && at < end) {
        length = std::stoul(c->buf.substr(at + 16));
      }
      if (c->buf.size() < end + 4 + length) {
        return;
      }
      std::string request = c->buf.substr(0, end + 4 + length);
      c->buf.erase(0, request.size());
      u->requests_.push_back(request);
      u->respond_(*u, bev, request);
    }
  }
  static void onEvent(bufferevent* bev, short what, void* arg) {
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
      auto* u = static_cast<FakeUpstream*>(arg);
      ++u->closes_;
      std::erase_if(u->conns_, [&](const Conn& c) { return c.bev == bev; });
      bufferevent_free(bev);
    }
  }

  event_base* base_;
  Respond respond_;
  gw::event::ListenerPtr listener_;
  int port_ = 0;
  std::vector<Conn> conns_;
  std::vector<std::string> requests_;
  int closes_ = 0;
};

// ---- the fake downstream stream ----------------------------------------------------------

// Written against downstream/stream.h alone, as a second codec (HTTP/2) would be: the
// exchange comes from the StreamFactory and hears everything through StreamCallbacks.
struct FakeStream final : gw::downstream::Stream {
  gw::downstream::StreamCallbacks* x = nullptr;
  std::string client_body;  // the request body the "client" sends when asked
  int status = 0;
  std::string data;  // body bytes encoded for the client
  bool ended = false;
  bool reset = false;
  bool local = false;
  gw::filters::LocalReply reply;
  std::string reply_body;
  size_t buffered = 0;  // pretend this much is queued for a slow client
  bool read_disabled = false;
  std::vector<gw::http::Field> fields;
  std::string fields_text;
  uint64_t in = 0;   // bytesReceived
  uint64_t out = 0;  // bytesSent

  void encodeHeaders(const gw::downstream::ResponseHeaders& h) override {
    status = h.status;
    fields_text.clear();
    for (const auto& f : *h.fields) {
      fields_text += std::string(f.name) + ": " + std::string(f.value) + "\n";
    }
  }
  void encodeData(evbuffer* src, size_t n) override {
    std::string piece(n, '\0');
    evbuffer_remove(src, piece.data(), n);
    data += piece;
    out += n;
  }
  void encodeEnd() override { ended = true; }
  void encodeLocalReply(const gw::filters::LocalReply& r) override {
    local = true;
    reply = r;
    reply_body = gw::filters::renderReplyBody(r);
  }
  void resetStream() override { reset = true; }
  size_t bufferedBytes() const noexcept override { return buffered; }
  void readBody(gw::downstream::BodyRead) override {
    gw::event::EvBufferPtr b = gw::event::makeBuffer();
    evbuffer_add(b.get(), client_body.data(), client_body.size());
    in += client_body.size();
    x->onBodyData(b.get(), client_body.size(), true);
  }
  bool skipBody(std::string* copy) override {
    if (copy != nullptr) {
      *copy = client_body;
    }
    return true;
  }
  void readDisable(bool disable) override { read_disabled = disable; }
  uint64_t bytesReceived() const noexcept override { return in; }
  uint64_t bytesSent() const noexcept override { return out; }
};

// ---- a worker with one snapshot ---------------------------------------------------------

class Harness {
 public:
  Harness() : base_(event_base_new()) {
    shared_.limiter = std::make_unique<gw::ratelimit::LocalLimiter>(clock_);
    w_.base = base_.get();
    w_.shared = &shared_;
    w_.metrics = &shared_.metrics.addWorker();
    w_.parser = gw::http::makeHttp1Parser();
    w_.pools = std::make_unique<gw::upstream::Pools>(base_.get(), 60s);
    w_.clock = &clock_;
    w_.flush_queue = &flush_queue_;
  }
  // One upstream `backend` at 127.0.0.1:<port> (`upstream_extra`: more of its keys), one
  // route to it, `config_tail` appended to gateway.yaml, `policy` as a policy file.
  void configure(int port, const std::string& config_tail = "", const std::string& policy = "",
                 const std::string& upstream_extra = "") {
    std::string yaml =
        "listen: 127.0.0.1:8080\nendpoint: /mcp\nmcp:\n  protocol_versions: [2026-07-28]\n"
        "upstreams:\n  - name: backend\n    endpoints: [127.0.0.1:" +
        std::to_string(port) + "]\n" + upstream_extra +
        "routes:\n  - name: all\n    upstream: backend\n" + config_tail;
    if (!policy.empty()) {
      dir_.write("policy.yaml", policy);
      yaml += "policies: [policy.yaml]\n";
    }
    const std::string path = dir_.write("gateway.yaml", yaml);
    std::vector<gw::settings::Diagnostic> errors;
    auto snap = gw::filters::Snapshot::load(path, nullptr, errors);
    for (const auto& e : errors) {
      UNSCOPED_INFO(e.str());
    }
    REQUIRE(snap);
    shared_.snapshot.store(snap);
  }
  ~Harness() {
    endStream();
    flush_queue_.clear();
    w_.exchanges.clear();
    w_.pools.reset();
    w_.redis.reset();
    w_.retired_redis.clear();
  }

  // Starts a request: `head` is the whole request head, `body` what the client sends. The
  // previous request's exchange goes back to the pool first (as its connection would).
  gw::proxy::Exchange& send(const std::string& head, const std::string& body = "") {
    endStream();
    stream = FakeStream{};
    auto* x = w_.exchanges.newStream(stream, shared_.snapshot.load(), {"127.0.0.1", ""});
    REQUIRE(x != nullptr);
    x_ = static_cast<gw::proxy::Exchange*>(x);
    stream.x = x;
    stream.client_body = body;
    head_buf_ = head;
    gw::http::HeadLimits hl{8192, 65536, 100, 8192};
    auto parser = gw::http::makeHttp1Parser();
    gw::http::RequestHead parsed;
    auto pr = parser->parseRequest(head_buf_, hl, parsed);
    REQUIRE(pr.status == gw::http::ParseStatus::kComplete);
    stream.in = parsed.head_bytes;
    x->onHeaders(parsed, nullptr);
    head_buf_.assign(head_buf_.size(), 'x');  // the exchange keeps its own copy of the head
    return *x_;
  }

  // Runs the loop (and the worker's flush, as the connection would) until `done`, at most
  // `bound` or 100,000 turns.
  // Each turn waits up to 1 ms for an event, so the bound is one of time, not of spins: a
  // spinning loop could use up its count before a 10 ms timer is due (seen on CI).
  void run(const std::function<bool()>& done, std::chrono::milliseconds bound = 2000ms) {
    auto until = std::chrono::steady_clock::now() + bound;
    const timeval turn{0, 1000};
    for (int i = 0; i < 100000 && !done() && std::chrono::steady_clock::now() < until; ++i) {
      event_base_loopexit(base_.get(), &turn);
      event_base_loop(base_.get(), EVLOOP_ONCE);
    }
  }
  void runUntilDone() {
    run([&] { return stream.ended || stream.local || stream.reset; });
  }

  event_base* base() { return base_.get(); }
  gw::core::FakeClock& clock() { return clock_; }
  gw::proxy::ProxyContext& worker() { return w_; }
  FakeStream stream;

 private:
  gw::event::BasePtr base_;
  gw::policy::test::TempDir dir_;
  gw::core::FakeClock clock_;
  gw::proxy::Shared shared_;
  gw::event::FlushQueue flush_queue_;
  gw::proxy::ProxyContext w_;
  gw::proxy::Exchange* x_ = nullptr;
  std::string head_buf_;

  // The request is over: its exchange ends (recorded when it answered, else cancelled) and
  // goes back to the pool.
  void endStream() {
    if (x_ != nullptr) {
      w_.exchanges.endStream(*x_, stream.ended || stream.local);
      x_ = nullptr;
    }
  }
};

std::string toolsCall(const std::string& tool = "echo", size_t body_len = 0,
                      const std::string& extra = "") {
  return "POST /mcp HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
         "Mcp-Method: tools/call\r\nMcp-Name: " +
         tool + "\r\n" + extra + "Content-Length: " + std::to_string(body_len) + "\r\n\r\n";
}

std::string callBody(const std::string& tool = "echo") {
  return R"({"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":")" + tool +
         R"(","arguments":{}}})";
}

const std::string kJsonAnswer = R"({"jsonrpc":"2.0","id":7,"result":{"content":[]}})";

std::string jsonResponse(const std::string& body = kJsonAnswer) {
  return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

void answerJson(FakeUpstream&, bufferevent* bev, const std::string&) {
  FakeUpstream::send(bev, jsonResponse());
}

#ifndef NDEBUG
// Runs `f` in a child process; true when the child died of SIGABRT (a GW_ASSERT), false
// when it returned. Bounded: the child gets 5 s.
bool aborts(const std::function<void()>& f) {
  std::fflush(nullptr);
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    const rlimit no_core{0, 0};
    setrlimit(RLIMIT_CORE, &no_core);
    const int devnull = open("/dev/null", O_WRONLY);
    dup2(devnull, 2);
    alarm(5);
    f();
    _exit(0);
  }
  int st = 0;
  REQUIRE(waitpid(pid, &st, 0) == pid);
  return WIFSIGNALED(st) && WTERMSIG(st) == SIGABRT;
}
#endif

}  // namespace

TEST_CASE("exchange: a tools/call relayed to the upstream and back", "[proxy][exchange]") {
  Harness h;
  FakeUpstream up(h.base(), answerJson);
  h.configure(up.port());
  const std::string body = callBody();
  auto& x = h.send(toolsCall("echo", body.size()), body);
  h.runUntilDone();
  REQUIRE(h.stream.ended);
  CHECK(h.stream.status == 200);
  CHECK(h.stream.data == kJsonAnswer);
  CHECK(x.currentOutcome() == Outcome::kComplete);
  REQUIRE(up.requests().size() == 1);
  const std::string& req = up.requests()[0];
  CHECK(req.rfind("POST /mcp HTTP/1.1\r\n", 0) == 0);  // upstreams[].path
  CHECK(req.find("Mcp-Name: echo\r\n") != std::string::npos);
  CHECK(req.find("X-Forwarded-For: 127.0.0.1\r\n") != std::string::npos);
  CHECK(req.find("Host: 127.0.0.1:" + std::to_string(up.port()) + "\r\n") != std::string::npos);
  CHECK(req.find("Content-Length: " + std::to_string(body.size()) + "\r\n") != std::string::npos);
  CHECK(req.substr(req.size() - body.size()) == body);
  CHECK(h.worker().shared->streams.load() == 0);
}

TEST_CASE("exchange: answers decided before the upstream, from the table", "[proxy][exchange]") {
  struct Row {
    const char* what;
    std::string head;
    int status;
    Outcome outcome;
    std::string req_body = "";  // empty: the tools/call body
  };
  const std::string body = callBody();
  const std::vector<Row> rows = {
      {"a path that is not the endpoint",
       "POST /other HTTP/1.1\r\nHost: gw\r\nContent-Length: 0\r\n\r\n", 404, Outcome::kNotFound},
      {"GET on the endpoint",
       "GET /mcp HTTP/1.1\r\nHost: gw\r\nMCP-Protocol-Version: 2026-07-28\r\n\r\n", 405,
       Outcome::kMethodNotAllowed},
      {"a text/plain body",
       "POST /mcp HTTP/1.1\r\nHost: gw\r\nContent-Type: text/plain\r\n"
       "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nMcp-Name: echo\r\n"
       "Content-Length: " +
           std::to_string(body.size()) + "\r\n\r\n",
       415, Outcome::kUnsupportedMediaType},
      {"an Origin not in allowed_origins",
       "POST /mcp HTTP/1.1\r\nHost: gw\r\nOrigin: http://evil.example\r\n"
       "Content-Type: application/json\r\nMCP-Protocol-Version: 2026-07-28\r\n"
       "Mcp-Method: tools/call\r\nMcp-Name: echo\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n",
       403, Outcome::kOriginForbidden},
      {"more Mcp-Param fields than max_param_headers",
       [&] {
         std::string params;
         for (int i = 0; i < 40; ++i) {
           params += "Mcp-Param-P" + std::to_string(i) + ": v\r\n";
         }
         return toolsCall("echo", body.size(), params);
       }(),
       431, Outcome::kTooManyParamHeaders},
      {"no Mcp-Method and a body that is not JSON (read, then refused)",
       "POST /mcp HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
       "MCP-Protocol-Version: 2026-07-28\r\nContent-Length: 9\r\n\r\n",
       400, Outcome::kBodyInvalid, "not json!"},
      {"tools/call without Mcp-Name",
       "POST /mcp HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n"
       "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\nContent-Length: " +
           std::to_string(body.size()) + "\r\n\r\n",
       400, Outcome::kHeaderMissing},
  };
  for (const Row& r : rows) {
    DYNAMIC_SECTION(r.what) {
      Harness h;
      FakeUpstream up(h.base(), answerJson);
      h.configure(up.port());
      auto& x = h.send(r.head, r.req_body.empty() ? body : r.req_body);
      h.runUntilDone();
      REQUIRE(h.stream.local);
      CHECK(h.stream.reply.status == r.status);
      CHECK(x.currentOutcome() == r.outcome);
      CHECK(gw::core::outcomeInfo(r.outcome).status == r.status);
      CHECK(up.requests().empty());  // decided before any upstream byte
    }
  }
}

TEST_CASE("exchange: upstream failures become 502 and 504 with the request id",
          "[proxy][exchange]") {
  const std::string body = callBody();
  SECTION("refused connect") {
    Harness h;
    int port = 0;
    {
      FakeUpstream closed(h.base(), answerJson);
      port = closed.port();
    }  // nothing listens there any more
    h.configure(port);
    auto& x = h.send(toolsCall("echo", body.size()), body);
    h.runUntilDone();
    REQUIRE(h.stream.local);
    CHECK(h.stream.reply.status == 502);
    CHECK(x.currentOutcome() == Outcome::kConnectFailed);
    CHECK(h.stream.reply_body.find("\"id\":7") != std::string::npos);
  }
  SECTION("closed before answering") {
    Harness h;
    FakeUpstream up(h.base(),
                    [](FakeUpstream& u, bufferevent*, const std::string&) { u.closeAll(); });
    h.configure(up.port());
    auto& x = h.send(toolsCall("echo", body.size()), body);
    h.runUntilDone();
    REQUIRE(h.stream.local);
    CHECK(h.stream.reply.status == 502);
    CHECK(x.currentOutcome() == Outcome::kUpstreamReset);
  }
  SECTION("a malformed response head") {
    Harness h;
    FakeUpstream up(h.base(), [](FakeUpstream&, bufferevent* bev, const std::string&) {
      FakeUpstream::send(bev, "HTTP/1.1 2OO Fine\r\n\r\n");
    });
    h.configure(up.port());
    auto& x = h.send(toolsCall("echo", body.size()), body);
    h.runUntilDone();
    REQUIRE(h.stream.local);
    CHECK(h.stream.reply.status == 502);
    CHECK(x.currentOutcome() == Outcome::kUpstreamMalformed);
  }
  SECTION("an invalid Mcp-Session-Id from the upstream") {
    Harness h;
    FakeUpstream up(h.base(), [](FakeUpstream&, bufferevent* bev, const std::string&) {
      FakeUpstream::send(bev,
                         "HTTP/1.1 200 OK\r\nMcp-Session-Id: a\x01b\r\nContent-Length: 0\r\n\r\n");
    });
    h.configure(up.port());
    auto& x = h.send(toolsCall("echo", body.size()), body);
    h.runUntilDone();
    REQUIRE(h.stream.local);
    CHECK(h.stream.reply.status == 502);
    CHECK(x.currentOutcome() == Outcome::kUpstreamMalformed);
  }
  SECTION("no answer within response_timeout (the fake clock moves, no sleep)") {
    Harness h;
    FakeUpstream up(h.base(), [](FakeUpstream&, bufferevent*, const std::string&) {});
    h.configure(up.port(), "", "", "    response_timeout: 10ms\n");
    auto& x = h.send(toolsCall("echo", body.size()), body);
    h.run([&] { return !up.requests().empty(); });
    REQUIRE(up.requests().size() == 1);
    h.clock().advance(1s);  // far past the deadline: the next timer turn decides
    h.runUntilDone();
    REQUIRE(h.stream.local);
    CHECK(h.stream.reply.status == 504);
    CHECK(x.currentOutcome() == Outcome::kResponseTimeout);
  }
}

TEST_CASE("exchange: the rate-limit stage stops the exchange and resumes it",
          "[proxy][exchange][ratelimit]") {
  const std::string body = callBody();
  const std::string local_policy =
      "rate_limits:\n  - name: per_tool\n    key: [method]\n    rate: 1/min\n";
  SECTION("local: the first call passes, the second is 429 and never reaches the upstream") {
    Harness h;
    FakeUpstream up(h.base(), answerJson);
    h.configure(up.port(), "", local_policy);
    h.send(toolsCall("echo", body.size()), body);
    h.runUntilDone();
    REQUIRE(h.stream.ended);
    h.stream = FakeStream{};
    auto& x = h.send(toolsCall("echo", body.size()), body);
    h.runUntilDone();
    REQUIRE(h.stream.local);
    CHECK(h.stream.reply.status == 429);
    CHECK(x.currentOutcome() == Outcome::kRateLimited);
    CHECK(up.requests().size() == 1);
  }
  for (const char* on_error : {"deny", "allow"}) {
    DYNAMIC_SECTION("redis down, on_error: " << on_error) {
      Harness h;
      FakeUpstream up(h.base(), answerJson);
      int dead = 0;
      {
        FakeUpstream gone(h.base(), answerJson);
        dead = gone.port();
      }
      h.configure(up.port(), "",
                  "redis:\n  address: 127.0.0.1:" + std::to_string(dead) +
                      "\n  on_error: " + on_error +
                      "\n  timeout: 50ms\nrate_limits:\n  - name: shared\n    key: [method]\n"
                      "    rate: 100/min\n    backend: redis\n");
      auto& x = h.send(toolsCall("echo", body.size()), body);
      // Stopped: nothing decided until the store answers (here: fails).
      CHECK_FALSE(h.stream.local);
      CHECK_FALSE(h.stream.ended);
      h.runUntilDone();
      if (std::string(on_error) == "deny") {
        REQUIRE(h.stream.local);
        CHECK(h.stream.reply.status == 503);
        CHECK(x.currentOutcome() == Outcome::kRateLimitUnavailable);
        CHECK(up.requests().empty());
      } else {
        REQUIRE(h.stream.ended);  // resumed: on to the upstream
        CHECK(h.stream.status == 200);
        CHECK(up.requests().size() == 1);
      }
    }
  }
}

namespace {

std::string sseHead() {
  return "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
}

std::string chunk(const std::string& data) {
  char size[16];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  return size + data + "\r\n";
}

}  // namespace

TEST_CASE("exchange: SSE relay, backpressure and cancellation", "[proxy][exchange][sse]") {
  const std::string body = callBody();
  bufferevent* stream_bev = nullptr;
  Harness h;
  FakeUpstream up(h.base(), [&](FakeUpstream&, bufferevent* bev, const std::string&) {
    stream_bev = bev;
    FakeUpstream::send(bev, sseHead() + chunk("data: 1\n\n"));
  });
  h.configure(up.port());
  auto& x = h.send(toolsCall("echo", body.size()), body);
  h.run([&] { return h.stream.data == "data: 1\n\n"; });
  REQUIRE(h.stream.status == 200);
  CHECK(h.stream.fields_text.find("X-Accel-Buffering: no\n") != std::string::npos);
  CHECK(h.stream.data == "data: 1\n\n");

  SECTION("a slow client pauses the upstream; below the low mark it resumes") {
    h.stream.buffered = 10 * 1024 * 1024;  // the client stopped reading
    FakeUpstream::send(stream_bev, chunk("data: 2\n\n"));
    h.run([&] { return h.stream.data.size() > 9; });
    CHECK(h.stream.data == "data: 1\n\ndata: 2\n\n");  // what was read is relayed...
    FakeUpstream::send(stream_bev, chunk("data: 3\n\n"));
    h.run([] { return false; }, 200ms);  // ...but the upstream is not read any more
    CHECK(h.stream.data == "data: 1\n\ndata: 2\n\n");
    h.stream.buffered = 0;
    x.onBelowLowWatermark();
    h.run([&] { return h.stream.data.size() > 18; });
    CHECK(h.stream.data == "data: 1\n\ndata: 2\n\ndata: 3\n\n");
  }
  SECTION("the client going away cancels: the upstream connection is closed") {
    x.onStreamReset(Outcome::kClientClosed);
    CHECK(x.currentOutcome() == Outcome::kClientClosed);
    h.run([&] { return up.sawClose(); });
    CHECK(up.sawClose());
    CHECK(h.worker().shared->streams.load() == 0);
  }
  SECTION("the upstream resetting mid-stream cuts the answer") {
    up.closeAll();
    h.runUntilDone();
    CHECK(h.stream.reset);
    CHECK(x.currentOutcome() == Outcome::kUpstreamReset);
  }
  SECTION("a malformed chunk cuts the answer after what came before it") {
    FakeUpstream::send(stream_bev, chunk("data: 2\n\n") + "zz\r\n");
    h.runUntilDone();
    CHECK(h.stream.reset);
    CHECK(h.stream.data == "data: 1\n\ndata: 2\n\n");
    CHECK(x.currentOutcome() == Outcome::kUpstreamBadChunk);
  }
  SECTION("the last chunk completes the exchange") {
    FakeUpstream::send(stream_bev, chunk("data: 2\n\n") + "0\r\n\r\n");
    h.runUntilDone();
    CHECK(h.stream.ended);
    CHECK(x.currentOutcome() == Outcome::kComplete);
  }
}

TEST_CASE("exchange: the answer's own timeouts cut it (fake clock)", "[proxy][exchange][sse]") {
  const std::string body = callBody();
  struct Row {
    const char* what;
    const char* keys;
    Outcome outcome;
  };
  const std::vector<Row> rows = {
      {"stream_idle_timeout", "    stream_idle_timeout: 10ms\n", Outcome::kStreamIdleTimeout},
      {"max_duration", "    max_duration: 10ms\n", Outcome::kMaxDuration},
  };
  for (const Row& r : rows) {
    DYNAMIC_SECTION(r.what) {
      Harness h;
      FakeUpstream up(h.base(), [](FakeUpstream&, bufferevent* bev, const std::string&) {
        FakeUpstream::send(bev, sseHead() + chunk("data: 1\n\n"));
      });
      h.configure(up.port(), "", "", r.keys);
      auto& x = h.send(toolsCall("echo", body.size()), body);
      h.run([&] { return h.stream.data == "data: 1\n\n"; });
      REQUIRE(h.stream.status == 200);
      h.clock().advance(1s);  // the stream went quiet (and old) on the fake clock
      h.runUntilDone();
      CHECK(h.stream.reset);
      CHECK(x.currentOutcome() == r.outcome);
      CHECK(h.stream.status == 200);  // the status that was relayed
    }
  }
}

TEST_CASE("exchange: more answers given without the upstream", "[proxy][exchange]") {
  const std::string body = callBody();
  SECTION("413: a Content-Length over max_body_bytes") {
    Harness h;
    FakeUpstream up(h.base(), answerJson);
    h.configure(up.port(), "limits:\n  max_body_bytes: 16\n");
    auto& x = h.send(toolsCall("echo", body.size()), body);
    REQUIRE(h.stream.local);
    CHECK(h.stream.reply.status == 413);
    CHECK(x.currentOutcome() == Outcome::kBodyTooLarge);
  }
  SECTION("403: a policy rule denies the tool") {
    Harness h;
    FakeUpstream up(h.base(), answerJson);
    h.configure(up.port(), "",
                "rules:\n  - name: no-delete\n    match: { method: tools/call, name: delete_all }\n"
                "    action: deny\n");
    auto& x = h.send(toolsCall("delete_all", body.size()), callBody("delete_all"));
    h.runUntilDone();
    REQUIRE(h.stream.local);
    CHECK(h.stream.reply.status == 403);
    CHECK(x.currentOutcome() == Outcome::kPolicyDenied);
    CHECK(up.requests().empty());
  }
  SECTION("404: a legacy session id no endpoint issued") {
    Harness h;
    FakeUpstream up(h.base(), answerJson);
    h.configure(up.port());
    auto& x = h.send(
        "GET /mcp HTTP/1.1\r\nHost: gw\r\nAccept: text/event-stream\r\n"
        "Mcp-Session-Id: forged.abc\r\n\r\n");
    h.runUntilDone();
    REQUIRE(h.stream.local);
    CHECK(h.stream.reply.status == 404);
    CHECK(x.currentOutcome() == Outcome::kSessionNotFound);
    CHECK(up.requests().empty());
  }
}

TEST_CASE("exchange: its life is asserted (one start, one answer, nothing after it)",
          "[proxy][exchange]") {
#ifdef NDEBUG
  WARN("GW_ASSERT is compiled out of this build; the Debug (ASan) build runs these checks");
#else
  Harness h;
  FakeUpstream up(h.base(), answerJson);
  h.configure(up.port());
  const std::string body = callBody();
  auto& x = h.send(toolsCall("echo", body.size()), body);
  h.runUntilDone();
  REQUIRE(h.stream.ended);
  CHECK_FALSE(aborts([] {}));  // the check itself can say no
  // Begun again without going back to the pool first.
  CHECK(aborts([&] {
    x.begin(h.worker(), h.stream, h.worker().shared->snapshot.load(), {"::1", ""});
  }));
  // A second answer to a request already answered.
  CHECK(aborts([&] {
    x.onEdgeReply(gw::downstream::EdgeReply{503, -31012, "again", Outcome::kBodyBufferFull});
  }));
  // A stage resumed after the request was answered.
  CHECK(aborts([&] { x.resume(gw::filters::FilterStatus::kContinue); }));
  // A second head for the same request.
  CHECK(aborts([&] {
    gw::http::RequestHead again;
    x.onHeaders(again, nullptr);
  }));
#endif
}

TEST_CASE("exchange: one that ends as answered without an answer is caught (no target)",
          "[proxy][exchange]") {
#ifdef NDEBUG
  WARN("GW_ASSERT is compiled out of this build; the Debug (ASan) build runs these checks");
#else
  Harness h;
  FakeUpstream up(h.base(), [](FakeUpstream&, bufferevent*, const std::string&) {});  // silent
  h.configure(up.port());
  const std::string body = callBody();
  auto& x = h.send(toolsCall("echo", body.size()), body);
  h.run([&] { return !up.requests().empty(); });
  REQUIRE(up.requests().size() == 1);  // it waits on the upstream: nothing was answered
  CHECK(aborts([&] { h.worker().exchanges.endStream(x, true); }));
  // Ended as cancelled (the client left) it is fine.
  CHECK_FALSE(aborts([&] { h.worker().exchanges.endStream(x, false); }));
#endif
}

TEST_CASE("exchange: each Redis the servers' policies name keeps its own limiter",
          "[proxy][redis][servers]") {
  Harness h;
  gw::proxy::ProxyContext& w = h.worker();
  auto settingsFor = [](uint16_t port) {
    gw::policy::RedisSettings rs;
    rs.present = true;
    rs.host = "127.0.0.1";
    rs.port = port;
    return rs;
  };
  gw::ratelimit::RedisLimiter& a = w.redisFor(settingsFor(1));
  gw::ratelimit::RedisLimiter& b = w.redisFor(settingsFor(2));
  CHECK(&a != &b);
  // Requests alternating between two servers reuse both: nothing is made again.
  for (int i = 0; i < 10; ++i) {
    CHECK(&w.redisFor(settingsFor(1)) == &a);
    CHECK(&w.redisFor(settingsFor(2)) == &b);
  }
  CHECK(w.retired_redis.size() == 1);
  // Settings no server names any more (reloads) are let go once idle, beyond kRedisKept.
  for (uint16_t port = 10; port < 30; ++port) {
    w.redisFor(settingsFor(port));
  }
  CHECK(w.retired_redis.size() <= gw::proxy::ProxyContext::kRedisKept);
}
