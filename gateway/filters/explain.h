#pragma once
// Explain: what the gateway would do with a request, computed by the stages real requests
// run (Pipeline::onHeaders / onBody, collectLimits) on a request built from a few inputs.
// No upstream is contacted and no rate-limit bucket is spent (local buckets are peeked).
// Used by the admin listener's /explain and by `mcp-gateway explain`.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/core/error.h"
#include "gateway/filters/snapshot.h"
#include "gateway/ratelimit/local_limiter.h"

namespace gw::filters {

struct ExplainInput {
  std::string method;                                        // Mcp-Method and the body's method
  std::optional<std::string> name;                           // Mcp-Name and params.name
  std::vector<std::pair<std::string, std::string>> params;   // Mcp-Param-{Name} → plain value
  std::vector<std::pair<std::string, std::string>> headers;  // extra fields (Authorization…)
  std::optional<std::string> protocol_version;               // absent: the first trusted version
  std::optional<std::string> body;  // absent: built from method, name, params
  std::string client_ip = "127.0.0.1";
  // servers: which server is asked — by name, or as a request would select it (its Host
  // and path). None of them: the only server (an error when there are several).
  std::optional<std::string> server;
  std::optional<std::string> host;
  std::optional<std::string> path;
};

// Reads the admin POST body: {"method": "...", "name": "...", "params": {"Region": "..."},
// "headers": {"Authorization": "..."}, "token": "...", "protocol_version": "...",
// "body": "..."}. False with `error` on anything else.
bool parseExplainJson(std::string_view json, ExplainInput& out, std::string& error);

// Adds one `key=value` input as the query string and the CLI spell it: method, name,
// version, token, param.<Name>, header.<Name>. False with `error` for an unknown key.
bool addExplainField(std::string_view key, std::string_view value, ExplainInput& out,
                     std::string& error);

// Reads the admin GET query string (without the '?'): `key=value` pairs joined by '&', keys
// and values percent-decoded ('+' is a space, as in HTML forms), each added with
// addExplainField. Empty pairs are skipped. False with `error` on a pair without '=', a
// malformed %-escape, or what addExplainField refuses.
bool parseExplainQuery(std::string_view query, ExplainInput& out, std::string& error);

// The server an explain input asks about (ExplainInput::server/host/path); null with `error`.
const Snapshot* explainServer(const Snapshot& root, const ExplainInput& in, std::string& error);

// The decision as a JSON object (one line). `limiter` may be null (no bucket state: every
// local limit reports "allowed": null). A decision to reject is an answer, not an error. The
// error is for inputs that cannot make a request at all: a param or header name that is not
// a header token, a header value with control characters, a head the parser refuses (over
// the limits); the admin listener answers it with 400, the command exits 2.
core::Result<std::string> explain(const Snapshot& snap, const ExplainInput& in,
                                  const ratelimit::LocalLimiter* limiter);

}  // namespace gw::filters
