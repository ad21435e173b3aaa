#pragma once
// client/: what the gateway's own outbound HTTP client (client/http_client.h) is asked and
// what it answers — the request (URL, fields, body, TLS trust, limits), the response, the
// error kinds, and the pure helpers around them: the URL parser and the JSON and
// application/x-www-form-urlencoded bodies. No I/O here.

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/tls/tls.h"

namespace gw::client {

using Fields = std::vector<std::pair<std::string, std::string>>;

// An absolute http(s) URL split the way a request needs it.
struct Url {
  bool https = true;
  std::string host;  // an IPv6 literal without its brackets; as written otherwise
  uint16_t port = 443;
  std::string target;  // path and query; "/" when the URL has none; the fragment dropped

  // The Host field value: the host (an IPv6 literal bracketed) and the port when it is not
  // the scheme's default.
  std::string authority() const;
};

// Parses `url`; false with `error` on anything but http(s)://host[:port][/path][?query][#frag]
// (userinfo, an empty host, a port outside 1..65535, spaces or control bytes are refused).
bool parseUrl(std::string_view url, Url& out, std::string& error);

// Percent-encodes every byte but RFC 3986 unreserved ones (ALPHA DIGIT - . _ ~).
std::string percentEncode(std::string_view s);

// One application/x-www-form-urlencoded body (the WHATWG URL standard's serializer, which
// OAuth 2.0 token and introspection endpoints take): `name=value` pairs joined with '&', ALPHA
// DIGIT * - . _ kept, a space as '+', every other byte as %XX (upper case).
std::string formEncode(const Fields& fields);

struct Request {
  std::string method = "GET";
  std::string url;  // http:// or https://
  // Sent as given after Host (and before Content-Type, Content-Length, Connection, which the
  // client writes itself and a request must not set). Names must be tokens, values must not
  // hold CR, LF or NUL; otherwise the request fails with kInvalidRequest.
  Fields headers;
  std::string body;
  std::string content_type;  // sent when not empty
  // https only: the PEM CA bundle the server's certificate must chain to ("" = the system
  // store), read once per client and file. The server's name (SNI, and the name the
  // certificate must carry) is the URL host.
  std::string ca_file;
  // https only: when set, the client context to use instead of ca_file (tls::makeClientContext),
  // for a caller that owns its trust settings (and re-reads them when they change).
  tls::ContextPtr tls_context;
  // Name resolution, TCP connect and TLS handshake, from when the connection is started.
  std::chrono::milliseconds connect_timeout{5000};
  // From send() to the end of the response (the connect included).
  std::chrono::milliseconds total_timeout{30000};
  // The response body (de-chunked) may be at most this long; longer fails with kTooLarge.
  size_t max_body_bytes = 1024 * 1024;
  // false: `Connection: close`, one connection per request. true: the connection may come
  // from, and go back to, the client's idle pool for this scheme, host, port and ca_file.
  bool keep_alive = false;

  // The body as JSON text (not checked), Content-Type application/json.
  void setJson(std::string json);
  // The body as formEncode(fields), Content-Type application/x-www-form-urlencoded.
  void setForm(const Fields& fields);
};

struct Response {
  int status = 0;
  Fields headers;  // names lower-cased, in order
  std::string body;

  // The first field named `name` (lower case), or null.
  const std::string* header(std::string_view name) const noexcept;
};

enum class Error : uint8_t {
  kNone,
  kInvalidRequest,  // a URL or a header field the client will not send
  kDns,             // the host name did not resolve
  kConnect,         // the TCP connect failed (refused, unreachable, reset)
  kTls,             // the handshake failed: certificate, host name, protocol
  kTimeout,         // connect_timeout or total_timeout passed
  kTooLarge,        // the response head or body over its limit
  kBadResponse,     // bytes that are not an HTTP/1.x response, or cut short
};
const char* errorName(Error e) noexcept;

// What a request's callback receives: a response (error kNone, any status) or an error with
// a short reason ("cannot connect: Connection refused").
struct Result {
  Error error = Error::kNone;
  std::string reason;
  Response response;

  bool ok() const noexcept { return error == Error::kNone; }
};

}  // namespace gw::client
