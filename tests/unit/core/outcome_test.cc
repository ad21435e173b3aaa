// core::Outcome: the one table of request outcomes (log names, metric labels, statuses).

#include "gateway/core/outcome.h"

#include <catch.hpp>

#include <set>
#include <string>

using gw::core::Outcome;

TEST_CASE("outcome: one table, unique names, round trip by name", "[core][outcome]") {
  std::set<std::string> names;
  for (size_t i = 0; i < gw::core::outcomeCount(); ++i) {
    const auto o = static_cast<Outcome>(i);
    const auto& info = gw::core::outcomeInfo(o);
    INFO("outcome " << i << " " << info.name);
    CHECK(names.insert(std::string(info.name)).second);
    CHECK(gw::core::outcomeFromName(info.name) == o);
    // A metric label value: lower-case snake case only (never free text).
    for (char c : info.name) {
      CHECK(((c >= 'a' && c <= 'z') || c == '_'));
    }
    CHECK((info.status == 0 || (info.status >= 400 && info.status <= 599)));
  }
  CHECK_FALSE(gw::core::outcomeFailed(Outcome::kNone));
  CHECK_FALSE(gw::core::outcomeFailed(Outcome::kComplete));
  CHECK_FALSE(gw::core::outcomeFailed(Outcome::kResourceMetadata));  // a 200 the gateway made
  CHECK(gw::core::outcomeFailed(Outcome::kClientClosed));
  CHECK(gw::core::outcomeInfo(Outcome::kRateLimited).status == 429);
  CHECK(gw::core::outcomeName(Outcome::kUpstreamReset) == "upstream_reset");
}
