// proxy::SeenAnswers and SchemaCache::renew: a tools/list answer seen again (its id aside) is
// not parsed again, anything else is; what a cache learned since from another answer, an
// expired entry or another cache is never renewed; the memory stays bounded.

#include <catch.hpp>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "gateway/mcp/schema.h"
#include "gateway/proxy/seen_answers.h"

namespace {

using gw::mcp::SchemaCache;
using gw::mcp::ToolSchema;
using gw::proxy::SeenAnswers;

std::string answer(int id, const std::string& tool) {
  return R"({"jsonrpc":"2.0","id":)" + std::to_string(id) + R"(,"result":{"tools":[{"name":")" +
         tool + R"(","inputSchema":{"type":"object"}}]}})";
}

std::vector<ToolSchema> toolsOf(const std::string& name) {
  std::vector<ToolSchema> t(1);
  t[0].tool = name;
  return t;
}

}  // namespace

TEST_CASE("seen answers: the same answer to another request renews, a changed one does not",
          "[proxy][seen_answers]") {
  auto cache = std::make_shared<SchemaCache>(std::chrono::seconds(60));
  SeenAnswers seen;
  const auto t0 = SchemaCache::Clock::now();
  CHECK_FALSE(seen.renew(cache, "up", answer(1, "a"), t0));  // nothing seen yet
  seen.keep(cache, "up", answer(1, "a"), cache->learn("up", toolsOf("a"), 0, t0), 0);
  CHECK(seen.renew(cache, "up", answer(2, "a"), t0 + std::chrono::seconds(30)));
  // Renewed: still held 59 s after the renewal, past the first learning's minute.
  CHECK(cache->find("up", "a", t0 + std::chrono::seconds(89)) != nullptr);
  CHECK_FALSE(seen.renew(cache, "up", answer(3, "b"), t0));     // a changed list
  CHECK_FALSE(seen.renew(cache, "other", answer(3, "a"), t0));  // another upstream
  auto other_cache = std::make_shared<SchemaCache>(std::chrono::seconds(60));
  CHECK_FALSE(seen.renew(other_cache, "up", answer(3, "a"), t0));  // another cache
}

TEST_CASE("seen answers: what the cache learned since from another answer is not renewed",
          "[proxy][seen_answers]") {
  auto cache = std::make_shared<SchemaCache>(std::chrono::seconds(60));
  SeenAnswers worker1;
  const auto t0 = SchemaCache::Clock::now();
  worker1.keep(cache, "up", answer(1, "a"), cache->learn("up", toolsOf("a"), 0, t0), 0);
  // Another worker learned a newer list for the same upstream.
  cache->learn("up", toolsOf("b"), 0, t0);
  CHECK_FALSE(worker1.renew(cache, "up", answer(2, "a"), t0));
  // Expired: not renewed either.
  SeenAnswers worker2;
  worker2.keep(cache, "up", answer(1, "b"), cache->learn("up", toolsOf("b"), 0, t0), 0);
  CHECK_FALSE(worker2.renew(cache, "up", answer(2, "b"), t0 + std::chrono::seconds(61)));
}

TEST_CASE("seen answers: bounded in entries and bytes", "[proxy][seen_answers]") {
  auto cache = std::make_shared<SchemaCache>(std::chrono::seconds(60));
  SeenAnswers seen;
  const auto t0 = SchemaCache::Clock::now();
  for (size_t i = 0; i < SeenAnswers::kMaxEntries + 10; ++i) {
    const std::string up = "up" + std::to_string(i);
    seen.keep(cache, up, answer(1, "a"), cache->learn(up, toolsOf("a"), 0, t0), 0);
  }
  // The most recent are kept, the oldest went.
  CHECK(seen.renew(cache, "up" + std::to_string(SeenAnswers::kMaxEntries + 9), answer(2, "a"), t0));
  CHECK_FALSE(seen.renew(cache, "up0", answer(2, "a"), t0));
  // A text over the per-answer bound is not kept; big ones push the others out.
  const std::string huge(SeenAnswers::kMaxAnswerBytes + 1, ' ');
  seen.keep(cache, "huge", huge, cache->learn("huge", toolsOf("a"), 0, t0), 0);
  CHECK_FALSE(seen.renew(cache, "huge", huge, t0));
  CHECK(seen.bytes() <= SeenAnswers::kMaxBytes);
  const std::string big(SeenAnswers::kMaxAnswerBytes, ' ');
  const size_t n = SeenAnswers::kMaxBytes / SeenAnswers::kMaxAnswerBytes + 1;
  for (size_t i = 0; i < n; ++i) {
    const std::string up = "big" + std::to_string(i);
    seen.keep(cache, up, big, cache->learn(up, toolsOf("a"), 0, t0), 0);
  }
  CHECK(seen.bytes() <= SeenAnswers::kMaxBytes);
  CHECK(seen.renew(cache, "big" + std::to_string(n - 1), big, t0));
  CHECK_FALSE(seen.renew(cache, "big0", big, t0));
}
