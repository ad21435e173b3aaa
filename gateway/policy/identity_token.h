#pragma once
// policy/: the JWTs the gateway signs for signed_identity upstreams (upstreams[].auth) — who
// is calling, said by the gateway to an upstream that has no identity provider of its own —
// and the JWKS document that publishes their keys (GET /.well-known/jwks.json on the admin
// listener).

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "gateway/policy/policy.h"
#include "gateway/settings/settings.h"

namespace gw::policy {

// A compact JWS (header.claims.signature) for the caller `id` to the upstream `auth`:
// header {alg, typ "JWT", kid}; claims iss (auth.issuer), sub, aud (auth.audience), iat,
// exp (iat + auth.ttl), jti (`jti`), groups, scope (space-separated, when any), client_id
// (the credential's client_id or azp claim, when any). Empty when signing fails.
std::string signIdentity(const settings::UpstreamAuth& auth, const Identity& id, int64_t now_unix,
                         const std::string& jti);

// {"keys":[...]}: the public JWK of every distinct signed_identity key of `upstreams`.
std::string identityJwks(const std::vector<const settings::Upstream*>& upstreams);

}  // namespace gw::policy
