// proxy::ListMemo: a list answer seen again (its id aside) is not parsed again, and its
// filtered answer is reused only for a caller whose policy decides every key as the one it
// was made for; the reused answer is byte for byte what filtering the new answer gives, for
// every id spelling and place; anything else is made again; the memory stays bounded.

#include <catch.hpp>

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "gateway/federation/federation.h"
#include "gateway/proxy/list_memo.h"

namespace {

using gw::federation::ListKind;
using gw::federation::Page;
using gw::proxy::ListMemo;

const std::vector<std::string> kTools = {"alpha", "beta", "gamma", "delta"};

std::string toolsJson(const std::vector<std::string>& tools) {
  std::string a;
  for (const std::string& t : tools) {
    a += a.empty() ? "" : ",";
    a +=
        R"({"name":")" + t +
        R"(","inputSchema":{"type":"object","properties":{"id":{"type":"string","default":"7"}}}})";
  }
  return a;
}

// The id first ({"jsonrpc":"2.0","id":…) or last (…,"id":…}).
std::string answer(const std::string& id, bool id_last = false,
                   const std::vector<std::string>& tools = kTools) {
  const std::string result =
      R"("result":{"tools":[)" + toolsJson(tools) + R"(],"ttlMs":5000,"cacheScope":"public"})";
  if (id_last) {
    return R"({"jsonrpc":"2.0",)" + result + R"(,"id":)" + id + "}";
  }
  return R"({"jsonrpc":"2.0","id":)" + id + "," + result + "}";
}

Page parse(const std::string& text) {
  Page p;
  std::string why;
  REQUIRE(gw::federation::parsePage(ListKind::kTools, text, p, why) ==
          gw::federation::PageError::kNone);
  return p;
}

ListMemo::Keep allowing(std::set<std::string> allowed, int* asked = nullptr) {
  return [allowed = std::move(allowed), asked](std::string_view key) {
    if (asked != nullptr) {
      ++*asked;
    }
    return allowed.count(std::string(key)) > 0;
  };
}

std::string direct(const std::string& text, const ListMemo::Keep& keep) {
  std::string out;
  size_t hidden = 0;
  REQUIRE(gw::federation::filterListAnswer(ListKind::kTools, text, keep, out, hidden, nullptr));
  return out;
}

// What the proxy does with one answer: find or keep, then reuse or filter anew.
std::string serve(ListMemo& memo, const std::string& text, const ListMemo::Keep& keep,
                  bool* reused = nullptr) {
  ListMemo::Match m;
  ListMemo::Entry* e = nullptr;
  const bool found = memo.find("up", ListKind::kTools, text, m);
  if (found) {
    e = m.entry;
  } else {
    Page p = parse(text);
    e = memo.keep("up", ListKind::kTools, text, p);
  }
  std::string out;
  size_t hidden = 0;
  const bool again = found && memo.reuse(m, keep, out, hidden);
  if (reused != nullptr) {
    *reused = again;
  }
  if (!again) {
    REQUIRE(memo.filterNew(e, found ? &m : nullptr, ListKind::kTools, text, keep, out, hidden));
  }
  return out;
}

}  // namespace

TEST_CASE("list memo: the same list to another request is found, its id aside",
          "[proxy][list_memo]") {
  ListMemo memo;
  ListMemo::Match m;
  CHECK_FALSE(memo.find("up", ListKind::kTools, answer("1"), m));  // nothing kept yet
  Page p = parse(answer("1"));
  ListMemo::Entry* e = memo.keep("up", ListKind::kTools, answer("1"), p);
  REQUIRE(e != nullptr);
  CHECK(ListMemo::page(*e).items.size() == kTools.size());
  CHECK(memo.find("up", ListKind::kTools, answer("1"), m));
  CHECK(m.id.empty());  // byte for byte
  CHECK(memo.find("up", ListKind::kTools, answer("12345"), m));
  CHECK(m.id == "12345");
  CHECK(memo.find("up", ListKind::kTools, answer(R"("req-9")"), m));
  CHECK(m.id == R"("req-9")");
  // Another list, another upstream, another kind: not found.
  CHECK_FALSE(memo.find("up", ListKind::kTools, answer("2", false, {"alpha", "beta"}), m));
  CHECK_FALSE(memo.find("other", ListKind::kTools, answer("1"), m));
  CHECK_FALSE(memo.find("up", ListKind::kPrompts, answer("1"), m));
  // A difference that is not the message's id (the schema's "id" default) is not the same.
  std::string changed = answer("1");
  changed.replace(changed.find(R"("default":"7")"), 13, R"("default":"8")");
  CHECK_FALSE(memo.find("up", ListKind::kTools, changed, m));
}

