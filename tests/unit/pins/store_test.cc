// pins/ Store as a value: its file format (serialize, strict parse with precise paths) and the
// transitions of a tools/list sighting (observe) and of an operator's approval.

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/pins/pins.h"

namespace gw::pins {
namespace {

constexpr std::string_view kT1 = "2026-01-01T00:00:00Z";
constexpr std::string_view kT2 = "2026-01-02T00:00:00Z";
constexpr std::string_view kT3 = "2026-01-03T00:00:00Z";
constexpr std::string_view kT4 = "2026-01-04T00:00:00Z";

// A tool's definition as hashTool() makes it.
Definition tool(std::string_view name, std::string_view description = "d",
                std::string_view schema = R"({"type":"object"})") {
  const std::string text = R"({"name":")" + std::string(name) + R"(","description":")" +
                           std::string(description) + R"(","inputSchema":)" + std::string(schema) +
                           "}";
  Definition def;
  std::string error;
  INFO(text);
  REQUIRE(hashTool(text, def, error));
  return def;
}

bool sameDefinition(const Definition& a, const Definition& b) {
  return a == b;
}

bool sameUpstreams(const Upstreams& a, const Upstreams& b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (auto ia = a.begin(), ib = b.begin(); ia != a.end(); ++ia, ++ib) {
    if (ia->first != ib->first || ia->second.size() != ib->second.size()) {
      return false;
    }
    for (auto ta = ia->second.begin(), tb = ib->second.begin(); ta != ia->second.end();
         ++ta, ++tb) {
      const ToolEntry& ea = ta->second;
      const ToolEntry& eb = tb->second;
      if (ta->first != tb->first || ea.pin.has_value() != eb.pin.has_value() ||
          ea.pending.has_value() != eb.pending.has_value()) {
        return false;
      }
      if (ea.pin && (!sameDefinition(ea.pin->def, eb.pin->def) || ea.pin->since != eb.pin->since)) {
        return false;
      }
      if (ea.pending &&
          (!sameDefinition(ea.pending->def, eb.pending->def) ||
           ea.pending->since != eb.pending->since || ea.pending->is_new != eb.pending->is_new)) {
        return false;
      }
    }
  }
  return true;
}

Store parsed(std::string_view text) {
  Store store;
  std::string error;
  INFO(text);
  const bool ok = Store::parse(text, store, error);
  INFO(error);
  REQUIRE(ok);
  return store;
}

// A store with every kind of entry: pins only, a pin with a changed pending, a new pending,
// a definition with all six members, names that need escaping, an upstream with no tools.
Store sampleStore() {
  Store s;
  s.observe("weather", "get_weather", tool("get_weather"), false, kT1);
  s.observe("weather", "get_weather", tool("get_weather", "changed"), false, kT2);
  s.observe("weather", "forecast", tool("forecast"), false, kT1);
  s.observe("weather", "radar", tool("radar"), true, kT3);
  Definition full;
  std::string error;
  REQUIRE(hashTool(R"({"name":"all","title":null,"description":"x","inputSchema":{},)"
                   R"("outputSchema":{"type":"object"},"annotations":{"readOnlyHint":true}})",
                   full, error));
  s.observe("files", "all", full, false, kT1);
  s.observe("files \"quoted\" \xC3\xA9", "tab\there/\\", tool("tab\\there/\\\\"), false, kT4);
  return s;
}

TEST_CASE("pins store: serialize then parse gives the same store", "[pins]") {
  const Store s = sampleStore();
  const std::string text = s.serialize();
  const Store back = parsed(text);
  CHECK(sameUpstreams(back.upstreams(), s.upstreams()));
  CHECK(back.serialize() == text);
  CHECK_FALSE(back.dirty());
  CHECK(back.pendingCount() == 2);
  REQUIRE(back.find("files", "all") != nullptr);
  CHECK(back.find("files", "all")->pin->def.fields[1] == sha256Hex("null"));

  const Store empty;
  CHECK(empty.serialize() == "{\n  \"version\": 1,\n  \"upstreams\": {}\n}\n");
  CHECK(parsed(empty.serialize()).upstreams().empty());
  // Whitespace and member order in the file do not matter.
  CHECK(parsed(R"({"upstreams":{"u":{}},"version":1})").upstreams().count("u") == 1);
}

