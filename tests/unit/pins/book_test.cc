// pins/ Book: `new_tools: block` is decided per upstream. A store that has no pins of an
// upstream yet pins that upstream's whole first listing (a fresh store, or an upstream added
// later); a tool it lists after its tools were pinned is "new" and blocked. On a federated
// route the upstreams of one fan-out are observed one after the other, each into the same
// book, so the first one's save must not make the others' first listings "new".

#include <unistd.h>

#include <catch.hpp>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "gateway/pins/book.h"

namespace gw::pins {
namespace {

constexpr std::string_view kNow = "2026-01-01T00:00:00Z";

std::string toolJson(std::string_view name, std::string_view description = "d") {
  return R"({"name":")" + std::string(name) + R"(","description":")" + std::string(description) +
         R"(","inputSchema":{}})";
}

Store fileStore(const std::string& path) {
  Store s;
  bool existed = false;
  std::string error;
  INFO(error);
  REQUIRE(Store::load(path, s, existed, error));
  return s;
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
    std::remove((path + ".lock").c_str());
    rmdir(dir.c_str());
  }
  std::string dir;
  std::string path;
};

Config blockNew(const std::string& path) {
  Config cfg;
  cfg.mode = Config::Mode::kBlock;
  cfg.store = path;
  cfg.block_new = true;
  return cfg;
}

Book::Observed observe(Book& book, std::string_view upstream,
                       const std::vector<std::string>& tools) {
  std::vector<std::string> items;
  for (const std::string& t : tools) {
    items.push_back(toolJson(t));
  }
  Book::Observed seen;
  book.observe(upstream, items, kNow, nullptr, seen);
  INFO("save error: " << seen.save_error);
  CHECK(seen.save_error.empty());
  return seen;
}

}  // namespace

TEST_CASE("pin book: new_tools block pins every upstream's first listing of a fresh store",
          "[pins]") {
  StoreDir d;
  REQUIRE_FALSE(d.dir.empty());
  Book book(blockNew(d.path), Store{}, false);

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
  Store store;
  Definition def;
  std::string error;
  REQUIRE(hashTool(toolJson("a_one"), def, error));
  store.observe("a", "a_one", def, false, kNow);
  store.clearDirty();
  Book book(blockNew(d.path), std::move(store), true);  // the file was there at start

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
  Config cfg = blockNew(d.path);
  cfg.block_new = false;
  Book book(cfg, Store{}, false);
  CHECK(observe(book, "a", {"a_one"}).pending.empty());
  CHECK(observe(book, "a", {"a_one", "a_two"}).pending.empty());
  CHECK_FALSE(book.anyPending());
}

// Issue 24 item 4: replicas sharing one store file. Each book re-reads and merges the file
// under its lock before writing, so neither loses the other's pins.
TEST_CASE("pin book: two books sharing one file keep both writers' pins", "[pins]") {
  StoreDir d;
  REQUIRE_FALSE(d.dir.empty());
  // Both started before the file existed.
  Book one(blockNew(d.path), Store{}, false);
  Book two(blockNew(d.path), Store{}, false);
  observe(one, "a", {"a_one"});
  observe(two, "b", {"b_one"});
  observe(one, "c", {"c_one"});
  Store file = fileStore(d.path);
  CHECK(file.find("a", "a_one") != nullptr);
  CHECK(file.find("b", "b_one") != nullptr);
  CHECK(file.find("c", "c_one") != nullptr);

  // Upstream a, pinned by `one`, rug-pulls its tool when `two` first lists it: `two` judges it
  // against the pin in the file instead of trusting it on first sight.
  std::vector<std::string> items{toolJson("a_one", "rug pull")};
  Book::Observed seen;
  two.observe("a", items, kNow, nullptr, seen);
  CHECK(seen.save_error.empty());
  REQUIRE(seen.pending.size() == 1);
  CHECK_FALSE(seen.pending[0].is_new);
  CHECK(two.blocked("a", "a_one"));
  const Store after = fileStore(d.path);
  const ToolEntry* e = after.find("a", "a_one");
  REQUIRE(e != nullptr);
  CHECK(e->pending.has_value());
}

