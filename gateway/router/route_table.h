#pragma once
// router/: which route, and so which upstream, a request goes to — the `*` pattern language
// of routes and policy rules, and the route table compiled from Settings::routes.
// The route table, compiled once from Settings::routes (globs built at load time)
// and held in the immutable settings snapshot. The route filter asks it, after the MCP
// header contract has been read, which route (and so which upstream) a request goes to.
// match() is pure, noexcept and allocation-free.

#include <memory>
#include <string_view>
#include <vector>

#include "gateway/http/message.h"
#include "gateway/mcp/contract.h"
#include "gateway/settings/settings.h"

namespace gw::router {

struct RouteInput {
  bool trusted = false;     // the request's protocol version is trusted: Mcp-* headers may be used
  std::string_view method;  // Mcp-Method ("" when absent)
  const gw::mcp::McpHeaders* mcp = nullptr;                    // decoded name / params
  const std::vector<gw::http::HeaderField>* fields = nullptr;  // all request fields
  // Legacy inspection (issue #13): the version is not trusted, but method/name/params were
  // read from the body, so they may be used. Such a request goes to the first route marked
  // legacy:true when there is one (regardless of its match, as untrusted traffic does);
  // else it is matched against the routes in order exactly like a trusted request.
  bool body_view = false;
  // Legacy inspection: called before a route's `params` are compared, to compute `mcp`'s
  // params for that route's upstream (the x-mcp-header annotations are learned per
  // upstream). May be null.
  void (*params_for)(void* user, const gw::settings::Route& route) = nullptr;
  void* params_user = nullptr;
};

class RouteTable {
 public:
  RouteTable() = default;  // no routes: match() is always nullptr

  // Compiles settings.routes (globs built once). Never fails on validated settings. The
  // table keeps its own copy of the routes: it does not reference `s` afterwards.
  static RouteTable compile(const gw::settings::Settings& s);

  // The route for this request, or nullptr when none matches. The pointer stays valid as
  // long as any copy of this table lives.
  //
  // Trusted requests: routes in order, first match wins. Within a route every present key
  // must match: `method` against Mcp-Method (absent → no match), `name` against the decoded
  // Mcp-Name (absent → no match), each `params` entry against the decoded Mcp-Param-{Name}
  // found case-insensitively (absent → no match), each `headers` entry against the first
  // field of that name (case-insensitive; absent → no match). A route without match
  // matches everything.
  // Untrusted requests (their Mcp-* headers mean nothing): the first route marked
  // legacy:true, else the default route, else nullptr. Legacy requests with a body view:
  // see RouteInput::body_view. (A federated route an untrusted request lands on sends it to
  // its first upstream as a plain route would: proxy/, Exchange::toTarget.)
  const gw::settings::Route* match(const RouteInput& in) const noexcept;

  // The first route (in order) that sends to settings.upstreams[upstream_index], or nullptr.
  // A legacy GET/DELETE whose session was created through another route goes back there.
  const gw::settings::Route* forUpstream(size_t upstream_index) const noexcept;

  size_t size() const noexcept;

 private:
  struct Compiled;
  std::shared_ptr<const Compiled> compiled_;  // shared: copies are cheap, contents immutable
};

}  // namespace gw::router
