#pragma once
// policy/: the Loader that turns policy files into a PolicySet (policy.h); private to
// policy/loader*.cc, one file per section of the policy file: loader.cc (files, the top
// level, readers the sections share, the finished set), loader_identity.cc (identity: API
// keys, JWT, resource_metadata), loader_rules.cc (rules), loader_rate_limits.cc
// (rate_limits, redis) and loader_pins.cc (tool_pinning). Every reader reports through
// config::Walker (file:line:column) and returns false on a value it refused.

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/config/yaml_walker.h"
#include "gateway/policy/policy.h"

namespace gw::policy {

// Builds one PolicySet from several files; befriended by PolicySet.
class Loader : public config::Walker {
 public:
  using Entry = config::Entry;

  explicit Loader(std::vector<settings::Diagnostic>& errors)
      : config::Walker(errors, "the policy file"),
        set_(new PolicySet()),
        errors_(errors),
        errors_before_(errorCount()) {}

  // Walks one policy text; `name` is its file (diagnostics, and the directory relative
  // paths in it are resolved against).
  void walkFile(std::string_view yaml, const std::string& name);
  // Reads the file at `path` and walks it; a file that cannot be read is a diagnostic.
  void readFile(const std::string& path);
  // The PolicySet of every file walked, or nullptr when any of them added a diagnostic.
  std::shared_ptr<const PolicySet> finish();

 private:
  // Claim names as they appear in tokens: letters, digits and `_ - . : /`.
  static bool validClaimName(std::string_view s);
  // Names in `claims:` maps (API keys, match) and `params:` maps (match; case-insensitive, as
  // the Mcp-Param-{Name} they are compared with).
  static const config::NameRule kClaimNames;
  static const config::NameRule kParamNames;

  std::unique_ptr<PolicySet> set_;
  std::vector<settings::Diagnostic>& errors_;  // the walker's: for diagnostics in other files
  size_t errors_before_;
  std::filesystem::path base_dir_;
  bool jwt_seen_ = false;
  bool metadata_seen_ = false;
  bool scope_implies_seen_ = false;
  std::optional<std::pair<std::string, YAML::Mark>> jwt_audiences_missing_;  // file, mark
  std::vector<std::pair<std::string, YAML::Mark>> redis_limits_;

  // loader.cc
  void walkTop(const YAML::Node& root);
  // Policy lists (groups, audiences, key parts) hold no empty strings.
  bool readList(const Entry& e, std::vector<std::string>& out);
  // Scope tokens (RFC 6749 §3.3): printable ASCII but space, `"` and `\`.
  bool readScopes(const Entry& e, std::vector<std::string>& out);
  // A path from the policy file, relative to its directory.
  std::string resolve(const std::string& rel) const;

  // loader_identity.cc
  void walkIdentity(const Entry& ie);
  void walkApiKey(const YAML::Node& n, const std::string& path);
  void walkJwt(const Entry& je);
  // jwks_url with its jwks_refresh and jwks_ca: checked, then the shared source for them.
  bool readJwksUrl(const Entry& ue, const Entry* re, const Entry* ce, PolicySet::Jwt& jwt);
  // identity.resource_metadata (RFC 9728 §2): what GET /.well-known/oauth-protected-resource
  // answers, rendered once here.
  void walkMetadata(const Entry& me);
  void walkScopeImplies(const Entry& se);
  // identity.introspection (RFC 7662): the endpoint, the gateway's client (its secret read
  // now), trust and cache time.
  void walkIntrospection(const Entry& ie);
  // An absolute URL as RFC 9728 wants a resource identifier or an issuer: https (http only
  // on a loopback host, for development), a host, no fragment, no credentials.
  bool checkUrl(const Entry& e, const std::string& url, bool allow_query);
  // The well-known URI of the resource (RFC 9728 §3.1: inserted between the host and the
  // path, a lone "/" path dropped) and the JSON document served there.
  static void renderMetadata(ResourceMetadata& m);
  // A token must be issued for this gateway: with resource_metadata, its resource is the
  // audience (the default when jwt names none) and must be one of jwt.audiences.
  void checkAudiences();

  // loader_rules.cc
  void walkRule(const YAML::Node& n, const std::string& path);
  bool walkMatch(const Entry& me, Match& m);

  // loader_rate_limits.cc
  void walkLimit(const YAML::Node& n, const std::string& path);
  // "N/s", "N/min", "N/h" with N a positive integer.
  static bool parseRate(std::string_view text, uint64_t& n, uint64_t& window_ms);
  static bool validKeyPart(std::string_view k);
  void walkRedis(const Entry& re);

  // loader_pins.cc
  // tool_pinning: { mode: off|log|block, store: PATH, new_tools: allow|block }. A later file
  // that sets it replaces the whole section.
  void walkPinning(const Entry& pe);
};

}  // namespace gw::policy
