// proxy/: one worker's last tools/list answer per upstream (seen_answers.h).

#include "gateway/proxy/seen_answers.h"

#include <algorithm>

#include "gateway/mcp/id_scan.h"

namespace gw::proxy {

SeenAnswers::Entry* SeenAnswers::find(const std::shared_ptr<mcp::SchemaCache>& cache,
                                      std::string_view upstream) {
  for (Entry& e : entries_) {
    if (e.upstream == upstream && e.cache.lock() == cache) {
      return &e;
    }
  }
  return nullptr;
}

void SeenAnswers::drop(Entry& e) noexcept {
  bytes_ -= e.text->size();
  if (&e != &entries_.back()) {
    e = std::move(entries_.back());
  }
  entries_.pop_back();
}

bool SeenAnswers::renewed(Entry& e, const std::shared_ptr<mcp::SchemaCache>& cache,
                          mcp::SchemaCache::Clock::time_point now) {
  if (!cache->renew(e.upstream, e.generation, e.ttl_ms, now)) {
    return false;
  }
  e.used = ++tick_;
  return true;
}

bool SeenAnswers::renew(const std::shared_ptr<mcp::SchemaCache>& cache, std::string_view upstream,
                        std::string_view text, mcp::SchemaCache::Clock::time_point now) {
  Entry* e = find(cache, upstream);
  return e != nullptr && mcp::sameApartFromId(*e->text, text) && renewed(*e, cache, now);
}

std::shared_ptr<const std::string> SeenAnswers::text(const std::shared_ptr<mcp::SchemaCache>& cache,
                                                     std::string_view upstream) {
  Entry* e = find(cache, upstream);
  return e != nullptr ? e->text : nullptr;
}

bool SeenAnswers::renewFrom(const std::shared_ptr<mcp::SchemaCache>& cache,
                            std::string_view upstream,
                            const std::shared_ptr<const std::string>& text,
                            mcp::SchemaCache::Clock::time_point now) {
  Entry* e = find(cache, upstream);
  return e != nullptr && e->text == text && renewed(*e, cache, now);
}

void SeenAnswers::learn(const std::shared_ptr<mcp::SchemaCache>& cache, std::string_view upstream,
                        std::string_view text, mcp::SchemaCache::Clock::time_point now) {
  if (renew(cache, upstream, text, now)) {
    return;
  }
  std::vector<mcp::ToolSchema> tools;
  uint64_t ttl = 0;
  if (mcp::parseToolsList(text, tools, ttl)) {
    keep(cache, upstream, text, cache->learn(upstream, std::move(tools), ttl, now), ttl);
  }
}

void SeenAnswers::keep(const std::shared_ptr<mcp::SchemaCache>& cache, std::string_view upstream,
                       std::string_view text, uint64_t generation, uint64_t ttl_ms) {
  if (Entry* e = find(cache, upstream)) {
    drop(*e);
  }
  if (text.size() > kMaxAnswerBytes) {
    return;
  }
  while (!entries_.empty() &&
         (entries_.size() >= kMaxEntries || bytes_ + text.size() > kMaxBytes)) {
    drop(*std::min_element(entries_.begin(), entries_.end(),
                           [](const Entry& a, const Entry& b) { return a.used < b.used; }));
  }
  Entry e;
  e.cache = cache;
  e.upstream.assign(upstream);
  e.text = std::make_shared<const std::string>(text);
  e.generation = generation;
  e.ttl_ms = ttl_ms;
  e.used = ++tick_;
  bytes_ += e.text->size();
  entries_.push_back(std::move(e));
}

}  // namespace gw::proxy
