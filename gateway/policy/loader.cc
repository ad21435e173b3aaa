// policy/: policy files → a validated, compiled PolicySet (see policy.h). The files are
// walked with config::Walker (config/yaml_walker.h), which catches yaml-cpp's exceptions and
// turns them into diagnostics with file:line:column; the JWKS a file names is read and parsed
// here and `redis.address` is resolved here, so nothing on the request path touches the
// filesystem or the resolver.

#include <algorithm>
#include <charconv>
#include <filesystem>

#include <openssl/crypto.h>
#include <yaml-cpp/yaml.h>

#include "gateway/config/yaml_walker.h"
#include "gateway/core/ascii.h"
#include "gateway/core/hex.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/policy/jwks_source.h"
#include "gateway/policy/jwt.h"
#include "gateway/policy/policy.h"

namespace gw::policy {

namespace fs = std::filesystem;

namespace {

using config::Entry;
using config::find;

constexpr std::string_view kTopKeys[] = {"identity", "rules",      "default",     "rate_limits",
                                         "redis",    "visibility", "tool_pinning"};
constexpr std::string_view kPinningKeys[] = {"mode", "store", "new_tools"};
constexpr std::string_view kPinningModes[] = {"off", "log", "block"};  // ToolPinning::Mode
constexpr std::string_view kIdentityKeys[] = {"api_keys", "jwt", "anonymous", "forward_credentials",
                                              "resource_metadata"};
constexpr std::string_view kApiKeyKeys[] = {"subject", "key_sha256", "groups", "claims", "scopes"};
constexpr std::string_view kMetadataKeys[] = {"resource", "authorization_servers",
                                              "scopes_supported", "resource_name"};
constexpr std::string_view kJwtKeys[] = {"issuer",       "audiences", "keys_file",    "skew",
                                         "groups_claim", "jwks_url",  "jwks_refresh", "jwks_ca"};
constexpr std::string_view kRuleKeys[] = {"name", "match", "unless", "action", "require", "mode"};
constexpr std::string_view kMatchKeys[] = {"method",  "name",   "params",
                                           "subject", "groups", "claims"};
constexpr std::string_view kRequireKeys[] = {"param", "equals_claim", "scopes"};
constexpr std::string_view kLimitKeys[] = {"name",  "match",   "key", "rate",
                                           "burst", "backend", "mode"};
constexpr std::string_view kRedisKeys[] = {"address", "on_error", "timeout"};
constexpr std::string_view kOnError[] = {"local", "allow", "deny"};  // RedisSettings::OnError

// Claim names as they appear in tokens: letters, digits and `_ - . : /`.
bool validClaimName(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.' || c == ':' || c == '/';
  });
}

// Names in `claims:` maps (API keys, match) and `params:` maps (match; case-insensitive, as
// the Mcp-Param-{Name} they are compared with).
constexpr config::NameRule kClaimNames{
    "claim names to values", [](const std::string& path, const std::string& name) {
      return validClaimName(name) ? std::string()
                                  : "'" + path + "': invalid claim names '" + name + "'";
    }};
constexpr config::NameRule kParamNames{
    "param names to values",
    [](const std::string& path, const std::string& name) {
      return core::isToken(name) ? std::string()
                                 : "'" + path + "': invalid param names '" + name + "'";
    },
    true};

}  // namespace

// Builds one PolicySet from several files; befriended by PolicySet.
class Loader : public config::Walker {
 public:
  explicit Loader(std::vector<settings::Diagnostic>& errors)
      : config::Walker(errors, "the policy file"),
        set_(new PolicySet()),
        errors_(errors),
        errors_before_(errorCount()) {}

  void walkFile(std::string_view yaml, const std::string& name) {
    setFile(name);
    std::error_code ec;
    fs::path abs = fs::absolute(fs::path(name), ec);
    base_dir_ = (ec ? fs::path(name) : abs).lexically_normal().parent_path();
    walk(yaml, [&](const YAML::Node& root) { walkTop(root); });
  }

  void readFile(const std::string& path) {
    std::string text;
    std::string reason;
    if (!settings::readWholeFile(path, text, reason)) {
      errors_.push_back(settings::Diagnostic{path, 0, 0, "cannot read policy file: " + reason});
      return;
    }
    walkFile(text, path);
  }

