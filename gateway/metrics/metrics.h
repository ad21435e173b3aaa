#pragma once
// metrics/: every counter and histogram the gateway exports, their bounded label sets, and
// the registry admin/ scrapes.
// Metrics: recorded per worker without locks, merged on scrape, exposed as Prometheus text
// (prometheus-cpp's TextSerializer writes the exposition format). Beside the pipeline: proxy/
// records, admin/ scrapes; nothing here touches sockets.
//
// Recording: every worker owns a WorkerMetrics and is its only writer. A series (one label
// set) is a node whose counters are relaxed atomics, so a scrape on another thread reads them
// without stopping the worker. The worker takes its own family's mutex only to insert a label
// set it has not seen before; scrapes take it to walk the set. Label values are bounded:
// methods outside the MCP method list fold into "other", and so do names outside the MCP
// tool-name alphabet and tool names beyond the configured cap (process-wide; a new name is
// admitted only by a request the caller says may admit one, see ToolNames).
//
// Names follow the OpenTelemetry MCP semantic conventions (mcp.server.operation.duration,
// mcp.client.operation.duration, unit s, their bucket boundaries), written Prometheus-style.

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace gw::metrics {

// The semconv boundaries for MCP operation durations, in seconds.
inline constexpr std::array<double, 14> kDurationBounds{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1,
                                                        2,    5,    10,   30,  60,  120, 300};

// One label set's values: a counter (count) or a histogram (all of it; its exported _count and
// +Inf are the total of `buckets`, read in one pass, see Registry::scrape).
struct Cell {
  std::vector<std::string> labels;
  std::atomic<uint64_t> count{0};
  std::atomic<uint64_t> sum_ns{0};
  std::array<std::atomic<uint64_t>, kDurationBounds.size() + 1> buckets{};  // last: +Inf

  // Single writer: plain load + store, no locked read-modify-write.
  void add(uint64_t n) noexcept { count.store(count.load(kRelaxed) + n, kRelaxed); }
  void observe(std::chrono::nanoseconds d) noexcept;

  static constexpr std::memory_order kRelaxed = std::memory_order_relaxed;
};

// A metric's label sets within one worker.
class Family {
 public:
  explicit Family(size_t label_count) : label_count_(label_count) {}

  // The cell for these label values (label_count of them), made on first use. Worker thread.
  Cell& at(std::initializer_list<std::string_view> values);

  // Calls f(cell) for every cell, under the insert lock. Any thread.
  void forEach(const std::function<void(const Cell&)>& f) const;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };
  size_t label_count_;
  std::string scratch_;  // the lookup key, reused (worker thread only)
  mutable std::mutex insert_mu_;
  std::unordered_map<std::string, std::unique_ptr<Cell>, Hash, std::equal_to<>> cells_;
};

// Tool names admitted as label values, process-wide: at most `cap` distinct valid names, each
// admitted by the first request that may admit it. Names are never removed.
class ToolNames {
 public:
  // The label value for `name`: itself when already admitted (whatever `may_admit` says);
  // a new valid name is admitted, and is its own label, only when `may_admit` and fewer than
  // `cap` names are admitted; anything else is "other". `cap` is the current setting: after a
  // reload raises it, more names are admitted (a lowered cap keeps the names already in).
  // The proxy passes may_admit = "the request was forwarded to an upstream", so requests the
  // gateway rejected itself (401, 403, 429...) cannot use up the slots. The view stays valid
  // for the life of this object. Any thread, under a mutex: the request path asks through a
  // worker's ToolLabelCache, which comes here only for a name that worker has not labelled.
  std::string_view label(std::string_view name, size_t cap, bool may_admit);

  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept {
      return std::hash<std::string_view>{}(s);
    }
  };

 private:
  std::mutex mu_;
  std::unordered_set<std::string, Hash, std::equal_to<>> names_;  // nodes never move
};

// One worker's admitted tool names (single thread, no lock): a name it has labelled before
// costs one local lookup; only a name new to this worker asks the process-wide ToolNames.
class ToolLabelCache {
 public:
  std::string_view label(ToolNames& all, std::string_view name, size_t cap, bool may_admit);

 private:
  std::unordered_set<std::string_view, ToolNames::Hash, std::equal_to<>> known_;
};

