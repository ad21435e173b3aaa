// Unit tests for router/ globs: `*` is the only metacharacter.

#include "gateway/router/glob.h"

#include <catch.hpp>
#include <string>

namespace gw::router {
namespace {

TEST_CASE("Glob matches whole strings with * as any run", "[router]") {
  struct Case {
    const char* pattern;
    const char* input;
    bool match;
  };
  const Case cases[] = {
      // literal
      {"tools/call", "tools/call", true},
      {"tools/call", "tools/cal", false},
      {"tools/call", "tools/calls", false},
      {"tools/call", "Tools/call", false},  // no case folding
      {"", "", true},
      {"", "a", false},
      // * alone
      {"*", "", true},
      {"*", "anything at all", true},
      {"**", "", true},
      {"**", "x", true},
      // prefix / suffix
      {"a*", "a", true},
      {"a*", "abc", true},
      {"a*", "ba", false},
      {"a*", "", false},
      {"*b", "b", true},
      {"*b", "aab", true},
      {"*b", "ba", false},
      {"weather_*", "weather_now", true},
      {"weather_*", "weather", false},
      // several stars
      {"a*b*c", "abc", true},
      {"a*b*c", "aXXbYYc", true},
      {"a*b*c", "abcbc", true},
      {"a*b*c", "acb", false},
      {"a*b*c", "abcd", false},
      {"a*b*c", "ab", false},
      {"*a*", "bab", true},
      {"*a*", "bbb", false},
      {"*ab*ab*", "abab", true},
      {"*ab*ab*", "aab", false},
      {"a**b", "ab", true},
      {"*/search/*", "file:///search/x", true},
      {"*aab", "aaaab", true},  // backtracking
      {"a*ab", "aaab", true},
      // no other metacharacters
      {"a?c", "abc", false},
      {"a?c", "a?c", true},
      {"[a]", "a", false},
      {"[a]", "[a]", true},
      {"a.c", "abc", false},
      {"\\*", "\\anything", true},  // backslash is literal, * still a star
      {"\\*", "*", false},
  };
  for (const Case& c : cases) {
    INFO("pattern '" << c.pattern << "' input '" << c.input << "'");
    Glob g{std::string(c.pattern)};
    CHECK(g.match(c.input) == c.match);
    CHECK(g.pattern() == c.pattern);
  }
}

TEST_CASE("Glob handles embedded NUL and long inputs", "[router]") {
  Glob g{std::string("a*z")};
  std::string in(100000, 'a');
  CHECK_FALSE(g.match(in));
  in.back() = 'z';
  CHECK(g.match(in));
  Glob nul{std::string("x\0y*", 4)};
  CHECK(nul.match(std::string_view("x\0y", 3)));
  CHECK_FALSE(nul.match("xy"));
  CHECK(Glob().match(""));
  CHECK_FALSE(Glob().match("a"));
}

}  // namespace
}  // namespace gw::router
