// The compiled snapshot: loading one from a config file (settings, policy files, the tool
// pinning store, route tables, federation catalogs) and finding a route's catalog.

#include "gateway/filters/snapshot.h"

#include <algorithm>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/core/ascii.h"
#include "gateway/http/host.h"
#include "gateway/pins/book.h"
#include "gateway/pins/pins.h"
#include "gateway/router/route_table.h"
#include "gateway/settings/loader.h"

namespace gw::filters {

// Routes are few and the route table holds its own copies of them: found by name.
const std::shared_ptr<federation::RouteCatalog>* Snapshot::catalogFor(
    const settings::Route& r) const noexcept {
  if (!r.federated() || !settings) {
    return nullptr;
  }
  for (size_t i = 0; i < settings->routes.size() && i < catalogs.size(); ++i) {
    if (catalogs[i] && settings->routes[i].name == r.name) {
      return &catalogs[i];
    }
  }
  return nullptr;
}

federation::RouteCatalog* Snapshot::catalogOf(const settings::Route& r) const noexcept {
  const auto* c = catalogFor(r);
  return c != nullptr ? c->get() : nullptr;
}

namespace {

// How well `hosts` takes `host`: 0 an exact name, 1 a wildcard, 2 "any" (no hosts), 3 not.
int hostRank(const std::vector<std::string>& hosts, std::string_view host) noexcept {
  if (hosts.empty()) {
    return 2;
  }
  int rank = 3;
  for (const std::string& h : hosts) {
    const core::HostMatch m = core::matchHost(h, host);
    if (m == core::HostMatch::kExact) {
      return 0;
    }
    if (m == core::HostMatch::kWildcard) {
      rank = 1;
    }
  }
  return rank;
}

}  // namespace

const Snapshot* Snapshot::select(std::string_view host, std::string_view path,
                                 size_t listener) const noexcept {
  const uint64_t bit = listener < 64 ? uint64_t{1} << listener : 0;
  if (servers.empty()) {
    return (settings->listener_mask & bit) != 0 ? this : nullptr;
  }
  http::HostPort hp;  // the Host without its port (a malformed one matches only "any")
  const std::string_view name = http::parseHostPort(host, hp) ? hp.host : std::string_view{};
  constexpr std::string_view kWellKnown = "/.well-known/oauth-protected-resource";
  const Snapshot* best = nullptr;
  int best_rank = 3;
  if (const auto it = by_endpoint.find(path); it != by_endpoint.end()) {
    for (const Snapshot* sv : it->second) {
      if ((sv->settings->listener_mask & bit) == 0) {
        continue;
      }
      const int rank = hostRank(sv->settings->hosts, name);
      if (rank < best_rank) {
        best = sv;
        best_rank = rank;
      }
    }
  }
  if (best != nullptr || !path.starts_with(kWellKnown)) {
    return best;
  }
  // RFC 9728 metadata: the path-inserted form names its server by endpoint (or by its
  // resource's path); the root form only when one server on this host has metadata.
  const std::string_view rest = path.substr(kWellKnown.size());
  size_t root_count = 0;
  const Snapshot* root_best = nullptr;
  for (const auto& sv : servers) {
    const policy::ResourceMetadata* m = sv->policy->resourceMetadata();
    const int rank = hostRank(sv->settings->hosts, name);
    if (m == nullptr || rank == 3 || (sv->settings->listener_mask & bit) == 0) {
      continue;
    }
    if (rest.empty()) {
      ++root_count;
      root_best = sv.get();
    } else if ((rest == sv->settings->endpoint || path == m->well_known_path) && rank < best_rank) {
      best = sv.get();
      best_rank = rank;
    }
  }
  return rest.empty() ? (root_count == 1 ? root_best : nullptr) : best;
}

std::vector<const Snapshot*> Snapshot::everyServer() const {
  if (servers.empty()) {
    return {this};
  }
  std::vector<const Snapshot*> out;
  for (const auto& sv : servers) {
    out.push_back(sv.get());
  }
  return out;
}

const Snapshot* Snapshot::server(std::string_view name) const noexcept {
  if (servers.empty()) {
    return settings && settings->server_name == name ? this : nullptr;
  }
  for (const auto& sv : servers) {
    if (sv->settings->server_name == name) {
      return sv.get();
    }
  }
  return nullptr;
}

// One server's snapshot: its policy files, pins store, route table and catalogs, with what
// it learned before (`learned`; null members: new).
std::shared_ptr<Snapshot> Snapshot::compile(std::shared_ptr<const settings::Settings> settings,
                                            Learned learned,
                                            std::vector<settings::Diagnostic>& errors) {
  const size_t errors_before = errors.size();
  auto policy = policy::PolicySet::load(settings->policy_files, errors);
  if (errors.size() != errors_before || !policy) {
    return nullptr;
  }
  const policy::ToolPinning& pinning = policy->toolPinning();
  std::shared_ptr<pins::Book> book;
  if (pinning.mode != policy::ToolPinning::Mode::kOff) {
    pins::Store store;
    bool existed = false;
    std::string error;
    if (!pins::Store::load(pinning.store, store, existed, error)) {
      errors.push_back(
          settings::Diagnostic{pinning.file, pinning.line, 1, "tool_pinning.store: " + error});
      return nullptr;
    }
    if (learned.pins && learned.pins->path() == pinning.store) {
      learned.pins->replace(pinning, std::move(store), existed);
      book = std::move(learned.pins);
    } else {
      book = std::make_shared<pins::Book>(pinning, std::move(store), existed);
    }
  }
  auto snap = std::make_shared<Snapshot>();
  snap->pins = std::move(book);
  snap->routes = router::RouteTable::compile(*settings);
  snap->settings = std::move(settings);
  snap->policy = std::move(policy);
  snap->schemas =
      learned.schemas ? std::move(learned.schemas) : std::make_shared<mcp::SchemaCache>();
  snap->federation =
      learned.federation ? std::move(learned.federation) : std::make_shared<federation::Registry>();
  std::vector<std::pair<std::string, std::vector<std::string>>> federated;
  for (const settings::Route& route : snap->settings->routes) {
    if (route.federated()) {
      snap->catalogs.push_back(snap->federation->route(route.name, route.upstreams));
      federated.emplace_back(route.name, route.upstreams);
    } else {
      snap->catalogs.push_back(nullptr);
    }
  }
  snap->federation->retain(federated);
  return snap;
}

std::shared_ptr<const Snapshot> Snapshot::load(const std::string& config_path,
                                               std::shared_ptr<mcp::SchemaCache> schemas,
                                               std::vector<settings::Diagnostic>& errors,
                                               std::shared_ptr<federation::Registry> federation,
                                               std::shared_ptr<pins::Book> pins) {
  return loadFrom(config_path, nullptr,
                  Learned{std::move(schemas), std::move(federation), std::move(pins)}, errors);
}

std::shared_ptr<const Snapshot> Snapshot::load(const std::string& config_path,
                                               const Snapshot* previous,
                                               std::vector<settings::Diagnostic>& errors) {
  return loadFrom(config_path, previous, Learned{}, errors);
}

// What the running server `name` of `previous` learned (`fallback` when there is none).
Snapshot::Learned Snapshot::learnedFrom(const Snapshot* previous, std::string_view name,
                                        Learned fallback) {
  const Snapshot* before = previous != nullptr ? previous->server(name) : nullptr;
  return before != nullptr ? Learned{before->schemas, before->federation, before->pins}
                           : std::move(fallback);
}

// The file, compiled: one server with what `previous`'s server of its name learned (else
// `learned`), or, with `servers:`, each server likewise.
std::shared_ptr<const Snapshot> Snapshot::loadFrom(const std::string& config_path,
                                                   const Snapshot* previous, Learned learned,
                                                   std::vector<settings::Diagnostic>& errors) {
  settings::LoadResult r = settings::loadFile(config_path);
  if (!r.errors.empty()) {
    errors = std::move(r.errors);
    return nullptr;
  }
  if (!r.settings->servers.empty()) {
    return loadServers(std::move(r.settings), previous, errors);
  }
  learned = learnedFrom(previous, r.settings->server_name, std::move(learned));
  return compile(std::move(r.settings), std::move(learned), errors);
}

// With `servers:`: one snapshot per server, each carrying over what the running server of
// the same name learned; the root itself has no routes and an allow-all policy.
std::shared_ptr<const Snapshot> Snapshot::loadServers(
    std::shared_ptr<const settings::Settings> root, const Snapshot* previous,
    std::vector<settings::Diagnostic>& errors) {
  auto snap = std::make_shared<Snapshot>();
  std::vector<std::string_view> stores;  // pins stores, one server each
  for (const auto& view : root->servers) {
    Learned learned = learnedFrom(previous, view->server_name, Learned{});
    auto sv = compile(view, std::move(learned), errors);
    if (!sv) {
      continue;
    }
    // Each server is its own OAuth protected resource: its resource is its endpoint's URL.
    if (const policy::ResourceMetadata* m = sv->policy->resourceMetadata()) {
      const size_t scheme = m->resource.find("://");
      const size_t slash =
          scheme == std::string::npos ? std::string::npos : m->resource.find('/', scheme + 3);
      const std::string_view rpath = slash == std::string::npos
                                         ? std::string_view("/")
                                         : std::string_view(m->resource).substr(slash);
      if (rpath != view->endpoint) {
        errors.push_back(settings::Diagnostic{
            m->file, m->line, 1,
            "identity.resource_metadata.resource '" + m->resource + "' of server '" +
                view->server_name + "' must have the server's endpoint " + view->endpoint +
                " as its path"});
      }
    }
    if (sv->pins) {
      const std::string& store = sv->pins->path();
      for (size_t i = 0; i < stores.size(); ++i) {
        if (stores[i] == store) {
          const policy::ToolPinning& p = sv->policy->toolPinning();
          errors.push_back(settings::Diagnostic{
              p.file, p.line, 1,
              "tool_pinning.store " + store + " is already the store of server '" +
                  snap->servers[i]->settings->server_name + "'; each server needs its own"});
        }
      }
    }
    stores.push_back(sv->pins ? std::string_view(sv->pins->path()) : std::string_view{});
    snap->by_endpoint[sv->settings->endpoint].push_back(sv.get());
    snap->servers.push_back(std::move(sv));
  }
  if (!errors.empty()) {
    return nullptr;
  }
  std::vector<settings::Diagnostic> none;
  snap->policy = policy::PolicySet::load({}, none);
  snap->routes = router::RouteTable::compile(*root);
  snap->settings = std::move(root);
  snap->schemas = std::make_shared<mcp::SchemaCache>();
  snap->federation = std::make_shared<federation::Registry>();
  return snap;
}

}  // namespace gw::filters
