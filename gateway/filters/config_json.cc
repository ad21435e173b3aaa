// Snapshot → JSON (see config_json.h).

#include "gateway/filters/config_json.h"

#include <cstdio>

#include <algorithm>
#include <string>
#include <vector>

#include "gateway/filters/json_writer.h"
#include "gateway/filters/pipeline.h"
#include "gateway/policy/jwt.h"
#include "gateway/tls/server_context.h"

namespace gw::filters {

namespace {

constexpr std::string_view kRedacted = "<redacted>";

using Json = JsonWriter;

uint64_t ms(settings::Duration d) {
  return static_cast<uint64_t>(d.count());
}

void globPairs(Json& j, const std::vector<std::pair<std::string, std::string>>& pairs) {
  j.open('{');
  for (const auto& [k, v] : pairs) {
    j.key(k).str(v);
  }
  j.close('}');
}

void globPairs(Json& j, const std::vector<std::pair<std::string, router::Glob>>& pairs) {
  j.open('{');
  for (const auto& [k, g] : pairs) {
    j.key(k).str(g.pattern());
  }
  j.close('}');
}

// A policy `match:` block with only the keys it sets ({} matches everything).
void matchJson(Json& j, const policy::Match& m) {
  j.open('{');
  if (m.method) {
    j.key("method").str(m.method->pattern());
  }
  if (m.name) {
    j.key("name").str(m.name->pattern());
  }
  if (!m.params.empty()) {
    j.key("params");
    globPairs(j, m.params);
  }
  if (m.subject) {
    j.key("subject").str(m.subject->pattern());
  }
  if (!m.groups.empty()) {
    j.key("groups").strings(m.groups);
  }
  if (!m.claims.empty()) {
    j.key("claims");
    globPairs(j, m.claims);
  }
  j.close('}');
}

void optionalStr(Json& j, const std::optional<std::string>& v) {
  if (v) {
    j.str(*v);
  } else {
    j.raw("null");
  }
}

// `tls`: the files as loaded and what the served certificate says (null: plain HTTP).
void tlsJson(Json& j, const settings::Settings& s) {
  j.key("tls");
  if (!s.tls) {
    j.null();
    return;
  }
  const settings::ListenTls& t = *s.tls;
  j.open('{').key("cert").str(t.cert).key("key").str(t.key);
  j.key("client_ca").strOrNull(!t.client_ca.empty(), t.client_ca);
  j.key("min_version").str(t.min_version);
  if (t.context) {
    const tls::CertificateInfo& c = t.context->certificate();
    j.key("certificate").open('{');
    j.key("sha256").str(c.fingerprint);
    j.key("subject").str(c.subject);
    j.key("not_before").str(c.not_before);
    j.key("not_after").str(c.not_after);
    j.close('}');
  }
  j.key("certificates").open('[');  // tls.certificates: picked by SNI
  for (const settings::ListenTls::Certificate& c : t.certificates) {
    j.open('{').key("hosts").strings(c.hosts).key("cert").str(c.cert).key("key").str(c.key);
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

void mcpJson(Json& j, const settings::Mcp& m) {
  j.key("mcp").open('{');
  j.key("protocol_versions").strings(m.protocol_versions);
  j.key("legacy").str(m.legacy == settings::LegacyMode::kReject ? "reject" : "passthrough");
  j.key("verify_body").boolean(m.verify_body);
  j.key("allowed_origins").strings(m.allowed_origins);
  j.key("allowed_hosts").strings(m.allowed_hosts);
  j.key("max_param_headers").num(m.max_param_headers);
  j.key("sse_keepalive_ms").num(ms(m.sse_keepalive));
  j.close('}');
}

void routesJson(Json& j, const settings::Settings& s, const policy::PolicySet& policy) {
  j.key("routes").open('[');
  for (const auto& r : s.routes) {
    j.open('{');
    j.key("name").str(r.name);
    j.key("match");
    if (r.has_match) {
      j.open('{');
      if (r.match.method) {
        j.key("method").str(*r.match.method);
      }
      if (r.match.name) {
        j.key("name").str(*r.match.name);
      }
      j.key("params");
      globPairs(j, r.match.params);
      j.key("headers");
      globPairs(j, r.match.headers);
      j.close('}');
    } else {
      j.raw("null");
    }
    j.key("upstream").str(r.upstream);
    if (r.federated()) {
      j.key("upstreams").strings(r.upstreams);
      j.key("names").str(r.names == settings::FederationNames::kPrefix ? "prefix" : "keep");
    }
    j.key("legacy").boolean(r.legacy);
    j.key("verify_body");
    if (r.verify_body) {
      j.boolean(*r.verify_body);
    } else {
      j.raw("null");
    }
    // What applies, not only the route's own key: the policy and "no policy files" decide too.
    const CredentialForwarding fc = credentialForwarding(r, policy, s);
    j.key("forward_credentials").boolean(fc.forward);
    j.key("forward_credentials_source").str(fc.source);
    j.close('}');
  }
  j.close(']');
}

void settingsJson(Json& j, const settings::Settings& s, const Bound& bound,
                  const policy::PolicySet& policy) {
  std::optional<std::string> file_admin;
  if (s.admin) {
    file_admin = s.admin->text;
  }
  j.key("source_file").str(s.source_file);
  j.key("listen").str(bound.listen);
  j.key("endpoint").str(s.endpoint);
  j.key("workers").num(bound.workers);
  j.key("admin");
  optionalStr(j, bound.admin);
  const bool file_tls = s.tls.has_value();
  std::vector<std::string> file_listeners;
  for (const settings::Listener& l : s.listeners) {
    file_listeners.push_back(listenerText(l));
  }
  // (The explain command binds nothing: its Bound names no listeners.) The first listener's
  // own changes show as `listen` and `tls`; `listeners` says that others were added,
  // removed or changed.
  const bool listeners_pending =
      !bound.listeners.empty() && laterListenersDiffer(bound.listeners, file_listeners);
  if (bound.listen != s.listen.text || bound.workers != s.workers || bound.admin != file_admin ||
      bound.tls != file_tls || listeners_pending) {
    j.key("restart_pending").open('{');
    if (bound.listen != s.listen.text) {
      j.key("listen").str(s.listen.text);
    }
    if (bound.workers != s.workers) {
      j.key("workers").num(s.workers);
    }
    if (bound.admin != file_admin) {
      j.key("admin");
      optionalStr(j, file_admin);
    }
    if (bound.tls != file_tls) {
      j.key("tls").boolean(file_tls);
    }
    if (listeners_pending) {
      j.key("listeners").strings(file_listeners);
    }
    j.close('}');
  }
  tlsJson(j, s);
  j.key("admin_auth");  // the token file, never the token
  if (s.admin_auth) {
    j.open('{').key("token_file").str(s.admin_auth->token_file).close('}');
  } else {
    j.null();
  }
  const auto& l = s.limits;
  j.key("listeners").open('[');
  for (const settings::Listener& listener : s.listeners) {
    j.open('{').key("address").str(listener.address.text);
    j.key("tls").boolean(listener.tls.has_value());
    j.key("servers").strings(listener.servers).close('}');
  }
  j.close(']');
  j.key("limits").open('{');
  j.key("max_connections").num(l.max_connections);
  j.key("max_request_line").num(l.max_request_line);
  j.key("max_header_bytes").num(l.max_header_bytes);
  j.key("max_header_line").num(l.max_header_line);
  j.key("max_headers").num(l.max_headers);
  j.key("max_body_bytes").num(l.max_body_bytes);
  j.key("header_timeout_ms").num(ms(l.header_timeout));
  j.key("body_timeout_ms").num(ms(l.body_timeout));
  j.key("keepalive_timeout_ms").num(ms(l.keepalive_timeout));
  j.key("send_timeout_ms").num(ms(l.send_timeout));
  j.key("request_buffering").boolean(l.request_buffering);
  j.key("max_buffered_body_bytes").num(l.max_buffered_body_bytes);
  j.key("max_buffered_answer_bytes").num(l.max_buffered_answer_bytes);
  j.key("max_connections_per_client").num(l.max_connections_per_client);
  j.close('}');
  mcpJson(j, s.mcp);
  j.key("trusted_proxies").strings(s.trusted_proxies_text);
  j.key("upstreams").open('[');
  for (const auto& u : s.upstreams) {
    j.open('{');
    j.key("name").str(u.name);
    j.key("endpoints").open('[');
    for (const auto& e : u.endpoints) {
      j.open('{').key("address").str(e.text).key("ip").str(e.ip).close('}');
    }
    j.close(']');
    j.key("path").str(u.path);
    j.key("connect_timeout_ms").num(ms(u.connect_timeout));
    j.key("response_timeout_ms").num(ms(u.response_timeout));
    j.key("stream_idle_timeout_ms").num(ms(u.stream_idle_timeout));
    j.key("max_duration_ms").num(ms(u.max_duration));
    j.key("balance").str(u.balance == settings::Balance::kRoundRobin ? "round_robin"
                                                                     : "first_healthy");
    j.key("max_idle_connections").num(u.max_idle_connections);
    switch (u.host_header) {
      case settings::HostHeader::kEndpoint:
        j.key("host_header").str("endpoint");
        break;
      case settings::HostHeader::kClient:
        j.key("host_header").str("client");
        break;
      case settings::HostHeader::kLiteral:
        j.key("host_header").str(u.host_literal);
        break;
    }
    j.key("era").str(u.era == settings::UpstreamEra::kModern   ? "modern"
                     : u.era == settings::UpstreamEra::kLegacy ? "legacy"
                                                               : "auto");
    j.key("session_secret").strOrNull(!u.session_secret.empty(), kRedacted);
    j.key("tls");
    if (u.tls) {
      j.open('{').key("ca").str(u.tls->ca.empty() ? "system" : u.tls->ca);
      j.key("server_name").strOrNull(!u.tls->server_name.empty(), u.tls->server_name);
      j.key("cert").strOrNull(!u.tls->cert.empty(), u.tls->cert).close('}');
    } else {
      j.raw("null");
    }
    j.key("headers").open('{');  // names only: values are credentials
    for (const auto& h : u.headers) {
      j.key(h.first).str(kRedacted);
    }
    j.close('}');
    j.key("auth");
    if (u.auth) {
      // Files and names only: the client secret and the signing key are never shown.
      const settings::UpstreamAuth& a = *u.auth;
      j.open('{').key("type").str(settings::authTypeName(a.type));
      if (!a.token_endpoint.empty()) {
        j.key("token_endpoint").str(a.token_endpoint).key("client_id").str(a.client_id);
        j.key("client_secret_file").str(a.client_secret_file);
        j.key("client_secret").str(kRedacted);
        j.key("client_auth").str(a.client_auth_post ? "post" : "basic");
        j.key("resource").strOrNull(!a.resource.empty(), a.resource);
        j.key("scopes").strings(a.scopes);
        j.key("ca").str(a.ca.empty() ? "system" : a.ca);
        j.key("timeout_ms")
            .num(static_cast<uint64_t>(
                std::chrono::duration_cast<std::chrono::milliseconds>(a.timeout).count()));
      }
      if (!a.key_file.empty()) {
        j.key("issuer").str(a.issuer).key("key_file").str(a.key_file);
        j.key("ttl_s").num(
            static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::seconds>(a.ttl).count()));
      }
      j.key("audience").strOrNull(!a.audience.empty(), a.audience);
      j.close('}');
    } else {
      j.raw("null");
    }
    j.close('}');
  }
  j.close(']');
  routesJson(j, s, policy);
  j.key("policy_files").strings(s.policy_files);
  j.key("access_log").str(s.access_log.path);
  j.key("tracing");
  if (s.tracing) {
    const settings::Tracing& t = *s.tracing;
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.6g", t.sample_ratio);
    j.open('{').key("otlp_endpoint").str(t.otlp_endpoint).key("protocol").str("http/json");
    j.key("sample_ratio").raw(ratio).key("service_name").str(t.service_name);
    j.key("headers").open('{');  // names only: values are credentials
    for (const auto& h : t.headers) {
      j.key(h.first).str(kRedacted);
    }
    j.close('}');
    j.key("ca").strOrNull(!t.ca.empty(), t.ca).key("max_queue").num(t.max_queue);
    j.key("batch").num(t.batch).key("flush_interval_ms").num(ms(t.flush_interval)).close('}');
  } else {
    j.raw("null");
  }
  j.key("log_level").str(s.log_level);
  j.key("drain_timeout_ms").num(ms(s.drain_timeout));
  j.key("rate_limit_headers").boolean(s.rate_limit_headers);
  j.key("watch_files").boolean(s.watch_files);
  j.key("metrics").open('{').key("max_tool_names").num(s.metrics_max_tool_names).close('}');
  j.key("federation").open('{').key("separator").str(s.federation.separator);
  j.key("list_timeout_ms").num(ms(s.federation.list_timeout));
  j.key("max_items").num(s.federation.max_items).close('}');
}

void policyJson(Json& j, const policy::PolicySet& p) {
  j.key("policy").open('{');
  j.key("anonymous").str(p.requiresAuth() ? "deny" : "allow");  // as the YAML spells it
  j.key("default").str(p.defaultAllow() ? "allow" : "deny");
  j.key("visibility").str(p.visibilityFilter() ? "filter" : "all");
  {
    const policy::ToolPinning& t = p.toolPinning();
    j.key("tool_pinning").open('{');
    j.key("mode").str(t.mode == policy::ToolPinning::Mode::kBlock ? "block"
                      : t.mode == policy::ToolPinning::Mode::kLog ? "log"
                                                                  : "off");
    j.key("store").strOrNull(!t.store.empty(), t.store);
    j.key("new_tools").str(t.block_new ? "block" : "allow").close('}');
  }
  j.key("forward_credentials").boolean(p.forwardCredentials());
  j.key("api_keys").open('[');
  for (const auto& k : p.apiKeys()) {
    j.open('{').key("subject").str(k.subject).key("key").str(kRedacted);
    j.key("groups").strings(k.groups).key("scopes").strings(k.scopes).close('}');
  }
  j.close(']');
  j.key("resource_metadata");
  if (const auto* m = p.resourceMetadata()) {
    j.open('{').key("resource").str(m->resource);
    j.key("authorization_servers").strings(m->authorization_servers);
    j.key("scopes_supported").strings(m->scopes_supported);
    j.key("challenge_scopes").strings(m->challenge_scopes);
    j.key("url").str(m->url).close('}');
  } else {
    j.raw("null");
  }
  j.key("introspection");
  if (const auto* in = p.introspection()) {
    j.open('{').key("endpoint").str(in->endpoint).key("client_id").str(in->client_id);
    j.key("client_secret_file").str(in->client_secret_file).key("client_secret").str(kRedacted);
    j.key("client_auth").str(in->client_auth_post ? "post" : "basic");
    j.key("ca").str(in->ca.empty() ? "system" : in->ca);
    j.key("cache_s").num(static_cast<uint64_t>(in->cache.count()));
    j.key("timeout_ms").num(static_cast<uint64_t>(in->timeout.count())).close('}');
  } else {
    j.raw("null");
  }
  j.key("scope_implies").open('{');  // closed transitively
  for (const auto& [scope, granted] : p.scopeImplies()) {
    j.key(scope).strings(granted);
  }
  j.close('}');
  j.key("jwt");
  if (const auto* jwt = p.jwt()) {
    j.open('{');
    j.key("issuer").str(jwt->issuer);
    j.key("audiences").strings(jwt->audiences);
    j.key("groups_claim").str(jwt->groups_claim);
    if (jwt->source != nullptr) {
      j.key("jwks_url").str(jwt->jwks_url);
      j.key("jwks_refresh_s").num(static_cast<uint64_t>(jwt->jwks_refresh.count()));
      j.key("jwks_ca").str(jwt->jwks_ca);
      auto fetched = jwt->source->keys();
      j.key("keys").num(fetched != nullptr ? fetched->keys.size() : 0);
    } else {
      j.key("keys_file").str(jwt->keys_file);
      j.key("keys").num(jwt->keys.size());
    }
    j.key("key_material").str(kRedacted);
    j.close('}');
  } else {
    j.raw("null");
  }
  j.key("rules").open('[');
  for (const auto& r : p.rules()) {
    j.open('{').key("name").str(r.name);
    j.key("action").str(r.action == policy::Rule::Action::kAllow ? "allow" : "deny");
    j.key("mode").str(r.audit ? "audit" : "enforce");
    if (!r.require_scopes.empty()) {
      j.key("require_scopes").strings(r.require_scopes);
    }
    j.key("file").str(r.file).key("line").num(static_cast<uint64_t>(r.line)).close('}');
  }
  j.close(']');
  j.key("rate_limits").open('[');
  for (const auto& r : p.rateLimits()) {
    j.open('{').key("name").str(r.name);
    j.key("match");
    matchJson(j, r.match);
    j.key("key").strings(r.key);
    j.key("rate").str(r.rate_text);
    j.key("burst").num(r.burst);
    j.key("backend").str(r.backend == policy::RateLimitSpec::Backend::kRedis ? "redis" : "local");
    j.key("mode").str(r.audit ? "audit" : "enforce");
    j.key("file").str(r.file).key("line").num(static_cast<uint64_t>(r.line)).close('}');
  }
  j.close(']');
  const auto& rs = p.redis();
  j.key("redis");
  if (rs.present) {
    j.open('{').key("address").str(rs.address).key("host").str(rs.host).key("port").num(rs.port);
    j.key("on_error")
        .str(rs.on_error == policy::RedisSettings::OnError::kLocal   ? "local"
             : rs.on_error == policy::RedisSettings::OnError::kAllow ? "allow"
                                                                     : "deny");
    j.key("timeout_ms").num(static_cast<uint64_t>(rs.timeout.count())).close('}');
  } else {
    j.raw("null");
  }
  j.close('}');
}

}  // namespace

bool laterListenersDiffer(const std::vector<std::string>& bound,
                          const std::vector<std::string>& file) {
  return bound.size() != file.size() ||
         !std::equal(bound.begin() + (bound.empty() ? 0 : 1), bound.end(),
                     file.begin() + (file.empty() ? 0 : 1));
}

std::string listenerText(const settings::Listener& l) {
  return l.address.text + (l.tls ? " (tls)" : "");
}

std::string configJson(const Snapshot& snap, const Bound* bound) {
  const settings::Settings& s = *snap.settings;
  Bound as_written;
  if (bound == nullptr) {
    as_written.listen = s.listen.text;
    as_written.workers = s.workers;
    if (s.admin) {
      as_written.admin = s.admin->text;
    }
    as_written.tls = s.tls.has_value();
    bound = &as_written;
  }
  Json j;
  j.open('{');
  settingsJson(j, s, *bound, *snap.policy);
  policyJson(j, *snap.policy);
  // servers: each server's own endpoint, hosts, mcp, routes and policy (the top level's are
  // then empty).
  j.key("servers").open('[');
  for (const auto& sv : snap.servers) {
    const settings::Settings& v = *sv->settings;
    j.open('{');
    j.key("name").str(v.server_name);
    j.key("endpoint").str(v.endpoint);
    j.key("hosts").strings(v.hosts);
    mcpJson(j, v.mcp);
    routesJson(j, v, *sv->policy);
    j.key("policy_files").strings(v.policy_files);
    policyJson(j, *sv->policy);
    j.close('}');
  }
  j.close(']');
  j.close('}');
  return j.take();
}

}  // namespace gw::filters
