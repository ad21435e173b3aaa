// libFuzzer target: the policy loader (PolicySet::loadString). Runs hermetic
// (settings::setHermeticLoadForTesting): `jwt.keys_file` is never read (the JWKS parser has
// its own target, jwt_fuzz), so the loader touches no file and no network. A set that loads
// is then asked to authenticate and decide a few fixed requests, which exercises the
// compiled globs, rules, `unless`, `require` and API-key digests. Invariants: a set or
// errors, never both; every diagnostic has a message; a decision names a rule and a static
// reason; rate limits have a positive rate and a burst.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/message.h"
#include "gateway/mcp/contract.h"
#include "gateway/policy/policy.h"
#include "gateway/settings/settings.h"

namespace {

using gw::http::HeaderField;
using gw::policy::AuthResult;
using gw::policy::Identity;
using gw::policy::PolicySet;

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

// Decoded Mcp-* headers of a tools/call for delete_table with Tenant and Region params.
const gw::mcp::McpHeaders& toolCall() {
  static const gw::mcp::McpHeaders h = [] {
    gw::mcp::McpHeaders x;
    x.has_version = true;
    x.version = "2026-07-28";
    x.has_method = true;
    x.method = "tools/call";
    x.has_name = true;
    x.name = {"delete_table", "delete_table", false};
    x.params = {{"Tenant", {"acme", "acme", false}}, {"Region", {"eu-west1", "eu-west1", false}}};
    return x;
  }();
  return h;
}

void authenticateAndDecide(const PolicySet& set, const std::vector<HeaderField>& fields) {
  Identity id;
  const char* reason = nullptr;
  const AuthResult a = set.authenticate(fields, 1800000000, id, &reason);
  if (a == AuthResult::kMissing || a == AuthResult::kInvalid) {
    check(reason != nullptr && *reason != '\0');
    return;
  }
  check(id.authenticated == (a == AuthResult::kAuthenticated));
  const gw::policy::RequestView views[] = {
      {"tools/call", &toolCall()}, {"tools/list", nullptr}, {"", nullptr}};
  for (const gw::policy::RequestView& v : views) {
    const gw::policy::Decision d = set.decide(v, id);
    check(!d.rule.empty());
    check(d.reason != nullptr);
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gw::settings::setHermeticLoadForTesting(true);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  std::vector<gw::settings::Diagnostic> errors;
  const auto set = PolicySet::loadString(yaml, "/nonexistent-fuzz/policy.yaml", errors);
  check((set == nullptr) != errors.empty());
  for (const gw::settings::Diagnostic& d : errors) {
    check(!d.message.empty());
    check(!d.str().empty());
  }
  if (!set) {
    return 0;
  }
  check(set->jwt() == nullptr);  // hermetic: the key file is never read
  for (const gw::policy::RateLimitSpec& r : set->rateLimits()) {
    check(r.rate_per_sec > 0 && r.burst > 0 && !r.key.empty());
  }
  // The strict.yaml example's alice key, a JWT-shaped token, an unknown key, and nothing.
  const std::vector<std::vector<HeaderField>> requests = {
      {{"Authorization", "Bearer alice-example-key", "Authorization: Bearer alice-example-key"}},
      {{"Authorization", "Bearer a.b.c", "Authorization: Bearer a.b.c"}},
      {{"authorization", "Basic eDp5", "authorization: Basic eDp5"}},
      {{"Authorization", "Bearer nope", "Authorization: Bearer nope"}},
      {},
  };
  for (const auto& fields : requests) {
    authenticateAndDecide(*set, fields);
  }
  return 0;
}