  std::shared_ptr<const PolicySet> finish() {
    for (const auto& [where_file, mark] : redis_limits_) {
      if (!set_->redis_.present) {
        errors_.push_back(settings::Diagnostic{where_file, mark.line + 1, mark.column + 1,
                                               "'backend: redis' needs a 'redis' section"});
      }
    }
    checkAudiences();
    if (errorCount() != errors_before_) {
      return nullptr;
    }
    set_->can_deny_ = !set_->default_allow_ ||
                      std::any_of(set_->rules_.begin(), set_->rules_.end(), [](const Rule& r) {
                        return !r.audit && (r.action == Rule::Action::kDeny ||
                                            r.require.has_value() || !r.require_scopes.empty());
                      });
    set_->has_audit_ = std::any_of(set_->rules_.begin(), set_->rules_.end(),
                                   [](const Rule& r) { return r.audit; }) ||
                       std::any_of(set_->rate_limits_.begin(), set_->rate_limits_.end(),
                                   [](const RateLimitSpec& l) { return l.audit; });
    return std::shared_ptr<const PolicySet>(set_.release());
  }

 private:
  std::unique_ptr<PolicySet> set_;
  std::vector<settings::Diagnostic>& errors_;  // the walker's: for diagnostics in other files
  size_t errors_before_;
  fs::path base_dir_;
  bool jwt_seen_ = false;
  bool metadata_seen_ = false;
  std::optional<std::pair<std::string, YAML::Mark>> jwt_audiences_missing_;  // file, mark
  std::vector<std::pair<std::string, YAML::Mark>> redis_limits_;

  // A token must be issued for this gateway: with resource_metadata, its resource is the
  // audience (the default when jwt names none) and must be one of jwt.audiences.
  void checkAudiences() {
    PolicySet::Jwt* jwt = set_->jwt_.get();
    const ResourceMetadata* m = set_->resourceMetadata();
    if (jwt == nullptr) {
      return;
    }
    if (jwt->audiences.empty()) {
      if (m != nullptr) {
        jwt->audiences.push_back(m->resource);
      } else if (jwt_audiences_missing_) {
        const auto& [f, mark] = *jwt_audiences_missing_;
        errors_.push_back(settings::Diagnostic{
            f, mark.line + 1, mark.column + 1,
            "'identity.jwt' needs 'audiences' (or identity.resource_metadata.resource)"});
      }
      return;
    }
    if (m != nullptr && std::find(jwt->audiences.begin(), jwt->audiences.end(), m->resource) ==
                            jwt->audiences.end()) {
      errors_.push_back(settings::Diagnostic{
          m->file, m->line, 1,
          "'identity.resource_metadata.resource' (" + m->resource +
              ") is not one of identity.jwt.audiences: tokens must be issued for this gateway"});
    }
  }

  // The well-known URI of the resource (RFC 9728 §3.1: inserted between the host and the
  // path, a lone "/" path dropped) and the JSON document served there.
  static void renderMetadata(ResourceMetadata& m) {
    const size_t scheme_end = m.resource.find("://") + 3;
    const size_t path_at = m.resource.find('/', scheme_end);
    std::string origin = m.resource.substr(0, path_at);
    std::string path = path_at == std::string::npos ? "" : m.resource.substr(path_at);
    if (path == "/") {
      path.clear();
    }
    m.well_known_path = "/.well-known/oauth-protected-resource" + path;
    m.url = origin + m.well_known_path;
    auto str = [](std::string& out, std::string_view v) {
      out += '"';
      mcp::appendJsonEscaped(out, v);
      out += '"';
    };
    auto list = [&](std::string& out, const std::vector<std::string>& items) {
      out += '[';
      for (size_t i = 0; i < items.size(); ++i) {
        out += i > 0 ? "," : "";
        str(out, items[i]);
      }
      out += ']';
    };
    std::string& d = m.document;
    d = "{\"resource\":";
    str(d, m.resource);
    d += ",\"authorization_servers\":";
    list(d, m.authorization_servers);
    if (!m.scopes_supported.empty()) {
      d += ",\"scopes_supported\":";
      list(d, m.scopes_supported);
    }
    d += ",\"bearer_methods_supported\":[\"header\"]";
    if (!m.resource_name.empty()) {
      d += ",\"resource_name\":";
      str(d, m.resource_name);
    }
    d += "}";
  }

  // Policy lists (groups, audiences, key parts) hold no empty strings.
  bool readList(const Entry& e, std::vector<std::string>& out) {
    return readStringList(e, out, nullptr, true);
  }

