#pragma once
// settings/: gateway.yaml — its schema (every key with its default and checks), the loader
// that reports every problem with file:line:column, and the immutable Settings it produces.
// The immutable settings snapshot: gateway.yaml parsed, validated whole and compiled once.
// Workers hold a std::shared_ptr<const Settings>; each request keeps the snapshot it started
// with. Nothing on the request path re-reads YAML.

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/config/values.h"
#include "gateway/core/cidr.h"

struct ssl_ctx_st;  // OpenSSL's SSL_CTX (gateway/tls/tls.h)
namespace gw::tls {
class ServerContext;
class SigningKey;
}  // namespace gw::tls

namespace gw::settings {

// The value grammars, diagnostics and file reader live in config/ (shared with policy/).
using config::Address;
using config::Diagnostic;
using config::Duration;
using config::hermeticLoad;
using config::parseAddress;
using config::parseDuration;
using config::parseSize;
using config::readWholeFile;
using config::setHermeticLoadForTesting;

struct Limits {
  uint32_t max_connections = 4096;
  uint64_t max_request_line = 8 * 1024;
  uint64_t max_header_bytes = 32 * 1024;
  uint64_t max_header_line = 8 * 1024;  // one field line (name: value), without CRLF → 431
  uint32_t max_headers = 100;
  uint64_t max_body_bytes = 4 * 1024 * 1024;
  Duration header_timeout = std::chrono::seconds(10);
  Duration body_timeout = std::chrono::seconds(30);
  Duration keepalive_timeout = std::chrono::seconds(60);
  Duration send_timeout = std::chrono::seconds(60);  // client takes no byte of held output; 0 = off
  bool request_buffering = true;  // read the whole body before contacting the upstream
  uint64_t max_buffered_body_bytes = 256ull * 1024 * 1024;  // across all connections → 503
  // Upstream answers read whole (filtered or observed lists, fan-out pages), all connections
  // and fan-outs together; beyond it such an answer is refused (503, or the upstream left out
  // of a fan-out).
  uint64_t max_buffered_answer_bytes = 256ull * 1024 * 1024;
  uint32_t max_connections_per_client = 256;  // per peer address; 0 = no limit
};

enum class LegacyMode : uint8_t { kReject, kPassthrough };

struct Mcp {
  std::vector<std::string> protocol_versions{"2026-07-28"};
  LegacyMode legacy = LegacyMode::kPassthrough;  // issue #13: legacy bodies are inspected
  bool verify_body = false;
  std::vector<std::string> allowed_origins;  // exact match on the Origin value
  std::vector<std::string> allowed_hosts;    // host[:port] globs for Host; empty = any → 403
  uint32_t max_param_headers = 32;           // Mcp-Param-* fields per request → 431 beyond
  Duration sse_keepalive = std::chrono::seconds(15);  // 0 = off
};

enum class Balance : uint8_t { kRoundRobin, kFirstHealthy };

// upstreams[].host_header: the Host the upstream receives.
enum class HostHeader : uint8_t {
  kEndpoint,  // the endpoint's host:port as written in config (nginx's $proxy_host)
  kClient,    // the client's Host as sent
  kLiteral,   // Upstream::host_literal
};

// upstreams[].era: which protocol era the upstream speaks, for 2026-07-28 clients on a plain
// route. kAuto: probed with server/discover at first use (and after failures); a server that
// does not answer it is bridged as kLegacy. kLegacy: the gateway is a 2025 client of it
// (initialize, one Mcp-Session-Id per endpoint and worker; proxy/legacy_sessions.h).
enum class UpstreamEra : uint8_t { kAuto, kModern, kLegacy };

// upstreams[].tls: HTTPS to this upstream. The OpenSSL client context is built at load and
// shared by every worker holding this snapshot.
struct UpstreamTls {
  std::string ca;           // absolute path; "" = the system store
  std::string server_name;  // SNI and the name verified; "" = each endpoint's host
  std::string cert;         // client certificate chain (with key), absolute; "" = none
  std::string key;
  std::shared_ptr<ssl_ctx_st> ctx;
};

// upstreams[].auth: how the gateway authenticates itself (and the caller) to this upstream.
// Every type but kForward replaces any Authorization the request carries.
enum class UpstreamAuthType : uint8_t {
  kForward,            // the caller's own Authorization goes through (forward_credentials)
  kClientCredentials,  // one token of the gateway's own (RFC 6749 §4.4), refreshed
  kTokenExchange,      // the caller's token exchanged per caller (RFC 8693)
  kSignedIdentity,     // a short-lived JWT the gateway signs per caller
};
const char* authTypeName(UpstreamAuthType t) noexcept;

struct UpstreamAuth {
  UpstreamAuthType type = UpstreamAuthType::kForward;
  // client_credentials, token_exchange: the token endpoint and the gateway's client.
  std::string token_endpoint;  // an http(s) URL
  std::string client_id;
  std::string client_secret_file;   // absolute; read at every load
  std::string client_secret;        // a secret: never logged or shown
  bool client_auth_post = false;    // client_secret_post (default client_secret_basic)
  std::string audience;             // RFC 8693 `audience`; signed_identity: the JWT's `aud`
  std::string resource;             // RFC 8707 `resource` ("" = none)
  std::vector<std::string> scopes;  // `scope` asked for
  std::string ca;                   // absolute; "" = the system store
  Duration timeout = std::chrono::seconds(5);  // per token-endpoint call
  // signed_identity
  std::string issuer;
  std::string key_file;  // absolute
  std::shared_ptr<const tls::SigningKey> key;
  Duration ttl = std::chrono::seconds(60);
  // What a cached token of this upstream depends on (its type, endpoint, client, audience,
  // resource, scopes), length-prefixed, made at load: credentialKey's input.
  std::string key_prefix;
  std::string cc_key;  // client_credentials: the store's key of the gateway's token
};

// The shared store's key (policy/credential_store.h) of a token for `a`: the SHA-256 (hex) of
// a.key_prefix and, for token_exchange, the SHA-256 of the caller's token (`token_digest`, 32
// bytes; empty for client_credentials).
std::string credentialKey(const UpstreamAuth& a, std::string_view token_digest);

// upstreams[].health_check: active checks of each endpoint (absent: none).
struct HealthCheck {
  enum class Probe : uint8_t { kMcp, kHttp, kTcp };
  Probe probe = Probe::kMcp;
  std::string path = "/healthz";  // kHttp: GET this path, healthy on 2xx
  Duration interval = std::chrono::seconds(10);
  Duration timeout = std::chrono::seconds(2);
  uint32_t unhealthy_threshold = 3;  // consecutive failures to mark it down
  uint32_t healthy_threshold = 2;    // consecutive successes to bring it back
};

// upstreams[].outlier_detection: passive ejection from real traffic (absent: these defaults).
struct OutlierDetection {
  uint32_t consecutive_failures = 5;  // connect failures, resets, timeouts, 502/503/504
  Duration ejection_time = std::chrono::seconds(30);  // doubles per repeat, up to 5m
  uint32_t max_ejection_percent = 50;                 // of the upstream's endpoints
};

// upstreams[].circuit_breaker (absent: no limits).
struct CircuitBreaker {
  uint32_t max_requests = 1000;  // requests in flight to this upstream, all workers
  uint32_t max_pending = 100;    // requests waiting for a new connection
};

// upstreams[].retry (absent: no retries).
struct Retry {
  uint32_t attempts = 1;  // total tries
  bool on_connect_failure = true;
  bool on_reset = true;
  bool on_timeout = true;
  std::vector<int> on_status = {502, 503, 504};
  std::vector<std::string> methods = {
      "tools/list",     "prompts/list", "resources/list",  "resources/templates/list",
      "resources/read", "prompts/get",  "server/discover", "ping"};
  enum class Tools : uint8_t { kNone, kReadOnly, kIdempotent };
  Tools tools = Tools::kNone;
  uint32_t budget_percent = 20;  // retries at most this share of requests (min 3/s)
  Duration backoff = std::chrono::milliseconds(25);
};

struct Upstream {
  std::string name;
  std::vector<Address> endpoints;
  std::string path = "/mcp";  // request path sent upstream
  Duration connect_timeout = std::chrono::seconds(5);
  Duration response_timeout = std::chrono::seconds(60);    // until the response head
  Duration stream_idle_timeout = std::chrono::minutes(5);  // between response bytes
  Duration max_duration = std::chrono::minutes(30);        // whole exchange
  Balance balance = Balance::kRoundRobin;
  uint32_t max_idle_connections = 64;  // per worker, per endpoint
  HostHeader host_header = HostHeader::kEndpoint;
  UpstreamEra era = UpstreamEra::kAuto;
  std::string host_literal;  // kLiteral: a validated host[:port]
  // Key of the endpoint tokens in wrapped Mcp-Session-Ids ("": a built-in key, so the token
  // depends only on the upstream name and the endpoint address).
  std::string session_secret;
  std::vector<std::string> session_tokens;  // one per endpoint (mcp::sessionToken), at load
  std::optional<UpstreamTls> tls;           // present: HTTPS
  // upstreams[].headers: set on every request to this upstream (a request field of the same
  // name, in any case, is not forwarded). Names as written (HTTP tokens, unique ignoring case,
  // no hop-by-hop, framing or Mcp-* name); values with ${VAR} expanded from the environment at
  // load, free of control characters but HTAB. Values are secrets: never logged or shown.
  std::vector<std::pair<std::string, std::string>> headers;
  std::optional<UpstreamAuth> auth;  // upstreams[].auth (absent: as before)
  std::optional<HealthCheck> health_check;
  OutlierDetection outlier_detection;
  std::optional<CircuitBreaker> circuit_breaker;
  std::optional<Retry> retry;
  // The upstream takes a credential the gateway makes (an auth type other than forward).
  bool madeCredential() const noexcept {
    return auth.has_value() && auth->type != UpstreamAuthType::kForward;
  }
};

// A route's match; every present key must match (AND). Values are globs where `*` matches
// any run of characters (including none); everything else is literal.
struct RouteMatch {
  std::optional<std::string> method;                         // glob on Mcp-Method
  std::optional<std::string> name;                           // glob on decoded Mcp-Name
  std::vector<std::pair<std::string, std::string>> params;   // Param name → glob (name
                                                             // compared case-insensitively)
  std::vector<std::pair<std::string, std::string>> headers;  // header name → glob
};

// routes[].names on a federated route: how tool and prompt names are shown to clients.
enum class FederationNames : uint8_t {
  kKeep,    // as the servers list them; a name two list belongs to the first in `upstreams`
  kPrefix,  // "<upstream><separator><name>"
};

struct Route {
  std::string name;
  bool has_match = false;  // false: the default route (matches everything)
  RouteMatch match;
  std::string upstream;       // `upstream:` (federated: the first of `upstreams`)
  size_t upstream_index = 0;  // index into Settings::upstreams (federated: the first)
  // Federation (`upstreams:` instead of `upstream:`): every upstream in route order, and
  // their indexes into Settings::upstreams. Empty on a plain route.
  std::vector<std::string> upstreams;
  std::vector<size_t> upstream_indexes;
  FederationNames names = FederationNames::kKeep;
  bool federated() const noexcept { return !upstream_indexes.empty(); }
  // A federated route whose tools and prompts are listed as "<upstream><separator><name>".
  bool prefixesNames() const noexcept { return federated() && names == FederationNames::kPrefix; }
  bool legacy = false;               // takes legacy (untrusted-version) traffic
  std::optional<bool> verify_body;   // overrides mcp.verify_body for this route
  bool forward_credentials = false;  // send Authorization upstream (dropped by default)
};

// The top-level `federation:` block (used by federated routes).
struct Federation {
  std::string separator = "__";
  Duration list_timeout = std::chrono::seconds(5);  // per-upstream wait for a list answer
  uint64_t max_items = 10000;                       // per upstream and list method
};

// admin_auth: the Bearer token every admin path but /healthz and /readyz asks for.
struct AdminAuth {
  std::string token_file;  // absolute; read at every load
  // The file's content without trailing whitespace: RFC 6750 b64token characters, at least
  // kMinAdminTokenBytes. A secret: never logged or shown (/config shows token_file only).
  std::string token;
  std::array<unsigned char, 32> token_sha256{};  // SHA-256 of `token`, compared per request
};
inline constexpr size_t kMinAdminTokenBytes = 16;
inline constexpr size_t kMaxAdminTokenBytes = 4096;

// Whether `ip` (numeric, as Address::ip) is a loopback address: 127.0.0.0/8, ::1 or
// ::ffff:127.0.0.0/104. An admin listener anywhere else needs admin_auth.
bool isLoopback(std::string_view ip) noexcept;
// `tls:` (listen_tls.cc): the client port serves HTTPS only.
struct ListenTls {
  std::string cert;  // absolute paths, resolved from the config file
  std::string key;
  std::string client_ca;  // "": no client certificates
  std::string min_version = "1.2";
  // tls.certificates: more certificates, chosen by SNI (exact or "*." host names, lowercase);
  // `cert`/`key` above is the default. A request whose Host another of them covers gets 421.
  struct Certificate {
    std::vector<std::string> hosts;
    std::string cert;
    std::string key;
  };
  std::vector<Certificate> certificates;
  // Built at load from the files above (a bad pair is a load error); held by the listener
  // until a reload brings the next one.
  std::shared_ptr<const tls::ServerContext> context;
};

// `listeners:` (issue #27): one port the gateway serves, instead of `listen` + `tls`.
struct Listener {
  Address address;
  std::optional<ListenTls> tls;      // present: HTTPS only
  std::vector<std::string> servers;  // the servers it serves, by name; empty: all
};
inline constexpr size_t kMaxListeners = 64;

struct AccessLog {
  std::string path = "-";  // "-" = stdout, "off" = disabled, else a file path
};

// tracing: (issue #31) OpenTelemetry spans exported over OTLP/HTTP.
struct Tracing {
  std::string otlp_endpoint;  // an http(s) URL, e.g. http://127.0.0.1:4318/v1/traces
  // Roots (requests without a valid traceparent) sampled at this ratio; a parent's sampled
  // flag decides for the others (parent-based).
  double sample_ratio = 1.0;
  std::string service_name = "mcp-gateway";
  std::vector<std::pair<std::string, std::string>> headers;  // sent with every export
  std::string ca;             // absolute; the collector's CA (https); empty: system store
  uint32_t max_queue = 4096;  // spans waiting for export; beyond: dropped and counted
  uint32_t batch = 512;       // spans per export request
  Duration flush_interval = std::chrono::seconds(1);
};

struct Settings {
  Address listen{"127.0.0.1", 8080, "127.0.0.1:8080", "127.0.0.1"};
  std::string endpoint = "/mcp";
  // servers: (issue #27): several MCP servers on one gateway. Each is a view of these
  // settings — the top level with the server's endpoint, hosts, routes, policies and `mcp`
  // overrides (upstreams, federation, limits and the rest are shared) — held in `servers`.
  // Without `servers:` the settings are the one server, named "default", and `servers` is
  // empty; with it, the top level has no routes or policies of its own.
  std::string server_name = "default";
  bool named_server = false;  // a view from `servers:` (its name keys its rate-limit buckets)
  // The Host names the server answers (lowercase; exact, or "*.example.com" for any name
  // under example.com); empty: any host mcp.allowed_hosts lets in.
  std::vector<std::string> hosts;
  std::vector<std::shared_ptr<const Settings>> servers;
  // Every port the gateway serves: `listeners:`, or the one `listen` (with `tls`). `listen`
  // and `tls` are always the first one's.
  std::vector<Listener> listeners;
  // The listeners (bit i: listeners[i]) this server is served on; all without restriction.
  uint64_t listener_mask = ~uint64_t{0};
  uint32_t workers = 0;  // 0 = one per core (resolved at start)
  std::optional<Address> admin;
  std::optional<AdminAuth> admin_auth;  // none: the admin listener must be on loopback
  std::optional<ListenTls> tls;         // present: `listen` speaks HTTPS only
  Limits limits;
  Mcp mcp;
  std::vector<Upstream> upstreams;
  std::vector<Route> routes;
  Federation federation;
  std::vector<std::string> policy_files;  // absolute paths (resolved from the config file)
  bool any_upstream_auth = false;         // some upstream makes its credential (upstreams[].auth)
  // readiness: what /readyz requires of the upstreams.
  enum class Readiness : uint8_t { kAlways, kAnyUpstream, kAllUpstreams };
  Readiness readiness = Readiness::kAnyUpstream;
  AccessLog access_log;
  std::optional<Tracing> tracing;  // absent: no tracing, no cost
  std::string log_level = "info";  // trace | debug | info | warn | error | off
  Duration drain_timeout = std::chrono::seconds(30);
  bool rate_limit_headers = false;          // RateLimit-Policy / RateLimit on admitted answers too
  bool watch_files = true;                  // reload when the config or a policy file changes
  uint32_t metrics_max_tool_names = 100;    // distinct gen_ai_tool_name values; then "other"
  std::vector<core::Cidr> trusted_proxies;  // peers whose X-Forwarded-* / Forwarded are kept
  std::vector<std::string> trusted_proxies_text;  // as written (for /config)
  std::string source_file;                        // the config file this came from (absolute)
  // What loads but is probably a mistake, with file:line:column: an upstream no route uses.
  // Messages carry no "warning:" prefix (who prints them adds one).
  // Never a reason to refuse the file: `check` prints them and still exits 0, `run` logs them
  // as warnings at start and at every reload.
  std::vector<Diagnostic> warnings;

  // Index of the upstream with this name, or -1.
  int upstreamIndex(std::string_view name) const noexcept;
};

struct LoadResult {
  std::shared_ptr<const Settings> settings;  // null when errors is non-empty
  std::vector<Diagnostic> errors;            // every problem found, in file order
};

// Parses and validates a config file (and the files it names). Never throws.
LoadResult loadFile(const std::string& path);
// Same for text held in memory; `file` is used in diagnostics and to resolve relative paths.
LoadResult loadString(std::string_view yaml, const std::string& file);

}  // namespace gw::settings
