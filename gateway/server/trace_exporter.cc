// server/: the trace exporter (trace_exporter.h).

#include "gateway/server/trace_exporter.h"

#include <event2/event.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <deque>
#include <mutex>
#include <utility>
#include <vector>

#include "gateway/client/http_client.h"
#include "gateway/core/clock.h"
#include "gateway/event/dns.h"
#include "gateway/event/owners.h"

namespace gw::server {

namespace {

using std::chrono::milliseconds;
using Export = metrics::Registry::TraceExport;

constexpr milliseconds kExportTimeout{10000};
constexpr std::chrono::seconds kLogEvery{60};

}  // namespace

struct TraceExporter::Impl {
  Impl(metrics::Registry& m, settings::Tracing c) : metrics(m), config(std::move(c)) {}

  metrics::Registry& metrics;
  const settings::Tracing config;

  std::mutex mu;  // the queue, shared with the workers
  std::deque<trace::Span> queue;
  bool woken = false;  // a wake is pending (under mu)

  event::BasePtr base;
  event::DnsBasePtr dns;
  std::unique_ptr<client::HttpClient> http;  // before dns and base go
  event::EventPtr tick;                      // every flush_interval
  event::EventPtr wake;                      // a batch is full (activated from any thread)
  event::EventPtr drain;                     // stop(): flush, then end
  bool in_flight = false;
  bool draining = false;
  std::chrono::steady_clock::time_point drain_deadline{};
  std::chrono::steady_clock::time_point last_log{};
  bool failing = false;

  // Sends one batch when none is in flight: a full one, or (`any`) whatever is queued.
  void flush(bool any);
  void answered(size_t spans, client::Result&& r);
  void finishDrain();
};

TraceExporter::TraceExporter(metrics::Registry& metrics, settings::Tracing config)
    : impl_(std::make_unique<Impl>(metrics, std::move(config))) {}

TraceExporter::~TraceExporter() {
  if (thread_.joinable()) {
    event_base_loopbreak(impl_->base.get());
    thread_.join();
  }
}

bool TraceExporter::start(std::string& error) {
  Impl& m = *impl_;
  m.base.reset(event_base_new());
  if (m.base == nullptr) {
    error = "trace exporter: cannot create an event loop";
    return false;
  }
  m.dns = event::makeResolver(m.base.get());
  m.http = std::make_unique<client::HttpClient>(m.base.get(), m.dns.get());
  m.tick.reset(event_new(
      m.base.get(), -1, EV_PERSIST,
      [](evutil_socket_t, short, void* arg) { static_cast<Impl*>(arg)->flush(true); }, &m));
  m.wake.reset(event_new(
      m.base.get(), -1, 0,
      [](evutil_socket_t, short, void* arg) {
        Impl& self = *static_cast<Impl*>(arg);
        {
          std::lock_guard lock(self.mu);
          self.woken = false;
        }
        self.flush(false);
      },
      &m));
  m.drain.reset(event_new(
      m.base.get(), -1, 0,
      [](evutil_socket_t, short, void* arg) {
        Impl& self = *static_cast<Impl*>(arg);
        self.draining = true;
        // A hard bound: an export already in flight may wait longer than what is left.
        const timeval left = event::toTimeval(std::max(
            milliseconds(0),
            std::chrono::duration_cast<milliseconds>(self.drain_deadline - core::steadyNow())));
        event_base_loopexit(self.base.get(), &left);
        self.flush(true);
        self.finishDrain();
      },
      &m));
  if (!m.tick || !m.wake || !m.drain) {
    error = "trace exporter: cannot create its events";
    return false;
  }
  const timeval every = event::toTimeval(m.config.flush_interval);
  event_add(m.tick.get(), &every);
  m.metrics.setTracing(true);
  thread_ = std::thread([this] { event_base_dispatch(impl_->base.get()); });
  return true;
}

void TraceExporter::stop(milliseconds timeout) {
  if (!thread_.joinable()) {
    return;
  }
  Impl& m = *impl_;
  // Read by the loop's thread only after the drain event runs (event_active orders it).
  m.drain_deadline = core::steadyNow() + timeout;
  event_active(m.drain.get(), EV_TIMEOUT, 0);
  thread_.join();  // the loop ends when the queue is sent or the deadline passes
  m.http.reset();
  m.tick.reset();
  m.wake.reset();
  m.drain.reset();
}

void TraceExporter::submit(trace::Span&& span) noexcept {
  Impl& m = *impl_;
  bool wake = false;
  {
    std::lock_guard lock(m.mu);
    if (m.queue.size() >= m.config.max_queue) {
      m.metrics.traceSpansDropped(1);
      return;
    }
    m.queue.push_back(std::move(span));
    if (m.queue.size() >= m.config.batch && !m.woken) {
      m.woken = true;
      wake = true;
    }
  }
  if (wake && m.wake) {
    event_active(m.wake.get(), EV_TIMEOUT, 0);
  }
}

void TraceExporter::Impl::flush(bool any) {
  if (in_flight) {
    return;
  }
  std::vector<trace::Span> batch;
  {
    std::lock_guard lock(mu);
    if (queue.empty() || (!any && queue.size() < config.batch)) {
      return;
    }
    const size_t n = std::min<size_t>(queue.size(), config.batch);
    batch.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      batch.push_back(std::move(queue.front()));
      queue.pop_front();
    }
  }
  client::Request req;
  req.method = "POST";
  req.url = config.otlp_endpoint;
  for (const auto& [name, value] : config.headers) {
    req.headers.emplace_back(name, value);
  }
  req.content_type = "application/json";
  req.body = trace::encodeOtlpJson(batch, config.service_name, GW_VERSION);
  req.ca_file = config.ca;
  milliseconds timeout = kExportTimeout;
  if (draining) {
    timeout =
        std::clamp(std::chrono::duration_cast<milliseconds>(drain_deadline - core::steadyNow()),
                   milliseconds(1), kExportTimeout);
  }
  req.connect_timeout = timeout;
  req.total_timeout = timeout;
  req.max_body_bytes = 64 * 1024;
  req.keep_alive = true;
  in_flight = true;
  const size_t spans = batch.size();
  http->send(std::move(req), [this, spans](client::Result&& r) { answered(spans, std::move(r)); });
}