std::string expand(std::string text) {
  for (const char c : {'a', 'b', '1', '2'}) {
    const std::string placeholder = std::string("<") + c + ">";
    for (size_t at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder)) {
      text.replace(at, placeholder.size(), std::string(64, c));
    }
  }
  return text;
}

TEST_CASE("pins store: the file format", "[pins]") {
  Definition pin;
  pin.sha256 = std::string(64, 'a');
  pin.fields[0] = std::string(64, '1');
  pin.fields[2] = std::string(64, '2');
  Definition changed;
  changed.sha256 = std::string(64, 'b');
  changed.fields[0] = std::string(64, '1');
  Store s;
  CHECK(s.observe("w", "t", pin, false, kT1) == Seen::kRecorded);
  CHECK(s.observe("w", "t", changed, false, kT2) == Seen::kChanged);
  CHECK(s.observe("w", "n", changed, true, kT3) == Seen::kNewPending);
  const std::string expected = expand(R"({
  "version": 1,
  "upstreams": {
    "w": {
      "n": {
        "pending": {
          "sha256": "<b>",
          "fields": {
            "name": "<1>"
          },
          "since": "2026-01-03T00:00:00Z",
          "reason": "new"
        }
      },
      "t": {
        "pin": {
          "sha256": "<a>",
          "fields": {
            "name": "<1>",
            "description": "<2>"
          },
          "since": "2026-01-01T00:00:00Z"
        },
        "pending": {
          "sha256": "<b>",
          "fields": {
            "name": "<1>"
          },
          "since": "2026-01-02T00:00:00Z",
          "reason": "changed"
        }
      }
    }
  }
}
)");
  CHECK(s.serialize() == expected);
  CHECK(parsed(expected).serialize() == expected);
}

