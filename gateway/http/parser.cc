// The llhttp-backed Http1Parser (see parser.h for the contract).
//
// Work is split in two passes over the head, both over the caller's bytes and neither
// allocating (beyond the reused `fields` vector):
//  1. our strict scan: finds the end of the head, enforces the limits, checks the start line
//     and every field line (CRLF only, token names, no obs-fold, no CTL in values), records
//     the field views, then derives framing, Host, keep-alive and Expect from the fields (the
//     field-line scan and the facts are head_scan.cc);
//  2. llhttp over exactly the head bytes, paused at on_headers_complete: a second opinion on
//     the start line (known methods, URL syntax, version). It must stop exactly where we
//     found the end of the head, otherwise the head is rejected: any disagreement between
//     the two parsers about where a message ends is the root of request smuggling.
//
// Responses have no separate status-line limit: the status line counts against
// max_head_bytes only. The reason phrase may be absent ("HTTP/1.1 200" with or without the
// trailing SP), which llhttp also accepts and RFC 9112 tells clients to ignore anyway.

#include "gateway/http/parser.h"

#include <llhttp.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "gateway/core/ascii.h"
#include "gateway/http/forwarding.h"
#include "gateway/http/head_scan.h"
#include "gateway/http/host.h"

namespace gw::http {

namespace {

using namespace detail;  // head_scan.h: the strict scan and the ParseResult shorthands

int pauseAtHead(llhttp_t*) {
  return HPE_PAUSED;
}

const llhttp_settings_t& llhttpSettings() noexcept {
  static const llhttp_settings_t settings = [] {
    llhttp_settings_t s;
    llhttp_settings_init(&s);
    s.on_headers_complete = pauseAtHead;
    return s;
  }();
  return settings;
}

// The second opinion: llhttp must accept the head and stop exactly at its end.
ParseResult crossCheck(llhttp_t& parser, llhttp_type_t type, std::string_view head) noexcept {
  llhttp_init(&parser, type, &llhttpSettings());
  const llhttp_errno_t err = llhttp_execute(&parser, head.data(), head.size());
  if (err != HPE_PAUSED) {
    const char* reason =
        err == HPE_OK ? "head not complete for llhttp" : llhttp_get_error_reason(&parser);
    return bad(reason != nullptr ? reason : "rejected by llhttp");
  }
  if (llhttp_get_error_pos(&parser) != head.data() + head.size()) {
    return bad("head end disagreement");
  }
  return complete();
}

// Host (RFC 9112 §3.2, RFC 9110 §7.2) and the field-name rules of a request. (Two
// Authorization fields are refused once the whole head parsed: see parseRequest.)
ParseResult checkRequestFields(const FieldFacts& facts, Version version) noexcept {
  if (facts.underscore_alias) {
    return bad("underscore in the name of a protected field");
  }
  if (facts.conn_protected) {
    return bad("Connection names a protected field");
  }
  if (facts.host_count > 1) {
    return bad("duplicate Host");
  }
  if (facts.host_count == 0) {
    return version == Version::kHttp11 ? bad("missing Host") : complete();
  }
  if (facts.host.empty()) {
    // RFC 9112 §3.2 allows an empty Host only for a target without authority, which no
    // request to this endpoint has; HTTP/1.0 may leave it out altogether.
    return version == Version::kHttp11 ? bad("empty Host") : complete();
  }
  if (facts.host.find(',') != std::string_view::npos) {
    return bad("Host is a list");
  }
  if (facts.host.find('@') != std::string_view::npos) {
    return bad("userinfo in Host");
  }
  HostPort hp;
  if (!parseHostPort(facts.host, hp)) {
    return bad("invalid Host");
  }
  return complete();
}

// The reason a flawed target byte is refused with (see targetFlaw), "" for none.
const char* targetFlawReason(TargetFlaw f) noexcept {
  switch (f) {
    case TargetFlaw::kFragment:
      return "fragment in request target";
    case TargetFlaw::kNul:
      return "NUL in request target";
    case TargetFlaw::kEncodedCrLf:
      return "encoded CR or LF in request target";
    case TargetFlaw::kNonAscii:
      return "non-ASCII byte in request target";
    default:
      return "";
  }
}

// The request-target's form (RFC 9112 §3.2): origin-form, asterisk-form (answered 405 by the
// transport stage), absolute-form http(s) whose authority names the same host and port as
// Host, or authority-form for CONNECT only (answered 405). Its bytes are targetFlaw()'s.
ParseResult checkTarget(std::string_view method, std::string_view target,
                        const FieldFacts& facts) noexcept {
  const bool connect = method == "CONNECT";
  if (target.front() == '/') {
    return connect ? bad("CONNECT without authority-form target") : complete();
  }
  if (target == "*") {
    return connect ? bad("CONNECT with asterisk-form target") : complete();
  }
  AbsoluteTarget abs;
  if (!connect && splitAbsoluteTarget(target, abs)) {
    if (abs.authority.find('@') != std::string_view::npos) {
      return bad("userinfo in request target");
    }
    HostPort th;
    if (!parseHostPort(abs.authority, th)) {
      return bad("invalid authority in request target");
    }
    HostPort hh;
    if (facts.host_count == 0 || !parseHostPort(facts.host, hh)) {
      return bad("absolute-form target without Host");
    }
    if (!sameAuthority(th, abs.default_port, hh)) {
      return bad("request target authority does not match Host");
    }
    return complete();
  }
  HostPort hp;
  if (parseHostPort(target, hp) && !hp.port.empty()) {
    return connect ? complete() : bad("authority-form target without CONNECT");
  }
  return bad("malformed request target");
}

void splitTarget(RequestHead& out) noexcept {
  std::string_view t = out.target;
  if (t.front() != '/') {
    // absolute-form: the path starts at the first '/' after "scheme://"; authority-form
    // and asterisk-form have no path part beyond the target itself.
    const size_t scheme = t.find("://");
    if (scheme != std::string_view::npos) {
      const size_t slash = t.find_first_of("/?", scheme + 3);
      t = slash == std::string_view::npos ? t.substr(t.size()) : t.substr(slash);
    }
  }
  out.path = t.substr(0, t.find('?'));
}

class LlhttpParser final : public Http1Parser {
 public:
  ParseResult parseRequest(std::string_view data, const HeadLimits& limits,
                           RequestHead& out) noexcept override;
  ParseResult parseResponse(std::string_view data, const HeadLimits& limits,
                            std::string_view request_method, ResponseHead& out) noexcept override;

