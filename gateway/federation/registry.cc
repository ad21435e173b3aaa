// The shared federation state (see registry.h).

#include "gateway/federation/registry.h"

#include <algorithm>

namespace gw::federation {

namespace {

constexpr size_t kTaskCapacity = 10000;
constexpr core::Nanos kTaskTtl = std::chrono::hours(1);

std::string_view kindName(ListKind kind) noexcept {
  return methodOf(kind);
}

}  // namespace

RouteCatalog::RouteCatalog(std::string route, std::vector<std::string> upstreams)
    : route_(std::move(route)),
      upstreams_(std::move(upstreams)),
      owners_(std::make_shared<Ownership>()),
      tasks_(kTaskCapacity, kTaskTtl) {
  for (KindState& k : kinds_) {
    k.ups.resize(upstreams_.size());
  }
}

std::shared_ptr<const std::string> RouteCatalog::cached(ListKind kind, core::Nanos now,
                                                        uint64_t& ttl_left_ms) const {
  std::lock_guard lock(mu_);
  const KindState& k = kinds_[static_cast<size_t>(kind)];
  if (!k.cached || k.stale || now >= k.expires) {
    return nullptr;
  }
  ttl_left_ms = static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(k.expires - now).count());
  return k.members;
}

std::shared_ptr<const std::string> RouteCatalog::cachedOrRefresh(ListKind kind, core::Nanos now,
                                                                 core::Nanos refresh_bound,
                                                                 uint64_t& ttl_left_ms) {
  std::lock_guard lock(mu_);
  KindState& k = kinds_[static_cast<size_t>(kind)];
  if (!k.cached || k.stale) {
    return nullptr;
  }
  if (now < k.expires) {
    ttl_left_ms = static_cast<uint64_t>(
        std::chrono::duration_cast<std::chrono::milliseconds>(k.expires - now).count());
    return k.members;
  }
  if (now >= k.refreshing_until) {
    k.refreshing_until = now + refresh_bound;  // this caller refreshes
    return nullptr;
  }
  ttl_left_ms = 0;
  return k.members;
}

bool RouteCatalog::record(ListKind kind, FetchReport& report, NamesMode mode,
                          std::string_view separator, std::span<const std::string> gateway_versions,
                          core::Nanos now, int64_t unix_ms, Answer& answer,
                          std::vector<std::string>& new_conflicts) {
  std::lock_guard lock(mu_);
  KindState& k = kinds_[static_cast<size_t>(kind)];
  const size_t n = std::min(report.parts.size(), k.ups.size());
  uint64_t ttl = UINT64_MAX;
  bool all_public = true;
  size_t answered = 0;
  for (size_t i = 0; i < n; ++i) {
    FetchReport::Part& p = report.parts[i];
    UpstreamList& u = k.ups[i];
    u.fetched_unix_ms = unix_ms;
    if (!p.ok) {
      u.outcome = p.outcome;
      u.detail = p.detail;
      continue;  // its last good items stay for ownership
    }
    ++answered;
    u.outcome = "ok";
    u.detail.clear();
    u.have_good = true;
    u.truncated = p.truncated;
    u.items = std::move(p.page.items);
    u.keys = std::move(p.page.keys);
    ttl = std::min(ttl, p.page.ttl_ms);
    all_public = all_public && p.page.public_scope;
  }
  k.stale = false;
  k.cached = false;
  k.refreshing_until = core::Nanos{};
  if (answered == 0) {
    rebuildOwnership();
    return false;  // (the ownership expiry stays: still stale once it ran out)
  }
  const uint64_t owned_ms = ttl == UINT64_MAX ? 0 : ttl;
  k.owned_expires = owned_ms > 0;
  k.owned_until = now + std::chrono::milliseconds(owned_ms);
  auto members = std::make_shared<std::string>();
  if (kind == ListKind::kDiscover) {
    std::vector<DiscoverPart> parts;
    for (size_t i = 0; i < n; ++i) {
      if (report.parts[i].ok) {
        parts.push_back(DiscoverPart{upstreams_[i], report.parts[i].page.result});
      }
    }
    if (!mergeDiscover(parts, gateway_versions, "mcp-gateway", GW_VERSION, *members,
                       answer.error)) {
      return false;
    }
  } else {
    std::vector<Contribution> parts;
    for (size_t i = 0; i < n; ++i) {
      if (report.parts[i].ok) {
        parts.push_back(Contribution{upstreams_[i], &k.ups[i].items, &k.ups[i].keys});
      } else {
        parts.push_back(Contribution{upstreams_[i], nullptr, nullptr});
      }
    }
    MergedItems merged;
    mergeItems(kind, parts, mode, separator, merged);
    for (const Conflict& c : merged.conflicts) {
      std::string key = std::string(kindName(kind)) + '\0' + c.key;
      if (conflicts_.insert(key).second) {
        std::string text = std::string(kindName(kind)) + " '" + c.key + "' (kept from " +
                           upstreams_[c.kept] + ", hidden from " + upstreams_[c.hidden] + ")";
        conflict_text_.push_back(text);
        new_conflicts.push_back(std::move(text));
      }
    }
    *members = listResultMembers(kind, merged);
  }
  answer.members = members;
  answer.ttl_ms = ttl == UINT64_MAX ? 0 : ttl;
  answer.public_scope = all_public;
  // Kept only when every upstream answered: a merge that left one out (failed, timed out) is
  // served to the request that asked, and the next request fetches again.
  if (all_public && answer.ttl_ms > 0 && answered == k.ups.size()) {
    k.cached = true;
    k.members = members;
    k.expires = now + std::chrono::milliseconds(answer.ttl_ms);
  }
  rebuildOwnership();
  return true;
}

