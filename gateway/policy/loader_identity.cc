// policy/: the `identity` section of a policy file (see loader_internal.h): API keys, the
// JWT issuer and its keys (a keys_file is read and parsed here, a jwks_url becomes the shared
// JwksSource the server fetches), and resource_metadata, whose RFC 9728 document is rendered
// once here. checkAudiences ties JWT audiences to the resource when the set is finished.

#include <openssl/crypto.h>

#include <algorithm>
#include <functional>

#include "gateway/core/ascii.h"
#include "gateway/core/hex.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/policy/jwks_source.h"
#include "gateway/policy/jwt.h"
#include "gateway/policy/loader_internal.h"

namespace gw::policy {

namespace {

using config::Entry;
using config::find;

constexpr std::string_view kIdentityKeys[] = {
    "api_keys",          "jwt",           "anonymous",    "forward_credentials",
    "resource_metadata", "scope_implies", "introspection"};
constexpr std::string_view kIntrospectionKeys[] = {
    "endpoint", "client_id", "client_secret_file", "client_auth", "ca", "cache", "timeout"};
constexpr std::string_view kApiKeyKeys[] = {"subject", "key_sha256", "groups", "claims", "scopes"};
constexpr std::string_view kMetadataKeys[] = {
    "resource", "authorization_servers", "scopes_supported", "resource_name", "challenge_scopes"};
constexpr std::string_view kJwtKeys[] = {"issuer",       "audiences", "keys_file",    "skew",
                                         "groups_claim", "jwks_url",  "jwks_refresh", "jwks_ca"};

}  // namespace

void Loader::walkIdentity(const Entry& ie) {
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
    } else if (e.key == "scope_implies") {
      if (scope_implies_seen_) {
        error(e.key_node.Mark(),
              "'identity.scope_implies' is already set by an earlier policy file");
        continue;
      }
      scope_implies_seen_ = true;
      walkScopeImplies(e);
    } else if (e.key == "introspection") {
      if (set_->introspection_) {
        error(e.key_node.Mark(),
              "'identity.introspection' is already set by an earlier policy file");
        continue;
      }
      walkIntrospection(e);
    }
  }
}

void Loader::walkIntrospection(const Entry& ie) {
  std::vector<Entry> es = entries(ie.value, ie.key_node.Mark(), kIntrospectionKeys, ie.path);
  if (!ie.value.IsMap()) {
    return;
  }
  const size_t before = errorCount();
  Introspection in;
  for (const Entry& e : es) {
    if (e.key == "endpoint") {
      if (readNonEmptyString(e, in.endpoint)) {
        checkUrl(e, in.endpoint, true);
      }
    } else if (e.key == "client_id") {
      readNonEmptyString(e, in.client_id);
    } else if (e.key == "client_secret_file") {
      std::string text;
      if (readNonEmptyString(e, text)) {
        in.client_secret_file = resolve(text);
        readSecretFile(e, in.client_secret_file, text, in.client_secret);
      }
    } else if (e.key == "client_auth") {
      bool basic = true;
      if (readChoice(e, "basic", "post", basic)) {
        in.client_auth_post = !basic;
      }
    } else if (e.key == "ca") {
      std::string text;
      if (readNonEmptyString(e, text)) {
        in.ca = resolve(text);
      }
    } else if (e.key == "cache") {
      config::Duration d{};
      if (readDuration(e, d)) {
        if (d > std::chrono::hours(1)) {
          error(valueMark(e), "'" + e.path + "' must be at most 1h");
        }
        in.cache = std::chrono::duration_cast<std::chrono::seconds>(d);
      }
    } else if (e.key == "timeout") {
      config::Duration d{};
      if (readDuration(e, d)) {
        if (d <= config::Duration::zero() || d > std::chrono::seconds(60)) {
          error(valueMark(e), "'" + e.path + "' must be more than 0 and at most 60s");
        }
        in.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(d);
      }
    }
  }
  for (std::string_view key : {"endpoint", "client_id", "client_secret_file"}) {
    if (find(es, key) == nullptr) {
      error(valueMark(ie), "'" + ie.path + "' needs '" + std::string(key) + "'");
    }
  }
  if (errorCount() == before) {
    set_->introspection_ = std::move(in);
  }
}