 private:
  llhttp_t parser_{};
};

ParseResult LlhttpParser::parseRequest(std::string_view data, const HeadLimits& limits,
                                       RequestHead& out) noexcept {
  out.clear();
  // RFC 9112 §2.2: empty lines (CRLF only) before the request line are skipped. They count
  // in head_bytes and against max_head_bytes, and at most max_request_line bytes of them are
  // taken, so a stream of CRLFs cannot hold the connection.
  size_t start = 0;
  while (start + 1 < data.size() && data[start] == '\r' && data[start + 1] == '\n') {
    start += 2;
    if (start > limits.max_request_line) {
      return bad("too many empty lines before the request line");
    }
  }
  // Request line: its LF must come within max_request_line + CRLF.
  const size_t line_window = std::min(data.size(), start + limits.max_request_line + 2);
  const size_t lf = findLf(data, start, line_window);
  if (lf == std::string_view::npos) {
    if (data.size() - start >= limits.max_request_line + 2) {
      return fail(ParseError::kUriTooLong, "request line too long");
    }
    if (data.size() > limits.max_head_bytes) {
      return fail(ParseError::kHeadTooLarge, "request head too large");
    }
    return incomplete();
  }
  if (lf == start || data[lf - 1] != '\r') {
    return bad("bare LF in head");
  }
  const std::string_view line = data.substr(start, lf - 1 - start);

  const size_t sp1 = line.find(' ');
  if (sp1 == std::string_view::npos || !core::isToken(line.substr(0, sp1))) {
    return bad("malformed request line");
  }
  size_t end = sp1 + 1;
  while (end < line.size()) {
    const auto c = static_cast<unsigned char>(line[end]);
    if (c <= 0x20 || c == 0x7f) {
      break;
    }
    ++end;
  }
  if (end == sp1 + 1 || end == line.size() || line[end] != ' ' ||
      !isVersion(line.substr(end + 1), out.version)) {
    return bad("malformed request line");
  }
  out.method = line.substr(0, sp1);
  out.target = line.substr(sp1 + 1, end - sp1 - 1);

  if (ParseResult r =
          scanFields(data, lf + 1, limits, limits.max_field_line, out.fields, out.head_bytes);
      r.status != ParseStatus::kComplete) {
    return r;
  }
  out.raw = data.substr(0, out.head_bytes);

  const FieldFacts facts = collectFacts(out.fields);
  bool chunked = false;
  if (ParseResult r = checkFraming(facts, out.version, chunked);
      r.status != ParseStatus::kComplete) {
    return r;
  }
  if (ParseResult r = checkRequestFields(facts, out.version); r.status != ParseStatus::kComplete) {
    return r;
  }
  const TargetFlaw flaw = targetFlaw(out.target);
  if (flaw == TargetFlaw::kFragment) {
    return bad(targetFlawReason(flaw));
  }
  if (ParseResult r = checkTarget(out.method, out.target, facts);
      r.status != ParseStatus::kComplete) {
    return r;
  }
  if (ParseResult r = crossCheck(parser_, HTTP_REQUEST, data.substr(start, out.head_bytes - start));
      r.status != ParseStatus::kComplete) {
    return r;
  }

  if (chunked) {
    out.framing = BodyFraming::kChunked;
  } else if (facts.cl_count == 1) {
    out.framing = BodyFraming::kContentLength;
    out.content_length = facts.content_length;
  }
  // Bytes after a CONNECT head are tunnel payload, never a next request: the gateway answers
  // it (405) and closes.
  out.keep_alive = keepAlive(facts, out.version) && out.method != "CONNECT";
  out.expect_continue = facts.expect_continue;
  out.host = facts.host;
  splitTarget(out);
  // Refused, but only now that the head is whole (ParseResult::head_complete).
  const char* refusal = flaw != TargetFlaw::kNone ? targetFlawReason(flaw)
                        : facts.auth_count > 1    ? "duplicate Authorization"
                                                  : nullptr;
  if (refusal != nullptr) {
    ParseResult r = bad(refusal);
    r.head_complete = true;
    return r;
  }
  return complete();
}

ParseResult LlhttpParser::parseResponse(std::string_view data, const HeadLimits& limits,
                                        std::string_view request_method,
                                        ResponseHead& out) noexcept {
  out.clear();
  const size_t lf = findLf(data, 0, std::min(data.size(), limits.max_head_bytes));
  if (lf == std::string_view::npos) {
    if (data.size() > limits.max_head_bytes) {
      return fail(ParseError::kHeadTooLarge, "response head too large");
    }
    return incomplete();
  }
  if (lf == 0 || data[lf - 1] != '\r') {
    return bad("bare LF in head");
  }
  const std::string_view line = data.substr(0, lf - 1);
  // "HTTP/1.x" SP 3DIGIT [ SP reason ]
  if (line.size() < 12 || !isVersion(line.substr(0, 8), out.version) || line[8] != ' ') {
    return bad("malformed status line");
  }
  int status = 0;
  for (size_t i = 9; i < 12; ++i) {
    if (line[i] < '0' || line[i] > '9') {
      return bad("malformed status line");
    }
    status = status * 10 + (line[i] - '0');
  }
  if (status < 100) {
    return bad("malformed status line");
  }
  if (line.size() > 12) {
    if (line[12] != ' ') {
      return bad("malformed status line");
    }
    for (size_t i = 13; i < line.size(); ++i) {
      if (!core::isFieldValueChar(static_cast<unsigned char>(line[i]))) {
        return bad("control character in reason phrase");
      }
    }
    out.reason = line.substr(13);
  }
  out.status = status;

  if (ParseResult r = scanFields(data, lf + 1, limits, std::numeric_limits<size_t>::max(),
                                 out.fields, out.head_bytes);
      r.status != ParseStatus::kComplete) {
    return r;
  }
  const FieldFacts facts = collectFacts(out.fields);
  bool chunked = false;
  if (ParseResult r = checkFraming(facts, out.version, chunked);
      r.status != ParseStatus::kComplete) {
    return r;
  }
  if (ParseResult r = crossCheck(parser_, HTTP_RESPONSE, data.substr(0, out.head_bytes));
      r.status != ParseStatus::kComplete) {
    return r;
  }

  out.keep_alive = keepAlive(facts, out.version);
  if (status < 200 || status == 204 || status == 304 || request_method == "HEAD") {
    out.framing = BodyFraming::kNone;
  } else if (chunked) {
    out.framing = BodyFraming::kChunked;
  } else if (facts.cl_count == 1) {
    out.framing = BodyFraming::kContentLength;
    out.content_length = facts.content_length;
  } else {
    out.framing = BodyFraming::kUntilClose;
    out.keep_alive = false;
  }
  return complete();
}

}  // namespace

TargetFlaw targetFlaw(std::string_view target) noexcept {
  TargetFlaw first = TargetFlaw::kNone;
  const size_t n = target.size();
  for (size_t i = 0; i < n; ++i) {
    const auto c = static_cast<unsigned char>(target[i]);
    TargetFlaw f = TargetFlaw::kNone;
    if (c == '#') {
      return TargetFlaw::kFragment;
    }
    if (c >= 0x80) {
      f = TargetFlaw::kNonAscii;
    } else if (c == '%' && i + 2 < n && target[i + 1] == '0') {
      const char d = target[i + 2];
      if (d == '0') {
        f = TargetFlaw::kNul;
      } else if (d == 'd' || d == 'D' || d == 'a' || d == 'A') {
        f = TargetFlaw::kEncodedCrLf;
      }
    }
    if (first == TargetFlaw::kNone) {
      first = f;
    }
  }
  return first;
}

int statusFor(ParseError e) noexcept {
  switch (e) {
    case ParseError::kNone:
      return 200;
    case ParseError::kBadRequest:
      return 400;
    case ParseError::kUriTooLong:
      return 414;
    case ParseError::kHeadTooLarge:
    case ParseError::kTooManyFields:
    case ParseError::kFieldTooLarge:
      return 431;
    case ParseError::kNotImplemented:
      return 501;
  }
  return 400;
}

std::unique_ptr<Http1Parser> makeHttp1Parser() {
  return std::make_unique<LlhttpParser>();
}

}  // namespace gw::http
