// settings/: tracing (issue #31) — where spans go, how many are kept, which roots are
// sampled. Each key with its range; a mistake is a load error at its place.

#include <charconv>
#include <filesystem>
#include <string>
#include <string_view>
#include <system_error>

#include "gateway/settings/loader.h"

namespace gw::settings {

namespace {

constexpr std::string_view kTracingKeys[] = {"otlp_endpoint", "protocol", "sample_ratio",
                                             "service_name",  "headers",  "ca",
                                             "max_queue",     "batch",    "flush_interval"};
constexpr std::string_view kProtocols[] = {"http/json", "http/protobuf"};
constexpr uint64_t kMaxQueue = 1000000;

}  // namespace

void Loader::walkTracing(const Entry& te, Settings& s) {
  Tracing t;
  const size_t before = errorCount();
  std::vector<Entry> es = entries(te.value, te.key_node.Mark(), kTracingKeys, te.path);
  if (!te.value.IsMap()) {
    if (te.value.IsNull()) {
      error(valueMark(te), "'" + te.path + "' is empty; it needs 'otlp_endpoint' (or remove it)");
    }
    return;
  }
  bool https = false;
  std::string host;
  for (const Entry& e : es) {
    if (e.key == "otlp_endpoint") {
      std::string why;
      if (readNonEmptyString(e, t.otlp_endpoint) && !httpUrl(t.otlp_endpoint, https, host, why)) {
        error(valueMark(e), "'" + e.path + "': '" + t.otlp_endpoint + "' " + why);
      }
    } else if (e.key == "protocol") {
      size_t i = 0;
      if (readChoice(e, kProtocols, i) && i == 1) {
        error(valueMark(e), "'" + e.path +
                                "': http/protobuf is not built into this gateway; use http/json "
                                "(every OTLP/HTTP collector accepts it)");
      }
    } else if (e.key == "sample_ratio") {
      std::string text;
      if (readNonEmptyString(e, text)) {
        double v = -1;
        const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
        if (r.ec != std::errc() || r.ptr != text.data() + text.size() || !(v >= 0.0) || v > 1.0) {
          error(valueMark(e),
                "'" + e.path + "' must be a number from 0 to 1 (e.g. 0.05), not '" + text + "'");
        } else {
          t.sample_ratio = v;
        }
      }
    } else if (e.key == "service_name") {
      readNonEmptyString(e, t.service_name);
    } else if (e.key == "headers") {
      readUpstreamHeaders(e, t.headers);
    } else if (e.key == "ca") {
      std::string p;
      if (readNonEmptyString(e, p)) {
        t.ca = resolve(p);
        std::error_code ec;
        if (!std::filesystem::is_regular_file(t.ca, ec)) {
          error(valueMark(e),
                "'" + e.path + "': cannot read '" + t.ca + "' (the collector's CA bundle, PEM)");
        }
      }
    } else if (e.key == "max_queue" || e.key == "batch") {
      uint64_t v = 0;
      if (readUint(e, kMaxQueue, v)) {
        if (v == 0) {
          error(valueMark(e), "'" + e.path + "' must be 1 to 1000000");
        }
        (e.key == "batch" ? t.batch : t.max_queue) = static_cast<uint32_t>(v);
      }
    } else if (e.key == "flush_interval") {
      if (readDuration(e, t.flush_interval) && (t.flush_interval < std::chrono::milliseconds(10) ||
                                                t.flush_interval > std::chrono::minutes(1))) {
        error(valueMark(e), "'" + e.path + "' must be 10ms to 1m");
      }
    }
  }
  if (find(es, "otlp_endpoint") == nullptr) {
    error(te.key_node.Mark(), "'" + te.path +
                                  "' needs 'otlp_endpoint' (e.g. "
                                  "http://127.0.0.1:4318/v1/traces)");
  }
  if (const Entry* ca = find(es, "ca"); ca != nullptr && !t.otlp_endpoint.empty() && !https) {
    error(ca->key_node.Mark(), "'" + ca->path + "' applies only to an https otlp_endpoint");
  }
  if (errorCount() == before && t.batch > t.max_queue) {
    error(valueMark(*find(es, "batch")), "'" + te.path + ".batch' must not exceed max_queue (" +
                                             std::to_string(t.max_queue) + ")");
  }
  if (errorCount() == before && !https && !t.headers.empty() && !isLoopback(host) &&
      host != "localhost") {
    const YAML::Mark m = valueMark(*find(es, "otlp_endpoint"));
    s.warnings.push_back(Diagnostic{file(), m.is_null() ? 0 : m.line + 1,
                                    m.is_null() ? 0 : m.column + 1,
                                    "'" + te.path + ".otlp_endpoint' is plain http to " + host +
                                        " and 'headers' are sent with every export; use https "
                                        "to keep them private"});
  }
  if (errorCount() == before) {
    s.tracing = std::move(t);
  }
}

}  // namespace gw::settings