void Loader::walkApiKey(const YAML::Node& n, const std::string& path) {
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
        error(n.Mark(), "'" + path + "': the same key is already given to '" + other.subject + "'");
        return;
      }
    }
    set_->api_keys_.push_back(std::move(k));
  }
}

void Loader::walkJwt(const Entry& je) {
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
    error(je.key_node.Mark(), "'" + je.path + "' needs exactly one of 'keys_file' and 'jwks_url'");
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
      error(valueMark(*keys_entry),
            "'" + keys_entry->path + "': cannot read key file '" + jwt->keys_file + "': " + reason);
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

bool Loader::readJwksUrl(const Entry& ue, const Entry* re, const Entry* ce, PolicySet::Jwt& jwt) {
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

void Loader::walkMetadata(const Entry& me) {
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
    } else if (e.key == "challenge_scopes") {
      ok = readScopes(e, m.challenge_scopes) && ok;
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

// identity.scope_implies: {scope: [scopes it grants]}, closed transitively here (a scope
// grants what the scopes it grants grant); a scope that grants itself through others is a
// load error naming the cycle.
void Loader::walkScopeImplies(const Entry& se) {
  if (!se.value.IsMap()) {
    error(valueMark(se), "'" + se.path + "' must be a map of scope: [scopes it grants]");
    return;
  }
  std::vector<std::pair<std::string, std::vector<std::string>>> direct;
  std::vector<YAML::Mark> marks;
  for (const auto& kv : se.value) {
    Entry e;
    e.key = kv.first.Scalar();
    e.key_node = kv.first;
    e.value = kv.second;
    e.path = se.path + "." + e.key;
    std::vector<std::string> one{e.key};
    bool bad = e.key.empty() || std::any_of(e.key.begin(), e.key.end(), [](char c) {
                 return c <= 0x20 || c >= 0x7f || c == '"' || c == '\\';
               });
    if (bad) {
      error(kv.first.Mark(), "'" + se.path + "': invalid scope '" + e.key +
                                 "' (printable ASCII without spaces, quotes or backslashes)");
      continue;
    }
    std::vector<std::string> granted;
    if (!readScopes(e, granted)) {
      continue;
    }
    direct.emplace_back(e.key, std::move(granted));
    marks.push_back(kv.first.Mark());
  }
  // Depth-first closure; a scope met again on its own path is a cycle.
  auto grantsOf = [&](const std::string& s) -> const std::vector<std::string>* {
    for (const auto& [scope, granted] : direct) {
      if (scope == s) {
        return &granted;
      }
    }
    return nullptr;
  };
  std::vector<std::pair<std::string, std::vector<std::string>>> closed;
  for (size_t i = 0; i < direct.size(); ++i) {
    std::vector<std::string> out;
    std::vector<std::string> path{direct[i].first};
    bool cycle = false;
    std::function<void(const std::string&)> visit = [&](const std::string& s) {
      const std::vector<std::string>* granted = grantsOf(s);
      if (granted == nullptr || cycle) {
        return;
      }
      for (const std::string& g : *granted) {
        if (std::find(path.begin(), path.end(), g) != path.end()) {
          if (g == direct[i].first && !cycle) {
            std::string chain;
            for (const std::string& p : path) {
              chain += p + " -> ";
            }
            error(marks[i], "'" + se.path + "': scope '" + direct[i].first + "' implies itself (" +
                                chain + g + ")");
          }
          cycle = true;
          return;
        }
        if (std::find(out.begin(), out.end(), g) == out.end()) {
          out.push_back(g);
        }
        path.push_back(g);
        visit(g);
        path.pop_back();
      }
    };
    visit(direct[i].first);
    closed.emplace_back(direct[i].first, std::move(out));
  }
  std::sort(closed.begin(), closed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  set_->scope_implies_ = std::move(closed);
}

bool Loader::checkUrl(const Entry& e, const std::string& url, bool allow_query) {
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
    const bool v4_loopback = host.starts_with("127.") &&
                             std::all_of(host.begin(), host.end(),
                                         [](char c) { return c == '.' || (c >= '0' && c <= '9'); });
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

void Loader::renderMetadata(ResourceMetadata& m) {
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

void Loader::checkAudiences() {
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

}  // namespace gw::policy