void TraceExporter::Impl::answered(size_t spans, client::Result&& r) {
  in_flight = false;
  Export result = Export::kOk;
  std::string why;
  if (r.ok() && r.response.status >= 200 && r.response.status < 300) {
    result = Export::kOk;
  } else if (r.ok()) {
    result = Export::kHttpError;
    why = "HTTP " + std::to_string(r.response.status);
  } else if (r.error == client::Error::kTimeout) {
    result = Export::kTimeout;
    why = r.reason;
  } else {
    result = r.error == client::Error::kConnect || r.error == client::Error::kDns ||
                     r.error == client::Error::kTls
                 ? Export::kConnectError
                 : Export::kHttpError;
    why = std::string(client::errorName(r.error)) + ": " + r.reason;
  }
  metrics.traceExported(result, spans);
  const std::chrono::steady_clock::time_point now = core::steadyNow();
  if (result != Export::kOk) {
    if (!failing || now - last_log >= kLogEvery) {
      spdlog::warn("tracing: export of {} spans to {} failed ({}); they are dropped", spans,
                   config.otlp_endpoint, why);
      last_log = now;
    }
    failing = true;
  } else if (failing) {
    spdlog::info("tracing: exports to {} succeed again", config.otlp_endpoint);
    failing = false;
  }
  if (draining) {
    flush(true);
    finishDrain();
    return;
  }
  flush(false);  // the next full batch at once
}

void TraceExporter::Impl::finishDrain() {
  bool empty = false;
  {
    std::lock_guard lock(mu);
    empty = queue.empty();
  }
  if ((empty && !in_flight) || core::steadyNow() >= drain_deadline) {
    event_base_loopbreak(base.get());
    return;
  }
  if (!in_flight) {
    flush(true);
  }
  // An export in flight ends by its own timeout (bounded by the deadline) and calls back.
}

}  // namespace gw::server
