// http/: the strict scan of a head's field lines and the facts read from them (see
// head_scan.h).

#include "gateway/http/head_scan.h"

#include <algorithm>
#include <cstring>
#include <limits>

#include "gateway/core/ascii.h"
#include "gateway/http/forwarding.h"
#include "gateway/http/host.h"

namespace gw::http::detail {

namespace {

constexpr uint64_t kMaxContentLength = static_cast<uint64_t>(INT64_MAX);

// Checks one field line (without CRLF) and appends it. Returns nullptr or a reject reason.
const char* addFieldLine(std::string_view line, std::vector<HeaderField>& fields) noexcept {
  if (core::isOws(line.front())) {
    return "obsolete line folding";
  }
  size_t i = 0;
  while (i < line.size() && core::isTchar(static_cast<unsigned char>(line[i]))) {
    ++i;
  }
  if (i == line.size()) {
    return "field line without colon";
  }
  if (line[i] != ':') {
    if (core::isOws(line[i])) {
      return "whitespace before colon";
    }
    if (line[i] == '\r') {
      return "bare CR in head";
    }
    return "invalid field name";
  }
  if (i == 0) {
    return "empty field name";
  }
  for (size_t j = i + 1; j < line.size(); ++j) {
    const auto c = static_cast<unsigned char>(line[j]);
    if (!core::isFieldValueChar(c)) {
      return c == '\r' ? "bare CR in head" : "control character in field value";
    }
  }
  fields.push_back(HeaderField{line.substr(0, i), core::trimOws(line.substr(i + 1)), line});
  return nullptr;
}

constexpr ParseResult fieldTooLarge() noexcept {
  return fail(ParseError::kFieldTooLarge, "header field line too large");
}

bool parseContentLength(std::string_view v, uint64_t& out) noexcept {
  if (v.empty()) {
    return false;
  }
  uint64_t n = 0;
  for (char c : v) {
    if (c < '0' || c > '9') {
      return false;
    }
    const auto d = static_cast<uint64_t>(c - '0');
    if (n > (kMaxContentLength - d) / 10) {
      return false;
    }
    n = n * 10 + d;
  }
  out = n;
  return true;
}

void scanConnection(std::string_view v, FieldFacts& facts) noexcept {
  while (!v.empty()) {
    const size_t comma = v.find(',');
    const std::string_view token = core::trimOws(v.substr(0, comma));
    if (core::iequals(token, "close")) {
      facts.conn_close = true;
    } else if (core::iequals(token, "keep-alive")) {
      facts.conn_keep_alive = true;
    } else if (isProtectedField(token)) {
      facts.conn_protected = true;
    }
    if (comma == std::string_view::npos) {
      break;
    }
    v.remove_prefix(comma + 1);
  }
}

}  // namespace

bool isVersion(std::string_view v, Version& out) noexcept {
  if (v == "HTTP/1.1") {
    out = Version::kHttp11;
    return true;
  }
  if (v == "HTTP/1.0") {
    out = Version::kHttp10;
    return true;
  }
  return false;
}

size_t findLf(std::string_view data, size_t pos, size_t end) noexcept {
  if (pos >= end) {
    return std::string_view::npos;
  }
  const void* lf = std::memchr(data.data() + pos, '\n', end - pos);
  if (lf == nullptr) {
    return std::string_view::npos;
  }
  return static_cast<size_t>(static_cast<const char*>(lf) - data.data());
}

ParseResult scanFields(std::string_view data, size_t pos, const HeadLimits& limits, size_t max_line,
                       std::vector<HeaderField>& fields, size_t& head_bytes) noexcept {
  const size_t window = std::min(data.size(), limits.max_head_bytes);
  for (;;) {
    const size_t lf = findLf(data, pos, window);
    if (lf == std::string_view::npos) {
      // Over the line limit as soon as max_line + CR bytes are followed by no LF.
      const size_t pending = window - std::min(window, pos);
      if (pending > 1 && pending - 1 > max_line) {
        return fieldTooLarge();
      }
      if (data.size() > limits.max_head_bytes) {
        return fail(ParseError::kHeadTooLarge, "head too large");
      }
      return incomplete();
    }
    if (lf == pos || data[lf - 1] != '\r') {
      return bad("bare LF in head");
    }
    const std::string_view line = data.substr(pos, lf - 1 - pos);
    pos = lf + 1;
    if (line.empty()) {
      head_bytes = pos;
      return complete();
    }
    if (line.size() > max_line) {
      return fieldTooLarge();
    }
    if (fields.size() >= limits.max_fields) {
      return fail(ParseError::kTooManyFields, "too many header fields");
    }
    if (const char* why = addFieldLine(line, fields)) {
      return bad(why);
    }
  }
}

FieldFacts collectFacts(const std::vector<HeaderField>& fields) noexcept {
  FieldFacts facts;
  for (const HeaderField& f : fields) {
    if (std::memchr(f.name.data(), '_', f.name.size()) != nullptr && isUnderscoreAlias(f.name)) {
      facts.underscore_alias = true;
    }
    switch (f.name.size()) {
      case 4:
        if (core::iequals(f.name, "host")) {
          ++facts.host_count;
          facts.host = f.value;
        }
        break;
      case 6:
        if (core::iequals(f.name, "expect") && core::iequals(f.value, "100-continue")) {
          facts.expect_continue = true;
        }
        break;
      case 10:
        if (core::iequals(f.name, "connection")) {
          scanConnection(f.value, facts);
        }
        break;
      case 13:
        if (core::iequals(f.name, "authorization")) {
          ++facts.auth_count;
        }
        break;
      case 14:
        if (core::iequals(f.name, "content-length")) {
          ++facts.cl_count;
          if (!parseContentLength(f.value, facts.content_length)) {
            facts.cl_valid = false;
          }
        }
        break;
      case 17:
        if (core::iequals(f.name, "transfer-encoding")) {
          ++facts.te_count;
          facts.te = f.value;
        }
        break;
      default:
        break;
    }
  }
  return facts;
}

ParseResult checkFraming(const FieldFacts& facts, Version version, bool& chunked) noexcept {
  chunked = false;
  if (facts.cl_count > 1) {
    return bad("duplicate Content-Length");
  }
  if (!facts.cl_valid) {
    return bad("malformed Content-Length");
  }
  if (facts.te_count == 0) {
    return complete();
  }
  if (facts.cl_count > 0) {
    return bad("Content-Length with Transfer-Encoding");
  }
  if (facts.te_count > 1) {
    return bad("repeated Transfer-Encoding");
  }
  if (version == Version::kHttp10) {
    return bad("Transfer-Encoding in HTTP/1.0");
  }
  if (core::iequals(facts.te, "chunked")) {
    chunked = true;
    return complete();
  }
  if (core::isToken(facts.te)) {
    return fail(ParseError::kNotImplemented, "unsupported transfer coding");
  }
  return bad("malformed Transfer-Encoding");
}

bool keepAlive(const FieldFacts& facts, Version version) noexcept {
  if (facts.conn_close) {
    return false;
  }
  return version == Version::kHttp11 || facts.conn_keep_alive;
}

}  // namespace gw::http::detail
