#pragma once
// settings/: the gateway.yaml schema, walked with config::Walker. Internal to settings/ (the
// API is settings.h): loader.cc walks the top level, limits, mcp and policies and holds the
// entry points; admin_auth.cc walks admin_auth; routes.cc walks upstreams and routes and
// checks what refers to what; listen_tls.cc walks tls.

#include <yaml-cpp/yaml.h>

#include <deque>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/config/yaml_walker.h"
#include "gateway/settings/settings.h"

namespace gw::settings {

using config::Entry;
using config::find;
using config::Keys;

// Where a route's cross-references live, for checks that need the whole file.
struct RouteRef {
  YAML::Mark name_mark;
  YAML::Mark upstream_mark;
  bool has_upstream = false;
  std::vector<YAML::Node> upstream_nodes;  // `upstreams:` items (marks for unknown names)
};

// An absolute http(s) URL (upstream_auth.cc): `https` and its host set; false with `why`.
bool httpUrl(std::string_view url, bool& https, std::string& host, std::string& why);

// One load of one gateway.yaml. Diagnostics go to the vector given to the constructor.
class Loader : public config::Walker {
 public:
  Loader(std::string file, std::vector<Diagnostic>& errors);

  // Walks `yaml` into a snapshot; it is only valid when no diagnostic was added.
  std::shared_ptr<Settings> run(std::string_view yaml);

 private:
  // loader.cc
  bool readPath(const Entry& e, std::string& out);
  std::string resolve(const std::string& p) const;
  void walkTop(const YAML::Node& root, Settings& s);
  void walkFederation(const Entry& fe, Federation& f);
  void walkLimits(const Entry& le, Limits& l);
  void walkMcp(const Entry& me, Mcp& m, Keys allowed);
  void walkMcp(const Entry& me, Mcp& m);
  void walkAllowedHosts(const Entry& e, Mcp& m);
  void walkTrustedProxies(const Entry& e, Settings& s);
  void walkPolicies(const Entry& pe, Settings& s);

  // admin_auth.cc
  void walkAdminAuth(const Entry& ae, Settings& s);
  bool readAdminToken(const Entry& e, AdminAuth& out);

  // listen_tls.cc
  void walkTls(const Entry& te, Settings& s);
  void walkTls(const Entry& te, std::optional<ListenTls>& out);
  void walkListeners(const Entry& le, const std::vector<Entry>& top, Settings& s);
  void checkListenerServers(Settings& s);

  // routes.cc
  void walkUpstreams(const Entry& ue, Settings& s);
  void readHostHeader(const Entry& e, Upstream& u);
  void walkUpstreamTls(const Entry& te, Upstream& u);
  void readUpstreamHeaders(const Entry& e, std::vector<std::pair<std::string, std::string>>& out);
  // upstream_health.cc
  void walkHealthCheck(const Entry& he, Upstream& u);
  void walkOutlierDetection(const Entry& oe, Upstream& u);
  void walkCircuitBreaker(const Entry& ce, Upstream& u);
  void walkRetry(const Entry& re, Upstream& u);
  // tracing.cc
  void walkTracing(const Entry& te, Settings& s);
  // upstream_auth.cc
  void walkUpstreamAuth(const Entry& ae, Upstream& u);
  bool readSecretFile(const Entry& e, std::string& abs, std::string& secret);
  void walkMatch(const Entry& me, RouteMatch& m);
  void readGlobMap(const Entry& e, std::vector<std::pair<std::string, std::string>>& out);
  void walkRoutes(const Entry& re, Settings& s);
  void checkRoutes(Settings& s, bool warn_unused = true);
  void warnUnusedUpstreams(Settings& s);
  void warnUnusedUpstreams(Settings& s, const std::vector<const Settings*>& users);

  // servers.cc
  void walkServers(const Entry& se, const std::vector<Entry>& top, Settings& s);
  void walkServer(const YAML::Node& node, const std::string& path, const YAML::Mark& where,
                  const Settings& root, std::shared_ptr<Settings>& out,
                  std::vector<YAML::Mark>& endpoint_marks);
  void walkServerMcp(const Entry& me, Mcp& m);
  void readServerHosts(const Entry& e, std::vector<std::string>& out);
  void walkTlsCertificates(const Entry& ce, ListenTls& t, std::vector<const Entry*>& cert_entries,
                           std::vector<const Entry*>& key_entries, std::vector<YAML::Node>& items);

  std::string source_;  // the file's absolute, normalized path
  std::filesystem::path base_dir_;
  std::vector<RouteRef> route_refs_;
  std::vector<YAML::Mark> upstream_marks_;  // where each of Settings::upstreams is named
  std::vector<std::vector<YAML::Node>> listener_server_marks_;  // listeners[i].servers items
  std::deque<std::vector<Entry>> tls_entry_store_;  // tls.certificates[] entries (stable)
};

}  // namespace gw::settings
