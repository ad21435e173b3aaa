// proxy/: safe retries (upstreams[].retry, issue #29) — a request whose attempt failed before
// any answer byte reached the client (a connect failure, a reset before the answer, a timeout,
// a 502/503/504 dropped unread) is sent again, on whichever endpoint the balancer picks next
// (an ejected or down one is skipped), after a jittered backoff that doubles per attempt
// (≤ 250 ms), when its method is one `retry.methods` names, its body was read whole (never a
// streamed body), its attempts are not used up and the upstream's retry budget allows it.
// Never a notification (no id: nothing is retried for it), never after response bytes went
// to the client.

#include <algorithm>
#include <chrono>
#include <random>

#include "gateway/proxy/exchange.h"
#include "gateway/proxy/forward_target.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

namespace {

constexpr std::chrono::milliseconds kMaxBackoff{250};

}  // namespace

namespace {

// Whether `up` retries the request's method (never a notification, never tools/call: a
// load error keeps them out of `methods`).
bool retriesMethod(const settings::Upstream& up, const filters::RequestContext& ctx) {
  if (!up.retry || up.retry->attempts < 2 || !ctx.mcp.has_method) {
    return false;
  }
  const auto& m = up.retry->methods;
  return std::find(m.begin(), m.end(), ctx.mcp.method) != m.end();
}

}  // namespace

bool ForwardTarget::retryable() const {
  return retriesMethod(x_.settings().upstreams[up_index_], x_.ctx());
}

bool ForwardTarget::mayRetry() const {
  const settings::Route* route = x_.ctx().route;
  return route != nullptr && !route->federated() &&
         retriesMethod(x_.settings().upstreams[route->upstream_index], x_.ctx());
}

bool ForwardTarget::retry(const char* reason) {
  const settings::Upstream& up = x_.settings().upstreams[up_index_];
  if (!up.retry || !keep_body_ || attempts_ >= static_cast<int>(up.retry->attempts) ||
      (bridge_ != Bridge::kOff && bridge_ != Bridge::kTrying) || x_.responseStarted()) {
    return false;
  }
  if (!x_.worker().pools->stateOf(up).admitRetry(x_.now().count(), up.retry->budget_percent)) {
    return false;  // over the budget: the failure stands
  }
  x_.worker().metrics->upstream_retries.at({up.name, reason}).add(1);
  x_.releaseUpstream(false);
  if (!retry_timer_) {
    retry_timer_.reset(evtimer_new(
        x_.worker().base,
        [](evutil_socket_t, short, void* arg) { static_cast<ForwardTarget*>(arg)->onRetryTimer(); },
        this));
    if (!retry_timer_) {
      return false;
    }
  }
  // Jittered (50-100 %) and doubling per attempt, at most 250 ms.
  const auto base = std::chrono::duration_cast<std::chrono::microseconds>(up.retry->backoff);
  auto wait = base * (int64_t{1} << std::min(attempts_ - 1, 4));
  wait = std::min<std::chrono::microseconds>(wait, kMaxBackoff);
  thread_local std::minstd_rand rng{std::random_device{}()};
  wait =
      wait / 2 + std::chrono::microseconds(
                     wait.count() > 0 ? static_cast<int64_t>(rng() % (wait.count() / 2 + 1)) : 0);
  const timeval tv = event::toTimeval(std::chrono::duration_cast<std::chrono::milliseconds>(wait));
  evtimer_add(retry_timer_.get(), &tv);
  return true;
}

void ForwardTarget::onRetryTimer() {
  connect();
}

}  // namespace gw::proxy
