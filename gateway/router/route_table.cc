// router/: route table compilation and matching (see route_table.h).

#include "gateway/router/route_table.h"

#include <optional>
#include <string>
#include <utility>

#include "gateway/core/ascii.h"
#include "gateway/router/glob.h"

namespace gw::router {

namespace {

struct NamedGlob {
  std::string name;
  Glob glob;
};

struct CompiledRoute {
  settings::Route route;
  std::optional<Glob> method;
  std::optional<Glob> name;
  std::vector<NamedGlob> params;
  std::vector<NamedGlob> headers;
};

const http::HeaderField* firstField(const std::vector<http::HeaderField>& fields,
                                    std::string_view name) noexcept {
  for (const http::HeaderField& f : fields) {
    if (core::iequals(f.name, name)) {
      return &f;
    }
  }
  return nullptr;
}

bool matches(const CompiledRoute& r, const RouteInput& in) noexcept {
  if (r.method && (in.method.empty() || !r.method->match(in.method))) {
    return false;
  }
  if (r.name && (in.mcp == nullptr || !in.mcp->has_name || !r.name->match(in.mcp->name.value))) {
    return false;
  }
  if (!r.params.empty() && in.params_for != nullptr) {
    in.params_for(in.params_user, r.route);  // legacy view: this route's upstream's params
  }
  for (const NamedGlob& p : r.params) {
    const mcp::McpParam* found = in.mcp != nullptr ? in.mcp->findParam(p.name) : nullptr;
    if (found == nullptr || !p.glob.match(found->v.value)) {
      return false;
    }
  }
  for (const NamedGlob& h : r.headers) {
    const http::HeaderField* found =
        in.fields != nullptr ? firstField(*in.fields, h.name) : nullptr;
    if (found == nullptr || !h.glob.match(found->value)) {
      return false;
    }
  }
  return true;
}

}  // namespace

struct RouteTable::Compiled {
  std::vector<CompiledRoute> routes;
  const settings::Route* untrusted = nullptr;  // first legacy route, else the default
};

RouteTable RouteTable::compile(const settings::Settings& s) {
  auto c = std::make_shared<Compiled>();
  c->routes.reserve(s.routes.size());
  for (const settings::Route& route : s.routes) {
    CompiledRoute cr;
    cr.route = route;
    if (route.has_match) {
      if (route.match.method) {
        cr.method.emplace(*route.match.method);
      }
      if (route.match.name) {
        cr.name.emplace(*route.match.name);
      }
      for (const auto& [name, pattern] : route.match.params) {
        cr.params.push_back(NamedGlob{name, Glob(pattern)});
      }
      for (const auto& [name, pattern] : route.match.headers) {
        cr.headers.push_back(NamedGlob{name, Glob(pattern)});
      }
    }
    c->routes.push_back(std::move(cr));
  }
  // After the vector is complete, so the pointer is stable.
  for (const CompiledRoute& cr : c->routes) {
    if (cr.route.legacy) {
      c->untrusted = &cr.route;
      break;
    }
  }
  if (c->untrusted == nullptr) {
    for (const CompiledRoute& cr : c->routes) {
      if (!cr.route.has_match) {
        c->untrusted = &cr.route;
        break;
      }
    }
  }
  RouteTable t;
  t.compiled_ = std::move(c);
  return t;
}

const settings::Route* RouteTable::match(const RouteInput& in) const noexcept {
  if (!compiled_) {
    return nullptr;
  }
  if (!in.trusted && !in.body_view) {
    return compiled_->untrusted;
  }
  if (in.body_view && compiled_->untrusted != nullptr && compiled_->untrusted->legacy) {
    return compiled_->untrusted;  // the operator's legacy route takes all legacy traffic
  }
  for (const CompiledRoute& cr : compiled_->routes) {
    if (!cr.route.has_match || matches(cr, in)) {
      return &cr.route;
    }
  }
  return nullptr;
}

const settings::Route* RouteTable::forUpstream(size_t upstream_index) const noexcept {
  if (!compiled_) {
    return nullptr;
  }
  for (const CompiledRoute& cr : compiled_->routes) {
    if (cr.route.upstream_index == upstream_index) {
      return &cr.route;
    }
  }
  return nullptr;
}

size_t RouteTable::size() const noexcept {
  return compiled_ ? compiled_->routes.size() : 0;
}

}  // namespace gw::router