TEST_CASE("pins store: parse refuses anything but a valid store, saying where", "[pins]") {
  const std::string h(64, 'a');
  const std::string fields = R"({"name":")" + h + R"("})";
  const std::string pin =
      R"({"sha256":")" + h + R"(","fields":)" + fields + R"(,"since":"2026-01-01T00:00:00Z"})";
  const auto pending = [&](std::string_view reason) {
    return R"({"sha256":")" + h + R"(","fields":)" + fields +
           R"(,"since":"2026-01-01T00:00:00Z","reason":)" + std::string(reason) + "}";
  };
  const auto doc = [](const std::string& entry) {
    return R"({"version":1,"upstreams":{"w":{"t":)" + entry + "}}}";
  };
  const auto pinWith = [&](const std::string& members) {
    return doc(R"({"pin":{)" + members + "}}");
  };
  const std::string sha = R"("sha256":")" + h + R"(")";
  const std::string since = R"("since":"2026-01-01T00:00:00Z")";
  const std::string fld = R"("fields":)" + fields;
  // The valid ones the bad ones are variations of.
  parsed(doc(R"({"pin":)" + pin + "}"));
  parsed(doc(R"({"pin":)" + pin + R"(,"pending":)" + pending(R"("changed")") + "}"));
  parsed(doc(R"({"pending":)" + pending(R"("new")") + "}"));

  struct Case {
    std::string text;
    std::string error;
  };
  const std::string at = "pins store: upstreams.w.t";
  const std::string hex = ": not a 64-digit lowercase hex string";
  const std::vector<Case> cases = {
      {"", "pins store: not valid JSON"},
      {R"({"version":1,"upstreams":{})", "pins store: not valid JSON"},
      {R"({"version":1,"upstreams":{}} x)", "pins store: not valid JSON"},
      {"[]", "pins store: (top level): not an object"},
      {R"({"version":2,"upstreams":{}})",
       "pins store: version: not 1 (this gateway reads version 1 only)"},
      {R"({"version":"1","upstreams":{}})",
       "pins store: version: not 1 (this gateway reads version 1 only)"},
      {R"({"version":1.0,"upstreams":{}})",
       "pins store: version: not 1 (this gateway reads version 1 only)"},
      {R"({"upstreams":{}})", "pins store: version: missing"},
      {R"({"version":1})", "pins store: upstreams: missing"},
      {R"({"version":1,"upstreams":{},"extra":0})", "pins store: extra: unknown key"},
      {R"({"version":1,"version":1,"upstreams":{}})", "pins store: version: repeated key"},
      {R"({"version":1,"upstreams":[]})", "pins store: upstreams: not an object"},
      {R"({"version":1,"upstreams":{"w":1}})", "pins store: upstreams.w: not an object"},
      {R"({"version":1,"upstreams":{"w":{},"w":{}}})", "pins store: upstreams.w: repeated key"},
      {R"({"version":1,"upstreams":{"w":{"t":{"pin":)" + pin + R"(},"t":{"pin":)" + pin + "}}}}",
       at + ": repeated key"},
      {doc("[]"), at + ": not an object"},
      {doc("{}"), at + R"(: neither "pin" nor "pending")"},
      {doc(R"({"pinned":)" + pin + "}"), at + ".pinned: unknown key"},
      {doc(R"({"pin":)" + pin + R"(,"pin":)" + pin + "}"), at + ".pin: repeated key"},
      {doc(R"({"pin":"x"})"), at + ".pin: not an object"},
      {pinWith(sha + "," + fld), at + ".pin.since: missing"},
      {pinWith(since + "," + fld), at + ".pin.sha256: missing"},
      {pinWith(sha + "," + since), at + ".pin.fields: missing"},
      {pinWith(sha + "," + fld + "," + since + R"(,"reason":"changed")"),
       at + ".pin.reason: unknown key"},
      {pinWith(sha + "," + sha + "," + fld + "," + since), at + ".pin.sha256: repeated key"},
      {pinWith(R"("sha256":")" + std::string(64, 'A') + R"(",)" + fld + "," + since),
       at + ".pin.sha256" + hex},
      {pinWith(R"("sha256":")" + std::string(63, 'a') + R"(",)" + fld + "," + since),
       at + ".pin.sha256" + hex},
      {pinWith(R"("sha256":")" + std::string(65, 'a') + R"(",)" + fld + "," + since),
       at + ".pin.sha256" + hex},
      {pinWith(R"("sha256":")" + std::string(63, 'a') + R"(g",)" + fld + "," + since),
       at + ".pin.sha256" + hex},
      {pinWith(R"("sha256":7,)" + fld + "," + since), at + ".pin.sha256" + hex},
      {pinWith(sha + R"(,"fields":[],)" + since), at + ".pin.fields: not an object"},
      {pinWith(sha + R"(,"fields":{},)" + since), at + ".pin.fields.name: missing"},
      {pinWith(sha + R"(,"fields":{"description":")" + h + R"("},)" + since),
       at + ".pin.fields.name: missing"},
      {pinWith(sha + R"(,"fields":{"name":")" + h + R"(","colour":")" + h + R"("},)" + since),
       at + ".pin.fields.colour: unknown field name"},
      {pinWith(sha + R"(,"fields":{"name":")" + h + R"(","name":")" + h + R"("},)" + since),
       at + ".pin.fields.name: repeated key"},
      {pinWith(sha + R"(,"fields":{"name":")" + h + R"(","title":null},)" + since),
       at + ".pin.fields.title" + hex},
      {pinWith(sha + R"(,"fields":{"name":"")" + R"(},)" + since), at + ".pin.fields.name" + hex},
      {pinWith(sha + "," + fld + R"(,"since":5)"), at + ".pin.since: not a string"},
      {pinWith(sha + "," + fld + R"(,"since":"")"), at + ".pin.since: empty"},
      {doc(R"({"pending":)" + pending(R"("new")") + R"(,"pin":)" + pin + "}"),
       at + R"(.pending.reason: "new" but the tool has a pin)"},
      {doc(R"({"pending":)" + pending(R"("changed")") + "}"),
       at + R"(.pending.reason: "changed" but the tool has no pin)"},
      {doc(R"({"pending":)" + pending(R"("other")") + "}"),
       at + R"(.pending.reason: not "changed" or "new")"},
      {doc(R"({"pending":)" + pending("true") + "}"), at + ".pending.reason: not a string"},
      {doc(R"({"pending":{)" + sha + "," + fld + "," + since + "}}"),
       at + ".pending.reason: missing"},
  };
  for (const Case& c : cases) {
    INFO("text: " << c.text);
    Store out = sampleStore();
    out.clearDirty();
    const std::string before = out.serialize();
    std::string error;
    CHECK_FALSE(Store::parse(c.text, out, error));
    if (c.error.starts_with("pins store: not valid JSON")) {
      CHECK(error.starts_with(c.error));
    } else {
      CHECK(error == c.error);
    }
    CHECK(out.serialize() == before);  // untouched
    CHECK_FALSE(out.dirty());
  }
}

