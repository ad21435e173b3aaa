// The rate-limit stage (see limit_stage.h).

#include "gateway/proxy/limit_stage.h"

#include "gateway/core/assert.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/proxy/proxy_context.h"
#include "gateway/ratelimit/redis_limiter.h"

namespace gw::proxy {

filters::FilterStatus LimitStage::run(filters::RequestContext& ctx, ProxyContext& w,
                                      StageRunner& runner) {
  switch (state_) {
    case State::kAdmitted:
      return filters::FilterStatus::kContinue;
    case State::kRefused:
      return filters::FilterStatus::kLocalReply;
    case State::kIdle:
      break;
    case State::kChecking:
    case State::kWaiting:
      GW_ASSERT(false && "LimitStage::run while deciding");
      return filters::FilterStatus::kStop;
  }
  ctx_ = &ctx;
  w_ = &w;
  runner_ = &runner;
  checks_.clear();
  index_ = 0;
  fields_.clear();
  best_remaining_ = UINT64_MAX;
  filters::collectLimits(ctx, checks_);
  state_ = State::kChecking;
  return next();
}

filters::FilterStatus LimitStage::next() {
  GW_ASSERT(state_ == State::kChecking);
  const policy::RedisSettings& rs = ctx_->snapshot->policy->redis();
  while (index_ < checks_.size()) {
    const filters::LimitCheck& c = checks_[index_];
    if (c.spec->backend == policy::RateLimitSpec::Backend::kRedis && rs.present) {
      ratelimit::RedisLimiter& redis = w_->redisFor(rs);
      redis_owner_ = &redis;
      redis_handle_ = redis.check(c.key, c.rate, [this](const ratelimit::Decision& d) {
        GW_ASSERT(state_ == State::kWaiting);
        redis_handle_ = 0;
        redis_owner_ = nullptr;
        state_ = State::kChecking;
        const filters::FilterStatus verdict =
            decide(d) ? next() : filters::FilterStatus::kLocalReply;
        if (verdict != filters::FilterStatus::kStop) {
          runner_->resume(verdict);
        }
      });
      if (redis_handle_ != 0) {
        state_ = State::kWaiting;
        return filters::FilterStatus::kStop;
      }
      redis_owner_ = nullptr;
      // No timer could be had: decide locally rather than hang.
    }
    const ratelimit::Decision d = w_->shared->limiter->check(c.key, c.rate);
    checks_[index_].charged_local = d.allowed;
    if (!decide(d)) {
      return filters::FilterStatus::kLocalReply;
    }
  }
  state_ = State::kAdmitted;
  return filters::FilterStatus::kContinue;
}

bool LimitStage::decide(const ratelimit::Decision& d) {
  filters::RequestContext& ctx = *ctx_;
  const filters::LimitCheck& c = checks_[index_];
  const char* why = d.allowed ? "" : d.unavailable ? "store unavailable" : "rate limited";
  ctx.verdicts.push_back(policy::Verdict{c.spec->name, why, d.allowed, true, c.spec->audit});
  if (c.spec->audit) {
    // Its own bucket was charged and a refusal is recorded; the request goes on.
    ++index_;
    return true;
  }
  if (!d.allowed) {
    if (d.unavailable) {
      filters::setReply(ctx, 503, mcp::code::kOverloaded,
                        "Service Unavailable: the rate-limit store is unavailable; retry",
                        "ratelimit_unavailable");
      ctx.reply.addField("Retry-After", "1");
    } else {
      filters::setRateLimitedReply(ctx, c, d);
    }
    refundFirst(*w_, index_);
    state_ = State::kRefused;
    return false;
  }
  if (ctx.snapshot->settings->rate_limit_headers && d.remaining <= best_remaining_) {
    best_remaining_ = d.remaining;  // the most constrained limit speaks for the answer
    ratelimit::headerFields(c.spec->name, c.rate, d, false, fields_);
  }
  ++index_;
  return true;
}

void LimitStage::refundFirst(ProxyContext& w, size_t count) {
  for (size_t i = 0; i < count && i < checks_.size(); ++i) {
    if (checks_[i].charged_local) {
      w.shared->limiter->refund(checks_[i].key, checks_[i].rate);
      checks_[i].charged_local = false;
    }
  }
}

void LimitStage::cancel() noexcept {
  if (redis_handle_ != 0 && redis_owner_ != nullptr) {
    redis_owner_->cancel(redis_handle_);
  }
  redis_handle_ = 0;
  redis_owner_ = nullptr;
  if (state_ == State::kWaiting) {
    state_ = State::kRefused;
  }
}

void LimitStage::reset() noexcept {
  cancel();
  state_ = State::kIdle;
  checks_.clear();
  index_ = 0;
  fields_.clear();
}

}  // namespace gw::proxy
