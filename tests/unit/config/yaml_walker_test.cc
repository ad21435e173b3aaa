// config/ YAML walker, driven directly: key checks (hint, or the allowed keys), duplicate keys
// with the first one's line, the typed readers' messages, name maps, and that nothing yaml-cpp
// or a schema throws gets out of walk().

#include <catch.hpp>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/config/yaml_walker.h"

namespace gw::config {
namespace {

constexpr std::string_view kKeys[] = {"address", "timeout", "choice", "list", "map"};

std::string dump(const std::vector<Diagnostic>& errors) {
  std::string out;
  for (const Diagnostic& d : errors) {
    out += d.str() + "\n";
  }
  return out;
}

// Walks `yaml` as a mapping of kKeys under `top`, handing each entry to `fn`.
template <class Fn>
std::vector<Diagnostic> walkTop(const std::string& yaml, Fn fn) {
  std::vector<Diagnostic> errors;
  Walker w(errors, "the test file");
  w.setFile("t.yaml");
  w.walk(yaml, [&](const YAML::Node& root) {
    for (const Entry& e : w.entries(root, root.Mark(), kKeys, "top")) {
      fn(w, e);
    }
  });
  return errors;
}

void ignore(Walker&, const Entry&) {}

TEST_CASE("walker: unknown keys get a hint, or the allowed keys when none is near", "[config]") {
  auto errors = walkTop("adress: x\nzzz: 1\n", ignore);
  INFO(dump(errors));
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].str() == "t.yaml:1:1: unknown key 'top.adress'; did you mean 'address'?");
  CHECK(errors[1].str() ==
        "t.yaml:2:1: unknown key 'top.zzz' (expected one of: address, timeout, choice, list, "
        "map)");
}

TEST_CASE("walker: a duplicate key is reported at the second, with the first one's line",
          "[config]") {
  std::vector<std::string> seen;
  auto errors = walkTop("timeout: 1s\naddress: x\ntimeout: 2s\n",
                        [&](Walker&, const Entry& e) { seen.push_back(e.value.Scalar()); });
  INFO(dump(errors));
  REQUIRE(errors.size() == 1);
  CHECK(errors[0].str() == "t.yaml:3:1: duplicate key 'top.timeout' (first at line 1)");
  CHECK(seen == std::vector<std::string>{"1s", "x"});  // the first one counts
}

TEST_CASE("walker: not a mapping names the document or the key", "[config]") {
  std::vector<Diagnostic> errors;
  Walker w(errors, "the test file");
  w.setFile("t.yaml");
  w.walk("- a\n", [&](const YAML::Node& root) { w.entries(root, root.Mark(), kKeys, ""); });
  w.walk("k: 5\n", [&](const YAML::Node& root) { w.entries(root["k"], root.Mark(), kKeys, "k"); });
  INFO(dump(errors));
  REQUIRE(errors.size() == 2);
  CHECK(errors[0].str() == "t.yaml:1:1: the test file must be a mapping of keys to values");
  CHECK(errors[1].str() == "t.yaml:1:4: 'k' must be a mapping of keys to values");
}

TEST_CASE("walker: typed readers", "[config]") {
  struct Case {
    const char* yaml;
    const char* message;  // "" = valid
  };
  const Case cases[] = {
      {"choice: deny", ""},
      {"choice: block", "t.yaml:1:9: 'top.choice' must be local, allow or deny, not 'block'"},
      {"choice: [a]", "t.yaml:1:9: 'top.choice' must be local, allow or deny"},
      {"timeout: 10",
       "t.yaml:1:10: 'top.timeout': invalid duration '10' (needs a unit: 250ms, "
       "10s, 5m, 1h)"},
      {"list: [a, '']", "t.yaml:1:11: 'top.list[1]' must not be empty"},
      {"list: [a, [b]]", "t.yaml:1:11: 'top.list[1]' must be a string"},
      {"list: a", "t.yaml:1:7: 'top.list' must be a list"},
      {"address: 127.0.0.1:0",
       "t.yaml:1:10: 'top.address': port 0 is not a valid destination in "
       "'127.0.0.1:0'"},
      {"address: 127.0.0.1:6379", ""},
  };
  constexpr std::string_view kChoices[] = {"local", "allow", "deny"};
  for (const Case& c : cases) {
    INFO(c.yaml);
    auto errors = walkTop(c.yaml, [&](Walker& w, const Entry& e) {
      std::vector<std::string> list;
      Duration d{};
      Address a;
      size_t i = 0;
      if (e.key == "choice") {
        CHECK(w.readChoice(e, kChoices, i) == (*c.message == '\0'));
        CHECK(i == (*c.message == '\0' ? 2 : 0));
      } else if (e.key == "timeout") {
        w.readDuration(e, d);
      } else if (e.key == "list") {
        w.readStringList(e, list, nullptr, true);
      } else if (e.key == "address") {
        CHECK(w.readAddress(e, a, false) == (*c.message == '\0'));
      }
    });
    INFO(dump(errors));
    if (*c.message == '\0') {
      CHECK(errors.empty());
    } else {
      REQUIRE(errors.size() == 1);
      CHECK(errors[0].str() == c.message);
    }
  }
}

TEST_CASE("walker: name maps check names, values and duplicates", "[config]") {
  static constexpr NameRule kRule{"names to values",
                                  [](const std::string& path, const std::string& name) {
                                    return name.find(' ') == std::string::npos
                                               ? std::string()
                                               : "'" + path + "': bad name '" + name + "'";
                                  },
                                  true};
  std::vector<std::pair<std::string, std::string>> out;
  auto errors = walkTop(
      "map:\n"
      "  A: x\n"
      "  a b: y\n"
      "  B: [z]\n"
      "  a: w\n"
      "  C: v\n",
      [&](Walker& w, const Entry& e) { CHECK_FALSE(w.readNameMap(e, kRule, out)); });
  INFO(dump(errors));
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].str() == "t.yaml:3:3: 'top.map': bad name 'a b'");
  CHECK(errors[1].str() == "t.yaml:4:6: 'top.map.B' must be a string");
  CHECK(errors[2].str() ==
        "t.yaml:5:3: 'top.map': 'a' is listed twice (first at line 2; names ignore case)");
  CHECK(out == std::vector<std::pair<std::string, std::string>>{{"A", "x"}, {"C", "v"}});
}

TEST_CASE("walker: syntax errors and exceptions from the walk become diagnostics", "[config]") {
  std::vector<Diagnostic> errors;
  Walker w(errors, "the test file");
  w.setFile("t.yaml");
  bool called = false;
  w.walk("a: [1, 2\n", [&](const YAML::Node&) { called = true; });
  CHECK_FALSE(called);
  w.walk("a: 1\n", [](const YAML::Node& root) { (void)root["a"].as<std::vector<int>>(); });
  w.walk("a: 1\n", [](const YAML::Node&) { throw std::runtime_error("boom"); });
  w.walk("", [&](const YAML::Node&) { called = true; });  // empty: nothing to walk
  CHECK_FALSE(called);
  INFO(dump(errors));
  REQUIRE(errors.size() == 3);
  CHECK(errors[0].line == 2);  // the unclosed flow sequence
  CHECK(errors[1].line == 1);  // yaml-cpp's BadConversion, at the node
  CHECK(errors[2].str() == "t.yaml:0:0: internal error: boom");
}

}  // namespace
}  // namespace gw::config