void RouteCatalog::rebuildOwnership() {
  auto o = std::make_shared<Ownership>();
  for (ListKind kind :
       {ListKind::kTools, ListKind::kPrompts, ListKind::kResources, ListKind::kTemplates}) {
    const KindState& k = kinds_[static_cast<size_t>(kind)];
    std::vector<const std::vector<std::string>*> keys;
    for (const UpstreamList& u : k.ups) {
      keys.push_back(u.have_good ? &u.keys : nullptr);
    }
    o->assign(kind, keys);
  }
  owners_ = std::move(o);
}

int RouteCatalog::owner(ListKind kind, std::string_view key) const {
  std::shared_ptr<const Ownership> o;
  {
    std::lock_guard lock(mu_);
    o = owners_;
  }
  switch (kind) {
    case ListKind::kTools:
      return o->tool(key);
    case ListKind::kPrompts:
      return o->prompt(key);
    case ListKind::kResources:
    case ListKind::kTemplates:
      return o->resource(key);
    case ListKind::kDiscover:
      break;
  }
  return -1;
}

bool RouteCatalog::stale(ListKind kind, core::Nanos now) const {
  std::lock_guard lock(mu_);
  const KindState& k = kinds_[static_cast<size_t>(kind)];
  return k.stale || (k.owned_expires && now >= k.owned_until);
}

void RouteCatalog::markStale(ListKind kind) {
  std::lock_guard lock(mu_);
  kinds_[static_cast<size_t>(kind)].stale = true;
  kinds_[static_cast<size_t>(kind)].cached = false;
}

bool RouteCatalog::everFetched(ListKind kind) const {
  std::lock_guard lock(mu_);
  for (const UpstreamList& u : kinds_[static_cast<size_t>(kind)].ups) {
    if (u.fetched_unix_ms != 0) {
      return true;
    }
  }
  return false;
}

void RouteCatalog::putTask(std::string_view task_id, int upstream, core::Nanos now) {
  std::lock_guard lock(mu_);
  tasks_.put(task_id, upstream, now);
}

int RouteCatalog::taskOwner(std::string_view task_id, core::Nanos now) const {
  std::lock_guard lock(mu_);
  return tasks_.find(task_id, now);
}

size_t RouteCatalog::conflicts() const {
  std::lock_guard lock(mu_);
  return conflicts_.size();
}

