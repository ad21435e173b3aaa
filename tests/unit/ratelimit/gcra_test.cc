// Unit tests for ratelimit/ GCRA arithmetic, rate parsing and the 429 header lines.

#include "gateway/ratelimit/gcra.h"

#include <catch.hpp>
#include <chrono>
#include <string>

#include "gateway/core/clock.h"

namespace gw::ratelimit {
namespace {

using std::chrono::milliseconds;

int64_t ms(int64_t v) {
  return v * 1'000'000;
}

// headerFields rendered as the HTTP/1 lines a codec writes.
std::string headerLines(std::string_view name, const Rate& r, const Decision& d,
                        bool with_retry_after) {
  std::vector<http::OwnedField> fields;
  headerFields(name, r, d, with_retry_after, fields);
  std::string out;
  http::appendFields(out, fields);
  return out;
}

TEST_CASE("GCRA admits the burst at once, then exactly the steady rate", "[ratelimit]") {
  core::FakeClock clock;
  const Rate r = Rate::make(10, std::chrono::seconds(1), 5);  // 100 ms interval, burst 5
  REQUIRE(r.intervalNs() == ms(100));
  int64_t tat = 0;
  const int64_t t0 = clock.now().count();

  for (uint64_t i = 0; i < 5; ++i) {
    Decision d = gcra(tat, clock.now().count(), r);
    CHECK(d.allowed);
    CHECK(d.remaining == 4 - i);
    CHECK(d.reset == milliseconds(100 * (i + 1)));
    CHECK(d.retry_after == milliseconds(0));
  }
  Decision d = gcra(tat, clock.now().count(), r);
  CHECK_FALSE(d.allowed);
  CHECK(d.retry_after == milliseconds(100));
  CHECK(d.remaining == 0);
  CHECK(d.reset == milliseconds(500));
  CHECK(tat == t0 + ms(500));  // a denial does not move the bucket

  clock.advance(std::chrono::milliseconds(30));
  d = gcra(tat, clock.now().count(), r);
  CHECK_FALSE(d.allowed);
  CHECK(d.retry_after == milliseconds(70));
  CHECK(d.reset == milliseconds(470));

  clock.advance(std::chrono::milliseconds(70));  // exactly one interval after the burst
  d = gcra(tat, clock.now().count(), r);
  CHECK(d.allowed);
  CHECK(d.remaining == 0);
  CHECK(d.reset == milliseconds(500));
  d = gcra(tat, clock.now().count(), r);
  CHECK_FALSE(d.allowed);
  CHECK(d.retry_after == milliseconds(100));

  clock.advance(std::chrono::seconds(5));  // idle: the bucket is full again
  d = gcra(tat, clock.now().count(), r);
  CHECK(d.allowed);
  CHECK(d.remaining == 4);
  CHECK(d.reset == milliseconds(100));
}

TEST_CASE("GCRA under constant pressure admits burst + floor(rate * elapsed)", "[ratelimit]") {
  const Rate r = Rate::make(10, std::chrono::seconds(1), 5);
  int64_t tat = 0;
  const int64_t t0 = 1'000'000'000;
  int admitted = 0;
  int64_t last_admit = -1;
  for (int64_t k = 0; k < 10'000; ++k) {  // one attempt per ms for 10 s
    int64_t tat_before = tat;
    Decision d = gcra(tat, t0 + ms(k), r);
    if (d.allowed) {
      ++admitted;
      if (admitted <= 5) {
        CHECK(k == admitted - 1);  // the burst: the first five attempts
      } else {
        CHECK(k % 100 == 0);  // after the burst, one per interval on the dot
        CHECK((admitted == 6 || k - last_admit == 100));
      }
      last_admit = k;
    } else {
      CHECK(tat == tat_before);
      // retry_after points at the next admission exactly.
      CHECK(d.retry_after.count() == 100 - (k % 100));
    }
  }
  CHECK(admitted == 5 + 99);
}

TEST_CASE("GCRA rounds waits up and handles fresh and past buckets", "[ratelimit]") {
  const Rate r = Rate::make(3, std::chrono::seconds(1), 1);  // 333.33 ms
  CHECK(r.intervalNs() == 333'333'333);
  int64_t tat = 0;
  Decision d = gcra(tat, ms(5000), r);
  CHECK(d.allowed);
  CHECK(d.remaining == 0);
  CHECK(d.reset == milliseconds(334));
  d = gcra(tat, ms(5000), r);
  CHECK_FALSE(d.allowed);
  CHECK(d.retry_after == milliseconds(334));
  d = gcra(tat, ms(5000) + 333'333'332, r);
  CHECK_FALSE(d.allowed);
  CHECK(d.retry_after == milliseconds(1));  // 1 ns left still means "not yet"
  d = gcra(tat, ms(5000) + 333'333'333, r);
  CHECK(d.allowed);

  // burst 0 is treated as 1; a TAT far in the past is a full bucket.
  Rate zero = Rate::make(1, std::chrono::seconds(1), 0);
  zero.burst = 0;
  int64_t old = 42;
  CHECK(gcra(old, ms(10'000), zero).allowed);
  CHECK_FALSE(gcra(old, ms(10'000), zero).allowed);

  // per_second-only rates work too.
  Rate ps;
  ps.per_second = 4;
  ps.burst = 2;
  CHECK(ps.intervalNs() == ms(250));
}

TEST_CASE("Rate::parse reads N/period", "[ratelimit]") {
  struct Case {
    const char* text;
    bool ok;
    uint64_t quota;
    uint64_t window_ms;
  };
  const Case cases[] = {
      {"10/s", true, 10, 1000},
      {"600/min", true, 600, 60'000},
      {"1000/m", true, 1000, 60'000},
      {"5/sec", true, 5, 1000},
      {"7/second", true, 7, 1000},
      {"100/h", true, 100, 3'600'000},
      {"2/hour", true, 2, 3'600'000},
      {"50000/day", true, 50000, 86'400'000},
      {"3/2s", true, 3, 2000},
      {"1/500ms", true, 1, 500},
      {"", false, 0, 0},
      {"10", false, 0, 0},
      {"/s", false, 0, 0},
      {"0/s", false, 0, 0},
      {"10/", false, 0, 0},
      {"10/x", false, 0, 0},
      {"10/0s", false, 0, 0},
      {"-1/s", false, 0, 0},
      {"10 /s", false, 0, 0},
      {"10/ s", false, 0, 0},
      {"1.5/s", false, 0, 0},
      {"10/S", false, 0, 0},
      {"10/s/s", false, 0, 0},
  };
  for (const auto& c : cases) {
    INFO(c.text);
    auto r = Rate::parse(c.text, 0);
    REQUIRE(r.has_value() == c.ok);
    if (c.ok) {
      CHECK(r->quota == c.quota);
      CHECK(r->window_ms == c.window_ms);
      CHECK(r->burst == c.quota);  // burst defaults to the quota
      CHECK(r->per_second == Approx(double(c.quota) * 1000.0 / double(c.window_ms)));
    }
  }
  auto r = Rate::parse("10/s", 20);
  REQUIRE(r);
  CHECK(r->burst == 20);
  CHECK(r->intervalNs() == ms(100));
  auto m = Rate::parse("1000/min", 0);
  REQUIRE(m);
  CHECK(m->intervalNs() == ms(60));
}

TEST_CASE("headerFields makes RateLimit-Policy, RateLimit and Retry-After", "[ratelimit]") {
  const Rate r = Rate::make(600, std::chrono::minutes(1), 20);
  Decision denied;
  denied.allowed = false;
  denied.retry_after = milliseconds(1500);
  denied.remaining = 0;
  denied.reset = milliseconds(2001);
  CHECK(headerLines("per-user", r, denied, true) ==
        "RateLimit-Policy: \"per-user\";q=600;w=60\r\n"
        "RateLimit: \"per-user\";r=0;t=3\r\n"
        "Retry-After: 2\r\n");

  Decision ok;
  ok.remaining = 19;
  ok.reset = milliseconds(100);
  CHECK(headerLines("p", r, ok, false) ==
        "RateLimit-Policy: \"p\";q=600;w=60\r\n"
        "RateLimit: \"p\";r=19;t=1\r\n");

  // Retry-After is at least 1 and whole seconds; t may be 0; w at least 1.
  Decision soon;
  soon.allowed = false;
  soon.retry_after = milliseconds(1);
  const Rate fast = Rate::make(1, milliseconds(500), 1);
  CHECK(headerLines("x", fast, soon, true) ==
        "RateLimit-Policy: \"x\";q=1;w=1\r\n"
        "RateLimit: \"x\";r=0;t=0\r\n"
        "Retry-After: 1\r\n");
  soon.retry_after = milliseconds(1000);
  CHECK(headerLines("x", fast, soon, true).ends_with("Retry-After: 1\r\n"));
  soon.retry_after = milliseconds(1001);
  CHECK(headerLines("x", fast, soon, true).ends_with("Retry-After: 2\r\n"));

  // The name is a structured-field String.
  CHECK(headerLines("a\"b\\c\x01\xc3", r, ok, false)
            .starts_with("RateLimit-Policy: \"a\\\"b\\\\c??\";q=600;w=60\r\n"));
}

}  // namespace
}  // namespace gw::ratelimit
