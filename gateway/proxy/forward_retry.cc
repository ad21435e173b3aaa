// proxy/: safe retries (upstreams[].retry, issue #29) — a request whose attempt failed before
// any answer byte reached the client (a connect failure, a reset before the answer, a timeout,
// a 502/503/504 dropped unread) is sent again, on whichever endpoint the balancer picks next
// (an ejected or down one is skipped), after a jittered backoff that doubles per attempt
// (≤ 250 ms), when its method is one `retry.methods` names or it calls a tool the upstream
// annotated readOnlyHint (idempotentHint) and `retry.tools` allows that, its body was read whole
// (never a streamed body), its attempts are not used up and the upstream's retry budget allows it.
// Never a notification (no id: nothing is retried for it), never after response bytes went
// to the client.

#include <algorithm>
#include <chrono>
#include <random>

#include "gateway/core/clock.h"
#include "gateway/federation/federation.h"
#include "gateway/mcp/schema.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/forward_target.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

namespace {

constexpr std::chrono::milliseconds kMaxBackoff{250};

}  // namespace

namespace {

// Whether the tools/call `ctx` asks for is one `up`'s last tools/list annotated as retry.tools
// allows: readOnlyHint (read_only), or readOnlyHint or idempotentHint (idempotent). The tool is
// the upstream's own name of it: a prefixed name (names: prefix) without its prefix. A tool the
// gateway has not seen listed (or whose list expired) is never retried.
bool retriesTool(const settings::Upstream& up, const filters::RequestContext& ctx) {
  using Tools = settings::Retry::Tools;
  if (up.retry->tools == Tools::kNone || ctx.mcp.method != "tools/call" || !ctx.mcp.has_name ||
      ctx.route == nullptr) {
    return false;
  }
  std::string_view tool = ctx.mcp.name.value;
  const settings::Route& r = *ctx.route;
  if (r.prefixesNames()) {
    const std::vector<std::string_view> names(r.upstreams.begin(), r.upstreams.end());
    size_t index = 0;
    std::string_view inner;
    if (!federation::splitPrefixed(tool, names, ctx.snapshot->settings->federation.separator, index,
                                   inner) ||
        r.upstreams[index] != up.name) {
      return false;
    }
    tool = inner;
  }
  const std::shared_ptr<const mcp::ToolSchema> t =
      ctx.snapshot->schemas->find(up.name, tool, core::steadyNow());
  return t != nullptr && (t->read_only || (up.retry->tools == Tools::kIdempotent && t->idempotent));
}

// Whether `up` retries the request: a method `retry.methods` names, or a tools/call of a tool
// retry.tools allows (never a notification: a load error keeps them out of `methods`).
bool retriesMethod(const settings::Upstream& up, const filters::RequestContext& ctx) {
  if (!up.retry || up.retry->attempts < 2 || !ctx.mcp.has_method) {
    return false;
  }
  const auto& m = up.retry->methods;
  return std::find(m.begin(), m.end(), ctx.mcp.method) != m.end() || retriesTool(up, ctx);
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
