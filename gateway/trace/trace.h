#pragma once
// trace/: distributed tracing's pure half (issue #31) — W3C Trace Context (the `traceparent`
// field: parsed, checked, written), the span the gateway records for a request and for each
// upstream attempt, the parent-based ratio sampler, and the OTLP/HTTP JSON encoding of a batch
// of spans (opentelemetry-proto, JSON mapping: ids as lowercase hex, 64-bit integers as
// strings, enums as numbers). No I/O: the exporter (server/trace_exporter.h) sends batches,
// the proxy records spans and hands them to a SpanSink.

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gw::trace {

using TraceId = std::array<uint8_t, 16>;
using SpanId = std::array<uint8_t, 8>;

// A parent from the client: W3C Trace Context §3.2 `traceparent`.
struct TraceParent {
  TraceId trace_id{};
  SpanId parent_id{};
  uint8_t flags = 0;
  bool sampled() const noexcept { return (flags & 1U) != 0; }
};

// Length of a version-00 traceparent value.
inline constexpr size_t kTraceparentSize = 55;

// Parses a traceparent value as the recommendation says a receiver must: version 00 exactly
// 55 characters; a later version (not ff) at least 55, its further fields after a '-' ignored;
// lowercase hex only; trace-id and parent-id not all zeros. False: ignore it (a new root).
bool parseTraceparent(std::string_view v, TraceParent& out) noexcept;
// "00-<trace-id>-<span-id>-<flags>" (kTraceparentSize characters) into `out`.
void formatTraceparent(const TraceId& trace, const SpanId& span, uint8_t flags,
                       char (&out)[kTraceparentSize]) noexcept;

// New random ids (never all zeros), from a per-thread generator seeded from the system.
TraceId newTraceId() noexcept;
SpanId newSpanId() noexcept;
// A uniform draw in [0, 1) from the same generator (the root sampler).
double uniform() noexcept;

// Parent-based sampling: a parent's sampled flag decides; without one, `ratio` of the roots.
bool sample(const TraceParent* parent, double ratio) noexcept;

std::string hex(const TraceId& id);
std::string hex(const SpanId& id);

// A JSON-RPC message's `params._meta.traceparent` and `.tracestate` (string members; absent or
// not strings: empty). `padded` must have simdjson's padding after json.size() bytes. False
// when the text is not a JSON object.
bool metaTraceContext(std::string_view padded_json, std::string& traceparent,
                      std::string& tracestate);

struct Attribute {
  enum class Type : uint8_t { kString, kInt, kBool, kDouble };
  // A name with static storage (the semantic conventions' names are literals): no copy per
  // span.
  std::string_view key;
  Type type = Type::kString;
  std::string text;
  int64_t number = 0;
  double real = 0;
  bool flag = false;
};

struct Event {
  std::string name;
  uint64_t time_ns = 0;  // Unix epoch nanoseconds
  std::vector<Attribute> attributes;
};

// OTLP SpanKind and Status.code values.
enum class Kind : uint8_t { kInternal = 1, kServer = 2, kClient = 3 };
enum class Status : uint8_t { kUnset = 0, kOk = 1, kError = 2 };

struct Span {
  TraceId trace_id{};
  SpanId span_id{};
  SpanId parent_id{};  // all zeros: a root span
  std::string trace_state;
  uint8_t flags = 1;
  std::string name;
  Kind kind = Kind::kInternal;
  uint64_t start_ns = 0;  // Unix epoch nanoseconds
  uint64_t end_ns = 0;
  std::vector<Attribute> attributes;
  std::vector<Event> events;
  Status status = Status::kUnset;
  std::string status_message;

  void add(std::string_view key, std::string_view value);
  void add(std::string_view key, int64_t value);
  void addBool(std::string_view key, bool value);
};

// The ExportTraceServiceRequest body for `spans`, one resource (service.name, service.version)
// and one instrumentation scope ("mcp-gateway").
std::string encodeOtlpJson(const std::vector<Span>& spans, std::string_view service_name,
                           std::string_view service_version);

// Where finished spans go (the exporter's queue). submit() is called from the workers'
// threads and must not block; a full queue drops the span (and counts it).
class SpanSink {
 public:
  virtual ~SpanSink() = default;
  virtual void submit(Span&& span) noexcept = 0;
};

}  // namespace gw::trace