  void walkTop(const YAML::Node& root) {
    for (const Entry& e : entries(root, root.Mark(), kTopKeys, "")) {
      if (e.key == "identity") {
        walkIdentity(e);
      } else if (e.key == "rules") {
        walkList(e, [&](const YAML::Node& n, const std::string& path) { walkRule(n, path); });
      } else if (e.key == "default") {
        readChoice(e, "allow", "deny", set_->default_allow_);
      } else if (e.key == "rate_limits") {
        walkList(e, [&](const YAML::Node& n, const std::string& path) { walkLimit(n, path); });
      } else if (e.key == "redis") {
        walkRedis(e);
      } else if (e.key == "visibility") {
        readChoice(e, "filter", "all", set_->visibility_filter_);
      } else if (e.key == "tool_pinning") {
        walkPinning(e);
      }
    }
  }

  // tool_pinning: { mode: off|log|block, store: PATH, new_tools: allow|block }. A later file
  // that sets it replaces the whole section.
  void walkPinning(const Entry& pe) {
    ToolPinning t;
    t.file = file();
    t.line = pe.key_node.Mark().line + 1;
    bool ok = true;
    const Entry* store = nullptr;  // points into `es`
    const std::vector<Entry> es = entries(pe.value, pe.key_node.Mark(), kPinningKeys, pe.path);
    for (const Entry& e : es) {
      if (e.key == "mode") {
        size_t i = 0;
        ok = readChoice(e, kPinningModes, i) && ok;
        t.mode = static_cast<ToolPinning::Mode>(i);
      } else if (e.key == "store") {
        store = &e;
      } else if (e.key == "new_tools") {
        bool allow = true;
        ok = readChoice(e, "allow", "block", allow) && ok;
        t.block_new = !allow;
      }
    }
    if (store != nullptr) {
      std::string rel;
      if (!readNonEmptyString(*store, rel)) {
        return;
      }
      fs::path p(rel);
      if (p.is_relative()) {
        p = base_dir_ / p;
      }
      t.store = p.lexically_normal().string();
      if (t.store.ends_with('/')) {
        error(valueMark(*store), "'" + store->path + "' must name a file, not a directory");
        ok = false;
      }
    } else if (t.mode != ToolPinning::Mode::kOff) {
      error(pe.key_node.Mark(), "'" + pe.path + "' needs 'store' (the pins file) unless mode: off");
      ok = false;
    }
    if (ok) {
      set_->pinning_ = std::move(t);
    }
  }

  void walkIdentity(const Entry& ie) {
    for (const Entry& e : entries(ie.value, ie.key_node.Mark(), kIdentityKeys, ie.path)) {
      if (e.key == "api_keys") {
        walkList(e, [&](const YAML::Node& n, const std::string& path) { walkApiKey(n, path); });
      } else if (e.key == "jwt") {
        if (jwt_seen_) {
          error(e.key_node.Mark(), "'identity.jwt' is already set by an earlier policy file");
          continue;
        }
        jwt_seen_ = true;
        walkJwt(e);
      } else if (e.key == "anonymous") {
        readChoice(e, "allow", "deny", set_->anonymous_);
      } else if (e.key == "forward_credentials") {
        readBool(e, set_->forward_credentials_);
      } else if (e.key == "resource_metadata") {
        if (metadata_seen_) {
          error(e.key_node.Mark(),
                "'identity.resource_metadata' is already set by an earlier policy file");
          continue;
        }
        metadata_seen_ = true;
        walkMetadata(e);
      }
    }
  }

  // Scope tokens (RFC 6749 §3.3): printable ASCII but space, `"` and `\`.
  bool readScopes(const Entry& e, std::vector<std::string>& out) {
    if (!readList(e, out)) {
      return false;
    }
    for (const std::string& sc : out) {
      bool bad = std::any_of(sc.begin(), sc.end(), [](char c) {
        return c <= 0x20 || c >= 0x7f || c == '"' || c == '\\';
      });
      if (bad) {
        error(valueMark(e), "'" + e.path + "': invalid scope '" + sc +
                                "' (printable ASCII without spaces, quotes or backslashes)");
        return false;
      }
    }
    return true;
  }

