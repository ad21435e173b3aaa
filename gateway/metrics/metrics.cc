// Per-worker recording and the merged scrape (see metrics.h).

#include "gateway/metrics/metrics.h"

#include <prometheus/metric_family.h>
#include <prometheus/text_serializer.h>

#include <algorithm>
#include <limits>
#include <map>

#include "gateway/mcp/methods.h"

namespace gw::metrics {

namespace {

// The fold-in label; compared by address (a tool may be named "other" too).
constexpr std::string_view kOther = "other";

constexpr char kSep = '\0';

struct Merged {
  const std::vector<std::string>* labels = nullptr;
  uint64_t count = 0;
  uint64_t sum_ns = 0;
  std::array<uint64_t, kDurationBounds.size() + 1> buckets{};
};
using MergedMap = std::map<std::string, Merged>;

std::string keyOf(const std::vector<std::string>& labels) {
  std::string k;
  for (const auto& l : labels) {
    k += l;
    k += kSep;
  }
  return k;
}

void merge(const Cell& c, MergedMap& into) {
  Merged& m = into[keyOf(c.labels)];
  m.labels = &c.labels;
  m.count += c.count.load(Cell::kRelaxed);
  m.sum_ns += c.sum_ns.load(Cell::kRelaxed);
  for (size_t i = 0; i < m.buckets.size(); ++i) {
    m.buckets[i] += c.buckets[i].load(Cell::kRelaxed);
  }
}

prometheus::MetricFamily family(std::string name, std::string help, prometheus::MetricType t) {
  prometheus::MetricFamily f;
  f.name = std::move(name);
  f.help = std::move(help);
  f.type = t;
  return f;
}

std::vector<prometheus::ClientMetric::Label> labelsOf(const std::vector<const char*>& names,
                                                      const std::vector<std::string>& values) {
  std::vector<prometheus::ClientMetric::Label> out;
  for (size_t i = 0; i < names.size() && i < values.size(); ++i) {
    out.push_back({names[i], values[i]});
  }
  return out;
}

prometheus::MetricFamily histogramFamily(std::string name, std::string help,
                                         const std::vector<const char*>& label_names,
                                         const MergedMap& merged) {
  auto f = family(std::move(name), std::move(help), prometheus::MetricType::Histogram);
  for (const auto& [key, m] : merged) {
    prometheus::ClientMetric cm;
    cm.label = labelsOf(label_names, *m.labels);
    // Everything exported comes from the one read of each bucket: the cumulative buckets
    // cannot decrease and +Inf = _count = their total, even while a worker is between its
    // bucket and count stores (m.count is not used here). _sum may lag or lead by the
    // observations in flight.
    uint64_t cumulative = 0;
    for (size_t i = 0; i < kDurationBounds.size(); ++i) {
      cumulative += m.buckets[i];
      cm.histogram.bucket.push_back({cumulative, kDurationBounds[i]});
    }
    cumulative += m.buckets[kDurationBounds.size()];
    cm.histogram.bucket.push_back({cumulative, std::numeric_limits<double>::infinity()});
    cm.histogram.sample_count = cumulative;
    cm.histogram.sample_sum = static_cast<double>(m.sum_ns) / 1e9;
    f.metric.push_back(std::move(cm));
  }
  return f;
}

prometheus::MetricFamily counterFamily(std::string name, std::string help,
                                       const std::vector<const char*>& label_names,
                                       const MergedMap& merged) {
  auto f = family(std::move(name), std::move(help), prometheus::MetricType::Counter);
  for (const auto& [key, m] : merged) {
    prometheus::ClientMetric cm;
    cm.label = labelsOf(label_names, *m.labels);
    cm.counter.value = static_cast<double>(m.count);
    f.metric.push_back(std::move(cm));
  }
  return f;
}

prometheus::MetricFamily scalar(std::string name, std::string help, prometheus::MetricType t,
                                double v) {
  auto f = family(std::move(name), std::move(help), t);
  prometheus::ClientMetric cm;
  if (t == prometheus::MetricType::Counter) {
    cm.counter.value = v;
  } else {
    cm.gauge.value = v;
  }
  f.metric.push_back(std::move(cm));
  return f;
}

}  // namespace

void Cell::observe(std::chrono::nanoseconds d) noexcept {
  double seconds = std::chrono::duration<double>(d).count();
  size_t i = static_cast<size_t>(
      std::lower_bound(kDurationBounds.begin(), kDurationBounds.end(), seconds) -
      kDurationBounds.begin());
  buckets[i].store(buckets[i].load(kRelaxed) + 1, kRelaxed);
  uint64_t ns = d.count() > 0 ? static_cast<uint64_t>(d.count()) : 0;
  sum_ns.store(sum_ns.load(kRelaxed) + ns, kRelaxed);
  add(1);
}

Cell& Family::at(std::initializer_list<std::string_view> values) {
  scratch_.clear();
  for (std::string_view v : values) {
    scratch_ += v;
    scratch_ += kSep;
  }
  if (auto it = cells_.find(std::string_view(scratch_)); it != cells_.end()) {
    return *it->second;
  }
  auto cell = std::make_unique<Cell>();
  for (std::string_view v : values) {
    cell->labels.emplace_back(v);
  }
  cell->labels.resize(label_count_);
  std::lock_guard lock(insert_mu_);
  return *cells_.emplace(scratch_, std::move(cell)).first->second;
}

void Family::forEach(const std::function<void(const Cell&)>& f) const {
  std::lock_guard lock(insert_mu_);
  for (const auto& [key, cell] : cells_) {
    f(*cell);
  }
}

std::string_view ToolNames::label(std::string_view name, size_t cap, bool may_admit) {
  if (!validToolName(name)) {
    return kOther;
  }
  std::lock_guard lock(mu_);
  if (auto it = names_.find(name); it != names_.end()) {
    return *it;
  }
  if (!may_admit || names_.size() >= cap) {
    return kOther;
  }
  return *names_.emplace(name).first;
}

std::string_view ToolLabelCache::label(ToolNames& all, std::string_view name, size_t cap,
                                       bool may_admit) {
  if (auto it = known_.find(name); it != known_.end()) {
    return *it;
  }
  std::string_view l = all.label(name, cap, may_admit);
  if (l.data() != kOther.data()) {
    known_.insert(l);  // an admitted name stays admitted: its view lives as long as `all`
  }
  return l;
}

std::string_view methodLabel(std::string_view method) noexcept {
  if (method.empty()) {
    return "";
  }
  const std::string_view known = mcp::knownMethod(method);
  return known.empty() ? std::string_view("other") : known;
}

bool validToolName(std::string_view name) noexcept {
  if (name.empty() || name.size() > 128) {
    return false;
  }
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-' || c == '.';
  });
}

