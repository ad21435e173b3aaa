// admin/auth: which admin requests need the admin_auth token and whether the one presented is
// it (RFC 6750 §2.1 Authorization: Bearer; the scheme name ignores case).

#include "gateway/admin/auth.h"

#include <openssl/sha.h>

#include <catch.hpp>
#include <optional>
#include <string>
#include <string_view>

namespace gw::admin {
namespace {

constexpr std::string_view kToken = "0123456789abcdef0123456789abcdef";

std::optional<settings::AdminAuth> authFor(std::string_view token) {
  settings::AdminAuth a;
  a.token_file = "/run/secrets/admin_token";
  a.token = std::string(token);
  SHA256(reinterpret_cast<const unsigned char*>(token.data()), token.size(), a.token_sha256.data());
  return a;
}

TEST_CASE("admin auth: without admin_auth every path is open", "[admin][auth]") {
  const std::optional<settings::AdminAuth> none;
  for (const char* path : {"/metrics", "/config", "/explain", "/nope", "/healthz"}) {
    CHECK(checkAdminAuth(none, path, 0, "") == AdminAuthResult::kOpen);
    CHECK(checkAdminAuth(none, path, 1, "Bearer wrong") == AdminAuthResult::kOpen);
  }
}

TEST_CASE("admin auth: /healthz and /readyz stay open, everything else needs the token",
          "[admin][auth]") {
  const auto auth = authFor(kToken);
  CHECK(checkAdminAuth(auth, "/healthz", 0, "") == AdminAuthResult::kOpen);
  CHECK(checkAdminAuth(auth, "/readyz", 1, "Bearer wrong") == AdminAuthResult::kOpen);
  // Exact paths only: the target is not decoded, so a spelling of it needs the token.
  for (const char* path : {"/metrics", "/config", "/explain", "/pins", "/federation", "/nope", "/",
                           "/healthz/", "/%68ealthz", "/readyz.json", "//healthz"}) {
    INFO(path);
    CHECK(checkAdminAuth(auth, path, 0, "") == AdminAuthResult::kMissing);
  }
  CHECK(isOpenAdminPath("/healthz"));
  CHECK_FALSE(isOpenAdminPath("/HEALTHZ"));
}

TEST_CASE("admin auth: the Bearer credential, as sent", "[admin][auth]") {
  const auto auth = authFor(kToken);
  const std::string t(kToken);
  struct Case {
    std::string value;
    AdminAuthResult want;
  };
  const Case cases[] = {
      {"Bearer " + t, AdminAuthResult::kAccepted},
      {"bearer " + t, AdminAuthResult::kAccepted},
      {"BEARER " + t, AdminAuthResult::kAccepted},
      {"BeArEr    " + t, AdminAuthResult::kAccepted},
      {"Bearer " + t + " ", AdminAuthResult::kAccepted},
      {"Bearer " + t + "x", AdminAuthResult::kInvalid},                        // longer
      {"Bearer " + t.substr(1), AdminAuthResult::kInvalid},                    // shorter
      {"Bearer " + t.substr(0, 31) + "F", AdminAuthResult::kInvalid},          // last byte
      {"Bearer 0123456789ABCDEF0123456789ABCDEF", AdminAuthResult::kInvalid},  // case matters
      {"Bearer x", AdminAuthResult::kInvalid},
      {"Bearer " + t + " extra", AdminAuthResult::kInvalid},
      {"Bearer", AdminAuthResult::kMissing},
      {"Bearer ", AdminAuthResult::kMissing},
      {"Bearer    ", AdminAuthResult::kMissing},
      {"Bearer\t" + t, AdminAuthResult::kMissing},  // 1*SP
      {"Bearer" + t, AdminAuthResult::kMissing},
      {"Basic " + t, AdminAuthResult::kMissing},
      {"Token " + t, AdminAuthResult::kMissing},
      {t, AdminAuthResult::kMissing},
      {"", AdminAuthResult::kMissing},
  };
  for (const Case& c : cases) {
    INFO(c.value);
    CHECK(checkAdminAuth(auth, "/metrics", 1, c.value) == c.want);
  }
  CHECK(checkAdminAuth(auth, "/metrics", 0, "Bearer " + t) == AdminAuthResult::kMissing);
  // Two Authorization fields: ambiguous, refused even when one is right.
  CHECK(checkAdminAuth(auth, "/metrics", 2, "Bearer " + t) == AdminAuthResult::kInvalid);
}

TEST_CASE("admin auth: the configured digest decides (a reloaded token replaces the old)",
          "[admin][auth]") {
  const auto old_auth = authFor(kToken);
  const auto new_auth = authFor("a-new-token-of-enough-bytes");
  const std::string old_cred = "Bearer " + std::string(kToken);
  CHECK(checkAdminAuth(old_auth, "/config", 1, old_cred) == AdminAuthResult::kAccepted);
  CHECK(checkAdminAuth(new_auth, "/config", 1, old_cred) == AdminAuthResult::kInvalid);
  CHECK(checkAdminAuth(new_auth, "/config", 1, "Bearer a-new-token-of-enough-bytes") ==
        AdminAuthResult::kAccepted);
}

}  // namespace
}  // namespace gw::admin