  // An absolute URL as RFC 9728 wants a resource identifier or an issuer: https (http only
  // on a loopback host, for development), a host, no fragment, no credentials.
  bool checkUrl(const Entry& e, const std::string& url, bool allow_query) {
    std::string why;
    std::string_view rest;
    if (url.starts_with("https://")) {
      rest = std::string_view(url).substr(8);
    } else if (url.starts_with("http://")) {
      rest = std::string_view(url).substr(7);
      std::string_view host = rest.substr(0, rest.find_first_of("/?#"));
      if (host.starts_with("[::1]")) {
        host = "::1";
      } else {
        host = host.substr(0, host.rfind(':'));
      }
      const bool v4_loopback =
          host.starts_with("127.") && std::all_of(host.begin(), host.end(), [](char c) {
            return c == '.' || (c >= '0' && c <= '9');
          });
      if (host != "localhost" && host != "::1" && !v4_loopback) {
        why = "http is allowed only for a loopback host; use https";
      }
    } else {
      why = "must be an absolute https:// URL";
    }
    std::string_view host = rest.substr(0, rest.find_first_of("/?#"));
    if (why.empty() && host.empty()) {
      why = "has no host";
    } else if (why.empty() && host.find('@') != std::string_view::npos) {
      why = "must not contain credentials";
    } else if (why.empty() && url.find('#') != std::string::npos) {
      why = "must not have a fragment";
    } else if (why.empty() && !allow_query && url.find('?') != std::string::npos) {
      why = "must not have a query";
    } else if (why.empty() && std::any_of(url.begin(), url.end(), [](char c) {
                 return c <= 0x20 || c >= 0x7f || c == '"' || c == '\\';
               })) {
      why = "contains a space, a quote or a character that is not printable ASCII";
    }
    if (!why.empty()) {
      error(valueMark(e), "'" + e.path + "': '" + url + "' " + why);
      return false;
    }
    return true;
  }

  // identity.resource_metadata (RFC 9728 §2): what GET /.well-known/oauth-protected-resource
  // answers, rendered once here.
  void walkMetadata(const Entry& me) {
    ResourceMetadata m;
    m.file = file();
    m.line = me.key_node.Mark().line + 1;
    bool ok = true;
    std::vector<Entry> es = entries(me.value, me.key_node.Mark(), kMetadataKeys, me.path);
    if (!me.value.IsMap()) {
      return;
    }
    for (const Entry& e : es) {
      if (e.key == "resource") {
        ok = readNonEmptyString(e, m.resource) && checkUrl(e, m.resource, false) && ok;
      } else if (e.key == "authorization_servers") {
        if (!readList(e, m.authorization_servers)) {
          ok = false;
          continue;
        }
        for (const std::string& as : m.authorization_servers) {
          ok = checkUrl(e, as, false) && ok;
        }
        if (m.authorization_servers.empty()) {
          error(valueMark(e), "'" + e.path + "' must list at least one authorization server");
          ok = false;
        }
      } else if (e.key == "scopes_supported") {
        ok = readScopes(e, m.scopes_supported) && ok;
      } else if (e.key == "resource_name") {
        ok = readNonEmptyString(e, m.resource_name) && ok;
      }
    }
    for (std::string_view required : {"resource", "authorization_servers"}) {
      if (find(es, required) == nullptr) {
        error(me.key_node.Mark(), "'" + me.path + "' needs '" + std::string(required) + "'");
        ok = false;
      }
    }
    if (!ok) {
      return;
    }
    renderMetadata(m);
    set_->resource_metadata_ = std::move(m);
  }

  void walkApiKey(const YAML::Node& n, const std::string& path) {
    PolicySet::ApiKey k{};
    bool has_subject = false;
    bool has_key = false;
    bool ok = true;
    for (const Entry& e : entries(n, n.Mark(), kApiKeyKeys, path)) {
      if (e.key == "subject") {
        has_subject = true;
        ok = readNonEmptyString(e, k.subject) && ok;
      } else if (e.key == "key_sha256") {
        std::string hex;
        has_key = true;
        if (!readNonEmptyString(e, hex)) {
          ok = false;
          continue;
        }
        if (hex.size() != 64 ||
            !std::all_of(hex.begin(), hex.end(), [](char c) { return core::hexValue(c) >= 0; })) {
          error(valueMark(e), "'" + e.path + "' must be 64 hex digits (a SHA-256)");
          ok = false;
          continue;
        }
        for (size_t i = 0; i < 32; ++i) {
          k.digest[i] = static_cast<unsigned char>(core::hexValue(hex[2 * i]) * 16 +
                                                   core::hexValue(hex[2 * i + 1]));
        }
      } else if (e.key == "groups") {
        ok = readList(e, k.groups) && ok;
      } else if (e.key == "claims") {
        ok = readNameMap(e, kClaimNames, k.claims) && ok;
      } else if (e.key == "scopes") {
        ok = readScopes(e, k.scopes) && ok;
      }
    }
    if (n.IsMap() && (!has_subject || !has_key)) {
      error(n.Mark(), "'" + path + "' needs 'subject' and 'key_sha256'");
      return;
    }
    if (!ok) {
      return;
    }
    if (n.IsMap()) {
      for (const PolicySet::ApiKey& other : set_->api_keys_) {
        if (CRYPTO_memcmp(other.digest, k.digest, sizeof k.digest) == 0) {
          error(n.Mark(),
                "'" + path + "': the same key is already given to '" + other.subject + "'");
          return;
        }
      }
      set_->api_keys_.push_back(std::move(k));
    }
  }