// "tools/call" → itself; a method outside MCP's method list (mcp::knownMethod: every
// revision from 2024-11-05 to 2026-07-28) → "other"; absent (unreadable traffic) → "".
std::string_view methodLabel(std::string_view method) noexcept;
// MCP tool names: 1-128 of [A-Za-z0-9_.-] (anything else folds into "other").
bool validToolName(std::string_view name) noexcept;

// Everything one worker records.
struct WorkerMetrics {
  // Every request metric's first label is `server` (issue #27: the server the request ran
  // on; "default" without `servers:`, "" for a request no server took).
  // server, route, mcp_method_name, gen_ai_tool_name, http_response_status_code, error_type
  Family server_ops{6};
  // server, upstream, mcp_method_name, gen_ai_tool_name, error_type
  Family client_ops{5};
  // server, reason
  Family rejections{2};
  Family upstream_retries{2};  // upstream, reason
  // server, route, upstream, mcp_method_name, outcome: each upstream's answer to a federated
  // list, discover or notification fan-out ("ok" or why it was left out)
  Family federation_fetches{5};
  // server, route: names two upstreams of a federated route list (hidden from all but the
  // first)
  Family federation_conflicts{2};
  // server, upstream, reason (federation::itemFaultName): list items dropped from an
  // upstream's answer because no client could take them (issue #24), on federated routes and
  // filtered lists
  Family federation_items_dropped{3};
  // server, reason (answer_too_large | answer_buffer_full | list_unreadable): list answers the
  // gateway had to read whole and refused instead of relaying them unread
  Family list_answers_refused{2};
  // server, rule, decision (allow | deny), mode (enforce | audit): each rule that decided a
  // request, each audit-mode rule that matched, each rate limit that applied (issue #16)
  Family policy_decisions{4};
  // server, upstream, change (changed | new): tool definitions recorded as awaiting approval
  Family tool_pin_changes{3};
  Cell bytes_in;   // request bytes read from clients (heads and bodies)
  Cell bytes_out;  // response bytes written to clients
  Cell connections_accepted;
  // reason: max_connections | per_client_limit (closed at accept)
  Family connections_refused{1};
  Cell log_lines_suppressed;  // malformed-request log lines dropped by the per-worker limit
  // session (full | resumed): TLS handshakes completed on the client port
  Family tls_handshakes{1};
  // reason (event::tlsFailureName): TLS handshakes on the client port that failed
  Family tls_handshake_failures{1};
  std::atomic<int64_t> sse_streams{0};  // event streams being relayed now
  ToolLabelCache tool_labels;           // the worker thread's own (not read by a scrape)
};

// Process-wide values the scrape reads besides the workers' (gauges kept elsewhere).
struct Gauges {
  int64_t connections = 0;
  int64_t exchanges = 0;
  bool draining = false;
};

class Registry {
 public:
  // A new worker's metrics; the reference stays valid for the registry's life.
  WorkerMetrics& addWorker();
  ToolNames& toolNames() noexcept { return tools_; }

  void reloaded(bool ok) noexcept { (ok ? reload_ok_ : reload_failed_).fetch_add(1); }
  uint64_t reloads(bool ok) const noexcept { return (ok ? reload_ok_ : reload_failed_).load(); }
  // An admin request refused with 401 (admin_auth): no Bearer token, or a wrong one.
  void adminAuthFailed(bool invalid) noexcept {
    (invalid ? admin_auth_invalid_ : admin_auth_missing_).fetch_add(1);
  }
  uint64_t adminAuthFailures(bool invalid) const noexcept {
    return (invalid ? admin_auth_invalid_ : admin_auth_missing_).load();
  }

  // One JWKS fetch (identity.jwt.jwks_url) and how it ended: mcp_gateway_jwks_fetches_total.
  enum class JwksFetch : uint8_t {
    kOk,
    kHttpError,     // a status other than 200, or a malformed response
    kTlsError,      // the handshake failed (certificate, name, protocol)
    kParseError,    // the body is not a usable JWKS (or is too large)
    kTimeout,       // no complete answer in time
    kConnectError,  // name resolution or TCP connect failed
    kCount
  };
  static const char* jwksFetchLabel(JwksFetch r) noexcept;
  void jwksFetched(JwksFetch r) noexcept { jwks_fetches_[static_cast<size_t>(r)].fetch_add(1); }
  uint64_t jwksFetches(JwksFetch r) const noexcept {
    return jwks_fetches_[static_cast<size_t>(r)].load();
  }
  // The keys of the last JWKS fetched successfully (mcp_gateway_jwks_keys).
  void setJwksKeys(int64_t n) noexcept { jwks_keys_.store(n); }
  // When the served TLS certificate expires, seconds since the epoch
  // (mcp_gateway_tls_certificate_expiry_timestamp_seconds; 0: no TLS, not exported).
  void setTlsCertificateExpiry(int64_t unix) noexcept { tls_cert_expiry_.store(unix); }

