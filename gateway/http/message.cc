// Field lookup over parsed heads (see message.h). Linear scans: heads hold at most
// HeadLimits::max_fields fields, and the callers ask for a handful of names per request.

#include "gateway/http/message.h"

#include "gateway/core/ascii.h"
#include "gateway/core/hex.h"

namespace gw::http {

void copyHead(const RequestHead& from, std::string& storage, RequestHead& to) {
  storage.assign(from.raw);
  const char* const old_base = from.raw.data();
  const char* const new_base = storage.data();
  auto moved = [&](std::string_view v) -> std::string_view {
    if (v.empty() || old_base == nullptr || v.data() < old_base ||
        v.data() + v.size() > old_base + from.raw.size()) {
      return v;  // empty, or not in the head's bytes (a constant)
    }
    return {new_base + (v.data() - old_base), v.size()};
  };
  to.method = moved(from.method);
  to.target = moved(from.target);
  to.path = moved(from.path);
  to.version = from.version;
  to.fields.resize(from.fields.size());
  for (size_t i = 0; i < from.fields.size(); ++i) {
    const HeaderField& f = from.fields[i];
    to.fields[i] = HeaderField{moved(f.name), moved(f.value), moved(f.line)};
  }
  to.framing = from.framing;
  to.content_length = from.content_length;
  to.keep_alive = from.keep_alive;
  to.expect_continue = from.expect_continue;
  to.host = moved(from.host);
  to.head_bytes = from.head_bytes;
  to.raw = std::string_view(storage);
}

const HeaderField* findField(const std::vector<HeaderField>& fields,
                             std::string_view name) noexcept {
  for (const HeaderField& f : fields) {
    if (core::iequals(f.name, name)) {
      return &f;
    }
  }
  return nullptr;
}

size_t countFields(const std::vector<HeaderField>& fields, std::string_view name) noexcept {
  size_t n = 0;
  for (const HeaderField& f : fields) {
    if (core::iequals(f.name, name)) {
      ++n;
    }
  }
  return n;
}

namespace {

// Whether the query parameter name `raw` (still encoded) decodes to `name`.
bool decodesTo(std::string_view raw, std::string_view name) noexcept {
  size_t j = 0;
  for (size_t i = 0; i < raw.size(); ++i, ++j) {
    char c = raw[i];
    if (c == '+') {
      c = ' ';
    } else if (c == '%' && i + 2 < raw.size() && core::hexValue(raw[i + 1]) >= 0 &&
               core::hexValue(raw[i + 2]) >= 0) {
      c = static_cast<char>(core::hexValue(raw[i + 1]) * 16 + core::hexValue(raw[i + 2]));
      i += 2;
    }
    if (j >= name.size() || name[j] != c) {
      return false;
    }
  }
  return j == name.size();
}

}  // namespace

bool queryHasParam(std::string_view target, std::string_view name) noexcept {
  target = target.substr(0, target.find('#'));
  const size_t q = target.find('?');
  if (q == std::string_view::npos) {
    return false;
  }
  std::string_view query = target.substr(q + 1);
  while (!query.empty()) {
    const size_t amp = query.find_first_of("&;");
    std::string_view pair = query.substr(0, amp);
    if (decodesTo(pair.substr(0, pair.find('=')), name)) {
      return true;
    }
    if (amp == std::string_view::npos) {
      break;
    }
    query.remove_prefix(amp + 1);
  }
  return false;
}

Expectation expectation(const std::vector<HeaderField>& fields, Version version) noexcept {
  const HeaderField* ex = findField(fields, "expect");
  if (ex == nullptr) {
    return Expectation::kNone;
  }
  if (!core::iequals(ex->value, "100-continue") || countFields(fields, "expect") != 1) {
    return Expectation::kUnsupported;
  }
  return version == Version::kHttp11 ? Expectation::kContinue : Expectation::kNone;
}

}  // namespace gw::http
