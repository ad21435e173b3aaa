#include "gateway/upstream/deadlines.h"

#include <algorithm>

namespace gw::upstream {

Nanos nextDeadline(const UpstreamTimes& t, const UpstreamLimits& l) noexcept {
  Nanos deadline = kNever;
  if (!t.response_started) {
    deadline = t.head_deadline;
  } else if (l.stream_idle.count() > 0) {
    deadline = t.last_byte + l.stream_idle;
  }
  if (l.max_duration.count() > 0) {
    deadline = std::min(deadline, t.started + l.max_duration);
  }
  return deadline;
}

Expiry expiryAt(const UpstreamTimes& t, const UpstreamLimits& l, Nanos now) noexcept {
  const bool over_max = l.max_duration.count() > 0 && now >= t.started + l.max_duration;
  if (!t.response_started) {
    if (now < t.head_deadline && !over_max) {
      return Expiry::kNone;
    }
    return t.connected ? Expiry::kResponseTimeout : Expiry::kConnectTimeout;
  }
  if (over_max) {
    return Expiry::kMaxDuration;
  }
  if (l.stream_idle.count() > 0 && now >= t.last_byte + l.stream_idle) {
    return Expiry::kStreamIdle;
  }
  return Expiry::kNone;
}

}  // namespace gw::upstream
