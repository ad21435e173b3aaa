// libFuzzer target: the gateway.yaml loader (settings::loadString). Runs hermetic
// (settings::setHermeticLoadForTesting): host names are not resolved (no DNS from a fuzzer)
// and policy files are not looked at; IP literals, every value grammar, routes, limits and
// the diagnostics are. Invariants: a snapshot or errors, never both; every diagnostic has a
// message and sane position; a snapshot's routes all point at an upstream it has, every
// endpoint has a numeric address, every upstreams[].headers name is a token and no value
// holds CR, LF or NUL; a non-loopback admin comes only with admin_auth (never, hermetic: the
// token file is not read).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "gateway/core/ascii.h"
#include "gateway/settings/settings.h"

namespace {

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  gw::settings::setHermeticLoadForTesting(true);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view yaml(reinterpret_cast<const char*>(data), size);
  const gw::settings::LoadResult r = gw::settings::loadString(yaml, "/nonexistent-fuzz/gw.yaml");
  check((r.settings == nullptr) != r.errors.empty());
  for (const gw::settings::Diagnostic& d : r.errors) {
    check(!d.message.empty());
    check(d.line >= 0 && d.column >= 0);
    check(!d.str().empty());
  }
  if (r.settings) {
    const gw::settings::Settings& s = *r.settings;
    for (size_t i = 0; i < s.routes.size(); ++i) {
      const gw::settings::Route& route = s.routes[i];
      check(route.upstream_index < s.upstreams.size());
      check(s.upstreams[route.upstream_index].name == route.upstream);
    }
    for (const gw::settings::Upstream& u : s.upstreams) {
      check(!u.endpoints.empty());
      for (const gw::settings::Address& a : u.endpoints) {
        check(!a.ip.empty());
      }
      for (const auto& [name, value] : u.headers) {
        check(gw::core::isToken(name));
        check(value.find_first_of(std::string_view("\r\n\0", 3)) == std::string::npos);
      }
    }
    check(!s.admin_auth);  // hermetic: the token file is never read
    check(!s.admin || gw::settings::isLoopback(s.admin->ip));
    check(s.trusted_proxies.size() == s.trusted_proxies_text.size());
    check(s.policy_files.empty());  // hermetic: never looked at
  }
  return 0;
}
