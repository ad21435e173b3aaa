// federation::reopenBackoffMs: how long the merged subscriptions/listen stream waits before
// reopening an upstream stream that ended — 1 s, doubling to 30 s while streams keep ending
// soon after they open (acknowledged or not), back to 1 s after one that stayed open 30 s.

#include <catch.hpp>
#include <chrono>
#include <vector>

#include "gateway/federation/federation.h"

namespace gw::federation {
namespace {

using namespace std::chrono_literals;

core::Nanos ns(std::chrono::milliseconds d) {
  return std::chrono::duration_cast<core::Nanos>(d);
}

}  // namespace

TEST_CASE("subscriptions: the reopen backoff grows while streams end soon after opening",
          "[federation]") {
  // A server that acknowledges and drops at once: each stream lived 50 ms.
  std::vector<uint64_t> waits;
  uint64_t wait = 0;
  for (int i = 0; i < 8; ++i) {
    wait = reopenBackoffMs(wait, ns(50ms));
    waits.push_back(wait);
  }
  CHECK(waits == std::vector<uint64_t>{1000, 2000, 4000, 8000, 16000, 30000, 30000, 30000});
  // Just under the healthy mark still counts as a drop.
  CHECK(reopenBackoffMs(4000, ns(29999ms)) == 8000);
}

TEST_CASE("subscriptions: a stream that stayed open 30 s starts the backoff again",
          "[federation]") {
  CHECK(reopenBackoffMs(0, ns(0ms)) == 1000);  // the first end
  CHECK(reopenBackoffMs(30000, ns(30s)) == 1000);
  CHECK(reopenBackoffMs(16000, ns(1h)) == 1000);
  CHECK(reopenBackoffMs(reopenBackoffMs(30000, ns(2min)), ns(10ms)) == 2000);
}

}  // namespace gw::federation

namespace gw::federation {

TEST_CASE("subscriptions: what a listen request asks for, and its acknowledgement",
          "[federation]") {
  const ListenFilter all = listenFilterOf(
      R"({"jsonrpc":"2.0","id":"l","method":"subscriptions/listen","params":{"notifications":)"
      R"({"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true}}})");
  CHECK(all.wants(ListKind::kTools));
  CHECK(all.wants(ListKind::kPrompts));
  CHECK(all.wants(ListKind::kResources));
  CHECK(all.wants(ListKind::kTemplates));
  CHECK_FALSE(all.wants(ListKind::kDiscover));
  CHECK(all.ackObject() ==
        R"({"toolsListChanged":true,"promptsListChanged":true,"resourcesListChanged":true})");

  const ListenFilter tools =
      listenFilterOf(R"({ "params" : { "notifications" : { "toolsListChanged" : true ,)"
                     R"( "promptsListChanged" : false, "resourceSubscriptions" : ["a"] } } })");
  CHECK(tools.wants(ListKind::kTools));
  CHECK_FALSE(tools.wants(ListKind::kPrompts));
  CHECK_FALSE(tools.wants(ListKind::kResources));
  CHECK(tools.ackObject() == R"({"toolsListChanged":true})");

  for (const char* none :
       {"", "nope", "[]", R"({"params":{}})", R"({"params":{"notifications":[]}})",
        R"({"params":{"notifications":{"toolsListChanged":"true"}}})",
        R"({"params":{"notifications":{"toolsListChanged":1}}})"}) {
    INFO(none);
    const ListenFilter f = listenFilterOf(none);
    CHECK_FALSE(f.wants(ListKind::kTools));
    CHECK(f.ackObject() == "{}");
  }
}

}  // namespace gw::federation