  void walkJwt(const Entry& je) {
    auto jwt = std::make_unique<PolicySet::Jwt>();
    bool ok = true;
    const Entry* keys_entry = nullptr;
    const Entry* url_entry = nullptr;
    const Entry* refresh_entry = nullptr;
    const Entry* ca_entry = nullptr;
    std::vector<Entry> es = entries(je.value, je.key_node.Mark(), kJwtKeys, je.path);
    if (!je.value.IsMap()) {
      return;
    }
    for (const Entry& e : es) {
      if (e.key == "issuer") {
        ok = readNonEmptyString(e, jwt->issuer) && ok;
      } else if (e.key == "audiences") {
        ok = readList(e, jwt->audiences) && ok;
        if (e.value.IsSequence() && e.value.size() == 0) {
          error(valueMark(e), "'" + e.path + "' must list at least one audience");
          ok = false;
        }
      } else if (e.key == "keys_file") {
        keys_entry = &e;
      } else if (e.key == "jwks_url") {
        url_entry = &e;
      } else if (e.key == "jwks_refresh") {
        refresh_entry = &e;
      } else if (e.key == "jwks_ca") {
        ca_entry = &e;
      } else if (e.key == "skew") {
        std::string text;
        settings::Duration d{};
        if (!readNonEmptyString(e, text)) {
          ok = false;
        } else if (!settings::parseDuration(text, d) || d > std::chrono::minutes(10)) {
          error(valueMark(e),
                "'" + e.path + "': invalid skew '" + text + "' (a duration up to 10m, e.g. 30s)");
          ok = false;
        } else {
          jwt->skew_s = std::chrono::duration_cast<std::chrono::seconds>(d).count();
        }
      } else if (e.key == "groups_claim") {
        ok = readNonEmptyString(e, jwt->groups_claim) && ok;
        if (ok && !validClaimName(jwt->groups_claim)) {
          error(valueMark(e), "'" + e.path + "': invalid claim name");
          ok = false;
        }
      }
    }
    if (find(es, "issuer") == nullptr) {
      error(je.key_node.Mark(), "'" + je.path + "' needs 'issuer'");
      ok = false;
    }
    if ((keys_entry == nullptr) == (url_entry == nullptr)) {
      error(je.key_node.Mark(),
            "'" + je.path + "' needs exactly one of 'keys_file' and 'jwks_url'");
      ok = false;
    }
    for (const Entry* only_url : {refresh_entry, ca_entry}) {
      if (only_url != nullptr && url_entry == nullptr) {
        error(only_url->key_node.Mark(), "'" + only_url->path + "' applies only with 'jwks_url'");
        ok = false;
      }
    }
    if (find(es, "audiences") == nullptr) {
      // resource_metadata.resource stands in (finish()); without it this is an error there.
      jwt_audiences_missing_.emplace(file(), je.key_node.Mark());
    }
    if (url_entry != nullptr) {
      ok = readJwksUrl(*url_entry, refresh_entry, ca_entry, *jwt) && ok;
    }
    if (keys_entry != nullptr && url_entry == nullptr) {
      std::string rel;
      if (!readNonEmptyString(*keys_entry, rel)) {
        return;
      }
      jwt->keys_file = resolve(rel);
      if (settings::hermeticLoad()) {
        error(valueMark(*keys_entry),
              "'" + keys_entry->path + "': key file not read (hermetic test load)");
        return;
      }
      std::string keys_text;
      std::string reason;
      if (!settings::readWholeFile(jwt->keys_file, keys_text, reason)) {
        error(valueMark(*keys_entry), "'" + keys_entry->path + "': cannot read key file '" +
                                          jwt->keys_file + "': " + reason);
        return;
      }
      std::string why;
      if (!parseJwks(keys_text, jwt->keys, why)) {
        error(valueMark(*keys_entry), "'" + keys_entry->path + "': " + jwt->keys_file + ": " + why);
        return;
      }
    }
    if (ok && (keys_entry != nullptr || jwt->source != nullptr)) {
      set_->jwt_ = std::move(jwt);
    }
  }

