// Redis-backed GCRA (see redis_limiter.h). Every request is a Pending with its own timer;
// hiredis replies, failures and timeouts only record an outcome and activate that timer, so
// user callbacks always run from the loop, never inside hiredis (which may be freeing the
// context at the time).

#include "gateway/ratelimit/redis_limiter.h"

#include <hiredis/adapters/libevent.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include <cstring>
#include <string_view>

#include "gateway/core/clock.h"

namespace gw::ratelimit {

namespace {

// KEYS[1] bucket; ARGV[1] emission interval in µs (≥ 1); ARGV[2] burst (≥ 1).
// Returns {allowed, retry_after µs, remaining, reset µs}. TAT is stored in µs since the
// epoch of Redis' TIME (< 2^53, exact in Lua's doubles); the key expires when the bucket is
// full again, which is when it becomes indistinguishable from a missing key.
constexpr char kScript[] =
    "local interval = tonumber(ARGV[1])\n"
    "local tau = interval * tonumber(ARGV[2])\n"
    "local t = redis.call('TIME')\n"
    "local now = tonumber(t[1]) * 1000000 + tonumber(t[2])\n"
    "local tat = tonumber(redis.call('GET', KEYS[1])) or now\n"
    "if tat < now then tat = now end\n"
    "local ahead = tat + interval - now\n"
    "if ahead > tau then\n"
    "  return {0, ahead - tau, 0, tat - now}\n"
    "end\n"
    "redis.call('SET', KEYS[1], string.format('%.0f', tat + interval), 'PX',\n"
    "  math.ceil(ahead / 1000))\n"
    "return {1, 0, math.floor((tau - ahead) / interval), ahead}\n";
// sha1sum of kScript; checked against Redis' SCRIPT LOAD by the unit tests.
constexpr char kScriptSha1[] = "32335712a56f0811da3b71a3c5a2f75771014a87";

constexpr std::string_view kKeyPrefix = "gw:rl:";
constexpr auto kReconnectInterval = std::chrono::seconds(1);

std::chrono::milliseconds usToMsCeil(long long us) noexcept {
  if (us <= 0) {
    return std::chrono::milliseconds(0);
  }
  return std::chrono::milliseconds((us + 999) / 1000);
}

// A {allowed, retry µs, remaining, reset µs} reply → Decision; nullopt if malformed.
std::optional<Decision> parseReply(const redisReply* r) noexcept {
  if (r == nullptr || r->type != REDIS_REPLY_ARRAY || r->elements != 4) {
    return std::nullopt;
  }
  for (size_t i = 0; i < 4; ++i) {
    if (r->element[i]->type != REDIS_REPLY_INTEGER || r->element[i]->integer < 0) {
      return std::nullopt;
    }
  }
  Decision d;
  d.allowed = r->element[0]->integer == 1;
  d.retry_after = usToMsCeil(r->element[1]->integer);
  d.remaining = static_cast<uint64_t>(r->element[2]->integer);
  d.reset = usToMsCeil(r->element[3]->integer);
  return d;
}

}  // namespace

void RedisAsyncDeleter::operator()(redisAsyncContext* c) const noexcept {
  redisAsyncFree(c);
}

const char* RedisLimiter::script() noexcept {
  return kScript;
}
const char* RedisLimiter::scriptSha1() noexcept {
  return kScriptSha1;
}

RedisLimiter::RedisLimiter(event_base* base, std::string host, uint16_t port,
                           std::chrono::milliseconds timeout, OnError on_error,
                           LocalLimiter& fallback)
    : base_(base),
      host_(std::move(host)),
      port_(port),
      timeout_(timeout),
      on_error_(on_error),
      fallback_(fallback) {
  connect();
}

RedisLimiter::~RedisLimiter() {
  pending_.clear();  // replies hiredis flushes below find nothing to deliver to
  ctx_.reset();
}

void RedisLimiter::connect() {
  auto now = core::steadyNow();
  if (attempted_ && now - last_attempt_ < kReconnectInterval) {
    return;
  }
  attempted_ = true;
  last_attempt_ = now;
  RedisAsyncPtr ctx(redisAsyncConnect(host_.c_str(), port_));
  if (!ctx || ctx->err != 0) {
    return;  // e.g. no socket could be made; the owner frees it
  }
  ctx->data = this;
  if (redisLibeventAttach(ctx.get(), base_) != REDIS_OK ||
      redisAsyncSetConnectCallback(ctx.get(), &RedisLimiter::onConnect) != REDIS_OK ||
      redisAsyncSetDisconnectCallback(ctx.get(), &RedisLimiter::onDisconnect) != REDIS_OK) {
    return;
  }
  ctx_ = std::move(ctx);
  state_ = State::kConnecting;
}

void RedisLimiter::onConnect(const redisAsyncContext* ac, int status) {
  auto* self = static_cast<RedisLimiter*>(ac->data);
  if (status == REDIS_OK) {
    self->state_ = State::kConnected;
    return;
  }
  // hiredis frees the context after this returns (and fails its queued commands).
  (void)self->ctx_.release();
  self->state_ = State::kDown;
}

void RedisLimiter::onDisconnect(const redisAsyncContext* ac, int) {
  auto* self = static_cast<RedisLimiter*>(ac->data);
  (void)self->ctx_.release();  // hiredis frees it after this returns
  self->state_ = State::kDown;
  self->last_attempt_ = core::steadyNow();  // next try in a second
}

void RedisLimiter::dropConnection() noexcept {
  state_ = State::kDown;
  last_attempt_ = core::steadyNow();
  // Fails every command still queued (onReply with a null reply) and frees the context.
  ctx_.reset();
}

uint64_t RedisLimiter::check(std::string key, const Rate& r, Callback cb) {
  auto p = std::make_unique<Pending>();
  p->owner = this;
  p->id = next_id_++;
  p->key.reserve(kKeyPrefix.size() + key.size());
  p->key.append(kKeyPrefix).append(key);
  p->rate = r;
  p->cb = std::move(cb);
  p->timer.reset(evtimer_new(base_, &RedisLimiter::onTimer, p.get()));
  Pending& ref = *p;
  const uint64_t id = p->id;
  pending_.emplace(id, std::move(p));
  if (!ref.timer) {
    pending_.erase(id);  // out of memory: see the contract of check()
    return 0;
  }
  timeval tv = event::toTimeval(timeout_);
  evtimer_add(ref.timer.get(), &tv);
  if (!ctx_) {
    connect();
  }
  if (!ctx_ || !send(ref)) {
    fail(ref);
  }
  return id;
}

bool RedisLimiter::send(Pending& p) {
  char interval[24];
  char burst[16];
  int64_t us = p.rate.intervalNs() / 1000;
  std::snprintf(interval, sizeof interval, "%lld", static_cast<long long>(us < 1 ? 1 : us));
  std::snprintf(burst, sizeof burst, "%u", p.rate.effectiveBurst());
  const char* cmd = p.sent_eval ? "EVAL" : "EVALSHA";
  const char* body = p.sent_eval ? kScript : kScriptSha1;
  const char* argv[] = {cmd, body, "1", p.key.c_str(), interval, burst};
  const size_t lens[] = {std::strlen(cmd), std::strlen(body),     1,
                         p.key.size(),     std::strlen(interval), std::strlen(burst)};
  void* priv = reinterpret_cast<void*>(static_cast<uintptr_t>(p.id));
  return redisAsyncCommandArgv(ctx_.get(), &RedisLimiter::onReply, priv, 6, argv, lens) == REDIS_OK;
}

void RedisLimiter::onReply(redisAsyncContext* ac, void* reply, void* privdata) {
  auto* self = static_cast<RedisLimiter*>(ac->data);
  auto it = self->pending_.find(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(privdata)));
  if (it == self->pending_.end() || it->second->result) {
    return;  // cancelled, timed out or already failed
  }
  Pending& p = *it->second;
  auto* r = static_cast<redisReply*>(reply);
  if (r != nullptr && r->type == REDIS_REPLY_ERROR && !p.sent_eval &&
      std::string_view(r->str, r->len).starts_with("NOSCRIPT") &&
      self->state_ == State::kConnected) {
    p.sent_eval = true;
    if (self->send(p)) {
      return;
    }
  }
  if (auto d = parseReply(r)) {
    self->finish(p, *d);
  } else {
    self->fail(p);
  }
}

