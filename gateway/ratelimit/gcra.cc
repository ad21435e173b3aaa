// GCRA arithmetic and 429 header formatting (see gcra.h).

#include "gateway/ratelimit/gcra.h"

#include <charconv>
#include <cmath>

namespace gw::ratelimit {

namespace {

constexpr int64_t kNsPerMs = 1'000'000;

std::chrono::milliseconds ceilMs(int64_t ns) noexcept {
  if (ns <= 0) {
    return std::chrono::milliseconds(0);
  }
  return std::chrono::milliseconds((ns + kNsPerMs - 1) / kNsPerMs);
}

uint64_t ceilSeconds(int64_t ms) noexcept {
  if (ms <= 0) {
    return 0;
  }
  return static_cast<uint64_t>((ms + 999) / 1000);
}

void appendNumber(std::string& out, uint64_t v) {
  char buf[24];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  (void)ec;
  out.append(buf, end);
}

void appendSfString(std::string& out, std::string_view s) {
  out.push_back('"');
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (u < 0x20 || u > 0x7e) {
      out.push_back('?');
    } else {
      out.push_back(c);
    }
  }
  out.push_back('"');
}

// Milliseconds of one unit name; 0 when unknown.
uint64_t unitMs(std::string_view u) noexcept {
  if (u == "ms") {
    return 1;
  }
  if (u == "s" || u == "sec" || u == "second") {
    return 1000;
  }
  if (u == "m" || u == "min" || u == "minute") {
    return 60'000;
  }
  if (u == "h" || u == "hour") {
    return 3'600'000;
  }
  if (u == "d" || u == "day") {
    return 86'400'000;
  }
  return 0;
}

}  // namespace

Rate Rate::make(uint64_t quota, std::chrono::milliseconds window, uint32_t burst) noexcept {
  Rate r;
  r.quota = quota;
  r.window_ms = window.count() > 0 ? static_cast<uint64_t>(window.count()) : 0;
  r.per_second = r.window_ms == 0
                     ? 0.0
                     : static_cast<double>(quota) * 1000.0 / static_cast<double>(r.window_ms);
  uint64_t b = burst != 0 ? burst : quota;
  r.burst = static_cast<uint32_t>(b > UINT32_MAX ? UINT32_MAX : (b == 0 ? 1 : b));
  return r;
}

std::optional<Rate> Rate::parse(std::string_view text, uint32_t burst) noexcept {
  size_t slash = text.find('/');
  if (slash == std::string_view::npos || slash == 0) {
    return std::nullopt;
  }
  uint64_t quota = 0;
  auto qs = text.substr(0, slash);
  auto [qend, qec] = std::from_chars(qs.data(), qs.data() + qs.size(), quota);
  if (qec != std::errc() || qend != qs.data() + qs.size() || quota == 0) {
    return std::nullopt;
  }
  std::string_view per = text.substr(slash + 1);
  uint64_t count = 1;
  size_t digits = 0;
  while (digits < per.size() && per[digits] >= '0' && per[digits] <= '9') {
    ++digits;
  }
  if (digits > 0) {
    auto [cend, cec] = std::from_chars(per.data(), per.data() + digits, count);
    if (cec != std::errc() || cend != per.data() + digits || count == 0 || count > 1'000'000) {
      return std::nullopt;
    }
  }
  uint64_t unit = unitMs(per.substr(digits));
  if (unit == 0) {
    return std::nullopt;
  }
  return make(quota, std::chrono::milliseconds(count * unit), burst);
}

int64_t Rate::intervalNs() const noexcept {
  double ns = 0;
  if (quota > 0 && window_ms > 0) {
    ns = static_cast<double>(window_ms) * 1e6 / static_cast<double>(quota);
  } else if (per_second > 0) {
    ns = 1e9 / per_second;
  } else {
    return INT64_MAX / 4;  // no rate: one request per ~73 years, i.e. the burst only
  }
  if (!(ns >= 1.0)) {
    return 1;
  }
  if (ns > static_cast<double>(INT64_MAX / 4)) {
    return INT64_MAX / 4;
  }
  return std::llround(ns);
}

Decision gcra(int64_t& tat_ns, int64_t now_ns, const Rate& r) noexcept {
  const int64_t interval = r.intervalNs();
  const int64_t burst = r.effectiveBurst();
  // Capacity in time; saturating so huge bursts of slow rates cannot overflow.
  const int64_t tau = interval > (INT64_MAX / 4) / burst ? INT64_MAX / 4 : interval * burst;
  const int64_t base = tat_ns > now_ns ? tat_ns : now_ns;
  const int64_t new_tat = base + interval;
  const int64_t ahead = new_tat - now_ns;  // how far the bucket would be drained
  Decision d;
  if (ahead > tau) {
    d.allowed = false;
    d.retry_after = ceilMs(ahead - tau);
    d.remaining = 0;
    d.reset = ceilMs(base - now_ns);
    return d;
  }
  tat_ns = new_tat;
  d.allowed = true;
  d.remaining = static_cast<uint64_t>((tau - ahead) / interval);
  d.reset = ceilMs(ahead);
  return d;
}

namespace {
// `"<name>";<k1>=<v1>;<k2>=<v2>` as the field's value.
void setItem(http::OwnedField& f, const char* field, std::string_view name, const char* k1,
             uint64_t v1, const char* k2, uint64_t v2) {
  f.name = field;
  f.value.clear();
  appendSfString(f.value, name);
  f.value.append(k1);
  appendNumber(f.value, v1);
  f.value.append(k2);
  appendNumber(f.value, v2);
}
}  // namespace

void headerFields(std::string_view policy_name, const Rate& r, const Decision& d,
                  bool with_retry_after, std::vector<http::OwnedField>& out) {
  out.resize(with_retry_after ? 3 : 2);
  const uint64_t w = ceilSeconds(static_cast<int64_t>(r.window_ms));
  setItem(out[0], "RateLimit-Policy", policy_name, ";q=", r.quota, ";w=", w == 0 ? 1 : w);
  setItem(out[1], "RateLimit", policy_name, ";r=", d.remaining,
          ";t=", ceilSeconds(d.reset.count()));
  if (with_retry_after) {
    uint64_t s = ceilSeconds(d.retry_after.count());
    out[2].name = "Retry-After";
    out[2].value.clear();
    appendNumber(out[2].value, s == 0 ? 1 : s);
  }
}

}  // namespace gw::ratelimit