TEST_CASE("pin book: books writing the same file at once lose nothing", "[pins]") {
  StoreDir d;
  REQUIRE_FALSE(d.dir.empty());
  Book one(blockNew(d.path), Store{}, false);
  Book two(blockNew(d.path), Store{}, false);
  constexpr int kUpstreams = 40;
  const auto run = [](Book& book, std::string prefix, std::vector<std::string>& errors) {
    for (int i = 0; i < kUpstreams; ++i) {
      const std::string up = prefix + std::to_string(i);
      std::vector<std::string> items{toolJson(up + "_tool")};
      Book::Observed seen;
      book.observe(up, items, kNow, nullptr, seen);
      if (!seen.save_error.empty()) {
        errors.push_back(seen.save_error);
      }
    }
  };
  std::vector<std::string> errors_one;
  std::vector<std::string> errors_two;
  std::thread t1(run, std::ref(one), "one_", std::ref(errors_one));
  std::thread t2(run, std::ref(two), "two_", std::ref(errors_two));
  t1.join();
  t2.join();
  CHECK(errors_one.empty());
  CHECK(errors_two.empty());
  const Store file = fileStore(d.path);
  CHECK(file.upstreams().size() == 2 * kUpstreams);
}

TEST_CASE("pin book: an approval in the file is merged at a reload, not lost at a write",
          "[pins]") {
  StoreDir d;
  REQUIRE_FALSE(d.dir.empty());
  Book book(blockNew(d.path), Store{}, false);
  observe(book, "a", {"a_one", "a_two"});
  std::vector<std::string> items{toolJson("a_one", "v2"), toolJson("a_two")};
  Book::Observed seen;
  book.observe("a", items, kNow, nullptr, seen);
  REQUIRE(book.blocked("a", "a_one"));

  // `mcp-gateway pins approve` rewrites the file; the watcher's reload hands the file over.
  Store file = fileStore(d.path);
  REQUIRE(file.approveAll("2026-01-02T00:00:00Z") == 1);
  std::string error;
  REQUIRE(file.save(d.path, error));
  book.replace(blockNew(d.path), fileStore(d.path), true);
  CHECK_FALSE(book.blocked("a", "a_one"));

  // A reload with a file that lacks this book's pins (another writer's older copy) keeps them.
  book.replace(blockNew(d.path), Store{}, true);
  CHECK(book.json().find("a_two") != std::string::npos);
  // The next write keeps the approval.
  observe(book, "b", {"b_one"});
  const Store after = fileStore(d.path);
  REQUIRE(after.find("a", "a_one") != nullptr);
  CHECK_FALSE(after.find("a", "a_one")->pending.has_value());
  CHECK(after.find("b", "b_one") != nullptr);
}

TEST_CASE("pin book: a corrupt store file is reported and never overwritten", "[pins]") {
  StoreDir d;
  REQUIRE_FALSE(d.dir.empty());
  Book book(blockNew(d.path), Store{}, false);
  observe(book, "a", {"a_one"});
  const std::string corrupt = "{\"version\": 1, \"upstreams\": {";  // cut short
  {
    std::ofstream f(d.path, std::ios::binary | std::ios::trunc);
    f << corrupt;
  }
  for (int i = 0; i < 2; ++i) {
    std::vector<std::string> items{toolJson("b_one")};
    Book::Observed seen;
    book.observe("b", items, kNow, nullptr, seen);
    CHECK(seen.save_error.find(d.path) != std::string::npos);
    CHECK(seen.save_error.find("never overwritten") != std::string::npos);
  }
  std::ifstream in(d.path, std::ios::binary);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == corrupt);
  // The pins are still enforced from memory; once the file is removed they are written.
  CHECK(book.json().find("b_one") != std::string::npos);
  std::remove(d.path.c_str());
  std::vector<std::string> items{toolJson("a_one")};
  Book::Observed seen;
  book.observe("a", items, kNow, nullptr, seen);
  CHECK(seen.save_error.empty());
  CHECK(fileStore(d.path).find("b", "b_one") != nullptr);
}