TEST_CASE("list memo: a view is reused only for the same visibility set, with the new id",
          "[proxy][list_memo]") {
  for (const bool id_last : {false, true}) {
    ListMemo memo;
    const auto ab = allowing({"alpha", "beta"});
    const auto g = allowing({"gamma"});
    bool reused = true;
    CHECK(serve(memo, answer("1", id_last), ab, &reused) == direct(answer("1", id_last), ab));
    CHECK_FALSE(reused);  // first time: filtered
    // Every id spelling, each place: the view reused, byte for byte the filter's answer.
    for (const std::string id : {"1", "2", "99999999", "-3", "0.5", R"("abc")", R"("")",
                                 R"("a-much-longer-request-identifier-0001")"}) {
      CAPTURE(id, id_last);
      CHECK(serve(memo, answer(id, id_last), ab, &reused) == direct(answer(id, id_last), ab));
      CHECK(reused);
    }
    // An id the matcher does not take as one (null): made again, as right.
    CHECK(serve(memo, answer("null", id_last), ab, &reused) == direct(answer("null", id_last), ab));
    CHECK_FALSE(reused);
    CHECK(serve(memo, answer("4", id_last), ab, &reused) == direct(answer("4", id_last), ab));
    CHECK_FALSE(reused);  // kept anew (the answer before it was the null one)
    // Another caller's visibility set: never the first one's answer.
    CHECK(serve(memo, answer("5", id_last), g, &reused) == direct(answer("5", id_last), g));
    CHECK_FALSE(reused);
    CHECK(serve(memo, answer("6", id_last), g, &reused) == direct(answer("6", id_last), g));
    CHECK(reused);
    CHECK(serve(memo, answer("7", id_last), ab, &reused) == direct(answer("7", id_last), ab));
    CHECK(reused);
    // A policy that now decides one key otherwise (a reload, a pin) makes the answer again.
    const auto abc = allowing({"alpha", "beta", "delta"});
    CHECK(serve(memo, answer("8", id_last), abc, &reused) == direct(answer("8", id_last), abc));
    CHECK_FALSE(reused);
    // The list changed: parsed and filtered again, then reused in its turn.
    const std::vector<std::string> fewer = {"alpha", "gamma"};
    CHECK(serve(memo, answer("9", id_last, fewer), ab, &reused) ==
          direct(answer("9", id_last, fewer), ab));
    CHECK_FALSE(reused);
    CHECK(serve(memo, answer("10", id_last, fewer), ab, &reused) ==
          direct(answer("10", id_last, fewer), ab));
    CHECK(reused);
  }
}

TEST_CASE("list memo: a reused view asks the policy about every key again", "[proxy][list_memo]") {
  ListMemo memo;
  int asked = 0;
  const auto keep = allowing({"beta"}, &asked);
  serve(memo, answer("1"), keep);
  CHECK(asked == static_cast<int>(kTools.size()));
  asked = 0;
  bool reused = false;
  serve(memo, answer("2"), keep, &reused);
  CHECK(reused);
  CHECK(asked == static_cast<int>(kTools.size()));
}

TEST_CASE("list memo: a view is capped per answer, answers per worker, bytes overall",
          "[proxy][list_memo]") {
  ListMemo memo;
  // More visibility sets than kMaxViews: each answer is still right; the views stop growing.
  for (size_t i = 0; i < ListMemo::kMaxViews + 4; ++i) {
    std::set<std::string> allowed;
    for (size_t k = 0; k < kTools.size(); ++k) {
      if (((i + 1) >> k) & 1U) {
        allowed.insert(kTools[k]);
      }
    }
    const auto keep = allowing(allowed);
    const std::string text = answer(std::to_string(i));
    CHECK(serve(memo, text, keep) == direct(text, keep));
  }
  const size_t one = memo.bytes();
  CHECK(memo.size() == 1);
  // More sources than kMaxEntries: the least recently used go.
  for (size_t i = 0; i < ListMemo::kMaxEntries + 5; ++i) {
    Page p = parse(answer("1"));
    CHECK(memo.keep("up" + std::to_string(i), ListKind::kTools, answer("1"), p) != nullptr);
  }
  CHECK(memo.size() == ListMemo::kMaxEntries);
  CHECK(memo.bytes() < ListMemo::kMaxEntries * one);
  // An answer larger than kMaxAnswerBytes is not kept.
  Page none;
  const std::string huge(ListMemo::kMaxAnswerBytes + 1, ' ');
  CHECK(memo.keep("big", ListKind::kTools, huge, none) == nullptr);
  CHECK(memo.bytes() <= ListMemo::kMaxBytes);
}

TEST_CASE("list memo: a merged answer is found by its buffer, not by another",
          "[proxy][list_memo]") {
  ListMemo memo;
  auto members = std::make_shared<const std::string>(R"("tools":[)" + toolsJson(kTools) + "]");
  const std::string text =
      R"({"jsonrpc":"2.0","id":0,"result":{)" + *members + R"(,"ttlMs":0,"cacheScope":"private"}})";
  CHECK(memo.findShared("r", ListKind::kTools, members) == nullptr);
  ListMemo::Entry* e = memo.keepShared("r", ListKind::kTools, members, text);
  REQUIRE(e != nullptr);
  CHECK(memo.findShared("r", ListKind::kTools, members) == e);
  CHECK(ListMemo::text(*e) == text);
  // The same bytes in a new buffer (a refreshed list): not this entry.
  auto fresh = std::make_shared<const std::string>(*members);
  CHECK(memo.findShared("r", ListKind::kTools, fresh) == nullptr);
  CHECK(memo.findShared("other", ListKind::kTools, members) == nullptr);
  // Views of a merged answer: reused for the same visibility set.
  ListMemo::Match m;
  m.entry = e;
  const auto keep = allowing({"gamma"});
  std::string out;
  size_t hidden = 0;
  CHECK_FALSE(memo.reuse(m, keep, out, hidden));
  REQUIRE(memo.filterNew(e, &m, ListKind::kTools, text, keep, out, hidden));
  CHECK(hidden == 3);
  std::string again;
  CHECK(memo.reuse(m, keep, again, hidden));
  CHECK(again == out);
  CHECK(again == direct(text, keep));
}