  // One call to an OAuth endpoint (server/token_fetcher.h): `kind` client_credentials,
  // token_exchange or introspection, `target` the upstream's name (or "introspection"),
  // `result` ok, refused or failed (mcp_gateway_token_requests_total and
  // mcp_gateway_token_request_duration_seconds). The fetcher's thread only.
  void tokenRequest(std::string_view kind, std::string_view target, std::string_view result,
                    std::chrono::nanoseconds took);
  // Entries of the shared credential store by kind (mcp_gateway_token_cache_entries), read
  // at scrape.
  void setTokenCacheSizes(std::function<std::vector<std::pair<std::string, int64_t>>()> f);

  // Each upstream endpoint's health at scrape (upstream/health.h): usable now (1/0), its
  // ejections so far, and its health checks' transitions down and up
  // (mcp_gateway_upstream_endpoint_healthy, mcp_gateway_upstream_ejections_total,
  // mcp_gateway_upstream_health_transitions_total{to="down"|"up"}).
  struct EndpointHealthSample {
    std::string upstream;
    std::string endpoint;
    bool healthy = true;
    uint64_t ejections = 0;
    uint64_t went_down = 0;
    uint64_t came_up = 0;
  };
  void setEndpointHealth(std::function<std::vector<EndpointHealthSample>()> f);

  // tracing (server/trace_exporter.h): spans dropped because the export queue was full
  // (mcp_gateway_trace_spans_dropped_total), export requests by result and the spans they
  // carried (mcp_gateway_trace_exports_total{result}, mcp_gateway_trace_spans_exported_total).
  // Exported only when tracing is configured at start (setTracing).
  enum class TraceExport : uint8_t { kOk, kHttpError, kTimeout, kConnectError, kCount };
  static const char* traceExportLabel(TraceExport r) noexcept;
  void setTracing(bool on) noexcept { tracing_.store(on); }
  void traceSpansDropped(uint64_t n) noexcept { trace_dropped_.fetch_add(n); }
  void traceExported(TraceExport r, uint64_t spans) noexcept {
    trace_exports_[static_cast<size_t>(r)].fetch_add(1);
    if (r == TraceExport::kOk) {
      trace_spans_exported_.fetch_add(spans);
    }
  }
  uint64_t traceSpansDroppedTotal() const noexcept { return trace_dropped_.load(); }
  uint64_t traceExports(TraceExport r) const noexcept {
    return trace_exports_[static_cast<size_t>(r)].load();
  }

  // Prometheus text exposition (version 0.0.4) of everything, workers merged.
  std::string scrape(const Gauges& g) const;

 private:
  mutable std::mutex workers_mu_;
  std::vector<std::unique_ptr<WorkerMetrics>> workers_;
  ToolNames tools_;
  std::atomic<uint64_t> reload_ok_{0};
  std::atomic<uint64_t> reload_failed_{0};
  std::atomic<uint64_t> admin_auth_missing_{0};
  std::atomic<uint64_t> admin_auth_invalid_{0};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(JwksFetch::kCount)> jwks_fetches_{};
  std::atomic<int64_t> jwks_keys_{0};
  std::atomic<int64_t> tls_cert_expiry_{0};
  std::atomic<bool> tracing_{false};
  std::atomic<uint64_t> trace_dropped_{0};
  std::atomic<uint64_t> trace_spans_exported_{0};
  std::array<std::atomic<uint64_t>, static_cast<size_t>(TraceExport::kCount)> trace_exports_{};
  Family token_requests_{3};   // kind, target, result
  Family token_durations_{2};  // kind, target
  mutable std::mutex providers_mu_;
  std::function<std::vector<std::pair<std::string, int64_t>>()> token_cache_sizes_;
  std::function<std::vector<EndpointHealthSample>()> endpoint_health_;  // both under providers_mu_
};

}  // namespace gw::metrics
