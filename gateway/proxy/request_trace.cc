// proxy/: one request's trace (request_trace.h).

#include "gateway/proxy/request_trace.h"

#include <charconv>
#include <chrono>

#include "gateway/core/clock.h"
#include "gateway/http/host.h"

namespace gw::proxy {

namespace {

constexpr size_t kMaxTraceState = 512;  // W3C: at most 32 members; longer is cut, not kept

uint64_t wallNanos() noexcept {
  return static_cast<uint64_t>(
      std::chrono::duration_cast<std::chrono::nanoseconds>(core::wallNow().time_since_epoch())
          .count());
}

}  // namespace

void RequestTrace::begin(trace::SpanSink* sink, double ratio, const http::RequestHead& head) {
  sink_ = sink;
  if (sink == nullptr) {
    return;
  }
  start_ns_ = wallNanos();
  trace_state_.clear();
  waits_.clear();
  // Exactly one traceparent field with a valid value is a parent; two, or a bad one, are
  // ignored (a new root), and so is the tracestate that came with them.
  trace::TraceParent parent;
  const bool valid =
      http::countFields(head.fields, "traceparent") == 1 &&
      trace::parseTraceparent(http::findField(head.fields, "traceparent")->value, parent);
  const bool one_state = http::countFields(head.fields, "tracestate") == 1;
  ratio_ = ratio;
  useParent(valid ? &parent : nullptr,
            one_state ? http::findField(head.fields, "tracestate")->value : std::string_view{});
}

// The request's context from `parent` (null: a new root) and its tracestate.
void RequestTrace::useParent(const trace::TraceParent* parent, std::string_view state) {
  has_parent_ = parent != nullptr;
  trace_state_.clear();
  if (has_parent_) {
    trace_id_ = parent->trace_id;
    parent_id_ = parent->parent_id;
    if (state.size() <= kMaxTraceState) {
      trace_state_.assign(state);
    }
  } else {
    trace_id_ = trace::newTraceId();
    parent_id_ = trace::SpanId{};
  }
  sampled_ = trace::sample(parent, ratio_);
  flags_ = static_cast<uint8_t>((has_parent_ ? parent->flags & 0xFE : 0) | (sampled_ ? 1 : 0));
  span_id_ = trace::newSpanId();
  nextClientSpan();
}

void RequestTrace::adoptMeta(std::string_view padded_body) {
  if (sink_ == nullptr || has_parent_) {
    return;
  }
  std::string traceparent;
  std::string tracestate;
  trace::TraceParent parent;
  if (trace::metaTraceContext(padded_body, traceparent, tracestate) &&
      trace::parseTraceparent(traceparent, parent)) {
    useParent(&parent, tracestate);
  }
}

void RequestTrace::nextClientSpan() noexcept {
  client_id_ = trace::newSpanId();
  trace::formatTraceparent(trace_id_, client_id_, flags_, traceparent_);
}

RequestTrace::Link RequestTrace::link(std::string name) const {
  Link l;
  if (sink_ == nullptr) {
    return l;
  }
  l.sink = sink_;
  l.sampled = sampled_;
  l.flags = flags_;
  l.trace_id = trace_id_;
  l.parent = span_id_;
  l.state = trace_state_;
  l.name = std::move(name);
  return l;
}

uint64_t RequestTrace::nowNanos() noexcept {
  return wallNanos();
}

trace::Span RequestTrace::clientSpan(const Link& link, const trace::SpanId& id,
                                     std::string_view upstream, std::string_view endpoint,
                                     uint64_t start_ns, uint64_t end_ns, std::string_view error,
                                     int status) {
  trace::Span s;
  s.trace_id = link.trace_id;
  s.span_id = id;
  s.parent_id = link.parent;
  s.flags = link.flags;
  s.trace_state = link.state;
  s.name = link.name;
  s.kind = trace::Kind::kClient;
  s.attributes.reserve(6);
  s.start_ns = start_ns;
  s.end_ns = end_ns;
  s.add("mcp_gateway.upstream", upstream);
  // server.address / server.port from the endpoint's "host:port" ("[v6]:port").
  http::HostPort hp;
  if (http::parseHostPort(endpoint, hp) && !hp.port.empty()) {
    std::string_view host = hp.host;
    if (host.starts_with('[')) {
      host = host.substr(1, host.size() - 2);
    }
    s.add("server.address", host);
    int64_t port = 0;
    std::from_chars(hp.port.data(), hp.port.data() + hp.port.size(), port);
    s.add("server.port", port);
  }
  if (status > 0) {
    s.add("http.response.status_code", int64_t{status});
  }
  if (!error.empty()) {
    s.add("error.type", error);
    s.status = trace::Status::kError;
    s.status_message.assign(error);
  }
  return s;
}

void RequestTrace::attemptEnded(std::string_view name, std::string_view upstream,
                                std::string_view endpoint, uint64_t duration_ns,
                                std::string_view error, int status) {
  if (sink_ == nullptr) {
    return;
  }
  if (sampled_) {
    const uint64_t end = wallNanos();
    sink_->submit(clientSpan(link(std::string(name)), client_id_, upstream, endpoint,
                             end > duration_ns ? end - duration_ns : end, end, error, status));
  }
  nextClientSpan();
}

void RequestTrace::wait(std::string_view name, uint64_t start_ns, uint64_t end_ns) {
  if (sink_ == nullptr || !sampled_ || waits_.size() >= 16) {
    return;
  }
  trace::Event e;
  e.name.assign(name);
  e.time_ns = start_ns;
  trace::Attribute d;
  d.key = "duration_ms";
  d.type = trace::Attribute::Type::kDouble;
  d.real = static_cast<double>(end_ns - start_ns) / 1e6;
  e.attributes.push_back(std::move(d));
  waits_.push_back(std::move(e));
}

trace::Span RequestTrace::serverSpan() const {
  trace::Span s;
  s.trace_id = trace_id_;
  s.span_id = span_id_;
  s.parent_id = parent_id_;
  s.flags = flags_;
  s.trace_state = trace_state_;
  s.kind = trace::Kind::kServer;
  s.attributes.reserve(24);
  s.start_ns = start_ns_;
  s.end_ns = wallNanos();
  s.events = waits_;
  return s;
}

void RequestTrace::finish(trace::Span&& span) {
  if (sink_ != nullptr && sampled_) {
    sink_->submit(std::move(span));
  }
}

void RequestTrace::appendLogFields(std::string& line) const {
  if (sink_ == nullptr) {
    return;
  }
  line += ",\"trace_id\":\"";
  line += trace::hex(trace_id_);
  line += "\",\"span_id\":\"";
  line += trace::hex(span_id_);
  line += "\",\"sampled\":";
  line += sampled_ ? "true" : "false";
}

}  // namespace gw::proxy
