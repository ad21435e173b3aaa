#pragma once
// The upstream side's timeouts as one pure decision (no timers, no clock of its own): the
// exchange records when things happened, as read from its worker's core::Clock, and asks when
// its timer must fire next and, when it fires, which timeout (if any) is over. Unit-tested
// with a fake clock (tests/unit/upstream/deadlines_test.cc).

#include <cstdint>

#include "gateway/core/clock.h"

namespace gw::upstream {

using core::Nanos;

inline constexpr Nanos kNever = Nanos::max();

// now + d, or kNever when d is 0 (a timeout of 0 means "no limit").
inline Nanos deadlineAfter(Nanos now, Nanos d) noexcept {
  return d.count() > 0 ? now + d : kNever;
}

struct UpstreamTimes {
  Nanos started{};        // the request's first byte (max_duration counts from here)
  Nanos head_deadline{};  // connect_timeout, then response_timeout: the response head is due
  Nanos last_byte{};      // the last upstream byte (stream_idle_timeout counts from here)
  bool connected = false;
  bool response_started = false;  // the response head went to the client
};

struct UpstreamLimits {
  Nanos stream_idle{0};   // upstreams[].stream_idle_timeout (0: none)
  Nanos max_duration{0};  // upstreams[].max_duration (0: none)
};

enum class Expiry : uint8_t {
  kNone,             // nothing is over: re-arm for nextDeadline
  kConnectTimeout,   // no connection by the head deadline (504)
  kResponseTimeout,  // connected, no response head by the head deadline (504)
  kMaxDuration,      // the answer began but the exchange outlived max_duration (cut)
  kStreamIdle,       // the answer began but no upstream byte for stream_idle (cut)
};

// When the timer must fire next (kNever: disarm).
Nanos nextDeadline(const UpstreamTimes& t, const UpstreamLimits& l) noexcept;
// Which timeout is over at `now`. Before the response head, max_duration ends the wait as a
// response (or connect) timeout: the client gets a 504 either way.
Expiry expiryAt(const UpstreamTimes& t, const UpstreamLimits& l, Nanos now) noexcept;

}  // namespace gw::upstream
