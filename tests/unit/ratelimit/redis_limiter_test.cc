// Unit tests for ratelimit/ RedisLimiter against a real redis-server started on a free
// loopback port (killed by RAII at the end): two limiters sharing one key as two replicas
// would, the script's SHA-1 and key expiry, cancel(), and the on_error outcomes when Redis
// stalls (SIGSTOP) or dies (SIGKILL) mid-run — each within timeout + 50 ms, with the loop
// never blocked. Every loop here is bounded in count and time.

#include "gateway/ratelimit/redis_limiter.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch.hpp>
#include <chrono>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "gateway/core/clock.h"
#include "gateway/event/owners.h"

extern char** environ;

namespace gw::ratelimit {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

std::optional<std::string> findRedisServer() {
  const char* path = std::getenv("PATH");
  std::string dirs = path != nullptr ? path : "/usr/bin:/bin";
  dirs += ":/usr/bin:/usr/sbin:/usr/local/bin";
  size_t start = 0;
  while (start <= dirs.size()) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) {
      end = dirs.size();
    }
    std::string candidate = dirs.substr(start, end - start) + "/redis-server";
    if (end > start && access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    start = end + 1;
  }
  return std::nullopt;
}

// A port that was free on 127.0.0.1 a moment ago (bound to :0, read back, closed). redis-server
// cannot bind port 0 and report the port it got, and RedisLimiter speaks TCP only, so this is the
// one way to give it a port; RedisServer::start retries when someone took the port meanwhile.
uint16_t pickPort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  uint16_t port = 0;
  if (fd >= 0 && bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
    port = ntohs(a.sin_port);
  }
  if (fd >= 0) {
    close(fd);
  }
  return port;
}

struct SyncRedisDeleter {
  void operator()(redisContext* c) const noexcept { redisFree(c); }
};
using SyncRedis = std::unique_ptr<redisContext, SyncRedisDeleter>;
struct ReplyDeleter {
  void operator()(redisReply* r) const noexcept { freeReplyObject(r); }
};
using Reply = std::unique_ptr<redisReply, ReplyDeleter>;

// A throwaway redis-server: no persistence, loopback only, SIGKILLed when destroyed.
class RedisServer {
 public:
  RedisServer() = default;
  RedisServer(const RedisServer&) = delete;
  RedisServer& operator=(const RedisServer&) = delete;
  ~RedisServer() { kill9(); }

  // Starts on a free port and waits (≤ 5 s) until it answers as itself (INFO's process_id is
  // this child's pid: another server that took the port first would answer PING too). A server
  // that exits at start lost the port: up to 5 ports are tried.
  bool start(const std::string& binary, std::string& why) {
    for (int attempt = 0; attempt < 5; ++attempt) {
      port_ = pickPort();
      if (port_ == 0) {
        why = "no free port";
        continue;
      }
      std::string port = std::to_string(port_);
      std::vector<std::string> args = {
          binary,         "--port", port,          "--bind", "127.0.0.1",  "--save", "",
          "--appendonly", "no",     "--daemonize", "no",     "--loglevel", "warning"};
      std::vector<char*> argv;
      for (auto& a : args) {
        argv.push_back(a.data());
      }
      argv.push_back(nullptr);
      posix_spawn_file_actions_t fa;
      posix_spawn_file_actions_init(&fa);
      posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
      posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
      int rc = posix_spawn(&pid_, binary.c_str(), &fa, nullptr, argv.data(), environ);
      posix_spawn_file_actions_destroy(&fa);
      if (rc != 0) {
        pid_ = -1;
        why = "posix_spawn failed";
        return false;
      }
      auto deadline = Clock::now() + std::chrono::seconds(5);
      while (Clock::now() < deadline) {
        if (waitpid(pid_, nullptr, WNOHANG) == pid_) {
          pid_ = -1;  // exited (port taken?): try another port
          why = "redis-server exited at start";
          break;
        }
        if (auto c = connectSync()) {
          Reply r(static_cast<redisReply*>(redisCommand(c.get(), "INFO server")));
          const std::string mine = "\r\nprocess_id:" + std::to_string(pid_) + "\r\n";
          if (r && r->type == REDIS_REPLY_STRING &&
              std::string_view(r->str, r->len).find(mine) != std::string_view::npos) {
            return true;
          }
        }
        std::this_thread::sleep_for(milliseconds(20));
      }
      kill9();
      if (why.empty()) {
        why = "redis-server did not answer as itself within 5 s";
      }
    }
    return false;
  }

