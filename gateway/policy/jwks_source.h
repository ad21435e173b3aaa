#pragma once
// policy/: a JSON Web Key Set fetched from a URL (`identity.jwt.jwks_url`). The key set the
// fetcher (server/jwks_fetcher.h) publishes and the request path reads without a lock, the
// request path's "this token names a key we lack" signal, and the process-wide registry that
// keeps one source per (URL, CA file) so a reload that names the same URL keeps its keys.
// No I/O here: the fetcher owns the sockets.

#include <atomic>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

namespace gw::policy {

struct Jwk;

// A jwks_url taken apart: https (http only for a loopback host), host, port, target.
struct JwksUrl {
  bool https = true;
  std::string host;  // an IPv6 literal without its brackets
  uint16_t port = 443;
  std::string target;  // path and query; "/" when the URL has no path
};

// Parses `url`; false with `error` on anything but http(s)://host[:port][/path][?query]
// (userinfo and fragments are refused; http only for localhost, 127.0.0.0/8 and ::1).
bool parseJwksUrl(std::string_view url, JwksUrl& out, std::string& error);

// One published key set; immutable once published.
struct KeySet {
  std::vector<Jwk> keys;
  // 1 for the first set published, +1 for each set whose document differs from the one
  // before (verified-token cache entries are tied to the generation that verified them).
  uint64_t generation = 0;
};

class JwksSource {
 public:
  // Two refetches asked for by tokens with an unknown kid are at least this far apart.
  static constexpr std::chrono::seconds kMinAskedInterval{30};
  // Lower bound of jwks_refresh and of a response's Cache-Control max-age.
  static constexpr std::chrono::seconds kMinRefresh{30};

  JwksSource(std::string url, JwksUrl parsed, std::string ca_file);
  ~JwksSource();
  JwksSource(const JwksSource&) = delete;
  JwksSource& operator=(const JwksSource&) = delete;

  // The source for (url, ca_file) every live PolicySet shares, made on first use; `refresh`
  // (the upper bound between fetches) becomes the latest load's.
  static std::shared_ptr<JwksSource> acquire(const std::string& url, const JwksUrl& parsed,
                                             const std::string& ca_file,
                                             std::chrono::seconds refresh);
  // Every source some PolicySet (or fetch) still holds. Any thread.
  static std::vector<std::shared_ptr<JwksSource>> live();

  const std::string& url() const noexcept { return url_; }
  const JwksUrl& parsed() const noexcept { return parsed_; }
  const std::string& caFile() const noexcept { return ca_file_; }  // "" = the system store
  std::chrono::seconds refresh() const noexcept {
    return std::chrono::seconds(refresh_s_.load(std::memory_order_relaxed));
  }

  // Request path: the current key set, null until the first successful fetch. Lock-free.
  std::shared_ptr<const KeySet> keys() const noexcept {
    return keys_.load(std::memory_order_acquire);
  }
  // What askRefetch() says about the fetch a request may wait for.
  struct Ask {
    bool coming = false;  // a fetch runs now, or one starts at the fetcher's next tick
    uint64_t ended = 0;   // fetchesEnded() before the ask: the wait is over when it moves
  };
  // Request path: a token named a kid the set lacks, or there is no set yet. Lock-free; the
  // fetcher acts on it at most once per kMinAskedInterval, so `coming` is false when the
  // last asked-for fetch began less than that long ago and none runs now.
  Ask askRefetch() noexcept;
  // Fetches that ended (whatever their result). Any thread.
  uint64_t fetchesEnded() const noexcept { return ended_.load(std::memory_order_acquire); }
  // Requests waiting for a fetch of this source, at most kMaxWaiters (the rest get their 401
  // at once): a flood of made-up kids during a slow fetch cannot park every connection.
  static constexpr int kMaxWaiters = 1024;
  bool beginWait() noexcept;
  void endWait() noexcept { waiters_.fetch_sub(1, std::memory_order_relaxed); }

  // Fetcher: takes the ask (true when some token asked since the last take).
  bool takeAsk() noexcept { return asked_.exchange(false, std::memory_order_relaxed); }
  // Fetcher: whether an ask taken at `now` may start a fetch (kMinAskedInterval since the
  // last asked-for one).
  bool askAllowed(std::chrono::steady_clock::time_point now) const noexcept;
  // Fetcher: a fetch begins (`asked`: because a token asked) and ends.
  void fetchBegins(std::chrono::steady_clock::time_point now, bool asked) noexcept;
  void fetchEnded() noexcept;
  // Fetcher: publishes the keys parsed from `document`. A document byte-equal to the last
  // published one keeps the current set and its generation. Returns the number of keys held.
  size_t publish(std::string document, std::vector<Jwk> keys);

 private:
  std::string url_;
  JwksUrl parsed_;
  std::string ca_file_;
  std::atomic<int64_t> refresh_s_{900};
  std::atomic<std::shared_ptr<const KeySet>> keys_;
  std::atomic<bool> asked_{false};
  std::atomic<bool> fetching_{false};
  std::atomic<uint64_t> ended_{0};
  std::atomic<int> waiters_{0};
  // steady_clock nanoseconds from which an ask starts a fetch (kMinAskedInterval after the
  // last asked-for one began).
  std::atomic<int64_t> ask_open_ns_{std::numeric_limits<int64_t>::min()};
  std::mutex publish_mu_;  // the fetcher's (document_, generation)
  std::string document_;
  uint64_t generation_ = 0;
};

}  // namespace gw::policy
