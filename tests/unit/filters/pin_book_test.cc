// filters/ PinBook: `new_tools: block` is decided per upstream. A store that has no pins of an
// upstream yet pins that upstream's whole first listing (a fresh store, or an upstream added
// later); a tool it lists after its tools were pinned is "new" and blocked. On a federated
// route the upstreams of one fan-out are observed one after the other, each into the same
// book, so the first one's save must not make the others' first listings "new".

#include <unistd.h>

#include <catch.hpp>
#include <cstdio>
#include <string>
#include <vector>

#include "gateway/filters/pin_book.h"

namespace gw::filters {
namespace {

constexpr std::string_view kNow = "2026-01-01T00:00:00Z";

std::string toolJson(std::string_view name) {
  return R"({"name":")" + std::string(name) + R"(","description":"d","inputSchema":{}})";
}

// A store path in a fresh private directory (the file itself does not exist yet).
struct StoreDir {
  StoreDir() {
    char tmpl[] = "/tmp/pin-book-XXXXXX";
    dir = mkdtemp(tmpl) != nullptr ? tmpl : "";
    path = dir + "/pins.json";
  }
  ~StoreDir() {
    std::remove(path.c_str());
    rmdir(dir.c_str());
  }
  std::string dir;
  std::string path;
};

policy::ToolPinning blockNew(const std::string& path) {
  policy::ToolPinning cfg;
  cfg.mode = policy::ToolPinning::Mode::kBlock;
  cfg.store = path;
  cfg.block_new = true;
  return cfg;
}

PinBook::Observed observe(PinBook& book, std::string_view upstream,
                          const std::vector<std::string>& tools) {
  std::vector<std::string> items;
  for (const std::string& t : tools) {
    items.push_back(toolJson(t));
  }
  PinBook::Observed seen;
  book.observe(upstream, items, kNow, seen);
  INFO("save error: " << seen.save_error);
  CHECK(seen.save_error.empty());
  return seen;
}

}  // namespace

TEST_CASE("pin book: new_tools block pins every upstream's first listing of a fresh store",
          "[pins]") {
  StoreDir d;
  REQUIRE_FALSE(d.dir.empty());
  PinBook book(blockNew(d.path), pins::Store{}, false);

  // One fan-out of a federated route [a, b]: a is observed (and saved) first, then b.
  CHECK(observe(book, "a", {"a_one", "a_two"}).pending.empty());
  CHECK(observe(book, "b", {"b_one", "b_two"}).pending.empty());
  CHECK_FALSE(book.anyPending());
  CHECK_FALSE(book.blocked("b", "b_one"));
  CHECK_FALSE(book.blocked("a", "a_two"));

  // Once an upstream's tools are pinned, a tool it lists for the first time is new.
  auto later = observe(book, "b", {"b_one", "b_two", "b_three"});
  REQUIRE(later.pending.size() == 1);
  CHECK(later.pending[0].tool == "b_three");
  CHECK(later.pending[0].is_new);
  CHECK(book.blocked("b", "b_three"));
  CHECK_FALSE(book.blocked("b", "b_one"));
}

TEST_CASE("pin book: an upstream the existing store has no pins of pins its first listing",
          "[pins]") {
  StoreDir d;
  REQUIRE_FALSE(d.dir.empty());
  pins::Store store;
  pins::Definition def;
  std::string error;
  REQUIRE(pins::hashTool(toolJson("a_one"), def, error));
  store.observe("a", "a_one", def, false, kNow);
  store.clearDirty();
  PinBook book(blockNew(d.path), std::move(store), true);  // the file was there at start

  // a has pins: its new tool waits for approval.
  auto a = observe(book, "a", {"a_one", "a_new"});
  REQUIRE(a.pending.size() == 1);
  CHECK(a.pending[0].tool == "a_new");
  CHECK(book.blocked("a", "a_new"));
  // c (say, added to the configuration since) has none: everything it lists is pinned.
  CHECK(observe(book, "c", {"c_one", "c_two"}).pending.empty());
  CHECK_FALSE(book.blocked("c", "c_one"));
  auto c = observe(book, "c", {"c_one", "c_two", "c_three"});
  REQUIRE(c.pending.size() == 1);
  CHECK(c.pending[0].tool == "c_three");
}

TEST_CASE("pin book: new_tools allow pins what it first sees, whenever", "[pins]") {
  StoreDir d;
  REQUIRE_FALSE(d.dir.empty());
  policy::ToolPinning cfg = blockNew(d.path);
  cfg.block_new = false;
  PinBook book(cfg, pins::Store{}, false);
  CHECK(observe(book, "a", {"a_one"}).pending.empty());
  CHECK(observe(book, "a", {"a_one", "a_two"}).pending.empty());
  CHECK_FALSE(book.anyPending());
}

}  // namespace gw::filters
