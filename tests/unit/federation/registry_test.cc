// federation/registry: what a refresh records — the merged answer for the client, the cache
// (only when every upstream answered and was public, for the smallest ttl), ownership kept
// from an upstream's last good list when it fails, conflicts reported once, staleness (a
// list_changed, or the ownership ttl run out on the catalog's clock), and the
// /federation view — and the registry keeping a route's catalog across reloads.

#include <simdjson.h>

#include <catch.hpp>
#include <chrono>
#include <string>
#include <vector>

#include "gateway/federation/registry.h"

namespace gw::federation {
namespace {

using namespace std::chrono_literals;

const std::vector<std::string> kVersions{"2026-07-28"};

FetchReport::Part okPart(std::vector<std::string> names, uint64_t ttl, bool pub) {
  FetchReport::Part p;
  p.ok = true;
  p.outcome = "ok";
  for (const std::string& n : names) {
    p.page.items.push_back("{\"name\":\"" + n + "\"}");
    p.page.keys.push_back(n);
  }
  p.page.ttl_ms = ttl;
  p.page.public_scope = pub;
  return p;
}

FetchReport::Part failedPart(const char* outcome) {
  FetchReport::Part p;
  p.outcome = outcome;
  p.detail = "why";
  return p;
}

bool validJson(const std::string& s) {
  simdjson::dom::parser parser;
  simdjson::dom::element e;
  return parser.parse(s).get(e) == simdjson::SUCCESS;
}

struct Recorded {
  bool ok = false;
  RouteCatalog::Answer answer;
  std::vector<std::string> conflicts;
};

Recorded record(RouteCatalog& c, ListKind kind, std::vector<FetchReport::Part> parts,
                core::Nanos now, NamesMode mode = NamesMode::kKeep) {
  FetchReport r;
  r.parts = std::move(parts);
  Recorded out;
  out.ok = c.record(kind, r, mode, "__", kVersions, now, 1000, out.answer, out.conflicts);
  return out;
}

}  // namespace

TEST_CASE("registry: a refresh merges what answered and owns names first come", "[federation]") {
  RouteCatalog c("default", {"a", "b", "c"});
  auto r = record(c, ListKind::kTools,
                  {okPart({"x", "shared"}, 5000, true), okPart({"y", "shared"}, 2000, false),
                   failedPart("timeout")},
                  core::Nanos{0});
  REQUIRE(r.ok);
  CHECK(r.answer.ttl_ms == 2000);      // the smallest
  CHECK_FALSE(r.answer.public_scope);  // b was private
  CHECK(r.answer.members->find("\"x\"") != std::string::npos);
  CHECK(r.answer.members->find("\"y\"") != std::string::npos);
  CHECK(validJson("{" + *r.answer.members + "}"));
  CHECK(c.owner(ListKind::kTools, "x") == 0);
  CHECK(c.owner(ListKind::kTools, "y") == 1);
  CHECK(c.owner(ListKind::kTools, "shared") == 0);
  CHECK(c.owner(ListKind::kTools, "nope") == -1);
  REQUIRE(r.conflicts.size() == 1);
  CHECK(r.conflicts[0].find("shared") != std::string::npos);
  CHECK(c.conflicts() == 1);
  // The same conflict again is not reported again.
  auto again = record(c, ListKind::kTools,
                      {okPart({"x", "shared"}, 5000, true), okPart({"y", "shared"}, 2000, false),
                       failedPart("timeout")},
                      core::Nanos{0});
  CHECK(again.conflicts.empty());
  uint64_t left = 0;
  CHECK(c.cached(ListKind::kTools, core::Nanos{0}, left) == nullptr);  // private: never cached
}

TEST_CASE("registry: public answers are cached for the smallest ttl, then expire", "[federation]") {
  RouteCatalog c("default", {"a", "b"});
  auto r = record(c, ListKind::kPrompts, {okPart({"p"}, 5000, true), okPart({"q"}, 3000, true)},
                  core::Nanos{0});
  REQUIRE(r.ok);
  CHECK(r.answer.public_scope);
  uint64_t left = 0;
  auto hit = c.cached(ListKind::kPrompts, std::chrono::duration_cast<core::Nanos>(1s), left);
  REQUIRE(hit != nullptr);
  CHECK(*hit == *r.answer.members);
  CHECK(left == 2000);  // what remains of the smallest ttl
  CHECK(c.cached(ListKind::kPrompts, std::chrono::duration_cast<core::Nanos>(3s), left) == nullptr);
  CHECK(c.cached(ListKind::kTools, core::Nanos{0}, left) == nullptr);  // another method
  // A list_changed makes the cache and the table stale.
  record(c, ListKind::kPrompts, {okPart({"p"}, 5000, true), okPart({"q"}, 3000, true)},
         core::Nanos{0});
  c.markStale(ListKind::kPrompts);
  CHECK(c.stale(ListKind::kPrompts, core::Nanos{0}));
  CHECK(c.cached(ListKind::kPrompts, core::Nanos{0}, left) == nullptr);
  CHECK(c.owner(ListKind::kPrompts, "q") == 1);  // still routable while stale
}

TEST_CASE("registry: an expired answer is refreshed by one request while the others get it",
          "[federation]") {
  RouteCatalog c("default", {"a", "b"});
  const auto at = [](auto d) { return std::chrono::duration_cast<core::Nanos>(d); };
  const core::Nanos bound = at(10s);
  uint64_t left = 99;
  // Nothing kept yet: every caller fetches (nothing to serve meanwhile).
  CHECK(c.cachedOrRefresh(ListKind::kTools, core::Nanos{0}, bound, left) == nullptr);
  CHECK(c.cachedOrRefresh(ListKind::kTools, core::Nanos{0}, bound, left) == nullptr);
  auto r = record(c, ListKind::kTools, {okPart({"x"}, 3000, true), okPart({"y"}, 3000, true)},
                  core::Nanos{0});
  REQUIRE(r.ok);
  // Fresh: served with what remains.
  auto fresh = c.cachedOrRefresh(ListKind::kTools, at(1s), bound, left);
  REQUIRE(fresh != nullptr);
  CHECK(left == 2000);
  // Expired: the first caller refreshes, the next ones (however many) get the expired answer.
  CHECK(c.cachedOrRefresh(ListKind::kTools, at(3s), bound, left) == nullptr);
  for (int i = 0; i < 5; ++i) {
    left = 99;
    auto stale = c.cachedOrRefresh(ListKind::kTools, at(4s), bound, left);
    REQUIRE(stale != nullptr);
    CHECK(*stale == *r.answer.members);
    CHECK(left == 0);
  }
  // cached() (the admin view, ownership) never calls an expired answer fresh.
  CHECK(c.cached(ListKind::kTools, at(4s), left) == nullptr);
  // A refresher that never reports (its client went away) holds the others off only until the
  // bound: then the next caller refreshes.
  CHECK(c.cachedOrRefresh(ListKind::kTools, at(13s), bound, left) == nullptr);
  CHECK(c.cachedOrRefresh(ListKind::kTools, at(14s), bound, left) != nullptr);
  // The refresh is recorded: fresh again, for its own ttl.
  auto r2 = record(c, ListKind::kTools, {okPart({"x", "z"}, 5000, true), okPart({"y"}, 5000, true)},
                   at(14s));
  REQUIRE(r2.ok);
  auto again = c.cachedOrRefresh(ListKind::kTools, at(15s), bound, left);
  REQUIRE(again != nullptr);
  CHECK(*again == *r2.answer.members);
  CHECK(left == 4000);
  // Expired again, refreshing, and a list_changed arrives: nothing expired is served any more.
  CHECK(c.cachedOrRefresh(ListKind::kTools, at(20s), bound, left) == nullptr);
  c.markStale(ListKind::kTools);
  CHECK(c.cachedOrRefresh(ListKind::kTools, at(20s), bound, left) == nullptr);
  CHECK(c.cachedOrRefresh(ListKind::kTools, at(20s), bound, left) == nullptr);
  // A refresh that ends partial is served to its caller but not kept: the others fetch too.
  record(c, ListKind::kTools, {okPart({"x"}, 5000, true), okPart({"y"}, 5000, true)}, at(30s));
  CHECK(c.cachedOrRefresh(ListKind::kTools, at(36s), bound, left) == nullptr);
  record(c, ListKind::kTools, {okPart({"x"}, 5000, true), failedPart("timeout")}, at(36s));
  CHECK(c.cachedOrRefresh(ListKind::kTools, at(36s), bound, left) == nullptr);
  CHECK(c.cachedOrRefresh(ListKind::kTools, at(36s), bound, left) == nullptr);
}

TEST_CASE("registry: ttl 0 and one failed upstream are not cached", "[federation]") {
  RouteCatalog c("default", {"a", "b"});
  uint64_t left = 0;
  record(c, ListKind::kTools, {okPart({"x"}, 0, true), okPart({"y"}, 0, true)}, core::Nanos{0});
  CHECK(c.cached(ListKind::kTools, core::Nanos{0}, left) == nullptr);
  // What answered was public, but b is missing from it: served to the client that asked, not
  // kept (the next request fetches again, and b may be back).
  auto partial = record(c, ListKind::kTools, {okPart({"x"}, 9000, true), failedPart("rpc_error")},
                        core::Nanos{0});
  REQUIRE(partial.ok);
  CHECK(partial.answer.members->find("\"x\"") != std::string::npos);
  CHECK(partial.answer.ttl_ms == 9000);
  CHECK(c.cached(ListKind::kTools, core::Nanos{0}, left) == nullptr);
  CHECK(c.viewJson(core::Nanos{0}).find("\"cache\":{}") != std::string::npos);
  // Every upstream back and public: cached.
  record(c, ListKind::kTools, {okPart({"x"}, 9000, true), okPart({"y"}, 9000, true)},
         core::Nanos{0});
  CHECK(c.cached(ListKind::kTools, core::Nanos{0}, left) != nullptr);
  // The same for discover: one upstream missing, nothing cached.
  FetchReport::Part d;
  d.ok = true;
  d.page.ttl_ms = 9000;
  d.page.public_scope = true;
  d.page.result = R"({"supportedVersions":["2026-07-28"],"capabilities":{}})";
  REQUIRE(record(c, ListKind::kDiscover, {d, failedPart("timeout")}, core::Nanos{0}).ok);
  CHECK(c.cached(ListKind::kDiscover, core::Nanos{0}, left) == nullptr);
  REQUIRE(record(c, ListKind::kDiscover, {d, d}, core::Nanos{0}).ok);
  CHECK(c.cached(ListKind::kDiscover, core::Nanos{0}, left) != nullptr);
}

TEST_CASE("registry: ownership goes stale when the smallest ttl runs out, private or public",
          "[federation]") {
  RouteCatalog c("default", {"a", "b"});
  const auto at = [](auto d) { return std::chrono::duration_cast<core::Nanos>(d); };
  // Private answers are never cached, but what they say is owned for their ttl all the same.
  record(c, ListKind::kTools, {okPart({"x"}, 5000, false), okPart({"y"}, 2000, false)}, at(10s));
  CHECK_FALSE(c.stale(ListKind::kTools, at(11s)));
  CHECK(c.stale(ListKind::kTools, at(12s)));          // 2000 ms ran out: the next call refreshes
  CHECK(c.owner(ListKind::kTools, "y") == 1);         // (still routable meanwhile)
  CHECK_FALSE(c.stale(ListKind::kPrompts, at(12s)));  // another method: never fetched
  // A refresh renews it, for its own smallest ttl.
  record(c, ListKind::kTools, {okPart({"x"}, 3000, true), failedPart("timeout")}, at(20s));
  CHECK_FALSE(c.stale(ListKind::kTools, at(22s)));
  CHECK(c.stale(ListKind::kTools, at(23s)));
  // A refresh that no upstream answered changes nothing: still stale.
  record(c, ListKind::kTools, {failedPart("timeout"), failedPart("timeout")}, at(24s));
  CHECK(c.stale(ListKind::kTools, at(24s)));
  // ttlMs 0 (the SDK's default) says nothing about how long the list holds: no expiry by
  // time (list_changed and misses still refresh).
  record(c, ListKind::kTools, {okPart({"x"}, 0, false), okPart({"y"}, 0, false)}, at(30s));
  CHECK_FALSE(c.stale(ListKind::kTools, at(30s) + std::chrono::hours(24)));
  c.markStale(ListKind::kTools);
  CHECK(c.stale(ListKind::kTools, at(31s)));
}

TEST_CASE("registry: an upstream that fails keeps owning what it last listed", "[federation]") {
  RouteCatalog c("default", {"a", "b"});
  record(c, ListKind::kTools, {okPart({"x"}, 0, false), okPart({"y"}, 0, false)}, core::Nanos{0});
  auto r = record(c, ListKind::kTools, {okPart({"x"}, 0, false), failedPart("connect_failed")},
                  core::Nanos{0});
  REQUIRE(r.ok);
  CHECK(r.answer.members->find("\"y\"") == std::string::npos);  // left out of the answer
  CHECK(c.owner(ListKind::kTools, "y") == 1);                   // still routed to b (502 there)
  auto none =
      record(c, ListKind::kTools, {failedPart("timeout"), failedPart("timeout")}, core::Nanos{0});
  CHECK_FALSE(none.ok);
  CHECK(c.owner(ListKind::kTools, "x") == 0);
  const std::string view = c.viewJson(core::Nanos{0});
  CHECK(validJson(view));
  CHECK(view.find("\"outcome\":\"timeout\"") != std::string::npos);
}

TEST_CASE("registry: resources by URI, then by template, and discover merged", "[federation]") {
  RouteCatalog c("default", {"a", "b"});
  FetchReport::Part ra;
  ra.ok = true;
  ra.page.items = {R"({"uri":"file:///a"})"};
  ra.page.keys = {"file:///a"};
  record(c, ListKind::kResources, {ra, failedPart("timeout")}, core::Nanos{0});
  FetchReport::Part tb;
  tb.ok = true;
  tb.page.items = {R"({"uriTemplate":"weather://city/{name}"})"};
  tb.page.keys = {"weather://city/{name}"};
  record(c, ListKind::kTemplates, {failedPart("timeout"), tb}, core::Nanos{0});
  CHECK(c.owner(ListKind::kResources, "file:///a") == 0);
  CHECK(c.owner(ListKind::kResources, "weather://city/paris") == 1);
  CHECK(c.owner(ListKind::kResources, "weather://city/paris/x") == -1);

  FetchReport::Part da;
  da.ok = true;
  da.page.result =
      R"({"supportedVersions":["2026-07-28","2025-11-25"],"capabilities":{"tools":{"listChanged":false}}})";
  FetchReport::Part db;
  db.ok = true;
  db.page.result =
      R"({"supportedVersions":["2026-07-28"],"capabilities":{"tools":{"listChanged":true}}})";
  auto d = record(c, ListKind::kDiscover, {da, db}, core::Nanos{0});
  REQUIRE(d.ok);
  CHECK(d.answer.members->find(R"("listChanged":true)") != std::string::npos);
  CHECK(d.answer.members->find("mcp-gateway") != std::string::npos);
  FetchReport::Part dc;
  dc.ok = true;
  dc.page.result = R"({"supportedVersions":["1900-01-01"],"capabilities":{}})";
  auto none = record(c, ListKind::kDiscover, {da, dc}, core::Nanos{0});
  CHECK_FALSE(none.ok);
  CHECK_FALSE(none.answer.error.empty());
}

TEST_CASE("registry: task ids route back, and catalogs survive a reload", "[federation]") {
  Registry reg;
  auto c = reg.route("default", {"a", "b"});
  c->putTask("t-1", 1, core::Nanos{0});
  CHECK(c->taskOwner("t-1", core::Nanos{0}) == 1);
  CHECK(c->taskOwner("t-2", core::Nanos{0}) == -1);
  CHECK(reg.route("default", {"a", "b"}) == c);  // same route, same upstreams: kept
  auto changed = reg.route("default", {"a", "c"});
  CHECK(changed != c);  // another upstream list starts afresh
  CHECK(changed->taskOwner("t-1", core::Nanos{0}) == -1);
  reg.route("other", {"a"});
  reg.retain({{"default", {"a", "c"}}});
  REQUIRE(reg.all().size() == 1);
  CHECK(reg.all()[0]->route() == "default");
}

}  // namespace gw::federation