  SyncRedis connectSync() const {
    timeval tv{0, 200'000};
    SyncRedis c(redisConnectWithTimeout("127.0.0.1", port_, tv));
    if (!c || c->err != 0) {
      return nullptr;
    }
    redisSetTimeout(c.get(), tv);
    return c;
  }

  // Sends `sig` without waiting (waitpid could stall the caller's loop); kill9() reaps.
  void signal(int sig) {
    if (pid_ > 0) {
      ::kill(pid_, sig);
    }
  }
  void kill9() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  uint16_t port() const { return port_; }

 private:
  pid_t pid_ = -1;
  uint16_t port_ = 0;
};

// Starts a server or fails the test (never skips) when redis-server is missing.
void startOrFail(RedisServer& server) {
  auto binary = findRedisServer();
  if (!binary) {
    FAIL("redis-server not found on PATH: run scripts/setup.sh (installs redis-server)");
  }
  std::string why;
  if (!server.start(*binary, why)) {
    FAIL("could not start redis-server: " << why);
  }
}

// Runs `base` until `done()` or `limit`, whichever first; returns whether done() held.
template <class Done>
bool runUntil(event_base* base, Done done, milliseconds limit) {
  auto deadline = Clock::now() + limit;
  for (int i = 0; i < 100'000 && Clock::now() < deadline; ++i) {
    if (done()) {
      return true;
    }
    event_base_loop(base, EVLOOP_ONCE | EVLOOP_NONBLOCK);
    std::this_thread::sleep_for(std::chrono::microseconds(200));
  }
  return done();
}

// A persistent timer calling `fn` every `period`.
class Ticker {
 public:
  Ticker(event_base* base, milliseconds period, std::function<void()> fn) : fn_(std::move(fn)) {
    ev_.reset(event_new(base, -1, EV_PERSIST, &Ticker::onTick, this));
    timeval tv{0, static_cast<suseconds_t>(period.count() * 1000)};
    event_add(ev_.get(), &tv);
  }
  void stop() { ev_.reset(); }