TEST_CASE("pins store: observe records, pins and tracks changes", "[pins]") {
  const Definition v1 = tool("t", "one");
  const Definition v2 = tool("t", "two");
  const Definition v3 = tool("t", "three", R"({"type":"object","required":["x"]})");
  Store s;
  CHECK_FALSE(s.dirty());
  std::vector<std::string_view> changed = {"junk"};

  // First sight without block_new: pinned on sight.
  CHECK(s.observe("up", "t", v1, false, kT1, &changed) == Seen::kRecorded);
  CHECK(changed.empty());
  CHECK(s.dirty());
  const ToolEntry* e = s.find("up", "t");
  REQUIRE(e != nullptr);
  REQUIRE(e->pin);
  CHECK(e->pin->def == v1);
  CHECK(e->pin->since == kT1);
  CHECK_FALSE(e->pending);
  CHECK_FALSE(s.blocked("up", "t"));
  s.clearDirty();

  // Seen again unchanged: nothing to write.
  changed = {"junk"};
  CHECK(s.observe("up", "t", v1, false, kT2, &changed) == Seen::kPinned);
  CHECK(changed.empty());
  CHECK_FALSE(s.dirty());
  CHECK(s.find("up", "t")->pin->since == kT1);

  // A different definition: a pending change, the pin kept.
  CHECK(s.observe("up", "t", v2, false, kT2, &changed) == Seen::kChanged);
  CHECK(changed == std::vector<std::string_view>{"description"});
  CHECK(s.dirty());
  CHECK(s.blocked("up", "t"));
  CHECK(s.pendingCount() == 1);
  e = s.find("up", "t");
  REQUIRE(e->pending);
  CHECK(e->pending->def == v2);
  CHECK(e->pending->since == kT2);
  CHECK_FALSE(e->pending->is_new);
  CHECK(e->pin->def == v1);
  s.clearDirty();

  // The same change seen again keeps its `since`; no changed_fields vector is fine.
  CHECK(s.observe("up", "t", v2, false, kT3) == Seen::kChanged);
  CHECK_FALSE(s.dirty());
  CHECK(s.find("up", "t")->pending->since == kT2);
  CHECK(s.observe("up", "t", v2, false, kT3, &changed) == Seen::kChanged);
  CHECK(changed == std::vector<std::string_view>{"description"});

  // Another change replaces it.
  CHECK(s.observe("up", "t", v3, false, kT3, &changed) == Seen::kChanged);
  CHECK(changed == std::vector<std::string_view>{"description", "inputSchema"});
  CHECK(s.dirty());
  CHECK(s.find("up", "t")->pending->def == v3);
  CHECK(s.find("up", "t")->pending->since == kT3);
  s.clearDirty();

  // block_new does not matter for a pinned tool.
  CHECK(s.observe("up", "t", v2, true, kT4) == Seen::kChanged);
  CHECK(s.find("up", "t")->pending->def == v2);
  CHECK(s.find("up", "t")->pending->since == kT4);
  s.clearDirty();

  // Back to the pinned definition: the pending change is dropped.
  changed = {"junk"};
  CHECK(s.observe("up", "t", v1, true, kT4, &changed) == Seen::kPinned);
  CHECK(changed.empty());
  CHECK(s.dirty());
  CHECK_FALSE(s.blocked("up", "t"));
  CHECK_FALSE(s.find("up", "t")->pending);
  CHECK(s.find("up", "t")->pin->def == v1);
  CHECK(s.find("up", "t")->pin->since == kT1);
  CHECK(s.pendingCount() == 0);

  // The same tool name under another upstream is another tool.
  CHECK(s.observe("other", "t", v2, false, kT1) == Seen::kRecorded);
  CHECK(s.observe("up", "t", v1, false, kT1) == Seen::kPinned);
  CHECK(s.find("other", "t")->pin->def == v2);
  CHECK(s.find("other", "u") == nullptr);
  CHECK(s.find("nope", "t") == nullptr);
  CHECK_FALSE(s.blocked("nope", "t"));
  CHECK_FALSE(s.blocked("other", "u"));
}

