#pragma once
// admin/: who may read the admin endpoints (admin_auth). With admin_auth, every path but
// /healthz and /readyz (what probes ask) needs `Authorization: Bearer <token>`; unknown paths
// too, so a 404 tells nothing to a caller without the token. The presented token is compared
// with the configured one through their SHA-256 digests with CRYPTO_memcmp: the time taken
// says nothing about the token's content or its length. Pure (no libevent, no I/O): admin.cc
// asks once per request, on the admin thread, with the snapshot it serves the request from.

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

#include "gateway/settings/settings.h"

namespace gw::admin {

enum class AdminAuthResult : uint8_t {
  kOpen,      // no admin_auth, or an open path (/healthz, /readyz)
  kAccepted,  // the configured token
  kMissing,   // no Authorization field, a scheme other than Bearer, or an empty token
  kInvalid,   // a Bearer token that is not the configured one, or several Authorization fields
};

// /healthz and /readyz (as the request target's path, not decoded): open to anyone.
bool isOpenAdminPath(std::string_view path) noexcept;

// The verdict for a request for `path` carrying `count` Authorization fields, the first of
// which is `first` (ignored when count is 0). The scheme name is case-insensitive; one or more
// spaces follow it.
AdminAuthResult checkAdminAuth(const std::optional<settings::AdminAuth>& auth,
                               std::string_view path, size_t count,
                               std::string_view first) noexcept;

}  // namespace gw::admin
