// federation/ ownership: RFC 6570 template matching (every expression form, malformed
// templates, adversarial sizes), the name/URI ownership table (first upstream wins, templates
// as fallback), the bounded task table (capacity, expiry, refresh) and taskIdOf.

#include <catch.hpp>
#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/federation/federation.h"

namespace gw::federation {
namespace {

using std::chrono::milliseconds;

TEST_CASE("federation: templateMatches follows the expression forms servers use", "[federation]") {
  struct Case {
    std::string_view tmpl;
    std::string_view uri;
    bool match;
  };
  const Case cases[] = {
      // Literals only.
      {"", "", true},
      {"", "a", false},
      {"file:///a", "file:///a", true},
      {"file:///a", "file:///b", false},
      {"file:///a", "file:///ab", false},
      {"file:///ab", "file:///a", false},
      {"x}y", "x}y", true},  // a lone '}' is literal text
      // {var}: one or more characters, none of "/?#".
      {"file:///{path}", "file:///a", true},
      {"file:///{path}", "file:///readme.md", true},
      {"file:///{path}", "file:///", false},  // empty value
      {"file:///{path}", "file:///a/b", false},
      {"file:///{path}", "file:///a?b", false},
      {"file:///{path}", "file:///a#b", false},
      {"file:///{path}.md", "file:///notes.md", true},
      {"file:///{path}.md", "file:///notes.txt", false},
      {"file:///{path}.md", "file:///.md", false},
      {"file:///{path}.md", "file:///a.md.md", true},
      {"{a}", "x", true},
      {"{a}", "", false},
      {"x://{a}/y", "x://1/y", true},
      {"x://{a}/y", "x://1/z", false},  // literal mismatch after the expression
      {"y://{a}/y", "x://1/y", false},  // … and before it
      {"x://{a}/y", "x://1/2/y", false},
      // {+var} and {#var}: any characters, one or more.
      {"file:///{+path}", "file:///a/b/c", true},
      {"file:///{+path}", "file:///a?b#c", true},
      {"file:///{+path}", "file:///", false},
      {"file:///{#path}", "file:///a/b", true},
      {"file:///{+path}/end", "file:///a/b/end", true},
      {"file:///{+path}/end", "file:///a/b/ends", false},
      {"file:///{+path}/end", "file:///end", false},
      // Several expressions, adjacent ones.
      {"db://{schema}/{table}", "db://s/t", true},
      {"db://{schema}/{table}", "db://s/t/u", false},
      {"db://{schema}/{table}", "db:///t", false},
      {"db://{schema}/{table}", "db://s/", false},
      {"x://{a}{b}", "x://ab", true},
      {"x://{a}{b}", "x://a", false},  // each needs a character
      {"x://{a}{b}{c}", "x://abc", true},
      {"x://{a}{b}{c}", "x://ab", false},
      {"x://{a}-{b}", "x://a-b-c", true},
      {"x://{+a}/{b}", "x://1/2/3", true},
      {"x://{a}/{+b}", "x://1/2/3", true},
      {"x://{a}/{+b}", "x://1", false},
      // {var1,var2}: as {var}.
      {"x://{a,b}", "x://12", true},
      {"x://{a,b}", "x://1/2", false},
      // Other operators: best effort, as {var}.
      {"x://a{/b}", "x://ab", true},
      {"x://a{/b}", "x://a/b", false},
      {"x://a{?q}", "x://axyz", true},
      {"x://a{?q}", "x://a?q=1", false},
      {"x://a{.ext}", "x://a.json", true},
      {"x://a{;p}{&q}", "x://a;p=1&q=2", true},
      // Malformed: false whatever the URI.
      {"x://{a", "x://{a", false},
      {"x://{a", "x://a", false},
      {"x://{", "x://{", false},
      {"x://{}", "x://{}", false},
      {"x://{}", "x://a", false},
      {"x://{+}", "x://a", false},
      {"x://{a}{", "x://ab", false},
      // Matching is by bytes; UTF-8 text in values is fine.
      {"x://{a}", "x://日本", true},
      {"x://日本/{a}", "x://日本/x", true},
  };
  for (const Case& c : cases) {
    INFO(c.tmpl << " ~ " << c.uri);
    CHECK(templateMatches(c.tmpl, c.uri) == c.match);
  }
}

TEST_CASE("federation: templateMatches is quick on adversarial inputs", "[federation]") {
  const auto start = std::chrono::steady_clock::now();
  const std::string long_uri = std::string(8192, 'a');
  std::string fifty;
  for (int i = 0; i < 50; ++i) {
    fifty += "{v" + std::to_string(i) + "}";
  }
  CHECK(templateMatches(fifty, long_uri));
  CHECK_FALSE(templateMatches(fifty + "b", long_uri));
  CHECK_FALSE(templateMatches(fifty, long_uri.substr(0, 49)));
  CHECK(templateMatches(fifty, long_uri.substr(0, 50)));

  std::string reserved;
  for (int i = 0; i < 50; ++i) {
    reserved += "{+v}/";
  }
  std::string slashes;
  for (int i = 0; i < 4096; ++i) {
    slashes += "a/";
  }
  CHECK(templateMatches(reserved, slashes));
  CHECK_FALSE(templateMatches(reserved + "x", slashes));
  CHECK_FALSE(templateMatches(fifty, slashes));

  // Long literal runs between expressions, a long template on a long URI.
  std::string tmpl;
  for (int i = 0; i < 50; ++i) {
    tmpl += "{+x}" + std::string(100, 'a');
  }
  CHECK(templateMatches(tmpl, "b" + long_uri));
  CHECK_FALSE(templateMatches(tmpl, long_uri + "b"));
  CHECK_FALSE(templateMatches(std::string(8192, 'a') + "{", long_uri));
  CHECK(templateMatches(std::string(8191, 'a') + "{x}", long_uri));

  // A hang guard, not a benchmark: a backtracking matcher takes hours here, the linear one
  // milliseconds (seconds under ASan on a loaded machine; 2 s was exceeded there).
  const auto elapsed = std::chrono::steady_clock::now() - start;
  CHECK(elapsed < std::chrono::seconds(60));
}

TEST_CASE("federation: Ownership gives each name to the first upstream listing it",
          "[federation]") {
  const std::vector<std::string> a = {"search", "read", ""};
  const std::vector<std::string> b = {"read", "write"};
  const std::vector<std::string> c = {"write", "delete", "search"};
  const std::vector<std::string>* keys[] = {&a, nullptr, &b, &c};
  Ownership own;
  CHECK(own.tool("search") == -1);
  own.assign(ListKind::kTools, keys);
  CHECK(own.tool("search") == 0);
  CHECK(own.tool("read") == 0);
  CHECK(own.tool("write") == 2);
  CHECK(own.tool("delete") == 3);
  CHECK(own.tool("") == -1);
  CHECK(own.tool("Search") == -1);
  CHECK(own.tool("searc") == -1);
  CHECK(own.size(ListKind::kTools) == 4);
  CHECK(own.prompt("search") == -1);  // kinds are separate
  CHECK(own.size(ListKind::kPrompts) == 0);

  // A long name looked up through a view into a bigger buffer.
  const std::string long_name(200, 'n');
  const std::vector<std::string> d = {long_name};
  const std::vector<std::string>* only_d[] = {nullptr, &d};
  own.assign(ListKind::kPrompts, only_d);
  const std::string buffer = "xx" + long_name + "yy";
  CHECK(own.prompt(std::string_view(buffer).substr(2, long_name.size())) == 1);
  CHECK(own.tool("search") == 0);

  // assign replaces the kind wholly.
  const std::vector<std::string>* replaced[] = {&c};
  own.assign(ListKind::kTools, replaced);
  CHECK(own.tool("search") == 0);
  CHECK(own.tool("read") == -1);
  CHECK(own.tool("write") == 0);
  CHECK(own.size(ListKind::kTools) == 3);
  own.assign(ListKind::kTools, {});
  CHECK(own.size(ListKind::kTools) == 0);
  CHECK(own.tool("write") == -1);
  CHECK(own.prompt(long_name) == 1);
  own.assign(ListKind::kDiscover, replaced);  // nothing to own
  CHECK(own.size(ListKind::kDiscover) == 0);
}

TEST_CASE("federation: Ownership resolves URIs exactly, then by template in route order",
          "[federation]") {
  const std::vector<std::string> res_a = {"file:///etc/a.conf", "db://main/users"};
  const std::vector<std::string> res_b = {"file:///etc/b.conf", "file:///etc/a.conf"};
  const std::vector<std::string>* resources[] = {&res_a, &res_b};
  const std::vector<std::string> tpl_a = {"db://{schema}/{table}", "{bad"};
  const std::vector<std::string> tpl_b = {"file:///{+path}", "db://{schema}/{table}"};
  const std::vector<std::string> tpl_c = {"db://{+anything}", ""};
  const std::vector<std::string>* templates[] = {nullptr, &tpl_b, &tpl_a, &tpl_c};
  Ownership own;
  own.assign(ListKind::kResources, resources);
  own.assign(ListKind::kTemplates, templates);
  CHECK(own.size(ListKind::kResources) == 3);
  CHECK(own.size(ListKind::kTemplates) == 5);
  CHECK(own.resource("file:///etc/a.conf") == 0);  // first listed
  CHECK(own.resource("file:///etc/b.conf") == 1);
  CHECK(own.resource("db://main/users") == 0);   // exact beats an earlier template
  CHECK(own.resource("db://main/orders") == 1);  // templates: route order, first match
  CHECK(own.resource("file:///var/log/x") == 1);
  CHECK(own.resource("db://main/orders/x") == 3);  // only {+anything} matches
  CHECK(own.resource("http://x") == -1);
  CHECK(own.resource("") == -1);
  CHECK(own.tool("file:///etc/a.conf") == -1);

  // Templates are replaced wholly too; the exact map is untouched.
  const std::vector<std::string>* none[] = {nullptr};
  own.assign(ListKind::kTemplates, none);
  CHECK(own.size(ListKind::kTemplates) == 0);
  CHECK(own.resource("db://main/orders") == -1);
  CHECK(own.resource("db://main/users") == 0);
}

TEST_CASE("federation: TaskTable keeps entries for their ttl and refreshes on put",
          "[federation]") {
  const core::Nanos t0(1'000'000'000);
  TaskTable tasks(4, milliseconds(100));
  CHECK(tasks.find("t1", t0) == -1);
  tasks.put("t1", 2, t0);
  CHECK(tasks.find("t1", t0) == 2);
  CHECK(tasks.find("t1", t0 + milliseconds(99)) == 2);
  CHECK(tasks.find("t1", t0 + milliseconds(100)) == -1);  // expired counts as unknown
  CHECK(tasks.find("t", t0) == -1);
  CHECK(tasks.find("t1 ", t0) == -1);

  // A put of the same id refreshes it (and may move it to another upstream).
  tasks.put("t1", 3, t0 + milliseconds(80));
  CHECK(tasks.size() == 1);
  CHECK(tasks.find("t1", t0 + milliseconds(150)) == 3);
  CHECK(tasks.find("t1", t0 + milliseconds(180)) == -1);
  // An expired entry put again is live again.
  tasks.put("t1", 1, t0 + milliseconds(500));
  CHECK(tasks.find("t1", t0 + milliseconds(550)) == 1);

  // Long ids are looked up through views.
  const std::string id(100, 'x');
  tasks.put(id, 0, t0);
  const std::string buffer = "[" + id + "]";
  CHECK(tasks.find(std::string_view(buffer).substr(1, id.size()), t0) == 0);
}

TEST_CASE("federation: TaskTable drops the oldest entry when full", "[federation]") {
  const core::Nanos t0(5'000'000'000);
  TaskTable tasks(3, std::chrono::seconds(60));
  tasks.put("a", 0, t0);
  tasks.put("b", 1, t0);
  tasks.put("c", 2, t0);
  CHECK(tasks.size() == 3);
  tasks.put("d", 3, t0);  // "a" is the oldest
  CHECK(tasks.size() == 3);
  CHECK(tasks.find("a", t0) == -1);
  CHECK(tasks.find("b", t0) == 1);
  CHECK(tasks.find("d", t0) == 3);
  tasks.put("b", 4, t0);  // refreshed: "c" is now the oldest
  tasks.put("e", 5, t0);
  CHECK(tasks.find("c", t0) == -1);
  CHECK(tasks.find("b", t0) == 4);
  CHECK(tasks.find("d", t0) == 3);
  CHECK(tasks.find("e", t0) == 5);
  CHECK(tasks.size() == 3);

  // Expired entries make room first.
  TaskTable short_lived(2, milliseconds(10));
  short_lived.put("x", 0, t0);
  short_lived.put("y", 1, t0 + milliseconds(8));
  short_lived.put("z", 2, t0 + milliseconds(12));  // "x" expired
  CHECK(short_lived.find("y", t0 + milliseconds(12)) == 1);
  CHECK(short_lived.find("z", t0 + milliseconds(12)) == 2);
  CHECK(short_lived.size() == 2);

  // Many puts stay bounded.
  TaskTable bounded(16, std::chrono::seconds(1));
  for (int i = 0; i < 1000; ++i) {
    bounded.put("task-" + std::to_string(i), i % 7, t0 + milliseconds(i));
    CHECK(bounded.size() <= 16);
  }
  CHECK(bounded.find("task-999", t0 + milliseconds(999)) == 999 % 7);
  CHECK(bounded.find("task-984", t0 + milliseconds(999)) == 984 % 7);
  CHECK(bounded.find("task-984", t0 + milliseconds(1984)) == -1);
  CHECK(bounded.find("task-983", t0 + milliseconds(999)) == -1);
  CHECK(bounded.find("task-900", t0 + milliseconds(999)) == -1);

  // Capacity zero keeps nothing; extreme ttl and clock values do not overflow.
  TaskTable none(0, std::chrono::seconds(1));
  none.put("a", 1, t0);
  CHECK(none.size() == 0);
  CHECK(none.find("a", t0) == -1);
  TaskTable forever(2, core::Nanos::max());
  forever.put("a", 1, core::Nanos::max() - core::Nanos(1));
  CHECK(forever.find("a", core::Nanos::max() - core::Nanos(1)) == 1);
  TaskTable negative(2, core::Nanos(-5));
  negative.put("a", 1, core::Nanos::min());
  CHECK(negative.find("a", core::Nanos::min()) == -1);
}

TEST_CASE("federation: taskIdOf reads result.task.taskId or result.taskId", "[federation]") {
  struct Case {
    std::string_view json;
    std::optional<std::string> id;
  };
  const Case cases[] = {
      {R"({"jsonrpc":"2.0","id":1,"result":{"task":{"taskId":"t-1","status":"working"}}})", "t-1"},
      {R"({"jsonrpc":"2.0","id":1,"result":{"taskId":"t-2","status":"working"}})", "t-2"},
      {R"({"id":1,"result":{"taskId":"outer","task":{"taskId":"inner"}}})", "inner"},
      {R"({"id":1,"result":{"task":{"status":"x"},"taskId":"outer"}})", "outer"},
      {R"({"id":1,"result":{"task":"t","taskId":"outer"}})", "outer"},
      {R"({"id":1,"result":{"t\u0061skId":"t\u002d3"}})", "t-3"},
      {R"( { "id" : 1 , "result" : { "task" : { "taskId" : "sp" } } } )", "sp"},
      {R"({"id":1,"result":{"taskId":"first","taskId":"second"}})", "first"},
      {R"({"id":1,"result":{"taskId":""}})", ""},
      {R"({"id":1,"result":{"taskId":7}})", std::nullopt},
      {R"({"id":1,"result":{"task":{"taskId":null}}})", std::nullopt},
      {R"({"id":1,"result":{"content":[{"taskId":"deep"}]}})", std::nullopt},
      {R"({"id":1,"result":{"content":"\"taskId\":\"x\""}})", std::nullopt},
      {R"({"id":1,"result":"taskId"})", std::nullopt},
      {R"({"id":1,"error":{"code":1,"message":"m","data":{"taskId":"x"}}})", std::nullopt},
      {R"({"id":1,"taskId":"top"})", std::nullopt},
      {R"({"id":1,"result":{"taskId":"t"})", std::nullopt},  // not JSON
      {"", std::nullopt},
      {"[]", std::nullopt},
  };
  for (const Case& c : cases) {
    INFO(c.json);
    CHECK(taskIdOf(c.json) == c.id);
  }
}

}  // namespace
}  // namespace gw::federation
