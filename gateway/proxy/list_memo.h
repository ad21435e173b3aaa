#pragma once
// proxy/: one worker's list answers read whole, with what was made of them (issue #30: a
// filtered answer is built once per list version and caller's visibility set, then reused).
//
// A source (a plain route's upstream, or a federated route's merged answer) sends the same
// list again and again, each time with the request's own id. The first time, the gateway
// parses it (its page: items, keys, items dropped) and filters it for the caller; the memo
// keeps the text, the page and the filtered answer together with every key the filter asked
// about and what the caller's policy said of each. The same text again — its id aside
// (mcp::SameAnswerMatcher) — is not parsed: the page is taken from the memo, and when the
// policy says the same of every key asked (the caller's visibility set), the filtered answer
// is reused with the new id put in. Never a different caller's answer: a view is reused only
// when every decision the filter made is made the same way now, for this caller, under the
// policy and pins of now.
//
// Bounded: at most kMaxEntries answers (the least recently used dropped first), kMaxViews
// visibility sets per answer and kMaxBytes per worker; an answer whose text and page take
// over kMaxAnswerBytes (real lists are 50-400 KB) is not kept, so a burst of very large
// lists leaves nothing behind once sent.
// Worker-local: no lock.

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/federation/federation.h"

namespace gw::proxy {

class ListMemo {
 public:
  static constexpr size_t kMaxEntries = 16;
  static constexpr size_t kMaxViews = 8;
  static constexpr size_t kMaxBytes = 8 * 1024 * 1024;
  static constexpr size_t kMaxAnswerBytes = 2 * 1024 * 1024;

  using Keep = std::function<bool(std::string_view key)>;

  ListMemo();
  ~ListMemo();
  ListMemo(const ListMemo&) = delete;
  ListMemo& operator=(const ListMemo&) = delete;

  struct Entry;
  // Where the answer just found differs from the one kept: its id (empty: byte for byte).
  struct Match {
    Entry* entry = nullptr;
    size_t start = 0;     // where both ids start
    size_t seen_end = 0;  // where the kept answer's id ends
    std::string id;       // the new answer's id
  };

  // The answer `source` sent last for `kind`, when `text` is it apart from its id.
  bool find(std::string_view source, federation::ListKind kind, std::string_view text, Match& m);
  // Keeps `text` with its parsed page (taken when kept), in place of what `source` sent before
  // for `kind`. Null when it is too large to keep.
  Entry* keep(std::string_view source, federation::ListKind kind, std::string_view text,
              federation::Page& page);
  static const federation::Page& page(const Entry& e) noexcept;
  // The page of `text`, a list answer of `source`: the kept one when `text` is what `source`
  // sent last (`m` says where the ids differ), else parsed into `parsed` and kept (`m.entry`
  // null; *page is then the kept copy, or `parsed` when too large to keep). Any error but
  // kNone leaves *page unset (`detail` says why, as federation::parsePage).
  federation::PageError read(std::string_view source, federation::ListKind kind,
                             std::string_view text, Match& m, federation::Page& parsed,
                             const federation::Page*& page, Entry*& entry, std::string& detail);
  static std::string_view text(const Entry& e) noexcept;
  // A federated route's merged list members (`shared`: immutable, cached, the same buffer for
  // every request while the list holds): the entry kept for them, found by the buffer; its
  // text is `text`, the answer those members make with id 0 (see FederatedTarget).
  Entry* findShared(std::string_view source, federation::ListKind kind,
                    const std::shared_ptr<const std::string>& shared);
  Entry* keepShared(std::string_view source, federation::ListKind kind,
                    const std::shared_ptr<const std::string>& shared, std::string_view text);

  // The answer of `m` filtered for a caller whose `keep` decides every key as a view kept
  // for it did: `out` gets that view with the new answer's id, `hidden` its hidden count.
  // False: no such view (filterNew() then).
  bool reuse(const Match& m, const Keep& keep, std::string& out, size_t& hidden);
  // federation::filterListAnswer of `text` for `keep`, kept as a view of `e`: `text` is e's
  // (just kept, or found as `m`; e may be null: filtered, not kept). Returns what
  // filterListAnswer returns.
  bool filterNew(Entry* e, const Match* m, federation::ListKind kind, std::string_view text,
                 const Keep& keep, std::string& out, size_t& hidden);

  size_t bytes() const noexcept { return bytes_; }
  size_t size() const noexcept { return entries_.size(); }

 private:
  // The index of the entry kept for `source` and `kind`, or entries_.size().
  size_t indexOf(std::string_view source, federation::ListKind kind) const noexcept;
  void drop(size_t i) noexcept;
  Entry* add(std::string_view source, federation::ListKind kind, std::string_view text,
             size_t extra);
  std::vector<std::unique_ptr<Entry>> entries_;
  size_t bytes_ = 0;
  uint64_t tick_ = 0;
};

}  // namespace gw::proxy
