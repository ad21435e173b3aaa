#pragma once
// The compiled, immutable configuration a request runs against: the validated Settings plus
// everything compiled from them once (route table). Published to workers as
// std::shared_ptr<const Snapshot>; a request keeps the snapshot it started with.
// The schema cache is shared across snapshots (learned state survives a reload).

#include <memory>

#include "gateway/mcp/schema.h"
#include "gateway/router/route_table.h"
#include "gateway/settings/settings.h"

namespace gw::filters {

struct Snapshot {
  std::shared_ptr<const settings::Settings> settings;
  router::RouteTable routes;
  std::shared_ptr<mcp::SchemaCache> schemas;

  static std::shared_ptr<const Snapshot> build(std::shared_ptr<const settings::Settings> s,
                                               std::shared_ptr<mcp::SchemaCache> schemas);
};

}  // namespace gw::filters
