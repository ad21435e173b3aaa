// upstream/: what one upstream request tells the shared endpoint health (health.h) — its
// place in the in-flight counts of its upstream and endpoint (the circuit breaker, /upstreams)
// and the failures that count towards passive ejection. See http1_upstream.h.

#include "gateway/upstream/health.h"
#include "gateway/upstream/http1_upstream.h"

namespace gw::upstream {

void Http1Upstream::count() noexcept {
  if (counted_up_ == nullptr && lease_.cluster != nullptr) {
    counted_up_ = lease_.cluster;
    counted_up_->in_flight.fetch_add(1, std::memory_order_relaxed);
  }
  if (counted_ep_ == nullptr && lease_.health != nullptr) {
    counted_ep_ = lease_.health;
    counted_ep_->in_flight.fetch_add(1, std::memory_order_relaxed);
  }
}

void Http1Upstream::uncount() noexcept {
  if (pending_ && lease_.cluster != nullptr) {
    lease_.cluster->pending.fetch_sub(1, std::memory_order_relaxed);
  }
  pending_ = false;
  if (counted_up_ != nullptr) {
    counted_up_->in_flight.fetch_sub(1, std::memory_order_relaxed);
    counted_up_ = nullptr;
  }
  if (counted_ep_ != nullptr) {
    counted_ep_->in_flight.fetch_sub(1, std::memory_order_relaxed);
    counted_ep_ = nullptr;
  }
}

// Passive outlier detection (health.h): connect failures, resets and timeouts count against
// the endpoint; a stream that ran past max_duration or idled out does not.
void Http1Upstream::reportFailed(UpstreamError e) {
  if (lease_.health == nullptr || lease_.cluster == nullptr || up_ == nullptr) {
    return;
  }
  const char* why = nullptr;
  switch (e) {
    case UpstreamError::kConnectFailed:
    case UpstreamError::kConnectRefused:
      why = "connect failed";
      break;
    case UpstreamError::kConnectTimeout:
      why = "connect timeout";
      break;
    case UpstreamError::kResponseTimeout:
      why = "response timeout";
      break;
    case UpstreamError::kClosedBeforeAnswer:
    case UpstreamError::kReset:
    case UpstreamError::kBadChunk:
      why = "reset";
      break;
    case UpstreamError::kMalformed:
      why = "malformed answer";
      break;
    case UpstreamError::kTls:
      why = "TLS handshake failed";
      break;
    default:
      return;
  }
  noteEndpointFailure(*lease_.cluster, *lease_.health, *up_, clock_->now().count(), why);
}

}  // namespace gw::upstream
