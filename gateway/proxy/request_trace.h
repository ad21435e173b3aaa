#pragma once
// proxy/: one request's trace (issue #31). With tracing configured, every request has a
// trace context — the client's `traceparent` when it carries exactly one valid value (its
// `tracestate` kept), else a new root — and a SERVER span id, whether or not it is sampled
// (parent-based: a parent's sampled flag decides; roots at tracing.sample_ratio). Each
// upstream attempt gets a CLIENT span id, and the upstream request carries
// `traceparent: 00-<trace>-<client span>-<flags>` (and `tracestate` as received). A sampled
// request hands its spans to the SpanSink when they end: one CLIENT span per attempt, one
// SERVER span at the end (request_log.cc). Without tracing nothing here runs, and the
// client's fields are forwarded untouched.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/message.h"
#include "gateway/trace/trace.h"

namespace gw::proxy {

class RequestTrace {
 public:
  // At the head. `sink` null: tracing off for this request (nothing else runs).
  void begin(trace::SpanSink* sink, double ratio, const http::RequestHead& head);
  void reset() noexcept { sink_ = nullptr; }

  bool on() const noexcept { return sink_ != nullptr; }
  // A request whose body the gateway read (verify mode, legacy inspection) and whose HTTP
  // fields named no valid parent: the body's params._meta.traceparent (and tracestate) become
  // the parent when valid (the HTTP field wins when both are there). Before the upstream
  // request is made.
  void adoptMeta(std::string_view padded_body);
  bool sampled() const noexcept { return sampled_; }
  bool hasParent() const noexcept { return has_parent_; }
  const trace::TraceId& traceId() const noexcept { return trace_id_; }
  const trace::SpanId& spanId() const noexcept { return span_id_; }

  // The traceparent value for the upstream attempt now starting (its CLIENT span id; stable
  // until attemptEnded()). The view lives as long as this request's trace.
  std::string_view upstreamTraceparent() const noexcept {
    return std::string_view(traceparent_, sizeof traceparent_);
  }
  // The client's tracestate to forward ("" when none, or when its traceparent was not valid).
  std::string_view traceState() const noexcept { return trace_state_; }

  // An upstream attempt ended: its CLIENT span (when sampled) goes to the sink, and the next
  // attempt gets a new span id. `duration_ns`: how long it took; `error`: its error.type ("":
  // none).
  void attemptEnded(std::string_view name, std::string_view upstream, std::string_view endpoint,
                    uint64_t duration_ns, std::string_view error, int status);
  // A wait of the request (a JWKS fetch, a token endpoint, a Redis limit, a federation
  // refresh) as an event of its SERVER span: `name`, when it began, how long it took.
  void wait(std::string_view name, uint64_t start_ns, uint64_t end_ns);
  // The SERVER span, filled by the caller, with this request's ids, times and sampling; sent
  // when sampled. Call once, at the end.
  trace::Span serverSpan() const;
  void finish(trace::Span&& span);

  // What a fan-out needs to give each member request its own CLIENT span (a copy: the
  // fan-out may outlive nothing of the request, but owns its own). sink null: off.
  struct Link {
    trace::SpanSink* sink = nullptr;
    bool sampled = false;
    uint8_t flags = 0;
    trace::TraceId trace_id{};
    trace::SpanId parent{};  // the request's SERVER span
    std::string state;
    std::string name;  // the spans' name
  };
  Link link(std::string name) const;
  // A CLIENT span of `link` (an upstream attempt: `upstream` at `endpoint` "host:port").
  static trace::Span clientSpan(const Link& link, const trace::SpanId& id,
                                std::string_view upstream, std::string_view endpoint,
                                uint64_t start_ns, uint64_t end_ns, std::string_view error,
                                int status);
  static uint64_t nowNanos() noexcept;

  // ,"trace_id":"…","span_id":"…" for the access log (nothing when off).
  void appendLogFields(std::string& line) const;

 private:
  void nextClientSpan() noexcept;
  void useParent(const trace::TraceParent* parent, std::string_view state);

  trace::SpanSink* sink_ = nullptr;
  double ratio_ = 0;
  bool sampled_ = false;
  bool has_parent_ = false;
  uint8_t flags_ = 0;
  trace::TraceId trace_id_{};
  trace::SpanId span_id_{};
  trace::SpanId parent_id_{};
  trace::SpanId client_id_{};
  std::string trace_state_;
  uint64_t start_ns_ = 0;
  std::vector<trace::Event> waits_;
  char traceparent_[trace::kTraceparentSize] = {};
};

}  // namespace gw::proxy
