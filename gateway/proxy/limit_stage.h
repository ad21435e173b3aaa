#pragma once
// proxy/: the rate-limit stage. The request's limits (filters::collectLimits) are checked
// in order; a local one decides at once, a Redis-backed one stops the stage until its
// answer (or the store's on_error outcome) arrives on the worker's loop. An audit-mode limit
// records its refusal and lets the request on. A refusal gives back what the local limits
// before it took (a refused batch, or a request refused by its second limit, spends no
// quota; Redis-backed limits keep what they took) and answers 429 — or 503 when the store
// could not decide: the caller is not over its limit, and a 429 would tell it the wrong
// thing. The most constrained admitting limit gives the answer its RateLimit fields.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/filters/context.h"
#include "gateway/filters/limits.h"
#include "gateway/proxy/stage.h"

namespace gw::ratelimit {
class RedisLimiter;
struct Decision;
}  // namespace gw::ratelimit

namespace gw::proxy {

struct ProxyContext;

class LimitStage {
 public:
  LimitStage() = default;
  LimitStage(const LimitStage&) = delete;
  LimitStage& operator=(const LimitStage&) = delete;
  ~LimitStage() { cancel(); }

  // kContinue: every limit admitted the request. kLocalReply: refused (ctx.reply). kStop: a
  // Redis decision is awaited; runner.resume() follows with the verdict. Once decided, run()
  // gives the same verdict again.
  filters::FilterStatus run(filters::RequestContext& ctx, ProxyContext& w, StageRunner& runner);
  // The request ends while a decision is awaited: no resume.
  void cancel() noexcept;
  // A new request (cancels).
  void reset() noexcept;
  // What every local limit took is given back (the request was refused after the limits).
  void refund(ProxyContext& w) { refundFirst(w, checks_.size()); }
  // The RateLimit fields of the answer (none without rate_limit_headers).
  std::span<const http::OwnedField> headerFields() const noexcept { return fields_; }

 private:
  enum class State : uint8_t { kIdle, kChecking, kWaiting, kAdmitted, kRefused };
  // Checks from index_ on: kStop while Redis answers.
  filters::FilterStatus next();
  // True: admitted, go on with the next limit. False: refused (ctx_->reply).
  bool decide(const ratelimit::Decision& d);
  void refundFirst(ProxyContext& w, size_t count);

  State state_ = State::kIdle;
  filters::RequestContext* ctx_ = nullptr;
  ProxyContext* w_ = nullptr;
  StageRunner* runner_ = nullptr;
  std::vector<filters::LimitCheck> checks_;
  size_t index_ = 0;
  uint64_t redis_handle_ = 0;                       // a pending Redis decision (cancel())
  ratelimit::RedisLimiter* redis_owner_ = nullptr;  // the limiter that holds it
  std::vector<http::OwnedField> fields_;
  uint64_t best_remaining_ = 0;
};

}  // namespace gw::proxy
