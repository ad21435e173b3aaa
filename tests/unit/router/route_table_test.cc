// Unit tests for router/ route tables: order, default, params, headers, untrusted traffic.

#include "gateway/router/route_table.h"

#include <catch.hpp>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace gw::router {
namespace {

using settings::Route;
using settings::Settings;

Route route(std::string name, std::string upstream) {
  Route r;
  r.name = std::move(name);
  r.upstream = std::move(upstream);
  return r;
}

Route withMethod(std::string name, std::string method) {
  Route r = route(std::move(name), "u");
  r.has_match = true;
  r.match.method = std::move(method);
  return r;
}

// A request's decoded MCP view and fields, built by hand.
struct Request {
  mcp::McpHeaders mcp;
  std::vector<http::HeaderField> fields;
  bool trusted = true;

  Request& method(std::string_view m) {
    mcp.has_method = true;
    mcp.method = m;
    return *this;
  }
  Request& name(std::string_view n) {
    mcp.has_name = true;
    mcp.name = mcp::McpValue{n, n, false};
    return *this;
  }
  Request& param(std::string_view n, std::string_view raw, std::string_view decoded) {
    mcp.params.push_back(mcp::McpParam{n, mcp::McpValue{raw, decoded, raw != decoded}});
    return *this;
  }
  Request& field(std::string_view n, std::string_view v) {
    fields.push_back(http::HeaderField{n, v, {}});
    return *this;
  }
  RouteInput input() const {
    RouteInput in;
    in.trusted = trusted;
    in.method = mcp.has_method ? mcp.method : std::string_view();
    in.mcp = &mcp;
    in.fields = &fields;
    return in;
  }
};

std::string routed(const RouteTable& t, const Request& req) {
  const Route* r = t.match(req.input());
  return r != nullptr ? r->name : "<none>";
}

TEST_CASE("first matching route wins, the default catches the rest", "[router]") {
  Settings s;
  s.routes.push_back(withMethod("calls", "tools/call"));
  s.routes.push_back(withMethod("tools", "tools/*"));
  s.routes.push_back(route("default", "u"));
  RouteTable t = RouteTable::compile(s);
  CHECK(t.size() == 3);
  CHECK(routed(t, Request().method("tools/call")) == "calls");
  CHECK(routed(t, Request().method("tools/list")) == "tools");
  CHECK(routed(t, Request().method("resources/read")) == "default");
  CHECK(routed(t, Request()) == "default");  // no Mcp-Method: only the default matches
}

TEST_CASE("no default: an unmatched request gets nullptr", "[router]") {
  Settings s;
  s.routes.push_back(withMethod("calls", "tools/call"));
  s.routes.push_back(withMethod("any", "*"));
  RouteTable t = RouteTable::compile(s);
  CHECK(routed(t, Request().method("x")) == "any");
  CHECK(routed(t, Request()) == "<none>");  // absent Mcp-Method never matches a method glob
  CHECK(RouteTable().match(Request().method("x").input()) == nullptr);
  CHECK(RouteTable::compile(Settings()).match(Request().input()) == nullptr);
}

TEST_CASE("name matches the decoded Mcp-Name, an absent name never matches", "[router]") {
  Settings s;
  Route w = withMethod("weather", "tools/call");
  w.match.name = "weather_*";
  s.routes.push_back(w);
  Route anyname = route("named", "u");
  anyname.has_match = true;
  anyname.match.name = "*";
  s.routes.push_back(anyname);
  s.routes.push_back(route("default", "u"));
  RouteTable t = RouteTable::compile(s);
  CHECK(routed(t, Request().method("tools/call").name("weather_now")) == "weather");
  CHECK(routed(t, Request().method("tools/list").name("weather_now")) == "named");
  CHECK(routed(t, Request().method("tools/call").name("news")) == "named");
  CHECK(routed(t, Request().method("tools/call")) == "default");
  Request decoded = Request().method("tools/call");
  decoded.mcp.has_name = true;
  decoded.mcp.name = mcp::McpValue{"=?base64?d2VhdGhlcl/DqQ==?=", "weather_é", true};
  CHECK(routed(t, decoded) == "weather");
}

TEST_CASE("params: names case-insensitive, decoded values, all must match", "[router]") {
  Settings s;
  Route eu = route("eu", "u");
  eu.has_match = true;
  eu.match.params = {{"Region", "eu-*"}, {"tier", "gold"}};
  s.routes.push_back(eu);
  Route region = route("region", "u");
  region.has_match = true;
  region.match.params = {{"REGION", "*"}};
  s.routes.push_back(region);
  s.routes.push_back(route("default", "u"));
  RouteTable t = RouteTable::compile(s);
  CHECK(routed(t, Request().param("region", "eu-west", "eu-west").param("TIER", "gold", "gold")) ==
        "eu");
  CHECK(routed(t, Request().param("Region", "eu-west", "eu-west")) == "region");
  CHECK(routed(t, Request().param("Region", "us-east", "us-east").param("Tier", "gold", "gold")) ==
        "region");
  CHECK(routed(t, Request().param("Tier", "gold", "gold")) == "default");
  // The decoded value is compared, not the sentinel text.
  CHECK(routed(t, Request()
                      .param("Region", "=?base64?ZXUtbm9ydGg=?=", "eu-north")
                      .param("Tier", "gold", "gold")) == "eu");
  // Values are case-sensitive.
  CHECK(routed(t, Request().param("Region", "EU-west", "EU-west").param("Tier", "gold", "gold")) ==
        "region");
  // No McpHeaders at all: param routes cannot match.
  RouteInput bare;
  bare.trusted = true;
  CHECK(t.match(bare)->name == "default");
}

TEST_CASE("headers: first field of the name, case-insensitive name, glob value", "[router]") {
  Settings s;
  Route canary = route("canary", "u");
  canary.has_match = true;
  canary.match.headers = {{"X-Canary", "1"}};
  s.routes.push_back(canary);
  Route ua = route("old", "u");
  ua.has_match = true;
  ua.match.headers = {{"user-agent", "old-client/*"}};
  s.routes.push_back(ua);
  s.routes.push_back(route("default", "u"));
  RouteTable t = RouteTable::compile(s);
  CHECK(routed(t, Request().field("x-canary", "1")) == "canary");
  CHECK(routed(t, Request().field("X-CANARY", "0")) == "default");
  CHECK(routed(t, Request().field("X-Canary", "0").field("X-Canary", "1")) == "default");
  CHECK(routed(t, Request().field("User-Agent", "old-client/2.1")) == "old");
  CHECK(routed(t, Request().field("User-Agent", "new-client/1")) == "default");
  RouteInput nofields;
  nofields.trusted = true;
  CHECK(t.match(nofields)->name == "default");
}

TEST_CASE("every key of a match must hold", "[router]") {
  Settings s;
  Route all = withMethod("all", "tools/call");
  all.match.name = "get_*";
  all.match.params = {{"Tenant", "acme"}};
  all.match.headers = {{"X-Env", "prod"}};
  s.routes.push_back(all);
  s.routes.push_back(route("default", "u"));
  RouteTable t = RouteTable::compile(s);
  auto full = [] {
    return Request()
        .method("tools/call")
        .name("get_x")
        .param("Tenant", "acme", "acme")
        .field("X-Env", "prod");
  };
  CHECK(routed(t, full()) == "all");
  Request r1 = full();
  r1.mcp.method = "tools/list";
  CHECK(routed(t, r1) == "default");
  Request r2 = full();
  r2.fields[0].value = "dev";
  CHECK(routed(t, r2) == "default");
  Request r3 = full();
  r3.mcp.params[0].v.value = "other";
  CHECK(routed(t, r3) == "default");
  Request r4 = full();
  r4.mcp.has_name = false;
  CHECK(routed(t, r4) == "default");
}

TEST_CASE("untrusted requests: first legacy route, else the default, else none", "[router]") {
  Request untrusted = Request().method("tools/call").field("User-Agent", "x");
  untrusted.trusted = false;
  SECTION("legacy route wins regardless of its match, trusted traffic matches normally") {
    Settings s;
    s.routes.push_back(withMethod("calls", "tools/call"));
    Route l1 = withMethod("legacy1", "nothing-matches-this");
    l1.legacy = true;
    s.routes.push_back(l1);
    Route l2 = route("legacy2", "u");
    l2.legacy = true;
    l2.has_match = true;
    l2.match.headers = {{"User-Agent", "*"}};
    s.routes.push_back(l2);
    s.routes.push_back(route("default", "u"));
    RouteTable t = RouteTable::compile(s);
    CHECK(routed(t, untrusted) == "legacy1");
    CHECK(routed(t, Request().method("tools/call")) == "calls");
    CHECK(routed(t, Request().method("other").field("User-Agent", "x")) == "legacy2");
  }
  SECTION("no legacy route: the default") {
    Settings s;
    s.routes.push_back(withMethod("calls", "tools/call"));
    s.routes.push_back(route("default", "u"));
    CHECK(routed(RouteTable::compile(s), untrusted) == "default");
  }
  SECTION("neither: none") {
    Settings s;
    s.routes.push_back(withMethod("calls", "tools/call"));
    CHECK(routed(RouteTable::compile(s), untrusted) == "<none>");
  }
}

TEST_CASE(
    "legacy body view: the legacy route if any, else routes in order with params "
    "computed per candidate upstream (issue #13)",
    "[router][legacy]") {
  Request req = Request().method("tools/call").name("sql");
  req.trusted = false;
  RouteInput in = req.input();
  in.body_view = true;
  SECTION("no legacy route: matched like a trusted request") {
    Settings s;
    Route p = route("by-param", "pu");
    p.has_match = true;
    p.match.params = {{"Region", "us-*"}};
    s.routes.push_back(p);
    s.routes.push_back(withMethod("calls", "tools/call"));
    s.routes.push_back(route("default", "u"));
    RouteTable t = RouteTable::compile(s);
    struct Hook {
      std::vector<std::string> asked;
      mcp::McpHeaders* view;
    } hook{{}, &req.mcp};
    in.params_user = &hook;
    in.params_for = [](void* user, const Route& r) {
      auto* h = static_cast<Hook*>(user);
      h->asked.push_back(r.upstream);
      h->view->params.clear();
      if (r.upstream == "pu") {
        h->view->params.push_back(mcp::McpParam{"Region", mcp::McpValue{"us-1", "us-1", false}});
      }
    };
    const Route* r = t.match(in);
    REQUIRE(r != nullptr);
    CHECK(r->name == "by-param");
    CHECK(hook.asked == std::vector<std::string>{"pu"});  // only routes whose match has params
    in.params_for = nullptr;
    req.mcp.params.clear();
    CHECK(t.match(in)->name == "calls");
    // Without body_view the untrusted request still takes the default.
    in.body_view = false;
    CHECK(t.match(in)->name == "default");
  }
  SECTION("a legacy:true route takes it whatever its match") {
    Settings s;
    s.routes.push_back(withMethod("calls", "tools/call"));
    Route l = withMethod("old", "nothing");
    l.legacy = true;
    s.routes.push_back(l);
    s.routes.push_back(route("default", "u"));
    CHECK(RouteTable::compile(s).match(in)->name == "old");
  }
}

TEST_CASE("the table owns its routes and copies share them", "[router]") {
  RouteTable copy;
  const Route* first = nullptr;
  {
    auto s = std::make_unique<Settings>();
    Route r = withMethod("calls", "tools/call");
    r.upstream_index = 3;
    r.verify_body = true;
    s->routes.push_back(r);
    RouteTable t = RouteTable::compile(*s);
    copy = t;
    first = t.match(Request().method("tools/call").input());
  }  // settings and the original table are gone
  const Route* r = copy.match(Request().method("tools/call").input());
  REQUIRE(r != nullptr);
  CHECK(r == first);
  CHECK(r->name == "calls");
  CHECK(r->upstream_index == 3);
  CHECK(r->verify_body == true);
}

}  // namespace
}  // namespace gw::router
