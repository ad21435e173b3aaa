#pragma once
// http/: HTTP/1.1 without I/O or policy — the strict head parser (llhttp plus the RFC 9112
// checks it lacks), head views, Host/authority rules, the chunked decoder, which fields a
// proxy forwards, and head serialisation.
// HTTP/1.1 message heads as views. Every string_view points into the caller's contiguous
// head bytes (the connection pulls the head up into one block before parsing), so a parsed
// head costs no heap string per field. The vectors are owned by the connection and reused
// across requests (clear() keeps their capacity).
//
// Sits at the bottom of the pipeline: server/ and proxy/ feed bytes to an Http1Parser and
// hand the resulting heads to filters/.

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gw::http {

enum class Version : uint8_t { kHttp10, kHttp11 };

// How the body after a head is delimited.
enum class BodyFraming : uint8_t {
  kNone,           // no body (no CL/TE on a request; 1xx/204/304 or HEAD answers)
  kContentLength,  // exactly content_length bytes
  kChunked,        // Transfer-Encoding: chunked
  kUntilClose,     // responses only: body runs until the upstream closes
};

struct HeaderField {
  std::string_view name;   // as sent (case preserved), a token
  std::string_view value;  // leading/trailing OWS removed; may be empty
  std::string_view line;   // the whole field line as sent, without its CRLF
};

struct RequestHead {
  std::string_view method;  // token, case-sensitive
  std::string_view target;  // request-target as sent
  std::string_view path;    // target up to '?' (absolute-form: the path part)
  Version version = Version::kHttp11;
  std::vector<HeaderField> fields;  // in arrival order
  BodyFraming framing = BodyFraming::kNone;
  uint64_t content_length = 0;   // when framing == kContentLength
  bool keep_alive = true;        // from version and Connection
  bool expect_continue = false;  // Expect: 100-continue present
  std::string_view host;         // Host value ("" when absent)
  size_t head_bytes = 0;         // bytes of the head including the blank line
  std::string_view raw;          // the head's bytes (head_bytes of them): every view is inside

  void clear() noexcept {
    method = target = path = host = raw = {};
    version = Version::kHttp11;
    fields.clear();
    framing = BodyFraming::kNone;
    content_length = 0;
    keep_alive = true;
    expect_continue = false;
    head_bytes = 0;
  }
};

struct ResponseHead {
  int status = 0;
  std::string_view reason;
  Version version = Version::kHttp11;
  std::vector<HeaderField> fields;
  BodyFraming framing = BodyFraming::kNone;
  uint64_t content_length = 0;
  bool keep_alive = true;  // false: the upstream connection must not be reused
  size_t head_bytes = 0;

  void clear() noexcept {
    status = 0;
    reason = {};
    version = Version::kHttp11;
    fields.clear();
    framing = BodyFraming::kNone;
    content_length = 0;
    keep_alive = true;
    head_bytes = 0;
  }
};

// `to` becomes a copy of `from` whose views point into `storage`, which receives a copy of
// from.raw (capacities reused): a head kept after the bytes it was parsed from are gone.
void copyHead(const RequestHead& from, std::string& storage, RequestHead& to);

// First field with this name (case-insensitive), or nullptr.
const HeaderField* findField(const std::vector<HeaderField>& fields,
                             std::string_view name) noexcept;

// Number of fields with this name (case-insensitive).
size_t countFields(const std::vector<HeaderField>& fields, std::string_view name) noexcept;

// Whether the query of request-target `target` (after '?', up to a '#') has a parameter
// named `name` (case-sensitive), its name percent-decoded ("access%5Ftoken" is
// "access_token") and '+' taken as a space; with or without '=value'. No allocation.
bool queryHasParam(std::string_view target, std::string_view name) noexcept;

// What a request's Expect fields ask for (RFC 9110 §10.1.1). Only `100-continue` (any case,
// exactly one field, no list) is understood: kContinue on HTTP/1.1, kNone on HTTP/1.0 (a
// server MUST ignore it there). Anything else — another expectation, a list, two fields, an
// empty value — is kUnsupported (answer 417).
enum class Expectation : uint8_t { kNone, kContinue, kUnsupported };
Expectation expectation(const std::vector<HeaderField>& fields, Version version) noexcept;

}  // namespace gw::http