WorkerMetrics& Registry::addWorker() {
  std::lock_guard lock(workers_mu_);
  workers_.push_back(std::make_unique<WorkerMetrics>());
  return *workers_.back();
}

void Registry::tokenRequest(std::string_view kind, std::string_view target, std::string_view result,
                            std::chrono::nanoseconds took) {
  token_requests_.at({kind, target, result}).add(1);
  token_durations_.at({kind, target}).observe(took);
}

void Registry::setTokenCacheSizes(std::function<std::vector<std::pair<std::string, int64_t>>()> f) {
  std::lock_guard lock(providers_mu_);
  token_cache_sizes_ = std::move(f);
}

void Registry::setEndpointHealth(std::function<std::vector<EndpointHealthSample>()> f) {
  std::lock_guard lock(providers_mu_);
  endpoint_health_ = std::move(f);
}

const char* Registry::traceExportLabel(TraceExport r) noexcept {
  switch (r) {
    case TraceExport::kOk:
      return "ok";
    case TraceExport::kHttpError:
      return "http_error";
    case TraceExport::kTimeout:
      return "timeout";
    case TraceExport::kConnectError:
      return "connect_error";
    case TraceExport::kCount:
      break;
  }
  return "other";
}

const char* Registry::jwksFetchLabel(JwksFetch r) noexcept {
  switch (r) {
    case JwksFetch::kOk:
      return "ok";
    case JwksFetch::kHttpError:
      return "http_error";
    case JwksFetch::kTlsError:
      return "tls_error";
    case JwksFetch::kParseError:
      return "parse_error";
    case JwksFetch::kTimeout:
      return "timeout";
    case JwksFetch::kConnectError:
    case JwksFetch::kCount:
      break;
  }
  return "connect_error";
}

