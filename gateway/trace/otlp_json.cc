// trace/: the OTLP/HTTP JSON encoding of a batch of spans (trace.h). opentelemetry-proto's
// JSON mapping: traceId/spanId/parentSpanId as lowercase hex, fixed64 times and int64
// attribute values as decimal strings, enums (kind, status code) as numbers, field names in
// lowerCamelCase.

#include <charconv>

#include "gateway/core/json_escape.h"
#include "gateway/trace/trace.h"

namespace gw::trace {

namespace {

void appendUint(std::string& out, uint64_t v) {
  char buf[24];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
}

void appendQuotedUint(std::string& out, uint64_t v) {
  out += '"';
  appendUint(out, v);
  out += '"';
}

void appendAttributes(std::string& out, const std::vector<Attribute>& attrs) {
  out += "\"attributes\":[";
  bool first = true;
  for (const Attribute& a : attrs) {
    out += first ? "{\"key\":" : ",{\"key\":";
    first = false;
    core::appendJsonString(out, a.key);
    out += ",\"value\":{";
    switch (a.type) {
      case Attribute::Type::kString:
        out += "\"stringValue\":";
        core::appendJsonString(out, a.text);
        break;
      case Attribute::Type::kInt: {
        out += "\"intValue\":\"";
        char buf[24];
        const auto r = std::to_chars(buf, buf + sizeof buf, a.number);
        out.append(buf, r.ptr);
        out += '"';
        break;
      }
      case Attribute::Type::kBool:
        out += a.flag ? "\"boolValue\":true" : "\"boolValue\":false";
        break;
      case Attribute::Type::kDouble: {
        out += "\"doubleValue\":";
        char buf[32];
        const auto r = std::to_chars(buf, buf + sizeof buf, a.real);
        out.append(buf, r.ptr);
        break;
      }
    }
    out += "}}";
  }
  out += ']';
}

}  // namespace

std::string encodeOtlpJson(const std::vector<Span>& spans, std::string_view service_name,
                           std::string_view service_version) {
  std::string out;
  out.reserve(256 + spans.size() * 768);
  out +=
      R"({"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":)";
  core::appendJsonString(out, service_name);
  out += R"(}},{"key":"service.version","value":{"stringValue":)";
  core::appendJsonString(out, service_version);
  out += R"(}}]},"scopeSpans":[{"scope":{"name":"mcp-gateway","version":)";
  core::appendJsonString(out, service_version);
  out += R"(},"spans":[)";
  bool first = true;
  for (const Span& s : spans) {
    out += first ? "{" : ",{";
    first = false;
    out += "\"traceId\":\"" + hex(s.trace_id) + "\",\"spanId\":\"" + hex(s.span_id) + "\"";
    if (s.parent_id != SpanId{}) {
      out += ",\"parentSpanId\":\"" + hex(s.parent_id) + "\"";
    }
    if (!s.trace_state.empty()) {
      out += ",\"traceState\":";
      core::appendJsonString(out, s.trace_state);
    }
    out += ",\"flags\":";
    appendUint(out, s.flags);
    out += ",\"name\":";
    core::appendJsonString(out, s.name);
    out += ",\"kind\":";
    appendUint(out, static_cast<uint64_t>(s.kind));
    out += ",\"startTimeUnixNano\":";
    appendQuotedUint(out, s.start_ns);
    out += ",\"endTimeUnixNano\":";
    appendQuotedUint(out, s.end_ns);
    out += ',';
    appendAttributes(out, s.attributes);
    if (!s.events.empty()) {
      out += ",\"events\":[";
      bool first_event = true;
      for (const Event& e : s.events) {
        out += first_event ? "{\"timeUnixNano\":" : ",{\"timeUnixNano\":";
        first_event = false;
        appendQuotedUint(out, e.time_ns);
        out += ",\"name\":";
        core::appendJsonString(out, e.name);
        out += ',';
        appendAttributes(out, e.attributes);
        out += '}';
      }
      out += ']';
    }
    out += ",\"status\":{";
    if (s.status != Status::kUnset) {
      out += "\"code\":";
      appendUint(out, static_cast<uint64_t>(s.status));
      if (!s.status_message.empty()) {
        out += ",\"message\":";
        core::appendJsonString(out, s.status_message);
      }
    }
    out += "}}";
  }
  out += "]}]}]}";
  return out;
}

}  // namespace gw::trace
