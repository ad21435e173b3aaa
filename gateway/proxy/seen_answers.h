#pragma once
// proxy/: one worker's last tools/list answer per upstream, as the schema cache learned it
// (issue #30, learning without re-reading). The same answer again — its id aside
// (mcp::sameApartFromId) — only extends what the cache learned instead of being parsed again.
// Bounded: at most kMaxEntries upstreams and kMaxBytes of text per worker, the least recently
// used dropped first; a text over kMaxAnswerBytes (real lists are 50-400 KB) is not kept, so a
// burst of very large lists leaves nothing behind (as ListMemo). Worker-local: no lock.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/mcp/schema.h"

namespace gw::proxy {

class SeenAnswers {
 public:
  static constexpr size_t kMaxEntries = 32;
  static constexpr size_t kMaxBytes = 8 * 1024 * 1024;
  static constexpr size_t kMaxAnswerBytes = 2 * 1024 * 1024;

  // Whether `text` is the answer `cache` last learned for `upstream` on this worker (its id
  // aside) and the cache still holds it: then its lifetime is renewed (ttlMs as learned) and
  // the caller need not parse it.
  bool renew(const std::shared_ptr<mcp::SchemaCache>& cache, std::string_view upstream,
             std::string_view text, mcp::SchemaCache::Clock::time_point now);
  // The answer `cache` last learned for `upstream` on this worker (null: none), for a
  // relay that compares an answer with it as it streams (mcp::SameAnswerMatcher); renewFrom()
  // when it was the same.
  std::shared_ptr<const std::string> text(const std::shared_ptr<mcp::SchemaCache>& cache,
                                          std::string_view upstream);
  bool renewFrom(const std::shared_ptr<mcp::SchemaCache>& cache, std::string_view upstream,
                 const std::shared_ptr<const std::string>& text,
                 mcp::SchemaCache::Clock::time_point now);
  // A tools/list answer of `upstream` for `cache` to learn: renewed when it is the one this
  // worker learned last (renew()), else parsed, learned and kept (keep()); one that does not
  // parse teaches nothing.
  void learn(const std::shared_ptr<mcp::SchemaCache>& cache, std::string_view upstream,
             std::string_view text, mcp::SchemaCache::Clock::time_point now);
  // `text`, learned now for `upstream` (SchemaCache::learn's `generation`) with its ttlMs.
  void keep(const std::shared_ptr<mcp::SchemaCache>& cache, std::string_view upstream,
            std::string_view text, uint64_t generation, uint64_t ttl_ms);
  size_t bytes() const noexcept { return bytes_; }

 private:
  struct Entry {
    std::weak_ptr<mcp::SchemaCache> cache;
    std::string upstream;
    std::shared_ptr<const std::string> text;  // never null
    uint64_t generation = 0;                  // what the cache learned of it
    uint64_t ttl_ms = 0;
    uint64_t used = 0;  // the tick of its last use (least recently used goes first)
  };
  Entry* find(const std::shared_ptr<mcp::SchemaCache>& cache, std::string_view upstream);
  void drop(Entry& e) noexcept;
  // The cache renewed what it learned of `e` (the same generation still held): `e` was used.
  bool renewed(Entry& e, const std::shared_ptr<mcp::SchemaCache>& cache,
               mcp::SchemaCache::Clock::time_point now);
  std::vector<Entry> entries_;
  size_t bytes_ = 0;
  uint64_t tick_ = 0;
};

}  // namespace gw::proxy