  // A path from the policy file, relative to its directory.
  std::string resolve(const std::string& rel) const {
    fs::path p(rel);
    if (p.is_relative()) {
      p = base_dir_ / p;
    }
    return p.lexically_normal().string();
  }

  // jwks_url with its jwks_refresh and jwks_ca: checked, then the shared source for them.
  bool readJwksUrl(const Entry& ue, const Entry* re, const Entry* ce, PolicySet::Jwt& jwt) {
    bool ok = true;
    JwksUrl parsed;
    if (!readNonEmptyString(ue, jwt.jwks_url)) {
      ok = false;
    } else if (std::string why; !parseJwksUrl(jwt.jwks_url, parsed, why)) {
      error(valueMark(ue), "'" + ue.path + "': '" + jwt.jwks_url + "' " + why);
      ok = false;
    }
    if (re != nullptr) {
      std::string text;
      settings::Duration d{};
      if (!readNonEmptyString(*re, text)) {
        ok = false;
      } else if (!settings::parseDuration(text, d) || d < JwksSource::kMinRefresh ||
                 d > std::chrono::hours(24)) {
        error(valueMark(*re), "'" + re->path + "': invalid jwks_refresh '" + text +
                                  "' (a duration from 30s to 24h, e.g. 15m)");
        ok = false;
      } else {
        jwt.jwks_refresh = std::chrono::duration_cast<std::chrono::seconds>(d);
      }
    }
    if (ce != nullptr) {
      std::string rel;
      if (!readNonEmptyString(*ce, rel)) {
        ok = false;
      } else {
        jwt.jwks_ca = resolve(rel);
        std::string text;
        std::string reason;
        if (!settings::hermeticLoad() && !settings::readWholeFile(jwt.jwks_ca, text, reason)) {
          error(valueMark(*ce),
                "'" + ce->path + "': cannot read CA file '" + jwt.jwks_ca + "': " + reason);
          ok = false;
        }
      }
    }
    if (ok) {
      jwt.source = JwksSource::acquire(jwt.jwks_url, parsed, jwt.jwks_ca, jwt.jwks_refresh);
    }
    return ok;
  }

  bool walkMatch(const Entry& me, Match& m) {
    bool ok = true;
    if (me.value.IsNull()) {
      return true;
    }
    for (const Entry& e : entries(me.value, me.key_node.Mark(), kMatchKeys, me.path)) {
      std::string text;
      if (e.key == "method" || e.key == "name" || e.key == "subject") {
        if (!readNonEmptyString(e, text)) {
          ok = false;
          continue;
        }
        std::optional<router::Glob>& dst = e.key == "method" ? m.method
                                           : e.key == "name" ? m.name
                                                             : m.subject;
        dst.emplace(std::move(text));
      } else if (e.key == "groups") {
        ok = readList(e, m.groups) && ok;
      } else if (e.key == "params" || e.key == "claims") {
        std::vector<std::pair<std::string, std::string>> raw;
        bool params = e.key == "params";
        if (params) {
          ok = readNameMap(e, kParamNames, raw) && ok;
        } else {
          ok = readNameMap(e, kClaimNames, raw) && ok;
        }
        auto& dst = params ? m.params : m.claims;
        for (auto& [k, v] : raw) {
          dst.emplace_back(std::move(k), router::Glob(std::move(v)));
        }
      }
    }
    return ok;
  }