TEST_CASE("pins store: new tools wait for approval when blocked", "[pins]") {
  const Definition v1 = tool("n", "one");
  const Definition v2 = tool("n", "two");
  Store s;
  std::vector<std::string_view> changed = {"junk"};
  CHECK(s.observe("up", "n", v1, true, kT1, &changed) == Seen::kNewPending);
  CHECK(changed.empty());
  CHECK(s.dirty());
  CHECK(s.blocked("up", "n"));
  const ToolEntry* e = s.find("up", "n");
  REQUIRE(e != nullptr);
  CHECK_FALSE(e->pin);
  REQUIRE(e->pending);
  CHECK(e->pending->is_new);
  CHECK(e->pending->def == v1);
  CHECK(e->pending->since == kT1);
  s.clearDirty();

  // Seen again: kept, `since` unchanged.
  CHECK(s.observe("up", "n", v1, true, kT2) == Seen::kNewPending);
  CHECK_FALSE(s.dirty());
  CHECK(s.find("up", "n")->pending->since == kT1);

  // It stays pending when the caller stops blocking new tools, and is not pinned.
  CHECK(s.observe("up", "n", v1, false, kT2, &changed) == Seen::kNewPending);
  CHECK(changed.empty());
  CHECK_FALSE(s.dirty());
  CHECK_FALSE(s.find("up", "n")->pin);
  CHECK(s.blocked("up", "n"));

  // A different definition replaces the pending one (still new).
  CHECK(s.observe("up", "n", v2, false, kT3) == Seen::kNewPending);
  CHECK(s.dirty());
  CHECK(s.find("up", "n")->pending->def == v2);
  CHECK(s.find("up", "n")->pending->since == kT3);
  CHECK(s.find("up", "n")->pending->is_new);
  CHECK_FALSE(s.find("up", "n")->pin);

  // Approved: pinned; then seen as pinned.
  CHECK(s.approve("up", "n", kT4) == 1);
  CHECK(s.find("up", "n")->pin->def == v2);
  CHECK(s.find("up", "n")->pin->since == kT4);
  CHECK_FALSE(s.find("up", "n")->pending);
  CHECK(s.observe("up", "n", v2, true, kT4) == Seen::kPinned);
}

