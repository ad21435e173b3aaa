#pragma once
// The pipeline stages' shared helpers (filters/ only; not part of the module's interface).

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/filters/context.h"
#include "gateway/filters/pipeline.h"
#include "gateway/policy/policy.h"

namespace gw::filters::detail {

constexpr size_t kMaxEchoedValue = 64;

// A value from the request, escaped and shortened for an error message.
std::string quoted(std::string_view v);
// identity.resource_metadata: the document when `path` is its well-known URI, the root
// form, or the form for the MCP endpoint's path; null otherwise (oauth.cc).
const policy::ResourceMetadata* metadataFor(const Snapshot& snap, std::string_view path) noexcept;
// The answer to a request for that document: 200 with it (GET, HEAD), a CORS preflight
// (OPTIONS), or 405.
FilterStatus metadataReply(RequestContext& ctx, const policy::ResourceMetadata& m);
// The `WWW-Authenticate: Bearer ...` line of a 401 or insufficient-scope 403 (RFC 6750 §3,
// RFC 9728 §5.1): `error` (may be null), the scopes to ask for, and resource_metadata when
// identity.resource_metadata is set (else realm="mcp-gateway").
std::string bearerChallenge(const policy::PolicySet& pol, const char* error,
                            const std::vector<std::string>& scopes);
// Stage 4 (oauth.cc): who is calling — the request's API key or JWT, else its verified client
// certificate — and whether Authorization goes upstream; 400/401 with a Bearer challenge.
FilterStatus identityStage(RequestContext& ctx) noexcept;
// The policy decision on `view` (403 with the rule's reason when denied).
FilterStatus policyCheck(RequestContext& ctx, const policy::RequestView& view) noexcept;
// Legacy inspection: route and policy on the body's view (legacy_stage.cc).
FilterStatus legacyBodyStage(RequestContext& ctx, std::string_view body) noexcept;

}  // namespace gw::filters::detail
