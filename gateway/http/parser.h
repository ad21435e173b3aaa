#pragma once
// Http1Parser: strict HTTP/1.1 head parsing over a contiguous byte view. No I/O, no policy.
//
// The connection calls parse*() each time more bytes arrive, always with the whole head so
// far from its first byte (heads are bounded by HeadLimits, so re-scanning is cheap). The
// parser answers kIncomplete (need more bytes, no limit crossed yet), kComplete (the head is
// `out.head_bytes` long; body bytes, if any, follow) or kError (answer `error` and close).
//
// Rejections (RFC 9112 strictness, beyond what llhttp 8.1 does on its own):
//  - Content-Length together with Transfer-Encoding; duplicate Content-Length (even if
//    equal); Content-Length that is not 1*DIGIT or overflows 2^63 (`+5`, `1,1`, `-1`, ` `);
//  - Transfer-Encoding other than exactly one `chunked` (case-insensitive) → 501 for an
//    unknown coding, 400 for a list or a repeated header; HTTP/1.0 with Transfer-Encoding;
//  - obs-fold (a field line starting with SP/HTAB), whitespace between name and colon,
//    empty or non-token field names, bare CR or bare LF anywhere in the head, NUL or other
//    CTLs (except HTAB) in values, malformed request line (method not a token, more or fewer
//    than two single SPs, target empty or containing CTL/SP, version not HTTP/1.0|HTTP/1.1);
//  - Host (RFC 9112 §3.2, RFC 9110 §7.2): missing on HTTP/1.1, repeated, empty on HTTP/1.1,
//    a list, with userinfo, or not host[:port] (see host.h);
//  - request-target: a fragment; a byte 0x80-0xFF, or a percent-encoded NUL, CR or LF (`%00`,
//    `%0d`, `%0a`, either case: see targetFlaw()); absolute-form other than http(s), with
//    userinfo, or whose authority is not the Host's (host ignoring case, an absent port = the
//    scheme's default); authority-form with a method other than CONNECT; CONNECT with any
//    other form.
//    Asterisk-form and CONNECT/TRACE parse (the transport stage answers them 405);
//  - a field name with `_` that reads as a protected or hop-by-hop field (`Content_Length`,
//    `Mcp_Method`, see forwarding.h); Connection naming a protected field; two
//    Authorization fields;
//  - of these, a flawed target byte and two Authorization fields are refused only once the
//    whole head parsed (ParseResult::head_complete): the connection knows the path and can
//    answer the MCP endpoint's way (a JSON-RPC error);
//  - limits: request line longer than max_request_line → kUriTooLong (414); head longer
//    than max_head_bytes → kHeadTooLarge (431); more than max_fields fields → kTooManyFields
//    (431); one request field line longer than max_field_line → kFieldTooLarge (431).
//
// Empty lines (CRLF) before a request line are skipped (RFC 9112 §2.2) and counted in
// head_bytes; more than max_request_line bytes of them → 400. A bare LF there is an error.
// A CONNECT request is never keep-alive (what follows its head is tunnel payload).

#include <cstddef>
#include <memory>
#include <string_view>

#include "gateway/http/message.h"

namespace gw::http {

struct HeadLimits {
  size_t max_request_line = 8 * 1024;
  size_t max_head_bytes = 32 * 1024;
  size_t max_fields = 100;
  size_t max_field_line = 8 * 1024;  // one request field line "name: value", without CRLF
};

enum class ParseError : uint8_t {
  kNone,
  kBadRequest,      // 400 (502 when parsing an upstream response)
  kUriTooLong,      // 414
  kHeadTooLarge,    // 431
  kTooManyFields,   // 431
  kNotImplemented,  // 501: unknown transfer coding
  kFieldTooLarge,   // 431: one field line over max_field_line
};

enum class ParseStatus : uint8_t { kIncomplete, kComplete, kError };

struct ParseResult {
  ParseStatus status = ParseStatus::kIncomplete;
  ParseError error = ParseError::kNone;
  const char* reason = "";  // static text, short, safe to log and to send
  // kError only: the head parsed whole (`out` is filled as on kComplete, head_bytes
  // included) and breaks a rule that needs no close of its own (two Authorization fields, a
  // flawed target byte). The request is still refused (400); the connection may answer it in
  // the format of the endpoint it was for.
  bool head_complete = false;
};

// What one pass over a request-target finds (the first flaw; a fragment wins over the rest):
//  - kFragment: a `#`;
//  - kNul: `%00`;
//  - kEncodedCrLf: `%0d` or `%0a`, either case (a server that decodes the target would put a
//    line break into a header or a log line);
//  - kNonAscii: a raw byte 0x80-0xFF (RFC 3986 allows ASCII only; UTF-8 is percent-encoded).
// One scan, no allocation. A raw NUL, CR or LF never gets here (malformed request line).
enum class TargetFlaw : uint8_t { kNone, kFragment, kNul, kEncodedCrLf, kNonAscii };
TargetFlaw targetFlaw(std::string_view target) noexcept;

// HTTP status for a request-side parse error (400, 414, 431, 501).
int statusFor(ParseError e) noexcept;

class Http1Parser {
 public:
  virtual ~Http1Parser() = default;

  // Parses a request head at the start of `data`. On kComplete the views in `out` point into
  // `data` and stay valid as long as those bytes do. `out` is cleared first.
  virtual ParseResult parseRequest(std::string_view data, const HeadLimits& limits,
                                   RequestHead& out) noexcept = 0;

  // Parses an upstream response head. `request_method` decides framing for HEAD; a 1xx
  // interim head is reported as kComplete with out.status in 100..199 (the caller drops it
  // and parses again after out.head_bytes). Framing: 1xx/204/304 and HEAD → kNone;
  // chunked; Content-Length; otherwise kUntilClose (and keep_alive=false).
  virtual ParseResult parseResponse(std::string_view data, const HeadLimits& limits,
                                    std::string_view request_method,
                                    ResponseHead& out) noexcept = 0;
};

// The llhttp-backed implementation (llhttp 8.1 from Debian's node-llhttp + our checks).
std::unique_ptr<Http1Parser> makeHttp1Parser();

}  // namespace gw::http