 private:
  static void onTick(evutil_socket_t, short, void* arg) { static_cast<Ticker*>(arg)->fn_(); }
  std::function<void()> fn_;
  event::EventPtr ev_;
};

TEST_CASE("RedisLimiter: two replicas share one limit in a real Redis",
          "[ratelimit][redis][slow]") {
  RedisServer server;
  startOrFail(server);
  event::BasePtr base(event_base_new());
  REQUIRE(base);
  core::FakeClock fake;
  LocalLimiter fallback(fake);
  // kAllow: a Redis failure would admit everything and break the upper bound below.
  RedisLimiter a(base.get(), "127.0.0.1", server.port(), milliseconds(200),
                 RedisLimiter::OnError::kAllow, fallback);
  RedisLimiter b(base.get(), "127.0.0.1", server.port(), milliseconds(200),
                 RedisLimiter::OnError::kAllow, fallback);
  const Rate r = Rate::make(100, std::chrono::seconds(1), 10);

  int issued = 0;
  int answered = 0;
  int admitted = 0;
  int bad_denials = 0;
  auto count = [&](const Decision& d) {
    ++answered;
    if (d.allowed) {
      ++admitted;
    } else if (d.retry_after <= milliseconds(0) || d.retry_after > milliseconds(10) ||
               d.remaining != 0) {
      ++bad_denials;
    }
  };
  const auto t0 = Clock::now();
  Ticker ticker(base.get(), milliseconds(2), [&] {
    if (Clock::now() - t0 < std::chrono::seconds(2) && issued < 4000) {
      a.check("shared", r, count);
      b.check("shared", r, count);
      issued += 2;
    }
  });
  runUntil(
      base.get(), [&] { return Clock::now() - t0 >= std::chrono::seconds(2); },
      std::chrono::seconds(3));
  ticker.stop();
  const double elapsed = std::chrono::duration<double>(Clock::now() - t0).count();
  REQUIRE(runUntil(
      base.get(), [&] { return answered == issued; }, std::chrono::seconds(2)));
  CHECK(a.connected());
  CHECK(b.connected());
  CHECK(issued > 1000);  // far above the limit, so the limit is what we measure
  const double expected = 10 + 100 * elapsed;
  INFO("admitted " << admitted << " of " << issued << ", expected ~" << expected);
  CHECK(admitted >= expected * 0.8);
  CHECK(admitted <= expected * 1.2);
  CHECK(bad_denials == 0);
  CHECK(fallback.size() == 0);  // never fell back

  // The script Redis caches is ours, and the bucket key expires when the bucket is full.
  auto sync = server.connectSync();
  REQUIRE(sync);
  Reply sha(
      static_cast<redisReply*>(redisCommand(sync.get(), "SCRIPT LOAD %s", RedisLimiter::script())));
  REQUIRE(sha);
  REQUIRE(sha->type == REDIS_REPLY_STRING);
  CHECK(std::string(sha->str, sha->len) == RedisLimiter::scriptSha1());
  Reply ttl(static_cast<redisReply*>(redisCommand(sync.get(), "PTTL gw:rl:shared")));
  REQUIRE(ttl);
  REQUIRE(ttl->type == REDIS_REPLY_INTEGER);
  CHECK(ttl->integer > 0);
  CHECK(ttl->integer <= 100);  // at most burst * interval = 100 ms
}

TEST_CASE("RedisLimiter: cancel() drops the callback, remaining counts down",
          "[ratelimit][redis]") {
  RedisServer server;
  startOrFail(server);
  event::BasePtr base(event_base_new());
  core::FakeClock fake;
  LocalLimiter fallback(fake);
  RedisLimiter lim(base.get(), "127.0.0.1", server.port(), milliseconds(500),
                   RedisLimiter::OnError::kDeny, fallback);
  const Rate r = Rate::make(1, std::chrono::minutes(1), 3);
  std::vector<Decision> got;
  bool cancelled_ran = false;
  uint64_t h1 = lim.check("k", r, [&](const Decision& d) { got.push_back(d); });
  uint64_t h2 = lim.check("other", r, [&](const Decision&) { cancelled_ran = true; });
  CHECK(h1 != 0);
  CHECK(h2 != h1);
  CHECK(got.empty());  // never synchronous
  lim.cancel(h2);
  lim.cancel(12345);  // unknown: ignored
  for (int i = 0; i < 3; ++i) {
    lim.check("k", r, [&](const Decision& d) { got.push_back(d); });
  }
  REQUIRE(runUntil(
      base.get(), [&] { return got.size() == 4; }, std::chrono::seconds(3)));
  CHECK_FALSE(cancelled_ran);
  CHECK(lim.pending() == 0);
  CHECK(got[0].allowed);
  CHECK(got[0].remaining == 2);
  CHECK(got[0].reset == milliseconds(60'000));
  CHECK(got[1].remaining == 1);
  CHECK(got[2].remaining == 0);
  CHECK_FALSE(got[3].allowed);
  CHECK(got[3].retry_after > milliseconds(59'000));  // Redis' own decision, not kDeny's 1 s
  CHECK(got[3].retry_after <= milliseconds(60'000));
}

struct Sample {
  Clock::time_point issued;
  Clock::time_point answered{};
  bool faulty = false;  // issued after the fault was injected
  std::optional<Decision> d;
};

enum class Fault { kStall, kKill };

// Three limiters (one per on_error mode) on one loop against one server; a check per limiter
// every 5 ms for 1.5 s; at 300 ms the server is stalled (SIGSTOP: connected but silent) or
// killed (SIGKILL: connection reset, reconnects refused). Checks every outcome and its
// latency, and that the loop never stopped ticking.
void runFaultScenario(Fault fault) {
  RedisServer server;
  startOrFail(server);
  event::BasePtr base(event_base_new());
  REQUIRE(base);
  constexpr auto kTimeout = milliseconds(100);
  constexpr auto kFaultAt = milliseconds(300);
  constexpr auto kRunFor = milliseconds(1500);  // spans one reconnect attempt (1 s apart)
  const Rate r = Rate::make(1, std::chrono::seconds(1), 1000);  // never exhausted here
  core::FakeClock fake;  // the fallbacks' time stands still: remaining only counts down
  struct Mode {
    RedisLimiter::OnError on_error;
    const char* key;
    std::unique_ptr<LocalLimiter> fallback;
    std::unique_ptr<RedisLimiter> lim;
    std::vector<Sample> samples;
  };
  Mode modes[3] = {{RedisLimiter::OnError::kLocal, "mode-local", {}, {}, {}},
                   {RedisLimiter::OnError::kAllow, "mode-allow", {}, {}, {}},
                   {RedisLimiter::OnError::kDeny, "mode-deny", {}, {}, {}}};
  for (auto& m : modes) {
    m.fallback = std::make_unique<LocalLimiter>(fake);
    m.lim = std::make_unique<RedisLimiter>(base.get(), "127.0.0.1", server.port(), kTimeout,
                                           m.on_error, *m.fallback);
    m.samples.reserve(1000);
  }

  bool faulty = false;
  const auto t0 = Clock::now();
  auto last_tick = t0;
  Clock::duration max_gap{0};
  Ticker ticker(base.get(), milliseconds(5), [&] {
    const auto now = Clock::now();
    max_gap = std::max(max_gap, now - last_tick);
    last_tick = now;
    if (!faulty && now - t0 >= kFaultAt) {
      server.signal(fault == Fault::kStall ? SIGSTOP : SIGKILL);
      faulty = true;
    }
    if (now - t0 >= kRunFor) {
      return;
    }
    for (auto& m : modes) {
      if (m.samples.size() >= 1000) {
        continue;
      }
      m.samples.push_back(Sample{now, {}, faulty, std::nullopt});
      size_t idx = m.samples.size() - 1;
      auto* samples = &m.samples;
      m.lim->check(m.key, r, [samples, idx](const Decision& d) {
        (*samples)[idx].answered = Clock::now();
        (*samples)[idx].d = d;
      });
    }
  });
  auto all_answered = [&] {
    for (auto& m : modes) {
      for (auto& s : m.samples) {
        if (!s.d) {
          return false;
        }
      }
    }
    return true;
  };
  runUntil(
      base.get(), [&] { return Clock::now() - t0 >= kRunFor; }, std::chrono::seconds(4));
  ticker.stop();
  REQUIRE(runUntil(base.get(), all_answered, std::chrono::seconds(2)));
  REQUIRE(faulty);

  // The loop kept ticking: no check() or failure path waited for Redis.
  INFO("max gap between 5 ms ticks: " << std::chrono::duration_cast<milliseconds>(max_gap).count()
                                      << " ms");
  CHECK(max_gap < milliseconds(75));

  for (auto& m : modes) {
    INFO("key " << m.key);
    int healthy = 0;
    int healthy_allowed = 0;
    int faulty_count = 0;
    Clock::duration worst{0};
    Clock::duration worst_faulty{0};
    std::optional<uint64_t> last_fallback_remaining;
    for (auto& s : m.samples) {
      auto latency = s.answered - s.issued;
      worst = std::max(worst, latency);
      if (!s.faulty) {
        ++healthy;
        healthy_allowed += s.d->allowed ? 1 : 0;
        continue;
      }
      ++faulty_count;
      worst_faulty = std::max(worst_faulty, latency);
      switch (m.on_error) {
        case RedisLimiter::OnError::kAllow:
          CHECK(s.d->allowed);
          CHECK_FALSE(s.d->unavailable);
          break;
        case RedisLimiter::OnError::kDeny:
          CHECK_FALSE(s.d->allowed);
          CHECK(s.d->unavailable);  // the store could not decide: 503, not 429
          CHECK(s.d->retry_after == milliseconds(1000));
          break;
        case RedisLimiter::OnError::kLocal:
          // The fallback's bucket (time frozen): allowed, remaining strictly counting down.
          CHECK(s.d->allowed);
          if (last_fallback_remaining) {
            CHECK(s.d->remaining < *last_fallback_remaining);
          }
          last_fallback_remaining = s.d->remaining;
          break;
      }
    }
    INFO("worst latency " << std::chrono::duration_cast<milliseconds>(worst).count()
                          << " ms, after the fault "
                          << std::chrono::duration_cast<milliseconds>(worst_faulty).count()
                          << " ms");
    CHECK(worst <= kTimeout + milliseconds(50));
    if (fault == Fault::kStall) {
      // Detected by the timeout (nothing else can notice a silent server)...
      CHECK(worst_faulty >= kTimeout - milliseconds(1));
    } else {
      // ...while a reset or refused connection fails without waiting for it.
      CHECK(worst_faulty < kTimeout);
    }
    CHECK(healthy >= 30);
    CHECK(faulty_count >= 150);
    CHECK(healthy_allowed >= healthy - 1);  // Redis answered; at most one in flight at the fault
    if (m.on_error == RedisLimiter::OnError::kLocal) {
      // The next fallback decision continues the same bucket ("gw:rl:" + key).
      REQUIRE(last_fallback_remaining);
      Decision next = m.fallback->check(std::string("gw:rl:") + m.key, r);
      CHECK(next.remaining + 1 == *last_fallback_remaining);
    } else {
      CHECK(m.fallback->size() == 0);
    }
  }
}

TEST_CASE("RedisLimiter: on_error outcomes within timeout + 50 ms when Redis stalls",
          "[ratelimit][redis][slow]") {
  runFaultScenario(Fault::kStall);
}

TEST_CASE("RedisLimiter: on_error outcomes arrive at once when Redis is killed mid-run",
          "[ratelimit][redis][slow]") {
  runFaultScenario(Fault::kKill);
}

}  // namespace
}  // namespace gw::ratelimit