TEST_CASE("pins store: approvals", "[pins]") {
  Store s;
  for (const char* name : {"a", "b", "c", "d"}) {
    s.observe("w", name, tool(name, "one"), false, kT1);
  }
  s.observe("w", "a", tool("a", "two"), false, kT2);  // changed
  s.observe("w", "b", tool("b", "two"), false, kT2);  // changed
  s.observe("w", "e", tool("e"), true, kT2);          // new
  s.observe("x", "a", tool("a"), true, kT2);          // new, other upstream
  s.observe("x", "b", tool("b"), false, kT2);         // pinned
  CHECK(s.pendingCount() == 4);
  s.clearDirty();

  // Nothing to approve: 0 and not dirty.
  CHECK(s.approve("nope", "a", kT3) == 0);
  CHECK(s.approve("w", "nope", kT3) == 0);
  CHECK(s.approve("w", "c", kT3) == 0);
  CHECK(s.approveUpstream("nope", kT3) == 0);
  CHECK_FALSE(s.dirty());

  // One tool.
  CHECK(s.approve("w", "a", kT3) == 1);
  CHECK(s.dirty());
  CHECK_FALSE(s.blocked("w", "a"));
  CHECK(s.find("w", "a")->pin->def == tool("a", "two"));
  CHECK(s.find("w", "a")->pin->since == kT3);
  CHECK(s.pendingCount() == 3);
  CHECK(s.approve("w", "a", kT3) == 0);
  s.clearDirty();

  // One upstream: the other keeps its pending entry.
  CHECK(s.approveUpstream("w", kT4) == 2);
  CHECK(s.dirty());
  CHECK(s.find("w", "b")->pin->def == tool("b", "two"));
  CHECK(s.find("w", "e")->pin->def == tool("e"));
  CHECK(s.find("w", "e")->pin->since == kT4);
  CHECK(s.find("w", "c")->pin->since == kT1);  // untouched
  CHECK(s.blocked("x", "a"));
  CHECK(s.pendingCount() == 1);
  s.clearDirty();
  CHECK(s.approveUpstream("w", kT4) == 0);
  CHECK_FALSE(s.dirty());

  // Everything.
  s.observe("w", "c", tool("c", "two"), false, kT4);
  s.clearDirty();
  CHECK(s.approveAll(kT4) == 2);
  CHECK(s.dirty());
  CHECK(s.pendingCount() == 0);
  CHECK(s.find("x", "a")->pin->def == tool("a"));
  CHECK(s.find("w", "c")->pin->def == tool("c", "two"));
  s.clearDirty();
  CHECK(s.approveAll(kT4) == 0);
  CHECK_FALSE(s.dirty());

  // Approved definitions are now the pins.
  CHECK(s.observe("w", "a", tool("a", "two"), true, kT4) == Seen::kPinned);
  CHECK(s.observe("w", "a", tool("a", "one"), true, kT4) == Seen::kChanged);
  CHECK_FALSE(s.find("w", "a")->pending->is_new);
}

TEST_CASE("pins store: a parsed store is not dirty and copies are independent", "[pins]") {
  Store s = sampleStore();
  CHECK(s.dirty());
  Store copy = s;
  copy.clearDirty();
  CHECK(copy.approveAll(kT4) == 2);
  CHECK(s.pendingCount() == 2);
  CHECK(copy.pendingCount() == 0);
  Store back;
  std::string error;
  REQUIRE(Store::parse(s.serialize(), back, error));
  CHECK_FALSE(back.dirty());
}

// merge(): what two writers of one shared file hold is combined, nothing lost (issue 24 item 4).
TEST_CASE("pins store: merge keeps every writer's pins and pending changes", "[pins]") {
  Store mine;
  mine.observe("a", "t", tool("t"), false, kT1);
  Store theirs;
  theirs.observe("b", "u", tool("u"), false, kT1);
  theirs.observe("a", "other", tool("other"), false, kT2);
  CHECK(mine.merge(theirs));
  REQUIRE(mine.find("a", "t") != nullptr);
  REQUIRE(mine.find("a", "other") != nullptr);
  REQUIRE(mine.find("b", "u") != nullptr);
  CHECK(mine.dirty());  // observe set it; merge leaves it as it was
  // Merging the same again changes nothing.
  CHECK_FALSE(mine.merge(theirs));
  Store copy = mine;
  CHECK_FALSE(mine.merge(copy));
}

