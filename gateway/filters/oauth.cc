// The gateway as the OAuth resource server (issue #17): the RFC 9728 protected resource
// metadata it answers itself, and the RFC 6750 challenges of its 401s and 403s.

#include <string>
#include <string_view>
#include <vector>

#include "gateway/filters/stages.h"

namespace gw::filters::detail {

// identity.resource_metadata: GET (or HEAD) of its well-known URI, of the root form, or of
// the form for the MCP endpoint's path answers the RFC 9728 document. Null when `path` is
// none of them.
const policy::ResourceMetadata* metadataFor(const Snapshot& snap, std::string_view path) noexcept {
  const policy::ResourceMetadata* m = snap.policy->resourceMetadata();
  constexpr std::string_view kWellKnown = "/.well-known/oauth-protected-resource";
  if (m == nullptr || !path.starts_with(kWellKnown)) {
    return nullptr;
  }
  const std::string_view rest = path.substr(kWellKnown.size());
  if (rest.empty() || path == m->well_known_path || rest == snap.settings->endpoint) {
    return m;
  }
  return nullptr;
}

FilterStatus metadataReply(RequestContext& ctx, const policy::ResourceMetadata& m) {
  ctx.reply = LocalReply{};
  ctx.reply.json_rpc = false;
  ctx.reply.reason = "resource_metadata";
  if (ctx.head->method == "OPTIONS") {
    // A browser-based client's CORS preflight (SDKs send MCP-Protocol-Version with it).
    ctx.reply.status = 200;
    ctx.reply.extra_headers =
        "Allow: GET, HEAD, OPTIONS\r\nAccess-Control-Allow-Origin: *\r\n"
        "Access-Control-Allow-Methods: GET, HEAD, OPTIONS\r\n"
        "Access-Control-Allow-Headers: *\r\nAccess-Control-Max-Age: 86400\r\n";
    return FilterStatus::kLocalReply;
  }
  if (ctx.head->method != "GET" && ctx.head->method != "HEAD") {
    ctx.reply.status = 405;
    ctx.reply.text = "method not allowed\n";
    ctx.reply.extra_headers = "Allow: GET, HEAD, OPTIONS\r\n";
    ctx.reply.reason = "method_not_allowed";
    return FilterStatus::kLocalReply;
  }
  ctx.reply.status = 200;
  ctx.reply.text = m.document;
  ctx.reply.content_type = "application/json";
  // Public metadata a browser-based client reads across origins (RFC 9728 §3).
  ctx.reply.extra_headers = "Access-Control-Allow-Origin: *\r\n";
  return FilterStatus::kLocalReply;
}

std::string bearerChallenge(const policy::PolicySet& pol, const char* error,
                            const std::vector<std::string>& scopes) {
  std::string h = "WWW-Authenticate: Bearer ";
  const policy::ResourceMetadata* m = pol.resourceMetadata();
  const size_t start = h.size();
  auto param = [&](std::string_view name, std::string_view value) {
    h += h.size() > start ? ", " : "";
    h += name;
    h += "=\"";
    h += value;  // scopes and the URL were checked at load: no quote, backslash or control
    h += '"';
  };
  if (m == nullptr) {
    param("realm", "mcp-gateway");
  }
  if (error != nullptr) {
    param("error", error);
  }
  if (!scopes.empty()) {
    std::string joined;
    for (const std::string& s : scopes) {
      joined += joined.empty() ? "" : " ";
      joined += s;
    }
    param("scope", joined);
  }
  if (m != nullptr) {
    param("resource_metadata", m->url);
  }
  h += "\r\n";
  return h;
}

}  // namespace gw::filters::detail
