#pragma once
// Open client connections per peer address, process-wide (limits.max_connections_per_client).
// The accepting worker acquires a slot before it builds a connection; the connection gives it
// back when it is destroyed, on the same worker. Striped by address hash: workers accepting
// from different clients rarely meet on a lock, and no lock is held beyond a map update.

#include <array>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gateway/core/cidr.h"

namespace gw::downstream {

class ClientCounts {
 public:
  // Takes a slot for `ip` unless it already holds `limit` (0 = no limit). False: refused.
  bool tryAcquire(const core::IpAddress& ip, uint32_t limit) {
    Stripe& s = stripeFor(ip);
    std::lock_guard lock(s.mu);
    std::string k = key(ip);
    auto it = s.counts.find(k);
    uint32_t n = it == s.counts.end() ? 0 : it->second;
    if (limit != 0 && n >= limit) {
      return false;
    }
    if (it == s.counts.end()) {
      s.counts.emplace(std::move(k), 1);
    } else {
      ++it->second;
    }
    return true;
  }

  void release(const core::IpAddress& ip) {
    Stripe& s = stripeFor(ip);
    std::lock_guard lock(s.mu);
    auto it = s.counts.find(key(ip));
    if (it != s.counts.end() && --it->second == 0) {
      s.counts.erase(it);
    }
  }

  // Connections `ip` holds now (tests, /metrics).
  uint32_t count(const core::IpAddress& ip) {
    Stripe& s = stripeFor(ip);
    std::lock_guard lock(s.mu);
    auto it = s.counts.find(key(ip));
    return it == s.counts.end() ? 0 : it->second;
  }

 private:
  // The address bytes (4 or 16: the length tells the family apart).
  static std::string key(const core::IpAddress& ip) {
    return {reinterpret_cast<const char*>(ip.bytes.data()), ip.v6 ? 16u : 4u};
  }

  struct Stripe {
    std::mutex mu;
    std::unordered_map<std::string, uint32_t> counts;
  };

  Stripe& stripeFor(const core::IpAddress& ip) {
    std::string_view k(reinterpret_cast<const char*>(ip.bytes.data()), ip.v6 ? 16u : 4u);
    return stripes_[std::hash<std::string_view>{}(k) % stripes_.size()];
  }

  std::array<Stripe, 16> stripes_;
};

}  // namespace gw::downstream
