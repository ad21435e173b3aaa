// Settings::warnings: an upstream that no route names gets a warning at the line and column of
// its name, and the file still loads. Every way a route names an upstream counts as a use:
// `upstream:`, any item of a federated route's `upstreams:` (not only the first), several
// routes sharing one.

#include <catch.hpp>
#include <string>
#include <vector>

#include "gateway/settings/settings.h"
#include "tests/unit/settings/load_util.h"

namespace gw::settings {
namespace {

constexpr char kUpstreams[] =
    "upstreams:\n"                       // line 1
    "  - name: alpha\n"                  // 2, name at column 11
    "    endpoints: [127.0.0.1:9001]\n"  // 3
    "  - name: beta\n"                   // 4
    "    endpoints: [127.0.0.1:9002]\n"  // 5
    "  - name: gamma\n"                  // 6
    "    endpoints: [127.0.0.1:9003]\n"  // 7
    "routes:\n";                         // 8

struct Case {
  const char* what;
  const char* routes;
  std::vector<int> unused_lines;  // lines of the names warned about, in file order
};

TEST_CASE("settings: an upstream no route names is a warning at its name, not an error",
          "[settings][warnings]") {
  const Case cases[] = {
      {"every upstream named by a plain route",
       "  - name: a\n    match: { name: a }\n    upstream: alpha\n"
       "  - name: b\n    match: { name: b }\n    upstream: beta\n"
       "  - name: default\n    upstream: gamma\n",
       {}},
      {"every upstream named only by a federated route",
       "  - name: default\n    upstreams: [alpha, beta, gamma]\n",
       {}},
      {"the last of a federated route's upstreams counts too",
       "  - name: f\n    match: { name: x }\n    upstreams: [alpha, gamma]\n"
       "  - name: default\n    upstream: beta\n",
       {}},
      {"one shared by a plain and a federated route, one federated only",
       "  - name: f\n    match: { name: x }\n    upstreams: [beta, alpha]\n"
       "  - name: default\n    upstream: alpha\n",
       {6}},
      {"a plain route only: two spares", "  - name: default\n    upstream: beta\n", {2, 6}},
      {"a federated route of one", "  - name: default\n    upstreams: [gamma]\n", {2, 4}},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    LoadResult r = loadString(std::string(kUpstreams) + c.routes, "/etc/gw/gateway.yaml");
    INFO(test::dump(r));
    REQUIRE(r.errors.empty());
    REQUIRE(r.settings);
    const std::vector<Diagnostic>& w = r.settings->warnings;
    REQUIRE(w.size() == c.unused_lines.size());
    for (size_t i = 0; i < w.size(); ++i) {
      INFO(w[i].str());
      CHECK(w[i].file == "/etc/gw/gateway.yaml");
      CHECK(w[i].line == c.unused_lines[i]);
      CHECK(w[i].column == 11);
      const std::string name = c.unused_lines[i] == 2   ? "alpha"
                               : c.unused_lines[i] == 4 ? "beta"
                                                        : "gamma";
      CHECK(w[i].message == "upstream '" + name +
                                "' is not used by any route (none names it in 'upstream' or "
                                "'upstreams'): it gets no requests");
    }
  }
}

TEST_CASE("settings: a file with errors carries no warnings to act on", "[settings][warnings]") {
  LoadResult r =
      loadString(std::string(kUpstreams) + "  - name: default\n    upstream: betta\n", "gw.yaml");
  CHECK(r.settings == nullptr);
  CHECK(test::hasError(r, 10, 15, "unknown upstream 'betta'; did you mean 'beta'?"));
}

}  // namespace
}  // namespace gw::settings