  void walkRule(const YAML::Node& n, const std::string& path) {
    Rule r;
    r.file = file();
    r.line = n.Mark().is_null() ? 0 : n.Mark().line + 1;
    bool ok = true;
    bool has_action = false;
    std::vector<Entry> es = entries(n, n.Mark(), kRuleKeys, path);
    if (!n.IsMap()) {
      return;
    }
    for (const Entry& e : es) {
      if (e.key == "name") {
        ok = readNonEmptyString(e, r.name) && ok;
      } else if (e.key == "match") {
        ok = walkMatch(e, r.match) && ok;
      } else if (e.key == "unless") {
        r.unless.emplace();
        ok = walkMatch(e, *r.unless) && ok;
      } else if (e.key == "action") {
        bool allow = true;
        has_action = readChoice(e, "allow", "deny", allow);
        ok = has_action && ok;
        r.action = allow ? Rule::Action::kAllow : Rule::Action::kDeny;
      } else if (e.key == "mode") {
        bool enforce = true;
        ok = readChoice(e, "enforce", "audit", enforce) && ok;
        r.audit = !enforce;
      } else if (e.key == "require") {
        std::string param;
        std::string claim;
        bool scopes = false;
        for (const Entry& q : entries(e.value, e.key_node.Mark(), kRequireKeys, e.path)) {
          if (q.key == "scopes") {
            scopes = true;
            ok = readScopes(q, r.require_scopes) && ok;
            if (q.value.IsSequence() && q.value.size() == 0) {
              error(valueMark(q), "'" + q.path + "' must list at least one scope");
              ok = false;
            }
          } else if (!readNonEmptyString(q, q.key == "param" ? param : claim)) {
            ok = false;
          } else if (q.key == "param" && !core::isToken(param)) {
            error(valueMark(q), "'" + q.path + "': invalid param name '" + param + "'");
            ok = false;
          } else if (q.key == "equals_claim" && !validClaimName(claim)) {
            error(valueMark(q), "'" + q.path + "': invalid claim name '" + claim + "'");
            ok = false;
          }
        }
        if (scopes && param.empty() && claim.empty()) {
          continue;  // scopes alone
        }
        if (param.empty() || claim.empty()) {
          if (ok) {
            error(e.key_node.Mark(),
                  "'" + e.path + "' needs " +
                      (param.empty() && claim.empty() ? "'scopes', or 'param' and 'equals_claim'"
                                                      : "'param' and 'equals_claim'"));
          }
          ok = false;
        }
        r.require.emplace(std::move(param), std::move(claim));
      }
    }
    if (find(es, "name") == nullptr) {
      error(n.Mark(), "'" + path + "' needs a 'name'");
      ok = false;
    }
    if (!has_action && find(es, "require") == nullptr && find(es, "action") == nullptr) {
      error(n.Mark(), "'" + path + "' needs 'action' (allow | deny) or 'require'");
      ok = false;
    }
    if (!r.name.empty()) {
      for (const Rule& other : set_->rules_) {
        if (other.name == r.name) {
          error(find(es, "name")->value.Mark(), "rule name '" + r.name + "' is used twice");
          ok = false;
        }
      }
    }
    if (ok) {
      set_->rules_.push_back(std::move(r));
    }
  }

  // "N/s", "N/min", "N/h" with N a positive integer.
  static bool parseRate(std::string_view text, uint64_t& n, uint64_t& window_ms) {
    size_t slash = text.find('/');
    if (slash == std::string_view::npos || slash == 0) {
      return false;
    }
    std::string_view num = text.substr(0, slash);
    std::string_view unit = text.substr(slash + 1);
    auto [ptr, ec] = std::from_chars(num.data(), num.data() + num.size(), n);
    if (ec != std::errc() || ptr != num.data() + num.size() || n == 0 || n > 1000000000) {
      return false;
    }
    if (unit == "s") {
      window_ms = 1000;
    } else if (unit == "min") {
      window_ms = 60000;
    } else if (unit == "h") {
      window_ms = 3600000;
    } else {
      return false;
    }
    return true;
  }

  static bool validKeyPart(std::string_view k) {
    if (k == "subject" || k == "group" || k == "method" || k == "name" || k == "client_ip") {
      return true;
    }
    if (k.starts_with("param:")) {
      return core::isToken(k.substr(6));
    }
    if (k.starts_with("header:")) {
      return core::isToken(k.substr(7));
    }
    return false;
  }

