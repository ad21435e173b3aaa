#pragma once
// server/: the trace exporter (issue #31) — finished spans queued by the workers
// (trace::SpanSink::submit: a lock, a push, never a wait), sent in batches as OTLP/HTTP JSON
// to tracing.otlp_endpoint by one thread with its own event loop and the one outbound HTTP
// client (client/http_client.h), never on a request's path:
// - a batch leaves when `batch` spans wait, or every flush_interval with what is there; one
//   export request in flight at a time (10 s at most), the next as soon as it ends;
// - beyond max_queue a span is dropped and counted (mcp_gateway_trace_spans_dropped_total);
//   a batch the collector refuses or never answers is dropped, not retried (the queue keeps
//   the newest spans; a collector down costs requests nothing);
// - every export is counted by result (mcp_gateway_trace_exports_total{result}); a failing
//   collector is logged once, then at most once a minute;
// - stop(timeout) flushes what is queued within `timeout` (the drain), then ends the thread.

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "gateway/metrics/metrics.h"
#include "gateway/settings/settings.h"
#include "gateway/trace/trace.h"

namespace gw::server {

class TraceExporter final : public trace::SpanSink {
 public:
  TraceExporter(metrics::Registry& metrics, settings::Tracing config);
  ~TraceExporter() override;  // stops the thread (no flush)
  TraceExporter(const TraceExporter&) = delete;
  TraceExporter& operator=(const TraceExporter&) = delete;

  bool start(std::string& error);
  // Sends what is queued (bounded by `timeout`), then stops the thread.
  void stop(std::chrono::milliseconds timeout);

  void submit(trace::Span&& span) noexcept override;

  struct Impl;

 private:
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
};

}  // namespace gw::server
