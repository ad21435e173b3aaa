#pragma once
// What the gateway knows about each federated route's upstreams, shared by every worker and
// the admin thread: per list method, each upstream's last fetch (outcome, time, items) and
// the merged answer of the last refresh (served from cache while fresh and public), the
// ownership table calls are routed by, the task table, and the conflicts. Survives reloads
// (keyed by route name and its upstream list). No I/O: the proxy fetches and reports here.

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/clock.h"
#include "gateway/federation/federation.h"

namespace gw::federation {

// One upstream's side of one list method.
struct UpstreamList {
  int64_t fetched_unix_ms = 0;  // 0: never fetched
  std::string outcome;          // "ok", "timeout", "connect_failed", "rpc_error", … ("" never)
  std::string detail;           // the reason in words (log, /federation)
  bool have_good = false;       // items/keys hold a good answer (kept after a failure)
  std::vector<std::string> items;
  std::vector<std::string> keys;
  bool truncated = false;  // max_items cut the list
};

struct KindState {
  std::vector<UpstreamList> ups;  // route order
  // The merged answer of the last refresh in which every upstream answered and every answer
  // was public, served to any client until `expires` (monotonic). A partial merge (an
  // upstream failed or timed out) is never cached.
  bool cached = false;
  std::shared_ptr<const std::string> members;  // listResultMembers / mergeDiscover output
  core::Nanos expires{};
  bool stale = false;  // a list_changed notification arrived: the next lookup refreshes
  // While a refresh of an entry that ran out by time is under way (until record(), at most
  // until this time): other lookups are served the expired entry instead of refreshing too.
  core::Nanos refreshing_until{};
  // What the last refresh that any upstream answered says is owned holds until `owned_until`
  // (monotonic: its time + the smallest ttlMs of what answered, private answers included);
  // then it is stale too. Unset after a refresh whose smallest ttlMs is 0: no expiry by time.
  bool owned_expires = false;
  core::Nanos owned_until{};
};

// The result of one refresh of one list method, as the proxy reports it.
struct FetchReport {
  struct Part {
    bool ok = false;
    std::string outcome;  // when !ok
    std::string detail;
    Page page;  // when ok: every page's items appended; ttl the least, public only if all
    bool truncated = false;
    // When !ok and the upstream answered (an HTTP error status, or a JSON-RPC error): its
    // answer, relayed when no upstream succeeded (the client's mistake is every server's).
    int status = 0;
    std::string content_type;
    std::string body;
  };
  std::vector<Part> parts;  // route order
};

class RouteCatalog {
 public:
  RouteCatalog(std::string route, std::vector<std::string> upstreams);

  const std::string& route() const noexcept { return route_; }
  const std::vector<std::string>& upstreams() const noexcept { return upstreams_; }

  // A cached merged answer still fresh: its members and the ttl left (ms). Null otherwise.
  std::shared_ptr<const std::string> cached(ListKind kind, core::Nanos now,
                                            uint64_t& ttl_left_ms) const;

  // As cached(), and when the cached answer ran out by time (not when a list_changed made it
  // stale) one caller at a time refreshes it: the first gets null and `refresh_bound` to do it
  // in (its record() ends the refresh sooner); until then every other caller gets the expired
  // answer with ttl_left_ms 0, so an expiry under load costs one fan-out, not one per request
  // in flight (nginx's proxy_cache_use_stale updating).
  std::shared_ptr<const std::string> cachedOrRefresh(ListKind kind, core::Nanos now,
                                                     core::Nanos refresh_bound,
                                                     uint64_t& ttl_left_ms);

  // Records a refresh and builds the merged answer for the client that asked (`members`,
  // the ttl to serve and whether it may be cached publicly). `now` monotonic, `unix_ms` wall
  // time. New conflicts (not seen before on this route) are appended to `new_conflicts` as
  // "name (kept from A, hidden from B)" for a one-time warning. False when no upstream
  // answered (members empty).
  struct Answer {
    std::shared_ptr<const std::string> members;
    uint64_t ttl_ms = 0;
    bool public_scope = false;
    std::string error;  // discover: no common version
  };
  bool record(ListKind kind, FetchReport& report, NamesMode mode, std::string_view separator,
              std::span<const std::string> gateway_versions, core::Nanos now, int64_t unix_ms,
              Answer& answer, std::vector<std::string>& new_conflicts);

  // Owner lookups (index in route order), -1 when unknown.
  int owner(ListKind kind, std::string_view key) const;
  // The owners of `kind` should be fetched again before a call is routed by them: a
  // list_changed arrived, or the ttl of the last answered refresh ran out by `now`.
  bool stale(ListKind kind, core::Nanos now) const;
  void markStale(ListKind kind);
  bool everFetched(ListKind kind) const;

  void putTask(std::string_view task_id, int upstream, core::Nanos now);
  int taskOwner(std::string_view task_id, core::Nanos now) const;

  size_t conflicts() const;
  // The /federation view of this route (a JSON object).
  std::string viewJson(core::Nanos now) const;

 private:
  void rebuildOwnership();  // under mu_

  const std::string route_;
  const std::vector<std::string> upstreams_;
  mutable std::mutex mu_;
  std::array<KindState, kListKinds> kinds_;
  std::shared_ptr<const Ownership> owners_;
  TaskTable tasks_;
  std::set<std::string> conflicts_;  // "kind\0name" seen conflicting (warned once)
  std::vector<std::string> conflict_text_;
};

class Registry {
 public:
  // The catalog of a federated route: the same one across reloads while the route keeps
  // its name and upstream list (a changed list starts afresh).
  std::shared_ptr<RouteCatalog> route(std::string_view name,
                                      const std::vector<std::string>& upstreams);
  // Drops catalogs of routes no longer configured (after a reload).
  void retain(const std::vector<std::pair<std::string, std::vector<std::string>>>& routes);
  std::vector<std::shared_ptr<RouteCatalog>> all() const;

 private:
  mutable std::mutex mu_;
  std::map<std::string, std::shared_ptr<RouteCatalog>, std::less<>> routes_;
};

}  // namespace gw::federation
