// The compiled snapshot: loading one from a config file (settings, policy files, the tool
// pinning store, route tables, federation catalogs) and finding a route's catalog.

#include "gateway/filters/snapshot.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

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

std::shared_ptr<const Snapshot> Snapshot::load(const std::string& config_path,
                                               std::shared_ptr<mcp::SchemaCache> schemas,
                                               std::vector<settings::Diagnostic>& errors,
                                               std::shared_ptr<federation::Registry> federation,
                                               std::shared_ptr<pins::Book> pins) {
  settings::LoadResult r = settings::loadFile(config_path);
  if (!r.errors.empty()) {
    errors = std::move(r.errors);
    return nullptr;
  }
  auto policy = policy::PolicySet::load(r.settings->policy_files, errors);
  if (!errors.empty() || !policy) {
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
    if (pins && pins->path() == pinning.store) {
      pins->replace(pinning, std::move(store), existed);
      book = std::move(pins);
    } else {
      book = std::make_shared<pins::Book>(pinning, std::move(store), existed);
    }
  }
  auto snap = std::make_shared<Snapshot>();
  snap->pins = std::move(book);
  snap->routes = router::RouteTable::compile(*r.settings);
  snap->settings = std::move(r.settings);
  snap->policy = std::move(policy);
  snap->schemas = schemas ? std::move(schemas) : std::make_shared<mcp::SchemaCache>();
  snap->federation = federation ? std::move(federation) : std::make_shared<federation::Registry>();
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

}  // namespace gw::filters