Decision RedisLimiter::errorOutcome(const Pending& p) noexcept {
  Decision d;
  switch (on_error_) {
    case OnError::kLocal:
      return fallback_.check(p.key, p.rate);
    case OnError::kAllow:
      d.allowed = true;
      return d;
    case OnError::kDeny:
      d.allowed = false;
      d.unavailable = true;
      d.retry_after = std::chrono::seconds(1);
      d.reset = std::chrono::seconds(1);
      return d;
  }
  return d;
}

void RedisLimiter::fail(Pending& p) noexcept {
  finish(p, errorOutcome(p));
}

void RedisLimiter::finish(Pending& p, const Decision& d) noexcept {
  p.result = d;
  event_active(p.timer.get(), EV_TIMEOUT, 1);
}

void RedisLimiter::onTimer(evutil_socket_t, short, void* arg) {
  auto* p = static_cast<Pending*>(arg);
  RedisLimiter* self = p->owner;
  const bool timed_out = !p->result;
  Decision d = timed_out ? self->errorOutcome(*p) : *p->result;
  Callback cb = std::move(p->cb);
  self->pending_.erase(p->id);  // frees p and its timer
  if (timed_out && self->ctx_) {
    // Redis is stalled (or far too slow): stop queueing behind it. The other requests on this
    // connection get their error outcome now rather than at their own deadlines.
    self->dropConnection();
  }
  if (cb) {
    cb(d);
  }
}

void RedisLimiter::cancel(uint64_t handle) noexcept {
  pending_.erase(handle);
}

}  // namespace gw::ratelimit