// An item hashTool() refuses (here "name" written twice) is named by the caller's list reader,
// reported under that name and blocked until a later listing of its upstream is without it.
TEST_CASE("pin book: an item that cannot be pinned is named by the caller and blocked", "[pins]") {
  StoreDir d;
  REQUIRE_FALSE(d.dir.empty());
  Book book(blockNew(d.path), Store{}, false);
  const Book::ItemName first_name = [](std::string_view) { return std::string("twice\x01"); };
  std::vector<std::string> items{toolJson("a_one"), R"({"name":"twice","name":"x"})"};
  Book::Observed seen;
  book.observe("a", items, kNow, first_name, seen);
  CHECK(seen.save_error.empty());
  CHECK(seen.pending.empty());
  REQUIRE(seen.invalid.size() == 1);
  CHECK(seen.invalid[0].starts_with("\"twice\\u0001\": tool definition: not valid JSON: "));
  CHECK(book.anyPending());
  CHECK(book.blocked("a", "twice\x01"));
  CHECK_FALSE(book.blocked("b", "twice\x01"));
  CHECK_FALSE(book.blocked("a", "a_one"));

  // Without a name it is reported as it is and blocks nothing.
  Book::Observed unnamed;
  book.observe("b", items, kNow, nullptr, unnamed);
  REQUIRE(unnamed.invalid.size() == 1);
  CHECK(unnamed.invalid[0].starts_with("tool definition: not valid JSON: "));

  // The next listing of a without it lifts the block.
  CHECK(observe(book, "a", {"a_one"}).invalid.empty());
  CHECK_FALSE(book.blocked("a", "twice\x01"));
  CHECK_FALSE(book.anyPending());
}

TEST_CASE("pin book: the store as /pins shows it, and the refusal's data", "[pins]") {
  Store store;
  Definition v1;
  Definition v2;
  std::string error;
  REQUIRE(hashTool(toolJson("t"), v1, error));
  REQUIRE(hashTool(toolJson("t", "v2"), v2, error));
  store.observe("up\"1", "t", v1, false, "2026-01-01T00:00:00Z");
  store.observe("up\"1", "t", v2, false, "2026-01-02T00:00:00Z");
  store.observe("up\"1", "u", v1, false, "2026-01-01T00:00:00Z");
  store.observe("b", "n", v1, true, "2026-01-03T00:00:00Z");
  std::string want =
      R"({"store":"/p/pins.json","mode":"block","new_tools":"block","pending":2,"upstreams":{)"
      R"("b":{"n":{"state":"new","sha256":null,"since":null,"pending_sha256":"V1",)"
      R"("pending_since":"2026-01-03T00:00:00Z","changed":[]}},)"
      R"("up\"1":{"t":{"state":"changed","sha256":"V1","since":"2026-01-01T00:00:00Z",)"
      R"("pending_sha256":"V2","pending_since":"2026-01-02T00:00:00Z","changed":["description"]},)"
      R"("u":{"state":"pinned","sha256":"V1","since":"2026-01-01T00:00:00Z"}}}})";
  for (size_t at; (at = want.find("V1")) != std::string::npos;) {
    want.replace(at, 2, v1.sha256);
  }
  want.replace(want.find("V2"), 2, v2.sha256);
  Config cfg = blockNew("/p/pins.json");
  CHECK(storeJson(store, cfg) == want);
  cfg.mode = Config::Mode::kLog;
  cfg.block_new = false;
  CHECK(storeJson(Store{}, cfg) ==
        R"({"store":"/p/pins.json","mode":"log","new_tools":"allow","pending":0,"upstreams":{}})");

  CHECK(blockedData("w\x7f") == R"({"reason":"tool_definition_changed","upstream":"w\u007f"})");
}

}  // namespace gw::pins
