#pragma once
// GCRA (generic cell rate algorithm) math and the 429 header lines: the pure core of the
// rate-limit stage. The local and the Redis backends both decide with this arithmetic (the
// Redis one in a Lua port of gcra(), see redis_limiter.cc), so a limit means the same thing
// whichever backend holds it. No I/O, no clock of its own: callers pass `now`.
//
// A bucket is one number, its theoretical arrival time (TAT). A request at `now` fits when
// max(TAT, now) + interval - now <= burst * interval; it then moves TAT by one interval.
// A TAT in the past is the same as a fresh (full) bucket.

#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/serialize.h"

namespace gw::ratelimit {

struct Rate {
  double per_second = 0;   // steady rate, requests per second (quota / window)
  uint32_t burst = 1;      // requests a full bucket admits at once; 0 is treated as 1
  uint64_t window_ms = 0;  // the period of "N/period" in milliseconds (RateLimit-Policy w)
  uint64_t quota = 0;      // the N of "N/period" (RateLimit-Policy q)

  // `quota` requests per `window`, with `burst` (0 → quota) admitted at once.
  static Rate make(uint64_t quota, std::chrono::milliseconds window, uint32_t burst = 0) noexcept;
  // "10/s", "600/min", "1000/m", "5/sec", "100/h", "2/hour", "50000/day", "3/2s" (N/<n><unit>).
  // nullopt on anything else (zero quota or window included).
  static std::optional<Rate> parse(std::string_view text, uint32_t burst = 0) noexcept;

  // Emission interval: the spacing of requests at the steady rate, in nanoseconds (≥ 1).
  // Exact for quota/window rates (window_ms * 1e6 / quota, rounded); from per_second otherwise.
  int64_t intervalNs() const noexcept;
  uint32_t effectiveBurst() const noexcept { return burst == 0 ? 1 : burst; }
};

struct Decision {
  bool allowed = true;
  std::chrono::milliseconds retry_after{0};  // when !allowed: until one request fits (ceil)
  uint64_t remaining = 0;                    // requests that would still fit now
  std::chrono::milliseconds reset{0};        // until the bucket is full again (ceil)
  bool unavailable = false;  // !allowed because the store could not decide (on_error: deny)
};

// One GCRA decision at `now_ns` against the bucket whose TAT is `tat_ns` (ns, same epoch as
// now; a fresh bucket is any value ≤ now, e.g. 0). Updates tat_ns only when allowed.
// Deterministic.
Decision gcra(int64_t& tat_ns, int64_t now_ns, const Rate& r) noexcept;

// The fields of a limited (or, when the caller wants them, an admitted) answer, replacing
// what `out` held:
//   RateLimit-Policy: "<name>";q=<quota>;w=<window s>
//   RateLimit: "<name>";r=<remaining>;t=<reset s>
//   Retry-After: <s>                      (only with_retry_after; ceil, at least 1)
// Seconds are rounded up; w is at least 1. The name is a structured-field String: `"` and
// `\` are escaped, bytes outside 0x20..0x7E become '?'.
void headerFields(std::string_view policy_name, const Rate& r, const Decision& d,
                  bool with_retry_after, std::vector<http::OwnedField>& out);

}  // namespace gw::ratelimit