std::string Registry::scrape(const Gauges& g) const {
  using prometheus::MetricType;
  MergedMap server;
  MergedMap client;
  MergedMap rejections;
  MergedMap retries;
  MergedMap fed_fetches;
  MergedMap fed_conflicts;
  MergedMap fed_dropped;
  MergedMap lists_refused;
  MergedMap decisions;
  MergedMap pin_changes;
  MergedMap refused;
  MergedMap tls_ok;
  MergedMap tls_failed;
  Merged suppressed;
  Merged in;
  Merged out;
  Merged accepted;
  int64_t sse = 0;
  {
    std::lock_guard lock(workers_mu_);
    for (const auto& w : workers_) {
      w->server_ops.forEach([&](const Cell& c) { merge(c, server); });
      w->client_ops.forEach([&](const Cell& c) { merge(c, client); });
      w->rejections.forEach([&](const Cell& c) { merge(c, rejections); });
      w->upstream_retries.forEach([&](const Cell& c) { merge(c, retries); });
      w->federation_fetches.forEach([&](const Cell& c) { merge(c, fed_fetches); });
      w->federation_conflicts.forEach([&](const Cell& c) { merge(c, fed_conflicts); });
      w->federation_items_dropped.forEach([&](const Cell& c) { merge(c, fed_dropped); });
      w->list_answers_refused.forEach([&](const Cell& c) { merge(c, lists_refused); });
      w->policy_decisions.forEach([&](const Cell& c) { merge(c, decisions); });
      w->tool_pin_changes.forEach([&](const Cell& c) { merge(c, pin_changes); });
      w->connections_refused.forEach([&](const Cell& c) { merge(c, refused); });
      w->tls_handshakes.forEach([&](const Cell& c) { merge(c, tls_ok); });
      w->tls_handshake_failures.forEach([&](const Cell& c) { merge(c, tls_failed); });
      suppressed.count += w->log_lines_suppressed.count.load(Cell::kRelaxed);
      in.count += w->bytes_in.count.load(Cell::kRelaxed);
      out.count += w->bytes_out.count.load(Cell::kRelaxed);
      accepted.count += w->connections_accepted.count.load(Cell::kRelaxed);
      sse += w->sse_streams.load(Cell::kRelaxed);
    }
    // The merged maps point to the cells' label vectors: cells are never removed and their
    // labels never change after insertion.
  }
  std::vector<prometheus::MetricFamily> fams;
  fams.push_back(
      histogramFamily("mcp_server_operation_duration_seconds",
                      "MCP request or notification duration as the gateway's clients see it",
                      {"server", "route", "mcp_method_name", "gen_ai_tool_name",
                       "http_response_status_code", "error_type"},
                      server));
  fams.push_back(histogramFamily(
      "mcp_client_operation_duration_seconds",
      "Duration of one upstream attempt, request sent to answer done",
      {"server", "upstream", "mcp_method_name", "gen_ai_tool_name", "error_type"}, client));
  fams.push_back(counterFamily("mcp_gateway_rejections_total",
                               "Requests the gateway answered itself or could not complete",
                               {"server", "reason"}, rejections));
  fams.push_back(counterFamily(
      "mcp_gateway_federation_list_fetches_total",
      "Answers of each upstream of a federated route to a list, discover or notification "
      "fan-out, by outcome (ok, timeout, connect_failed, rpc_error, ...)",
      {"server", "route", "upstream", "mcp_method_name", "outcome"}, fed_fetches));
  fams.push_back(counterFamily("mcp_gateway_federation_conflicts",
                               "Names listed by two upstreams of a federated route (each counted "
                               "once; the first upstream in 'upstreams' keeps it)",
                               {"server", "route"}, fed_conflicts));
  fams.push_back(counterFamily("mcp_gateway_federation_items_dropped_total",
                               "List items dropped from an upstream's answer because no client "
                               "could take them (no string name, control characters, a "
                               "non-object inputSchema, a repeated name, ...), by reason",
                               {"server", "upstream", "reason"}, fed_dropped));
  fams.push_back(counterFamily("mcp_gateway_list_answers_refused_total",
                               "List answers the gateway had to read whole (visibility, tool "
                               "pinning, a names: prefix legacy view) and refused with 502/503 "
                               "instead of relaying them unread, by reason",
                               {"server", "reason"}, lists_refused));
  fams.push_back(counterFamily("mcp_gateway_policy_decisions_total",
                               "Policy decisions by rule or rate limit, decision and mode (an "
                               "audit-mode one says what enforcing it would have done)",
                               {"server", "rule", "decision", "mode"}, decisions));
  fams.push_back(counterFamily("mcp_gateway_tool_pin_changes_total",
                               "Tool definitions recorded as awaiting approval (tool_pinning): "
                               "changed from their pin, or new after the store existed",
                               {"server", "upstream", "change"}, pin_changes));
  fams.push_back(scalar("mcp_gateway_received_bytes_total", "Bytes read from clients",
                        MetricType::Counter, static_cast<double>(in.count)));
  fams.push_back(scalar("mcp_gateway_sent_bytes_total", "Bytes written to clients",
                        MetricType::Counter, static_cast<double>(out.count)));
  fams.push_back(scalar("mcp_gateway_connections_accepted_total", "Client connections accepted",
                        MetricType::Counter, static_cast<double>(accepted.count)));
  fams.push_back(counterFamily("mcp_gateway_connections_refused_total",
                               "Client connections closed at accept, by reason", {"reason"},
                               refused));
  fams.push_back(counterFamily("mcp_gateway_tls_handshakes_total",
                               "TLS handshakes completed on the client port, full or resumed",
                               {"session"}, tls_ok));
  fams.push_back(counterFamily("mcp_gateway_tls_handshake_failures_total",
                               "TLS handshakes on the client port that failed, by reason",
                               {"reason"}, tls_failed));
  fams.push_back(scalar("mcp_gateway_log_lines_suppressed_total",
                        "Malformed-request log lines dropped by the per-worker log rate limit",
                        MetricType::Counter, static_cast<double>(suppressed.count)));
  fams.push_back(scalar("mcp_gateway_active_connections", "Open client connections",
                        MetricType::Gauge, static_cast<double>(g.connections)));
  fams.push_back(scalar("mcp_gateway_active_exchanges", "Requests with an upstream in flight",
                        MetricType::Gauge, static_cast<double>(g.exchanges)));
  fams.push_back(scalar("mcp_gateway_active_sse_streams", "Event streams being relayed",
                        MetricType::Gauge, static_cast<double>(sse)));
  fams.push_back(scalar("mcp_gateway_draining", "1 while draining after SIGTERM/SIGINT",
                        MetricType::Gauge, g.draining ? 1 : 0));
  auto reload_family = family("mcp_gateway_config_reloads_total", "Configuration reloads by result",
                              MetricType::Counter);
  for (bool ok : {true, false}) {
    prometheus::ClientMetric cm;
    cm.label = {{"result", ok ? "success" : "failure"}};
    cm.counter.value = static_cast<double>(reloads(ok));
    reload_family.metric.push_back(std::move(cm));
  }
  fams.push_back(std::move(reload_family));
  auto admin_family =
      family("mcp_gateway_admin_auth_failures_total",
             "Admin requests refused with 401 (admin_auth), by reason", MetricType::Counter);
  for (bool invalid : {false, true}) {
    prometheus::ClientMetric cm;
    cm.label = {{"reason", invalid ? "invalid" : "missing"}};
    cm.counter.value = static_cast<double>(adminAuthFailures(invalid));
    admin_family.metric.push_back(std::move(cm));
  }
  fams.push_back(std::move(admin_family));
  auto jwks_family = family("mcp_gateway_jwks_fetches_total",
                            "JWKS fetches (identity.jwt.jwks_url) by result", MetricType::Counter);
  for (size_t i = 0; i < static_cast<size_t>(JwksFetch::kCount); ++i) {
    prometheus::ClientMetric cm;
    cm.label = {{"result", jwksFetchLabel(static_cast<JwksFetch>(i))}};
    cm.counter.value = static_cast<double>(jwks_fetches_[i].load());
    jwks_family.metric.push_back(std::move(cm));
  }
  fams.push_back(std::move(jwks_family));
  if (tracing_.load()) {
    fams.push_back(scalar("mcp_gateway_trace_spans_dropped_total",
                          "Spans dropped because the export queue (tracing.max_queue) was full",
                          MetricType::Counter, static_cast<double>(trace_dropped_.load())));
    fams.push_back(scalar("mcp_gateway_trace_spans_exported_total",
                          "Spans the OTLP collector accepted", MetricType::Counter,
                          static_cast<double>(trace_spans_exported_.load())));
    auto exports = family("mcp_gateway_trace_exports_total", "OTLP export requests by result",
                          MetricType::Counter);
    for (size_t i = 0; i < static_cast<size_t>(TraceExport::kCount); ++i) {
      prometheus::ClientMetric cm;
      cm.label = {{"result", traceExportLabel(static_cast<TraceExport>(i))}};
      cm.counter.value = static_cast<double>(trace_exports_[i].load());
      exports.metric.push_back(std::move(cm));
    }
    fams.push_back(std::move(exports));
  }
  {
    MergedMap requests;
    MergedMap durations;
    token_requests_.forEach([&](const Cell& c) { merge(c, requests); });
    token_durations_.forEach([&](const Cell& c) { merge(c, durations); });
    fams.push_back(counterFamily(
        "mcp_gateway_token_requests_total",
        "Calls to OAuth endpoints (upstreams[].auth, identity.introspection) by result",
        {"kind", "target", "result"}, requests));
    fams.push_back(histogramFamily("mcp_gateway_token_request_duration_seconds",
                                   "Duration of calls to OAuth endpoints", {"kind", "target"},
                                   durations));
    auto cache = family("mcp_gateway_token_cache_entries",
                        "Entries of the shared credential cache by kind", MetricType::Gauge);
    std::lock_guard lock(providers_mu_);
    if (token_cache_sizes_) {
      for (const auto& [kind, n] : token_cache_sizes_()) {
        prometheus::ClientMetric cm;
        cm.label = {{"kind", kind}};
        cm.gauge.value = static_cast<double>(n);
        cache.metric.push_back(std::move(cm));
      }
    }
    fams.push_back(std::move(cache));
    if (endpoint_health_) {
      auto healthy = family("mcp_gateway_upstream_endpoint_healthy",
                            "Whether an upstream endpoint takes requests (up and not ejected)",
                            MetricType::Gauge);
      auto ejections = family("mcp_gateway_upstream_ejections_total",
                              "Passive ejections of an upstream endpoint (outlier_detection)",
                              MetricType::Counter);
      auto transitions = family("mcp_gateway_upstream_health_transitions_total",
                                "Health check transitions of an upstream endpoint (to down, to up)",
                                MetricType::Counter);
      for (const EndpointHealthSample& e : endpoint_health_()) {
        for (const auto& [to, n] : {std::pair{"down", e.went_down}, std::pair{"up", e.came_up}}) {
          prometheus::ClientMetric t;
          t.label = {{"upstream", e.upstream}, {"endpoint", e.endpoint}, {"to", to}};
          t.counter.value = static_cast<double>(n);
          transitions.metric.push_back(std::move(t));
        }
        prometheus::ClientMetric h;
        h.label = {{"upstream", e.upstream}, {"endpoint", e.endpoint}};
        h.gauge.value = e.healthy ? 1 : 0;
        healthy.metric.push_back(std::move(h));
        prometheus::ClientMetric c;
        c.label = {{"upstream", e.upstream}, {"endpoint", e.endpoint}};
        c.counter.value = static_cast<double>(e.ejections);
        ejections.metric.push_back(std::move(c));
      }
      fams.push_back(std::move(healthy));
      fams.push_back(std::move(ejections));
      fams.push_back(std::move(transitions));
    }
  }
  fams.push_back(counterFamily("mcp_gateway_upstream_retries_total",
                               "Requests sent again to an upstream (retry), by reason",
                               {"upstream", "reason"}, retries));
  fams.push_back(scalar("mcp_gateway_jwks_keys", "Keys in the last JWKS fetched successfully",
                        MetricType::Gauge, static_cast<double>(jwks_keys_.load())));
  if (int64_t expiry = tls_cert_expiry_.load(); expiry != 0) {
    fams.push_back(scalar("mcp_gateway_tls_certificate_expiry_timestamp_seconds",
                          "When the served TLS certificate expires (notAfter, Unix time)",
                          MetricType::Gauge, static_cast<double>(expiry)));
  }
  return prometheus::TextSerializer().Serialize(fams);
}

}  // namespace gw::metrics
