// trace/: W3C Trace Context, the sampler and ids, the span (trace.h).

#include "gateway/trace/trace.h"

#include <simdjson.h>

#include <random>

#include "gateway/core/hex.h"

namespace gw::trace {

namespace {

int lowerHex(char c) noexcept {
  if (c >= '0' && c <= '9') {
    return c - '0';
  }
  if (c >= 'a' && c <= 'f') {
    return c - 'a' + 10;
  }
  return -1;  // uppercase is not a traceparent digit (HEXDIGLC)
}

template <size_t N>
bool readHex(std::string_view v, std::array<uint8_t, N>& out) noexcept {
  bool any = false;
  for (size_t i = 0; i < N; ++i) {
    const int hi = lowerHex(v[2 * i]);
    const int lo = lowerHex(v[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return false;
    }
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
    any = any || out[i] != 0;
  }
  return any;  // all zeros is invalid
}

template <size_t N>
void writeHex(const std::array<uint8_t, N>& in, char* out) noexcept {
  for (size_t i = 0; i < N; ++i) {
    out[2 * i] = core::kHexDigits[in[i] >> 4];
    out[2 * i + 1] = core::kHexDigits[in[i] & 0xF];
  }
}

std::mt19937_64& generator() noexcept {
  thread_local std::mt19937_64 g = [] {
    std::random_device rd;
    std::seed_seq seq{rd(), rd(), rd(), rd()};
    return std::mt19937_64(seq);
  }();
  return g;
}

}  // namespace

bool parseTraceparent(std::string_view v, TraceParent& out) noexcept {
  if (v.size() < kTraceparentSize || v[2] != '-' || v[35] != '-' || v[52] != '-') {
    return false;
  }
  const int v0 = lowerHex(v[0]);
  const int v1 = lowerHex(v[1]);
  if (v0 < 0 || v1 < 0 || (v0 == 0xf && v1 == 0xf)) {
    return false;  // ff: an invalid version
  }
  if (v0 == 0 && v1 == 0 ? v.size() != kTraceparentSize
                         : v.size() > kTraceparentSize && v[kTraceparentSize] != '-') {
    return false;
  }
  TraceParent p;
  const int f0 = lowerHex(v[53]);
  const int f1 = lowerHex(v[54]);
  if (!readHex(v.substr(3, 32), p.trace_id) || !readHex(v.substr(36, 16), p.parent_id) || f0 < 0 ||
      f1 < 0) {
    return false;
  }
  p.flags = static_cast<uint8_t>(f0 << 4 | f1);
  out = p;
  return true;
}

void formatTraceparent(const TraceId& trace, const SpanId& span, uint8_t flags,
                       char (&out)[kTraceparentSize]) noexcept {
  out[0] = '0';
  out[1] = '0';
  out[2] = '-';
  writeHex(trace, out + 3);
  out[35] = '-';
  writeHex(span, out + 36);
  out[52] = '-';
  out[53] = core::kHexDigits[flags >> 4];
  out[54] = core::kHexDigits[flags & 0xF];
}

TraceId newTraceId() noexcept {
  TraceId id{};
  do {
    const uint64_t a = generator()();
    const uint64_t b = generator()();
    for (size_t i = 0; i < 8; ++i) {
      id[i] = static_cast<uint8_t>(a >> (8 * i));
      id[8 + i] = static_cast<uint8_t>(b >> (8 * i));
    }
  } while (id == TraceId{});
  return id;
}

SpanId newSpanId() noexcept {
  SpanId id{};
  do {
    const uint64_t a = generator()();
    for (size_t i = 0; i < 8; ++i) {
      id[i] = static_cast<uint8_t>(a >> (8 * i));
    }
  } while (id == SpanId{});
  return id;
}

double uniform() noexcept {
  return static_cast<double>(generator()() >> 11) * 0x1.0p-53;
}

bool sample(const TraceParent* parent, double ratio) noexcept {
  if (parent != nullptr) {
    return parent->sampled();
  }
  if (ratio >= 1.0) {
    return true;
  }
  return ratio > 0.0 && uniform() < ratio;
}

bool metaTraceContext(std::string_view padded_json, std::string& traceparent,
                      std::string& tracestate) {
  traceparent.clear();
  tracestate.clear();
  thread_local simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (parser.parse(padded_json.data(), padded_json.size(), false).get(doc) != simdjson::SUCCESS ||
      !doc.is_object()) {
    return false;
  }
  simdjson::dom::element meta;
  if (doc["params"]["_meta"].get(meta) != simdjson::SUCCESS || !meta.is_object()) {
    return true;
  }
  std::string_view v;
  if (meta["traceparent"].get(v) == simdjson::SUCCESS) {
    traceparent.assign(v);
  }
  if (meta["tracestate"].get(v) == simdjson::SUCCESS) {
    tracestate.assign(v);
  }
  return true;
}

std::string hex(const TraceId& id) {
  std::string s(32, '0');
  writeHex(id, s.data());
  return s;
}

std::string hex(const SpanId& id) {
  std::string s(16, '0');
  writeHex(id, s.data());
  return s;
}

void Span::add(std::string_view key, std::string_view value) {
  Attribute a;
  a.key = key;
  a.text.assign(value);
  attributes.push_back(std::move(a));
}

void Span::add(std::string_view key, int64_t value) {
  Attribute a;
  a.key = key;
  a.type = Attribute::Type::kInt;
  a.number = value;
  attributes.push_back(std::move(a));
}

void Span::addBool(std::string_view key, bool value) {
  Attribute a;
  a.key = key;
  a.type = Attribute::Type::kBool;
  a.flag = value;
  attributes.push_back(std::move(a));
}

}  // namespace gw::trace
