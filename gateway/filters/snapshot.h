#pragma once
// The compiled, immutable configuration a request runs against: the validated Settings plus
// everything compiled from them once (route table). Published to workers as
// std::shared_ptr<const Snapshot>; a request keeps the snapshot it started with.
// Members are of two kinds:
//  - compiled config: built by load() from the files and never changed afterwards
//    (settings, routes, policy);
//  - learned runtime state: what the gateway learns from upstreams and operators while it
//    runs, changed in place behind its own locks, and handed by load() from the running
//    snapshot to the next one, so it survives a reload (schemas, federation and the catalogs
//    it owns, pins).

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gateway/federation/registry.h"
#include "gateway/mcp/schema.h"
#include "gateway/pins/book.h"
#include "gateway/policy/policy.h"
#include "gateway/router/route_table.h"
#include "gateway/settings/settings.h"

namespace gw::filters {

struct Snapshot {
  // Compiled config.
  std::shared_ptr<const settings::Settings> settings;
  router::RouteTable routes;
  std::shared_ptr<const policy::PolicySet> policy;  // never null (no files: allow-all)

  // Learned runtime state.
  // x-mcp-header annotations learned from relayed tools/list results (for verify_body and
  // the legacy stage).
  std::shared_ptr<mcp::SchemaCache> schemas;
  // Federation state, shared across snapshots like the schemas: each federated route's
  // fetched lists, ownership, tasks and conflicts. `catalogs[i]` is route i's (null for a
  // route with one upstream): the vector is compiled per snapshot, the catalogs it points to
  // are the registry's learned state.
  std::shared_ptr<federation::Registry> federation;
  std::vector<std::shared_ptr<federation::RouteCatalog>> catalogs;
  // tool_pinning (null when off): the pin book (pins/book.h), the pins and pending changes
  // learned from upstreams and approved by operators; kept across reloads while the store path
  // stays the same. (Its settings are the policy's ToolPinning: compiled config.)
  std::shared_ptr<pins::Book> pins;

  // servers: (issue #27). The root snapshot — the one published — holds one compiled snapshot
  // per server, each with its own routes, policy, schemas, federation state and pins; a
  // request runs on the one select() gives it. Without `servers:` the root is the only
  // server ("default") and `servers` is empty.
  std::vector<std::shared_ptr<const Snapshot>> servers;
  // select()'s index of `servers` by endpoint (each list in `servers` order): one hash lookup
  // per request however many servers there are.
  struct PathHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  std::unordered_map<std::string, std::vector<const Snapshot*>, PathHash, std::equal_to<>>
      by_endpoint;
  const std::string& name() const noexcept { return settings->server_name; }
  // The server a request with this Host and path is for: the one whose endpoint is the path
  // (or, for the RFC 9728 well-known paths, whose metadata it names) and whose hosts match
  // the Host — an exact name before a wildcard before "any" — among the servers of the
  // listener (its index in Settings::listeners) the request came in on. Null: none (404). The
  // root without servers answers every request on its listeners itself (its stages answer
  // other paths).
  const Snapshot* select(std::string_view host, std::string_view path,
                         size_t listener = 0) const noexcept;
  // Every server: `servers`, or the root itself.
  std::vector<const Snapshot*> everyServer() const;
  // The server named `name` (null: none).
  const Snapshot* server(std::string_view name) const noexcept;

  // The catalog of a federated route of these settings (null otherwise).
  federation::RouteCatalog* catalogOf(const settings::Route& r) const noexcept;
  const std::shared_ptr<federation::RouteCatalog>* catalogFor(
      const settings::Route& r) const noexcept;

  // Loads the config file and every policy file it names, validates them whole and
  // compiles the snapshot. On any error returns null with every problem in `errors`.
  // `schemas` carries learned tool schemas over from the previous snapshot (null: new), and
  // `federation` what federated routes learned, `pins` the running pin book (kept when the
  // store path is the same, with the store file's contents merged in: pins::Book::replace).
  // A pins store that cannot be read or parsed is an error like any other (never an empty
  // store).
  static std::shared_ptr<const Snapshot> load(
      const std::string& config_path, std::shared_ptr<mcp::SchemaCache> schemas,
      std::vector<settings::Diagnostic>& errors,
      std::shared_ptr<federation::Registry> federation = nullptr,
      std::shared_ptr<pins::Book> pins = nullptr);
  // The same, carrying over what `previous` (the running root; null: none) learned, server
  // by server (by name).
  static std::shared_ptr<const Snapshot> load(const std::string& config_path,
                                              const Snapshot* previous,
                                              std::vector<settings::Diagnostic>& errors);

 private:
  struct Learned {
    std::shared_ptr<mcp::SchemaCache> schemas;
    std::shared_ptr<federation::Registry> federation;
    std::shared_ptr<pins::Book> pins;
  };
  static std::shared_ptr<Snapshot> compile(std::shared_ptr<const settings::Settings> settings,
                                           Learned learned,
                                           std::vector<settings::Diagnostic>& errors);
  static Learned learnedFrom(const Snapshot* previous, std::string_view name, Learned fallback);
  static std::shared_ptr<const Snapshot> loadFrom(const std::string& config_path,
                                                  const Snapshot* previous, Learned learned,
                                                  std::vector<settings::Diagnostic>& errors);
  static std::shared_ptr<const Snapshot> loadServers(std::shared_ptr<const settings::Settings> root,
                                                     const Snapshot* previous,
                                                     std::vector<settings::Diagnostic>& errors);
};

// The published snapshot; workers load it per request (lock-free).
class SnapshotHolder {
 public:
  std::shared_ptr<const Snapshot> load() const noexcept {
    return current_.load(std::memory_order_acquire);
  }
  void store(std::shared_ptr<const Snapshot> s) noexcept {
    current_.store(std::move(s), std::memory_order_release);
  }

 private:
  std::atomic<std::shared_ptr<const Snapshot>> current_;
};

}  // namespace gw::filters
