// pins/ report: what an observed tools/list answer means for the request and the operator (the
// access log's "pins_pending", the counters, the log lines), and the book's list and call
// decisions in block mode. Tables of findings with the exact text each gives.

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/pins/book.h"
#include "gateway/pins/report.h"

namespace gw::pins {
namespace {

Book::Finding changed(std::string tool, std::vector<std::string_view> fields, bool fresh = true) {
  Book::Finding f;
  f.tool = std::move(tool);
  f.fields = std::move(fields);
  f.fresh = fresh;
  return f;
}

Book::Finding added(std::string tool, bool fresh = true) {
  Book::Finding f;
  f.tool = std::move(tool);
  f.is_new = true;
  f.fresh = fresh;
  return f;
}

struct Case {
  const char* what;
  bool blocks;
  Book::Observed seen;
  std::string pending_log;
  std::vector<std::string_view> changes;
  std::vector<std::string> warnings;
  std::string error;
};

}  // namespace

TEST_CASE("pins report: findings become log items, counts and log lines", "[pins]") {
  const std::vector<Case> cases = {
      {"nothing found", true, {}, "", {}, {}, ""},
      {"a changed definition, first seen, log mode",
       false,
       {{changed("get", {"description", "inputSchema"})}, {}, ""},
       R"({"upstream":"w","tool":"get","change":"changed","fields":["description","inputSchema"]})",
       {"changed"},
       {"tool pinning: upstream 'w' changed the definition of tool \"get\" "
        "(description,inputSchema); not blocked (mode: log) (mcp-gateway pins approve)"},
       ""},
      {"a new tool, first seen, block mode",
       true,
       {{added("put")}, {}, ""},
       R"({"upstream":"w","tool":"put","change":"new"})",
       {"new"},
       {"tool pinning: upstream 'w' lists a new tool \"put\"; hidden and its calls refused "
        "until approved (mcp-gateway pins approve)"},
       ""},
      {"pending since an earlier listing: logged, not counted or warned of again",
       true,
       {{changed("get", {"title"}, false), added("put", false)}, {}, ""},
       R"({"upstream":"w","tool":"get","change":"changed","fields":["title"]},)"
       R"({"upstream":"w","tool":"put","change":"new"})",
       {},
       {},
       ""},
      {"a changed definition with no field named (a member only the pin had)",
       true,
       {{changed("get", {})}, {}, ""},
       R"({"upstream":"w","tool":"get","change":"changed","fields":[]})",
       {"changed"},
       {"tool pinning: upstream 'w' changed the definition of tool \"get\" (); hidden and its "
        "calls refused until approved (mcp-gateway pins approve)"},
       ""},
      {"a tool name with control characters and quotes is escaped everywhere",
       false,
       {{added("a\"b\x01\x7f")}, {}, ""},
       R"({"upstream":"w","tool":"a\"b\u0001\u007f","change":"new"})",
       {"new"},
       {"tool pinning: upstream 'w' lists a new tool \"a\\\"b\\u0001\\u007f\"; not blocked "
        "(mode: log) (mcp-gateway pins approve)"},
       ""},
      {"items that cannot be pinned, block mode",
       true,
       {{}, {"\"dup\": tool definition: not valid JSON: x", "tool definition: y"}, ""},
       "",
       {},
       {"tool pinning: upstream 'w' listed a tool that cannot be pinned: \"dup\": tool "
        "definition: not valid JSON: x (hidden and its calls refused)",
        "tool pinning: upstream 'w' listed a tool that cannot be pinned: tool definition: y "
        "(hidden and its calls refused)"},
       ""},
      {"an item that cannot be pinned, log mode",
       false,
       {{}, {"tool definition: y"}, ""},
       "",
       {},
       {"tool pinning: upstream 'w' listed a tool that cannot be pinned: tool definition: y"},
       ""},
      {"the store could not be written, after the warnings",
       true,
       {{added("put")}, {}, "pins store /p: No space left on device"},
       R"({"upstream":"w","tool":"put","change":"new"})",
       {"new"},
       {"tool pinning: upstream 'w' lists a new tool \"put\"; hidden and its calls refused "
        "until approved (mcp-gateway pins approve)"},
       "tool pinning: pins store /p: No space left on device (the pins are kept in memory and "
       "written with the next change)"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const Report r = report("w", c.seen, c.blocks);
    CHECK(r.pending_log == c.pending_log);
    CHECK(r.changes == c.changes);
    CHECK(r.warnings == c.warnings);
    CHECK(r.error == c.error);
  }
}

TEST_CASE("pins report: the upstream is escaped in the log items only", "[pins]") {
  Book::Observed seen;
  seen.pending.push_back(added("t"));
  const Report r = report("up\"1", seen, false);
  CHECK(r.pending_log == R"({"upstream":"up\"1","tool":"t","change":"new"})");
  REQUIRE(r.warnings.size() == 1);
  CHECK(r.warnings[0].starts_with("tool pinning: upstream 'up\"1' lists"));
}

TEST_CASE("pins book: block mode hides blocked tools and refuses their calls", "[pins]") {
  Definition v1;
  Definition v2;
  std::string error;
  REQUIRE(hashTool(R"({"name":"t","description":"1"})", v1, error));
  REQUIRE(hashTool(R"({"name":"t","description":"2"})", v2, error));
  Store pending;
  pending.observe("a", "t", v1, false, "2026-01-01T00:00:00Z");
  pending.observe("a", "t", v2, false, "2026-01-02T00:00:00Z");  // t of a awaits approval
  pending.observe("a", "u", v1, false, "2026-01-01T00:00:00Z");
  Store pinned;
  pinned.observe("a", "t", v1, false, "2026-01-01T00:00:00Z");

  struct Row {
    Config::Mode mode;
    bool has_pending;
    std::string_view method;
    std::string_view upstream;
    std::string_view tool;
    bool hides;
    bool refuses;
  };
  using M = Config::Mode;
  const Row rows[] = {
      {M::kBlock, true, "tools/call", "a", "t", true, true},
      {M::kBlock, true, "tools/call", "a", "u", true, false},    // another tool
      {M::kBlock, true, "tools/call", "b", "t", true, false},    // another upstream
      {M::kBlock, true, "tools/list", "a", "t", true, false},    // not a call
      {M::kBlock, true, "prompts/get", "a", "t", true, false},   // not a tool
      {M::kLog, true, "tools/call", "a", "t", false, false},     // log mode blocks nothing
      {M::kBlock, false, "tools/call", "a", "t", false, false},  // nothing pending
  };
  for (const Row& row : rows) {
    INFO(row.method << " " << row.upstream << "/" << row.tool << " pending " << row.has_pending);
    Config cfg;
    cfg.mode = row.mode;
    cfg.store = "/nonexistent/pins.json";  // nothing is observed: never read or written
    const Book book(cfg, row.has_pending ? pending : pinned, true);
    CHECK(book.hidesTools() == row.hides);
    CHECK(book.refusesCall(row.method, row.upstream, row.tool) == row.refuses);
  }
}

}  // namespace gw::pins
