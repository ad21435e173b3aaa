#pragma once
// policy/: verified JWTs remembered so an RS256 / ES256 signature is not checked on every
// request. Keyed by the SHA-256 of the token (the token itself is never stored); an entry
// lives until the token's exp (plus the configured skew, as verification allows) and at most
// kMaxAge, and only answers for the key-set generation that verified it. One cache per
// PolicySet::Jwt, so a reload with other keys, issuer or audiences never reuses a verdict.
// Shared by the workers: striped by the digest, one mutex per stripe, each stripe bounded
// (when full, expired entries go first, then the oldest inserted).

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string_view>
#include <unordered_map>

#include "gateway/policy/policy.h"

namespace gw::policy {

class TokenCache {
 public:
  static constexpr size_t kStripes = 16;
  static constexpr size_t kDefaultCapacity = 10000;
  static constexpr int64_t kMaxAge = 600;  // seconds

  using Digest = std::array<unsigned char, 32>;

  explicit TokenCache(size_t capacity = kDefaultCapacity);

  static Digest digest(std::string_view token) noexcept;

  // A copy of the identity verified for `d` under `generation`, when the entry is still
  // valid at `now_unix`; false otherwise (absent, other generation, expired).
  bool find(const Digest& d, uint64_t generation, int64_t now_unix, Identity& out) const;
  // Remembers `id` for `d` until `until_unix` (capped at now_unix + kMaxAge).
  void insert(const Digest& d, uint64_t generation, int64_t until_unix, int64_t now_unix,
              const Identity& id);
  size_t size() const;

 private:
  struct Hash {
    size_t operator()(const Digest& d) const noexcept {
      size_t h = 0;
      for (size_t i = 0; i < sizeof h; ++i) {
        h = (h << 8) | d[i];
      }
      return h;
    }
  };
  struct Entry {
    Identity id;
    uint64_t generation = 0;
    int64_t until = 0;
    uint64_t seq = 0;  // insertion order, to find this entry's place in `order`
  };
  struct Stripe {
    mutable std::mutex mu;
    std::unordered_map<Digest, Entry, Hash> map;
    std::deque<std::pair<Digest, uint64_t>> order;  // (digest, seq), oldest first; may hold
                                                    // stale pairs of replaced entries
    uint64_t next_seq = 0;
  };
  void evict(Stripe& s, int64_t now_unix);

  size_t per_stripe_;
  std::array<Stripe, kStripes> stripes_;
};

}  // namespace gw::policy
