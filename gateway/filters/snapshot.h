#pragma once
// The compiled, immutable configuration a request runs against: the validated Settings plus
// everything compiled from them once (route table). Published to workers as
// std::shared_ptr<const Snapshot>; a request keeps the snapshot it started with.
// The schema cache is shared across snapshots (learned state survives a reload).

#include <memory>

#include "gateway/federation/registry.h"
#include "gateway/filters/pin_book.h"
#include "gateway/mcp/schema.h"
#include "gateway/policy/policy.h"
#include "gateway/router/route_table.h"
#include "gateway/settings/settings.h"

namespace gw::filters {

struct Snapshot {
  std::shared_ptr<const settings::Settings> settings;
  router::RouteTable routes;
  std::shared_ptr<const policy::PolicySet> policy;  // never null (no files: allow-all)
  std::shared_ptr<mcp::SchemaCache> schemas;
  // Federation state, shared across snapshots like the schemas; `catalogs[i]` is route i's
  // (null for a route with one upstream).
  std::shared_ptr<federation::Registry> federation;
  std::vector<std::shared_ptr<federation::RouteCatalog>> catalogs;
  // tool_pinning (null when off): kept across reloads while the store path stays the same.
  std::shared_ptr<PinBook> pins;

  // The catalog of a federated route of these settings (null otherwise).
  federation::RouteCatalog* catalogOf(const settings::Route& r) const noexcept;
  const std::shared_ptr<federation::RouteCatalog>* catalogFor(
      const settings::Route& r) const noexcept;

  // Loads the config file and every policy file it names, validates them whole and
  // compiles the snapshot. On any error returns null with every problem in `errors`.
  // `schemas` carries learned tool schemas over from the previous snapshot (null: new), and
  // `federation` what federated routes learned, `pins` the running pin book (its contents
  // are replaced by the store file's). A pins store that cannot be read or parsed is an
  // error like any other (never an empty store).
  static std::shared_ptr<const Snapshot> load(
      const std::string& config_path, std::shared_ptr<mcp::SchemaCache> schemas,
      std::vector<settings::Diagnostic>& errors,
      std::shared_ptr<federation::Registry> federation = nullptr,
      std::shared_ptr<PinBook> pins = nullptr);
};

}  // namespace gw::filters
