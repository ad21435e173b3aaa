// proxy/: one worker's list answers read whole, with what was made of them (list_memo.h).

#include "gateway/proxy/list_memo.h"

#include <algorithm>

#include "gateway/mcp/id_scan.h"

namespace gw::proxy {

struct ListMemo::Entry {
  // A visibility set: what the caller's policy said of every key the filter asked about (in
  // the order asked), and the answer made for it.
  struct View {
    std::vector<bool> keeps;
    std::string out;
    size_t hidden = 0;
  };
  std::string source;
  federation::ListKind kind = federation::ListKind::kTools;
  std::string text;
  federation::Page page;
  std::shared_ptr<const std::string> shared;  // a merged answer's members (findShared)
  std::vector<std::string> asked;             // the keys every view decided (the first view's)
  std::vector<View> views;
  size_t bytes = 0;
  uint64_t used = 0;
};

ListMemo::ListMemo() = default;
ListMemo::~ListMemo() = default;

namespace {

size_t pageBytes(const federation::Page& p) {
  size_t n = p.next_cursor.size() + p.result.size();
  for (const std::string& s : p.items) {
    n += s.size();
  }
  for (const std::string& s : p.keys) {
    n += s.size();
  }
  return n;
}

// `out`, made from `seen` (whose id is seen[start, seen_end)), with `id` in place of that id:
// the id lies among the answer's first or last members, outside the list the filter
// rewrote, so it is at the same offset from the start or from the end. False when neither
// holds (then the answer is made again).
bool withId(std::string_view out, std::string_view seen, size_t start, size_t seen_end,
            std::string_view id, std::string& result) {
  const size_t old_len = seen_end - start;
  size_t at = std::string_view::npos;
  if (out.size() >= seen_end && out.substr(0, seen_end) == seen.substr(0, seen_end)) {
    at = start;
  } else {
    const size_t tail = seen.size() - start;  // the id and what follows it
    if (out.size() >= tail && out.substr(out.size() - tail) == seen.substr(start)) {
      at = out.size() - tail;
    }
  }
  if (at == std::string_view::npos) {
    return false;
  }
  result.clear();
  result.reserve(out.size() - old_len + id.size());
  result.append(out.substr(0, at));
  result.append(id);
  result.append(out.substr(at + old_len));
  return true;
}

}  // namespace

size_t ListMemo::indexOf(std::string_view source, federation::ListKind kind) const noexcept {
  size_t i = 0;
  while (i < entries_.size() && (entries_[i]->kind != kind || entries_[i]->source != source)) {
    ++i;
  }
  return i;
}

bool ListMemo::find(std::string_view source, federation::ListKind kind, std::string_view text,
                    Match& m) {
  m = Match{};
  const size_t i = indexOf(source, kind);
  if (i == entries_.size()) {
    return false;
  }
  Entry& e = *entries_[i];
  mcp::SameAnswerMatcher matcher;
  matcher.reset(e.text);
  if (!matcher.feed(text) || !matcher.same()) {
    return false;
  }
  std::string_view id;
  if (matcher.idRun(m.start, m.seen_end, id)) {
    m.id.assign(id);
  }
  m.entry = &e;
  e.used = ++tick_;
  return true;
}

ListMemo::Entry* ListMemo::add(std::string_view source, federation::ListKind kind,
                               std::string_view text, size_t extra) {
  if (const size_t i = indexOf(source, kind); i != entries_.size()) {
    drop(i);
  }
  const size_t need = text.size() + extra;
  if (need > kMaxAnswerBytes) {
    return nullptr;
  }
  while (!entries_.empty() && (entries_.size() >= kMaxEntries || bytes_ + need > kMaxBytes)) {
    const auto lru =
        std::min_element(entries_.begin(), entries_.end(),
                         [](const auto& a, const auto& b) { return a->used < b->used; });
    drop(static_cast<size_t>(lru - entries_.begin()));
  }
  auto e = std::make_unique<Entry>();
  e->source.assign(source);
  e->kind = kind;
  e->text.assign(text);
  e->bytes = need;
  e->used = ++tick_;
  bytes_ += need;
  entries_.push_back(std::move(e));
  return entries_.back().get();
}

ListMemo::Entry* ListMemo::keep(std::string_view source, federation::ListKind kind,
                                std::string_view text, federation::Page& page) {
  Entry* e = add(source, kind, text, pageBytes(page));
  if (e != nullptr) {
    e->page = std::move(page);
  }
  return e;
}

ListMemo::Entry* ListMemo::findShared(std::string_view source, federation::ListKind kind,
                                      const std::shared_ptr<const std::string>& shared) {
  const size_t i = indexOf(source, kind);
  // The entry holds its buffer: while it is kept, no other buffer can have its address.
  if (i == entries_.size() || entries_[i]->shared == nullptr || entries_[i]->shared != shared) {
    return nullptr;
  }
  entries_[i]->used = ++tick_;
  return entries_[i].get();
}

ListMemo::Entry* ListMemo::keepShared(std::string_view source, federation::ListKind kind,
                                      const std::shared_ptr<const std::string>& shared,
                                      std::string_view text) {
  Entry* e = add(source, kind, text, 0);
  if (e != nullptr) {
    e->shared = shared;
  }
  return e;
}

std::string_view ListMemo::text(const Entry& e) noexcept {
  return e.text;
}

const federation::Page& ListMemo::page(const Entry& e) noexcept {
  return e.page;
}

federation::PageError ListMemo::read(std::string_view source, federation::ListKind kind,
                                     std::string_view text, Match& m, federation::Page& parsed,
                                     const federation::Page*& page, Entry*& entry,
                                     std::string& detail) {
  if (find(source, kind, text, m)) {
    entry = m.entry;
    page = &entry->page;
    return federation::PageError::kNone;
  }
  const federation::PageError pe = federation::parsePage(kind, text, parsed, detail);
  if (pe != federation::PageError::kNone) {
    entry = nullptr;
    return pe;
  }
  entry = keep(source, kind, text, parsed);
  page = entry != nullptr ? &entry->page : &parsed;
  return pe;
}

void ListMemo::drop(size_t i) noexcept {
  bytes_ -= entries_[i]->bytes;
  if (i + 1 != entries_.size()) {
    entries_[i] = std::move(entries_.back());
  }
  entries_.pop_back();
}

bool ListMemo::reuse(const Match& m, const Keep& keep, std::string& out, size_t& hidden) {
  Entry& e = *m.entry;
  if (e.views.empty()) {
    return false;
  }
  std::vector<bool> keeps;
  keeps.reserve(e.asked.size());
  for (const std::string& key : e.asked) {
    keeps.push_back(keep(key));
  }
  for (const Entry::View& v : e.views) {
    if (v.keeps != keeps) {
      continue;
    }
    if (m.id.empty()) {
      out = v.out;  // the same answer byte for byte
    } else if (!withId(v.out, e.text, m.start, m.seen_end, m.id, out)) {
      return false;
    }
    hidden = v.hidden;
    e.used = ++tick_;
    return true;
  }
  return false;
}

bool ListMemo::filterNew(Entry* e, const Match* m, federation::ListKind kind, std::string_view text,
                         const Keep& keep, std::string& out, size_t& hidden) {
  if (e == nullptr) {
    return federation::filterListAnswer(kind, text, keep, out, hidden, nullptr);
  }
  // The view is made from the text kept (this answer, its id aside), so every later answer
  // finds its id where the kept text has it.
  const bool other_id = m != nullptr && !m->id.empty();
  std::vector<std::string> asked;
  std::vector<bool> keeps;
  Entry::View v;
  const bool ok = federation::filterListAnswer(
      kind, other_id ? std::string_view(e->text) : text,
      [&](std::string_view key) {
        const bool k = keep(key);
        asked.emplace_back(key);
        keeps.push_back(k);
        return k;
      },
      v.out, hidden, nullptr);
  if (!ok) {
    return false;
  }
  v.hidden = hidden;
  if (!other_id) {
    out = v.out;
  } else if (!withId(v.out, e->text, m->start, m->seen_end, m->id, out)) {
    return federation::filterListAnswer(kind, text, keep, out, hidden, nullptr);
  }
  // Kept when every view asked the same keys (the filter reads the same text the same way).
  if (e->views.size() >= kMaxViews || (!e->views.empty() && asked != e->asked) ||
      bytes_ + v.out.size() > kMaxBytes) {
    return true;
  }
  if (e->views.empty()) {
    for (const std::string& k : asked) {
      e->bytes += k.size();
      bytes_ += k.size();
    }
    e->asked = std::move(asked);
  }
  v.keeps = std::move(keeps);
  e->bytes += v.out.size();
  bytes_ += v.out.size();
  e->views.push_back(std::move(v));
  return true;
}

}  // namespace gw::proxy