std::string RouteCatalog::viewJson(core::Nanos now) const {
  std::lock_guard lock(mu_);
  std::string out = "{\"route\":";
  appendJsonString(out, route_);
  out += ",\"upstreams\":[";
  for (size_t i = 0; i < upstreams_.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    out += "{\"name\":";
    appendJsonString(out, upstreams_[i]);
    out += ",\"lists\":{";
    bool first = true;
    for (size_t kk = 0; kk < kListKinds; ++kk) {
      const UpstreamList& u = kinds_[kk].ups[i];
      if (u.fetched_unix_ms == 0) {
        continue;
      }
      if (!first) {
        out += ',';
      }
      first = false;
      appendJsonString(out, methodOf(static_cast<ListKind>(kk)));
      out += ":{\"fetched_unix_ms\":" + std::to_string(u.fetched_unix_ms) + ",\"outcome\":";
      appendJsonString(out, u.outcome);
      if (!u.detail.empty()) {
        out += ",\"detail\":";
        appendJsonString(out, u.detail);
      }
      out += ",\"items\":" + std::to_string(u.have_good ? u.items.size() : 0);
      if (u.truncated) {
        out += ",\"truncated\":true";
      }
      out += "}";
    }
    out += "},\"owns\":{";
    first = true;
    for (ListKind kind :
         {ListKind::kTools, ListKind::kPrompts, ListKind::kResources, ListKind::kTemplates}) {
      if (!first) {
        out += ',';
      }
      first = false;
      appendJsonString(out, arrayKey(kind));
      out += ":[";
      const UpstreamList& u = kinds_[static_cast<size_t>(kind)].ups[i];
      bool f2 = true;
      if (u.have_good) {
        for (const std::string& key : u.keys) {
          if (key.empty() || owners_ == nullptr) {
            continue;
          }
          const int o = kind == ListKind::kTools       ? owners_->tool(key)
                        : kind == ListKind::kPrompts   ? owners_->prompt(key)
                        : kind == ListKind::kResources ? owners_->resource(key)
                                                       : static_cast<int>(i);
          if (o != static_cast<int>(i)) {
            continue;
          }
          if (!f2) {
            out += ',';
          }
          f2 = false;
          appendJsonString(out, key);
        }
      }
      out += "]";
    }
    out += "}}";
  }
  out += "],\"cache\":{";
  bool first = true;
  for (size_t kk = 0; kk < kListKinds; ++kk) {
    const KindState& k = kinds_[kk];
    if (!k.cached || now >= k.expires) {
      continue;
    }
    if (!first) {
      out += ',';
    }
    first = false;
    appendJsonString(out, methodOf(static_cast<ListKind>(kk)));
    out += ":{\"ttl_left_ms\":" +
           std::to_string(
               std::chrono::duration_cast<std::chrono::milliseconds>(k.expires - now).count()) +
           "}";
  }
  out += "},\"conflicts\":[";
  for (size_t i = 0; i < conflict_text_.size(); ++i) {
    if (i > 0) {
      out += ',';
    }
    appendJsonString(out, conflict_text_[i]);
  }
  out += "]}";
  return out;
}

std::shared_ptr<RouteCatalog> Registry::route(std::string_view name,
                                              const std::vector<std::string>& upstreams) {
  std::lock_guard lock(mu_);
  auto it = routes_.find(name);
  if (it != routes_.end() && it->second->upstreams() == upstreams) {
    return it->second;
  }
  auto c = std::make_shared<RouteCatalog>(std::string(name), upstreams);
  routes_[std::string(name)] = c;
  return c;
}

void Registry::retain(const std::vector<std::pair<std::string, std::vector<std::string>>>& routes) {
  std::lock_guard lock(mu_);
  for (auto it = routes_.begin(); it != routes_.end();) {
    bool keep = std::any_of(routes.begin(), routes.end(), [&](const auto& r) {
      return r.first == it->first && r.second == it->second->upstreams();
    });
    it = keep ? std::next(it) : routes_.erase(it);
  }
}

std::vector<std::shared_ptr<RouteCatalog>> Registry::all() const {
  std::lock_guard lock(mu_);
  std::vector<std::shared_ptr<RouteCatalog>> out;
  for (const auto& [name, c] : routes_) {
    out.push_back(c);
  }
  return out;
}

}  // namespace gw::federation
