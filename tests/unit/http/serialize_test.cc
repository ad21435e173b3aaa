// http/serialize: appendFieldsSetting, the head an upstream with `headers` receives — the
// configured fields replace the request's fields of the same names (ASCII case-insensitive)
// and come after the others.

#include "gateway/http/serialize.h"

#include <catch.hpp>
#include <string>
#include <utility>
#include <vector>

namespace gw::http {
namespace {

TEST_CASE("appendFieldsSetting: configured fields replace same-named ones", "[http][serialize]") {
  const std::vector<Field> fields = {
      {"Accept", "application/json"}, {"authorization", "Bearer client-token"},
      {"X-Tenant", "client-says"},    {"x-tenant", "client-says-again"},
      {"Mcp-Method", "tools/call"},
  };
  const std::vector<std::pair<std::string, std::string>> set = {
      {"Authorization", "Bearer gateway-token"},
      {"X-TENANT", "acme"},
      {"X-Extra", ""},
  };
  std::string out;
  appendFieldsSetting(out, fields, set);
  CHECK(out ==
        "Accept: application/json\r\n"
        "Mcp-Method: tools/call\r\n"
        "Authorization: Bearer gateway-token\r\n"
        "X-TENANT: acme\r\n"
        "X-Extra: \r\n");
  // Nothing configured: the fields as given (appendFields).
  std::string plain;
  appendFieldsSetting(plain, fields, {});
  std::string want;
  appendFields(want, fields);
  CHECK(plain == want);
  // Nothing to forward: the configured ones only.
  std::string only;
  appendFieldsSetting(only, {}, set);
  CHECK(only == "Authorization: Bearer gateway-token\r\nX-TENANT: acme\r\nX-Extra: \r\n");
}

}  // namespace
}  // namespace gw::http
