// settings/: `servers:` (issue #27) — several MCP servers on one gateway. Each server is a
// view of the top-level settings with its own endpoint, hosts, routes, policies and `mcp`
// overrides; upstreams, federation, limits and everything else stay shared. Checked here:
// names, the top-level keys a server replaces, host patterns, and two servers answering one
// path for the same host.

#include <algorithm>
#include <cctype>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/settings/loader.h"

namespace gw::settings {

namespace {

constexpr std::string_view kServerKeys[] = {"name",   "endpoint", "hosts",
                                            "routes", "policies", "mcp"};
// What a server may set of the top-level `mcp` block (the rest is the gateway's edge).
constexpr std::string_view kServerMcpKeys[] = {"protocol_versions", "legacy", "verify_body",
                                               "allowed_origins", "sse_keepalive"};
constexpr size_t kMaxServerName = 64;

bool serverNameOk(std::string_view n) {
  return !n.empty() && n.size() <= kMaxServerName && std::all_of(n.begin(), n.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
  });
}

// A DNS name as clients put it in Host (letters, digits, '-', '.'; no port), optionally
// "*." before one: lowercased.
bool hostPatternOk(std::string& h) {
  std::string_view rest = h;
  if (rest.starts_with("*.")) {
    rest.remove_prefix(2);
  }
  if (rest.empty() || rest.size() > 253 || rest.front() == '.' || rest.back() == '.' ||
      rest.find("..") != std::string_view::npos) {
    return false;
  }
  for (const char c : rest) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.')) {
      return false;
    }
  }
  std::transform(h.begin(), h.end(), h.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return true;
}

}  // namespace

void Loader::readServerHosts(const Entry& e, std::vector<std::string>& out) {
  std::vector<std::string> hosts;
  std::vector<YAML::Node> nodes;
  if (!readStringList(e, hosts, &nodes, true)) {
    return;
  }
  for (size_t i = 0; i < hosts.size(); ++i) {
    if (!hostPatternOk(hosts[i])) {
      error(nodes[i].Mark(), "'" + e.path + "[" + std::to_string(i) +
                                 "]' must be a host name (mcp.example.com) or a wildcard "
                                 "(*.example.com), without a port; got '" +
                                 hosts[i] + "'");
      return;
    }
    for (size_t j = 0; j < i; ++j) {
      if (hosts[j] == hosts[i]) {
        error(nodes[i].Mark(), "'" + e.path + "' names host '" + hosts[i] + "' twice");
        return;
      }
    }
  }
  out = std::move(hosts);
}

void Loader::walkServerMcp(const Entry& me, Mcp& m) {
  walkMcp(me, m, kServerMcpKeys);
}

void Loader::walkServers(const Entry& se, const std::vector<Entry>& top, Settings& s) {
  for (std::string_view key : {"endpoint", "routes", "policies"}) {
    if (const Entry* e = find(top, key)) {
      error(e->key_node.Mark(), "top-level '" + std::string(key) +
                                    "' cannot be used with 'servers' (line " +
                                    std::to_string(se.key_node.Mark().line + 1) +
                                    "): each server has its own 'servers[].'" + std::string(key));
    }
  }
  if (!se.value.IsSequence() || se.value.size() == 0) {
    error(valueMark(se), "'servers' must be a list of at least one server");
    return;
  }
  std::vector<std::shared_ptr<Settings>> servers;
  std::vector<YAML::Mark> endpoint_marks;
  std::vector<YAML::Mark> name_marks;
  for (size_t i = 0; i < se.value.size(); ++i) {
    std::shared_ptr<Settings> v;
    walkServer(se.value[i], "servers[" + std::to_string(i) + "]", se.key_node.Mark(), s, v,
               endpoint_marks);
    if (v) {
      name_marks.push_back(se.value[i]["name"] ? se.value[i]["name"].Mark() : se.value[i].Mark());
      servers.push_back(std::move(v));
    }
  }
  // Names are unique; one server per path and host: the same exact host, the same wildcard,
  // or both "any".
  for (size_t i = 0; i < servers.size(); ++i) {
    for (size_t j = 0; j < i; ++j) {
      const Settings& a = *servers[j];
      const Settings& b = *servers[i];
      if (!a.server_name.empty() && a.server_name == b.server_name) {
        error(name_marks[i], "duplicate server name '" + b.server_name + "'");
      }
      if (a.endpoint != b.endpoint) {
        continue;
      }
      std::string shared;
      if (a.hosts.empty() && b.hosts.empty()) {
        shared = "any host";
      } else {
        for (const std::string& h : b.hosts) {
          if (std::find(a.hosts.begin(), a.hosts.end(), h) != a.hosts.end()) {
            shared = "host " + h;
            break;
          }
        }
      }
      if (!shared.empty()) {
        error(endpoint_marks[i], "endpoint " + b.endpoint + " is already served by server '" +
                                     a.server_name + "' for " + shared);
      }
    }
  }
  std::vector<const Settings*> users;
  for (const auto& v : servers) {
    users.push_back(v.get());
  }
  warnUnusedUpstreams(s, users);
  for (auto& v : servers) {
    v->warnings.clear();
    s.servers.push_back(std::move(v));
  }
}

void Loader::walkServer(const YAML::Node& node, const std::string& path, const YAML::Mark& where,
                        const Settings& root, std::shared_ptr<Settings>& out,
                        std::vector<YAML::Mark>& endpoint_marks) {
  std::vector<Entry> es = entries(node, where, kServerKeys, path);
  if (!node.IsMap()) {
    return;
  }
  auto v = std::make_shared<Settings>(root);
  v->servers.clear();
  v->routes.clear();
  v->policy_files.clear();
  v->endpoint = "/mcp";
  v->server_name.clear();
  v->named_server = true;
  YAML::Mark endpoint_mark = node.Mark();
  const Entry* name_e = find(es, "name");
  if (name_e == nullptr) {
    error(node.Mark(), "'" + path + "' has no 'name'");
  } else if (readNonEmptyString(*name_e, v->server_name)) {
    if (!serverNameOk(v->server_name)) {
      error(valueMark(*name_e), "'" + name_e->path +
                                    "' must be 1 to 64 of a-z, 0-9, '_' and '-', not '" +
                                    v->server_name + "'");
    }
  }
  route_refs_.clear();
  for (const Entry& e : es) {
    if (e.key == "endpoint") {
      if (readPath(e, v->endpoint)) {
        endpoint_mark = valueMark(e);
      }
    } else if (e.key == "hosts") {
      readServerHosts(e, v->hosts);
    } else if (e.key == "routes") {
      walkRoutes(e, *v);
    } else if (e.key == "policies") {
      walkPolicies(e, *v);
    } else if (e.key == "mcp") {
      walkServerMcp(e, v->mcp);
    }
  }
  checkRoutes(*v, false);
  endpoint_marks.push_back(endpoint_mark);
  out = std::move(v);
}

}  // namespace gw::settings
