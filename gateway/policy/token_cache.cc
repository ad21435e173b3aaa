// policy/: the verified-token cache (see token_cache.h).

#include "gateway/policy/token_cache.h"

#include <algorithm>

#include <openssl/evp.h>
#include <openssl/sha.h>

namespace gw::policy {

TokenCache::TokenCache(size_t capacity)
    : per_stripe_(std::max<size_t>(1, (capacity + kStripes - 1) / kStripes)) {}

namespace {

// SHA-256 through a digest fetched once and a context per thread: the one-shot SHA256()
// fetches the algorithm by name and allocates a context on every call, which cost more than
// hashing the token itself (bench/tls.py's JWT workload).
struct Sha256 {
  EVP_MD* md = EVP_MD_fetch(nullptr, "SHA256", nullptr);
  EVP_MD_CTX* ctx = EVP_MD_CTX_new();
  ~Sha256() {
    EVP_MD_CTX_free(ctx);
    EVP_MD_free(md);
  }
  bool run(std::string_view in, unsigned char* out) noexcept {
    unsigned int n = 0;
    return md != nullptr && ctx != nullptr && EVP_DigestInit_ex2(ctx, md, nullptr) == 1 &&
           EVP_DigestUpdate(ctx, in.data(), in.size()) == 1 &&
           EVP_DigestFinal_ex(ctx, out, &n) == 1 && n == 32;
  }
};

}  // namespace

TokenCache::Digest TokenCache::digest(std::string_view token) noexcept {
  Digest d{};
  thread_local Sha256 sha;
  if (!sha.run(token, d.data())) {
    SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), d.data());
  }
  return d;
}

bool TokenCache::find(const Digest& d, uint64_t generation, int64_t now_unix, Identity& out) const {
  const Stripe& s = stripes_[d[31] % kStripes];
  std::lock_guard lock(s.mu);
  auto it = s.map.find(d);
  if (it == s.map.end() || it->second.generation != generation || it->second.until <= now_unix) {
    return false;
  }
  out = it->second.id;
  return true;
}

void TokenCache::insert(const Digest& d, uint64_t generation, int64_t until_unix, int64_t now_unix,
                        const Identity& id) {
  const int64_t until = std::min(until_unix, now_unix + kMaxAge);
  if (until <= now_unix) {
    return;
  }
  Stripe& s = stripes_[d[31] % kStripes];
  std::lock_guard lock(s.mu);
  auto it = s.map.find(d);
  if (it == s.map.end()) {
    if (s.map.size() >= per_stripe_) {
      evict(s, now_unix);
    }
    it = s.map.emplace(d, Entry{}).first;
  }
  it->second.id = id;
  it->second.generation = generation;
  it->second.until = until;
  it->second.seq = s.next_seq++;
  s.order.emplace_back(d, it->second.seq);
  if (s.order.size() > 2 * per_stripe_ + 16) {
    // Drop the pairs of replaced or removed entries (the order of the rest is kept).
    std::erase_if(s.order, [&](const std::pair<Digest, uint64_t>& p) {
      auto e = s.map.find(p.first);
      return e == s.map.end() || e->second.seq != p.second;
    });
  }
}

void TokenCache::evict(Stripe& s, int64_t now_unix) {
  std::erase_if(s.map, [&](const auto& kv) { return kv.second.until <= now_unix; });
  while (s.map.size() >= per_stripe_ && !s.order.empty()) {
    auto [d, seq] = s.order.front();
    s.order.pop_front();
    auto e = s.map.find(d);
    if (e != s.map.end() && e->second.seq == seq) {
      s.map.erase(e);
    }
  }
}

size_t TokenCache::size() const {
  size_t n = 0;
  for (const Stripe& s : stripes_) {
    std::lock_guard lock(s.mu);
    n += s.map.size();
  }
  return n;
}

}  // namespace gw::policy