  void walkLimit(const YAML::Node& n, const std::string& path) {
    RateLimitSpec s;
    s.file = file();
    s.line = n.Mark().is_null() ? 0 : n.Mark().line + 1;
    bool ok = true;
    const Entry* burst = nullptr;
    std::vector<Entry> es = entries(n, n.Mark(), kLimitKeys, path);
    if (!n.IsMap()) {
      return;
    }
    for (const Entry& e : es) {
      if (e.key == "name") {
        ok = readNonEmptyString(e, s.name) && ok;
      } else if (e.key == "match") {
        ok = walkMatch(e, s.match) && ok;
      } else if (e.key == "key") {
        std::vector<std::string> parts;
        if (!readList(e, parts)) {
          ok = false;
          continue;
        }
        for (size_t i = 0; i < parts.size(); ++i) {
          if (!validKeyPart(parts[i])) {
            error(e.value[i].Mark(), "'" + e.path + "[" + std::to_string(i) +
                                         "]': unknown key part '" + parts[i] +
                                         "' (subject, group, method, name, param:<Name>, "
                                         "header:<Name>, client_ip)");
            ok = false;
          }
        }
        s.key = std::move(parts);
      } else if (e.key == "rate") {
        if (!readNonEmptyString(e, s.rate_text)) {
          ok = false;
        } else if (!parseRate(s.rate_text, s.count, s.window_ms)) {
          error(valueMark(e), "'" + e.path + "': invalid rate '" + s.rate_text +
                                  "' (N/s, N/min or N/h with N a positive integer)");
          ok = false;
        } else {
          s.rate_per_sec = static_cast<double>(s.count) * 1000.0 / static_cast<double>(s.window_ms);
        }
      } else if (e.key == "burst") {
        burst = &e;
      } else if (e.key == "mode") {
        bool enforce = true;
        ok = readChoice(e, "enforce", "audit", enforce) && ok;
        s.audit = !enforce;
      } else if (e.key == "backend") {
        bool local = true;
        ok = readChoice(e, "local", "redis", local) && ok;
        s.backend = local ? RateLimitSpec::Backend::kLocal : RateLimitSpec::Backend::kRedis;
        if (!local) {
          redis_limits_.emplace_back(file(), valueMark(e));
        }
      }
    }
    if (burst != nullptr) {
      std::string text;
      uint64_t b = 0;
      if (readNonEmptyString(*burst, text)) {
        auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), b);
        if (ec != std::errc() || ptr != text.data() + text.size() || b == 0 || b > 1000000000) {
          error(valueMark(*burst),
                "'" + burst->path + "' must be a positive integer, not '" + text + "'");
          ok = false;
        }
      } else {
        ok = false;
      }
      s.burst = static_cast<uint32_t>(b);
    } else {
      s.burst = static_cast<uint32_t>(s.count);
    }
    for (std::string_view required : {"name", "key", "rate"}) {
      if (find(es, required) == nullptr) {
        error(n.Mark(), "'" + path + "' needs '" + std::string(required) + "'");
        ok = false;
      }
    }
    if (!s.name.empty()) {
      for (const RateLimitSpec& other : set_->rate_limits_) {
        if (other.name == s.name) {
          error(find(es, "name")->value.Mark(), "rate limit name '" + s.name + "' is used twice");
          ok = false;
        }
      }
    }
    if (ok) {
      set_->rate_limits_.push_back(std::move(s));
    }
  }

  void walkRedis(const Entry& re) {
    RedisSettings r;
    r.present = true;
    bool ok = true;
    std::vector<Entry> es = entries(re.value, re.key_node.Mark(), kRedisKeys, re.path);
    if (!re.value.IsMap()) {
      return;
    }
    for (const Entry& e : es) {
      if (e.key == "address") {
        // Resolved here, at load: hiredis gets the numeric address and never resolves a name
        // on a worker thread.
        settings::Address a;
        if (readAddress(e, a, false)) {
          r.host = a.ip;
          r.port = a.port;
          r.address = a.text;
        } else {
          ok = false;
        }
      } else if (e.key == "on_error") {
        size_t i = 0;
        if (readChoice(e, kOnError, i)) {
          r.on_error = static_cast<RedisSettings::OnError>(i);
        } else {
          ok = false;
        }
      } else if (e.key == "timeout") {
        settings::Duration d{};
        if (!readDuration(e, d)) {
          ok = false;
        } else if (d.count() == 0) {
          error(valueMark(e), "'" + e.path + "' must be greater than 0");
          ok = false;
        } else {
          r.timeout = d;
        }
      }
    }
    if (find(es, "address") == nullptr) {
      error(re.key_node.Mark(), "'redis' needs 'address'");
      ok = false;
    }
    if (ok) {
      set_->redis_ = std::move(r);
    }
  }
};

std::shared_ptr<const PolicySet> PolicySet::load(const std::vector<std::string>& files,
                                                 std::vector<settings::Diagnostic>& errors) {
  Loader l(errors);
  for (const std::string& f : files) {
    l.readFile(f);
  }
  return l.finish();
}

std::shared_ptr<const PolicySet> PolicySet::loadString(std::string_view yaml,
                                                       const std::string& file,
                                                       std::vector<settings::Diagnostic>& errors) {
  Loader l(errors);
  l.walkFile(yaml, file);
  return l.finish();
}

}  // namespace gw::policy
