// settings/ and policy/ loader messages a new user meets first: a file that cannot be read says
// why (the system's strerror text), for the config file, a policy file and a JWKS key file; a
// route naming an upstream that does not exist gets a "did you mean" for a near name.

#include <sys/stat.h>
#include <unistd.h>

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/policy/policy.h"
#include "gateway/settings/settings.h"
#include "tests/unit/policy/test_util.h"

namespace {

using gw::settings::Diagnostic;
using gw::settings::LoadResult;

std::string dump(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const Diagnostic& d : errors) {
    out += d.str() + "\n";
  }
  return out;
}

// The three ways a named file is unreadable, each with the reason strerror gives. Permission
// is only testable when not root (root reads any mode-000 file).
struct Unreadable {
  const char* what;
  std::string path;
  const char* reason;
};

std::vector<Unreadable> unreadable(const gw::policy::test::TempDir& dir) {
  std::vector<Unreadable> cases;
  cases.push_back({"missing", dir.path() + "/no-such.yaml", "No such file or directory"});
  cases.push_back({"a directory", dir.path(), "Is a directory"});
  cases.push_back({"missing parent", dir.path() + "/no-dir/x.yaml", "No such file or directory"});
  if (::geteuid() != 0) {
    std::string p = dir.write("secret.yaml", "listen: 127.0.0.1:1\n");
    ::chmod(p.c_str(), 0);
    cases.push_back({"mode 000", p, "Permission denied"});
  }
  return cases;
}

}  // namespace

TEST_CASE(
    "messages: an unreadable config file says why (file:0:0: cannot read config file: "
    "strerror)",
    "[settings][messages]") {
  gw::policy::test::TempDir dir;
  for (const Unreadable& c : unreadable(dir)) {
    INFO(c.what);
    LoadResult r = gw::settings::loadFile(c.path);
    INFO(dump(r.errors));
    CHECK_FALSE(r.settings);
    REQUIRE(r.errors.size() == 1);
    CHECK(r.errors[0].str() == c.path + ":0:0: cannot read config file: " + c.reason);
  }
}

TEST_CASE("messages: an unreadable policy file says why", "[settings][messages][policy]") {
  gw::policy::test::TempDir dir;
  for (const Unreadable& c : unreadable(dir)) {
    INFO(c.what);
    std::vector<Diagnostic> errors;
    CHECK(gw::policy::PolicySet::load({c.path}, errors) == nullptr);
    INFO(dump(errors));
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].str() == c.path + ":0:0: cannot read policy file: " + c.reason);
  }
}

TEST_CASE("messages: an unreadable JWKS keys_file says why", "[settings][messages][policy]") {
  gw::policy::test::TempDir dir;
  std::string p = dir.write("p.yaml",
                            "identity:\n  jwt:\n    issuer: i\n    audiences: [a]\n"
                            "    keys_file: missing.json\n");
  std::vector<Diagnostic> errors;
  CHECK(gw::policy::PolicySet::load({p}, errors) == nullptr);
  INFO(dump(errors));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].message == "'identity.jwt.keys_file': cannot read key file '" + dir.path() +
                                 "/missing.json': No such file or directory");
}

TEST_CASE("messages: a route's unknown upstream gets a did-you-mean for a near name",
          "[settings][messages]") {
  struct Case {
    const char* upstream;  // what the route names
    const char* hint;      // the suggestion, or "" for none
  };
  const Case cases[] = {
      {"mian", "main"},          // transposed letters
      {"man", "main"},           // a letter missing
      {"mainn", "main"},         // a letter doubled
      {"Main", "main"},          // case: names are case-sensitive, so it is a near miss
      {"backedn", "backend"},    // the closest of several
      {"backend-2", "backend"},  // a suffix added
      {"weather", ""},           // nothing near: no guess
      {"m", ""},                 // too short to be a typo of anything
  };
  for (const Case& c : cases) {
    INFO(c.upstream);
    std::string yaml =
        "upstreams:\n"
        "  - name: main\n"
        "    endpoints: [127.0.0.1:9000]\n"
        "  - name: backend\n"
        "    endpoints: [127.0.0.1:9001]\n"
        "routes:\n"
        "  - name: r\n"
        "    upstream: " +
        std::string(c.upstream) + "\n";
    LoadResult r = gw::settings::loadString(yaml, "gw.yaml");
    INFO(dump(r.errors));
    REQUIRE(r.errors.size() == 1);
    std::string want =
        "gw.yaml:8:15: route 'r' names unknown upstream '" + std::string(c.upstream) + "'";
    if (*c.hint != '\0') {
      want += "; did you mean '" + std::string(c.hint) + "'?";
    }
    CHECK(r.errors[0].str() == want);
  }
}