TEST_CASE("pins store: merge does not undo an approval with an older pending copy", "[pins]") {
  // Both replicas saw the change; an operator approved it in the file (later).
  Store mine;
  mine.observe("a", "t", tool("t", "one"), false, kT1);
  mine.observe("a", "t", tool("t", "two"), false, kT2);
  REQUIRE(mine.blocked("a", "t"));
  Store file = mine;
  REQUIRE(file.approve("a", "t", kT3) == 1);
  CHECK(mine.merge(file));
  CHECK_FALSE(mine.blocked("a", "t"));
  REQUIRE(mine.find("a", "t")->pin);
  CHECK(mine.find("a", "t")->pin->def == tool("t", "two"));
  CHECK(mine.find("a", "t")->pin->since == kT3);

  // The other way round: the file holds the older pending entry, this store the approval.
  Store file2;
  file2.observe("a", "t", tool("t", "one"), false, kT1);
  file2.observe("a", "t", tool("t", "two"), false, kT2);
  Store approved = file2;
  approved.approve("a", "t", kT3);
  approved.merge(file2);
  CHECK_FALSE(approved.blocked("a", "t"));
  CHECK(approved.find("a", "t")->pin->def == tool("t", "two"));

  // An approved "new" tool: the pin wins over the pending copy.
  Store n;
  n.observe("a", "fresh", tool("fresh"), true, kT1);
  Store n_file = n;
  n_file.approveAll(kT2);
  n.merge(n_file);
  CHECK_FALSE(n.blocked("a", "fresh"));
  CHECK(n.find("a", "fresh")->pin);
}

TEST_CASE("pins store: merge keeps a pending change the other side never saw", "[pins]") {
  // This replica saw a rug pull; the file (another replica) only has the pin.
  Store mine;
  mine.observe("a", "t", tool("t", "one"), false, kT1);
  Store file = mine;
  mine.observe("a", "t", tool("t", "rug pull"), false, kT2);
  CHECK_FALSE(mine.merge(file));
  CHECK(mine.blocked("a", "t"));
  // And the file takes it from this store.
  CHECK(file.merge(mine));
  CHECK(file.blocked("a", "t"));
  CHECK_FALSE(file.find("a", "t")->pending->is_new);

  // A "new" pending on one side and a pin (of another definition) on the other: the pending
  // entry is kept as a change against that pin.
  Store pinned;
  pinned.observe("a", "x", tool("x", "one"), false, kT1);
  Store pending;
  pending.observe("a", "x", tool("x", "two"), true, kT2);
  CHECK(pinned.merge(pending));
  const ToolEntry* e = pinned.find("a", "x");
  REQUIRE(e->pin);
  REQUIRE(e->pending);
  CHECK_FALSE(e->pending->is_new);
  CHECK(e->pending->def == tool("x", "two"));

  // Two pins of different definitions: the later one (an approval) wins, either way round.
  Store early;
  early.observe("a", "y", tool("y", "one"), false, kT1);
  Store late;
  late.observe("a", "y", tool("y", "two"), false, kT4);
  Store early2 = early;
  early.merge(late);
  CHECK(early.find("a", "y")->pin->def == tool("y", "two"));
  late.merge(early2);
  CHECK(late.find("a", "y")->pin->def == tool("y", "two"));
  // The merged store is a valid store.
  Store round;
  std::string error;
  CHECK(Store::parse(pinned.serialize(), round, error));
  CHECK(Store::parse(file.serialize(), round, error));
}

TEST_CASE("pins store: wouldChange says whether observe would write", "[pins]") {
  Store s;
  CHECK(s.wouldChange("a", "t", tool("t")));
  s.observe("a", "t", tool("t"), false, kT1);
  CHECK_FALSE(s.wouldChange("a", "t", tool("t")));
  CHECK(s.wouldChange("a", "t", tool("t", "two")));
  s.observe("a", "t", tool("t", "two"), false, kT2);
  CHECK_FALSE(s.wouldChange("a", "t", tool("t", "two")));
  CHECK(s.wouldChange("a", "t", tool("t")));  // back to its pin: the pending entry goes
  CHECK(s.wouldChange("a", "t", tool("t", "three")));
  s.observe("a", "n", tool("n"), true, kT1);
  CHECK_FALSE(s.wouldChange("a", "n", tool("n")));
  CHECK(s.wouldChange("a", "n", tool("n", "other")));
}

}  // namespace
}  // namespace gw::pins
