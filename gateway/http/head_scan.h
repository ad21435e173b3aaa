#pragma once
// http/: the first of the request parser's two passes over a head (see parser.cc): the strict
// scan of the field lines (CRLF only, token names, no obs-fold, no CTL in values, the limits)
// and what the fields say about framing, Host and connection management. Private to
// http/parser.cc and head_scan.cc; pure, allocation-free beyond the reused `fields` vector.

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "gateway/http/parser.h"

namespace gw::http::detail {

// ParseResult shorthands.
constexpr ParseResult incomplete() noexcept {
  return ParseResult{};
}

constexpr ParseResult fail(ParseError e, const char* reason) noexcept {
  return ParseResult{ParseStatus::kError, e, reason};
}

constexpr ParseResult bad(const char* reason) noexcept {
  return fail(ParseError::kBadRequest, reason);
}

constexpr ParseResult complete() noexcept {
  return ParseResult{ParseStatus::kComplete, ParseError::kNone, ""};
}

// The HTTP-version of a start line: HTTP/1.1 and HTTP/1.0 only.
bool isVersion(std::string_view v, Version& out) noexcept;

// Position of the LF ending the line that starts at `pos`, searched in [pos, end), or npos.
size_t findLf(std::string_view data, size_t pos, size_t end) noexcept;

// Scans field lines from `pos` (the first byte after the start line) to the blank line.
// `max_line` bounds one field line without its CRLF (requests: max_field_line). On
// kComplete sets head_bytes.
ParseResult scanFields(std::string_view data, size_t pos, const HeadLimits& limits, size_t max_line,
                       std::vector<HeaderField>& fields, size_t& head_bytes) noexcept;

// What the fields say about framing and connection management.
struct FieldFacts {
  size_t cl_count = 0;
  size_t te_count = 0;
  size_t host_count = 0;
  size_t auth_count = 0;
  uint64_t content_length = 0;
  bool cl_valid = true;
  std::string_view te;
  std::string_view host;
  bool conn_close = false;
  bool conn_keep_alive = false;
  bool expect_continue = false;
  bool conn_protected = false;    // Connection names a field the gateway relies on
  bool underscore_alias = false;  // a `_` spelling of a protected or hop-by-hop field
};

// Reads the facts from the field lines scanFields recorded.
FieldFacts collectFacts(const std::vector<HeaderField>& fields) noexcept;

// Framing checks shared by requests and responses. Sets `chunked` when TE: chunked.
ParseResult checkFraming(const FieldFacts& facts, Version version, bool& chunked) noexcept;

// Whether the connection may carry another message after this one (Connection, version).
bool keepAlive(const FieldFacts& facts, Version version) noexcept;

}  // namespace gw::http::detail
