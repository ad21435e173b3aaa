#pragma once
// pins/: the `mcp-gateway pins list|approve` command. `list` prints the store the policy's
// tool_pinning names (tab-separated, or --json as the admin endpoint answers); `approve`
// promotes pending definitions to pins under the store's file lock, so a running gateway
// sharing the file merges the approval before its own next write. main.cc dispatches here.

#include <memory>
#include <string>

#include "gateway/filters/snapshot.h"

namespace gw::pins {

// Loads and validates the settings file at `path` (and the policy files it names), printing
// its diagnostics to stderr; null when it does not load.
using SnapshotLoader = std::shared_ptr<const filters::Snapshot> (*)(const std::string& path);

// `mcp-gateway pins ...` (argv[1] == "pins"): 0 done; 1 failed (reason on stderr; approve:
// nothing was pending); 2 a usage error, with nothing printed (the caller prints the usage).
int command(int argc, char** argv, SnapshotLoader load);

}  // namespace gw::pins
