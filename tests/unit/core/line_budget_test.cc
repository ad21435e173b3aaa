// core::LineBudget — the malformed-request log's per-second budget (issue 12 item 12).

#include <catch.hpp>

#include "gateway/core/line_budget.h"

TEST_CASE("line budget: N lines a second, the rest counted, a new second starts afresh",
          "[core][edge]") {
  gw::core::LineBudget b(3);
  struct Step {
    int64_t second;
    bool written;
    uint64_t suppressed;
  };
  for (const Step& s :
       {Step{100, true, 0}, Step{100, true, 0}, Step{100, true, 0}, Step{100, false, 1},
        Step{100, false, 2}, Step{101, true, 2}, Step{101, true, 2}, Step{101, true, 2},
        Step{101, false, 3}, Step{99, true, 3},  // the clock stepped back: a new second too
        Step{200, true, 3}}) {
    INFO("second " << s.second);
    CHECK(b.take(s.second) == s.written);
    CHECK(b.suppressed() == s.suppressed);
  }
  CHECK(b.takeSuppressed() == 3);
  CHECK(b.suppressed() == 0);
  CHECK(b.takeSuppressed() == 0);
}

TEST_CASE("line budget: a flood in one second writes exactly the budget", "[core][edge]") {
  gw::core::LineBudget b(10);
  int written = 0;
  for (int i = 0; i < 100000; ++i) {
    written += b.take(7) ? 1 : 0;
  }
  CHECK(written == 10);
  CHECK(b.takeSuppressed() == 99990);
  gw::core::LineBudget none(0);
  CHECK_FALSE(none.take(1));
  CHECK(none.suppressed() == 1);
}
