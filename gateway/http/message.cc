// Field lookup over parsed heads (see message.h). Linear scans: heads hold at most
// HeadLimits::max_fields fields, and the callers ask for a handful of names per request.

#include "gateway/http/message.h"

#include "gateway/core/ascii.h"

namespace gw::http {

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
