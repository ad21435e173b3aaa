// Admin listener (see admin.h).

#include "gateway/admin/admin.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <netinet/in.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "gateway/admin/auth.h"
#include "gateway/core/ascii.h"
#include "gateway/core/clock.h"
#include "gateway/core/json_escape.h"
#include "gateway/filters/config_json.h"
#include "gateway/filters/explain.h"
#include "gateway/filters/json_writer.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/policy/identity_token.h"
#include "gateway/upstream/health.h"

namespace gw::admin {

namespace {

int64_t steadyNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(core::steadyNow().time_since_epoch())
      .count();
}

// readiness (issue #29): "" when /readyz may answer 200, else why not (its 503 body).
std::string upstreamsNotReady(const settings::Settings& s) {
  if (s.readiness == settings::Settings::Readiness::kAlways || s.upstreams.empty()) {
    return {};
  }
  const int64_t now = steadyNs();
  size_t usable = 0;
  std::string down;
  for (const settings::Upstream& up : s.upstreams) {
    if (upstream::HealthRegistry::instance().upstream(up)->anyUsable(now)) {
      ++usable;
    } else {
      down += down.empty() ? "" : ", ";
      down += up.name;
    }
  }
  if (s.readiness == settings::Settings::Readiness::kAnyUpstream && usable == 0) {
    return "no upstream has a usable endpoint\n";
  }
  if (s.readiness == settings::Settings::Readiness::kAllUpstreams && usable < s.upstreams.size()) {
    return "upstreams without a usable endpoint: " + down + "\n";
  }
  return {};
}

// GET /upstreams: each upstream's endpoints and their state (issue #29).
std::string upstreamsJson(const settings::Settings& s) {
  const int64_t now = steadyNs();
  filters::JsonWriter j;
  j.open('[');
  for (const settings::Upstream& up : s.upstreams) {
    const auto state = upstream::HealthRegistry::instance().upstream(up);
    j.open('{').key("name").str(up.name);
    j.key("in_flight").num(static_cast<uint64_t>(std::max<int64_t>(state->in_flight.load(), 0)));
    j.key("pending").num(static_cast<uint64_t>(std::max<int64_t>(state->pending.load(), 0)));
    j.key("overflows").num(state->overflows.load());
    j.key("health_check").boolean(up.health_check.has_value());
    j.key("endpoints").open('[');
    for (const auto& e : state->endpoints()) {
      const int64_t until = e->ejected_until.load();
      const bool healthy = e->healthy.load();
      j.open('{').key("endpoint").str(e->endpoint);
      j.key("state").str(!healthy ? "down" : until > now ? "ejected" : "healthy");
      j.key("ejected_for_s")
          .num(
              static_cast<uint64_t>(until > now ? (until - now + 999'999'999) / 1'000'000'000 : 0));
      j.key("in_flight").num(static_cast<uint64_t>(std::max<int64_t>(e->in_flight.load(), 0)));
      j.key("consecutive_failures").num(e->consecutive.load());
      j.key("ejections").num(e->ejected_total.load());
      const auto [at, why] = e->lastFailure();
      j.key("last_failure");
      if (at != 0) {
        j.open('{').key("at").num(static_cast<uint64_t>(at)).key("reason").str(why).close('}');
      } else {
        j.raw("null");
      }
      j.close('}');
    }
    j.close(']').close('}');
  }
  j.close(']');
  return j.take() + "\n";
}

constexpr ev_ssize_t kMaxExplainBody = 64 * 1024;
}  // namespace

AdminServer::~AdminServer() {
  stop();
}

bool AdminServer::start(const settings::Address& addr, std::string& error) {
  base_.reset(event_base_new());
  http_ = evhttp_new(base_.get());
  evhttp_bound_socket* bound = evhttp_bind_socket_with_handle(http_, addr.ip.c_str(), addr.port);
  if (bound == nullptr) {
    error = "cannot bind admin listener " + addr.text + ": " + std::strerror(errno);
    evhttp_free(http_);
    http_ = nullptr;
    base_.reset();
    return false;
  }
  port_ = addr.port;
  sockaddr_storage ss{};
  socklen_t len = sizeof(ss);
  if (::getsockname(evhttp_bound_socket_get_fd(bound), reinterpret_cast<sockaddr*>(&ss), &len) ==
      0) {
    port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  }
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD | EVHTTP_REQ_POST);
  evhttp_set_max_body_size(http_, kMaxExplainBody);
  evhttp_set_gencb(http_, &AdminServer::onRequest, this);
  stop_.reset(event_new(
      base_.get(), -1, 0,
      [](evutil_socket_t, short, void* base) {
        event_base_loopbreak(static_cast<event_base*>(base));
      },
      base_.get()));
  thread_ = std::thread([this] { event_base_dispatch(base_.get()); });
  return true;
}

void AdminServer::stop() {
  if (!base_) {
    return;
  }
  if (thread_.joinable()) {
    event_active(stop_.get(), EV_READ, 0);
    thread_.join();
  }
  stop_.reset();
  if (http_) {
    evhttp_free(http_);
    http_ = nullptr;
  }
  base_.reset();
}

namespace {

void reply(evhttp_request* req, int code, const char* reason, const char* type,
           std::string_view body) {
  event::EvBufferPtr buf = event::makeBuffer();
  evbuffer_add(buf.get(), body.data(), body.size());
  evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", type);
  evhttp_send_reply(req, code, reason, buf.get());
}

constexpr const char* kJson = "application/json";
constexpr const char* kText = "text/plain; charset=utf-8";

std::string errorJson(std::string_view message) {
  std::string out = "{\"error\":\"";
  mcp::appendJsonEscaped(out, message);
  out += "\"}\n";
  return out;
}

// admin_auth: the request's Authorization fields, checked against the snapshot's token. False
// after answering 401 (the challenge says invalid_token when a token was given and wrong).
bool authorized(evhttp_request* req, std::string_view path, const settings::Settings* s,
                metrics::Registry& metrics) {
  if (s == nullptr || !s->admin_auth || isOpenAdminPath(path)) {
    return true;
  }
  size_t count = 0;
  std::string_view first;
  const evkeyvalq* in = evhttp_request_get_input_headers(req);
  for (const evkeyval* h = in->tqh_first; h != nullptr; h = h->next.tqe_next) {
    if (core::iequals(h->key, "authorization")) {
      if (count++ == 0) {
        first = h->value;
      }
    }
  }
  const AdminAuthResult r = checkAdminAuth(s->admin_auth, path, count, first);
  if (r == AdminAuthResult::kOpen || r == AdminAuthResult::kAccepted) {
    return true;
  }
  const bool invalid = r == AdminAuthResult::kInvalid;
  metrics.adminAuthFailed(invalid);
  evkeyvalq* out = evhttp_request_get_output_headers(req);
  evhttp_add_header(out, "WWW-Authenticate",
                    invalid ? "Bearer realm=\"mcp-gateway-admin\", error=\"invalid_token\""
                            : "Bearer realm=\"mcp-gateway-admin\"");
  evhttp_add_header(out, "Cache-Control", "no-store");
  reply(req, 401, "Unauthorized", kJson,
        errorJson(invalid ? "invalid admin token"
                          : "admin token required (Authorization: Bearer <token>)"));
  return false;
}

// /explain inputs from the query string (GET) or a JSON object (POST).
bool explainInput(evhttp_request* req, filters::ExplainInput& in, std::string& error) {
  if (evhttp_request_get_command(req) == EVHTTP_REQ_POST) {
    evbuffer* body = evhttp_request_get_input_buffer(req);
    std::string json(evbuffer_get_length(body), '\0');
    evbuffer_copyout(body, json.data(), json.size());
    return filters::parseExplainJson(json, in, error);
  }
  // Not evhttp_parse_query_str: it leaves keys encoded and lets malformed %-escapes through.
  const char* query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
  return filters::parseExplainQuery(query != nullptr ? query : "", in, error);
}

}  // namespace

// Every federated route: each upstream's last list fetch (time, outcome, item counts), what
// it owns, the merged answers cached now, and the conflicts seen.
std::string federationJson(const filters::Snapshot& snap) {
  const core::Nanos now =
      std::chrono::duration_cast<core::Nanos>(core::steadyNow().time_since_epoch());
  std::string out = "{\"routes\":[";
  bool first = true;
  for (size_t i = 0; i < snap.catalogs.size(); ++i) {
    if (!snap.catalogs[i]) {
      continue;
    }
    if (!first) {
      out += ',';
    }
    first = false;
    out += snap.catalogs[i]->viewJson(now);
  }
  // Each federated upstream's health (issue #29): healthy (every endpoint usable), degraded
  // (some), unavailable (none: left out of merged lists, its calls answered 503).
  out += "],\"health\":{";
  bool first_up = true;
  std::vector<size_t> seen;
  for (const settings::Route& r : snap.settings->routes) {
    for (size_t index : r.upstream_indexes) {
      if (std::find(seen.begin(), seen.end(), index) != seen.end()) {
        continue;
      }
      seen.push_back(index);
      const settings::Upstream& up = snap.settings->upstreams[index];
      const auto eps = upstream::HealthRegistry::instance().upstream(up)->endpoints();
      const size_t usable = static_cast<size_t>(std::count_if(
          eps.begin(), eps.end(), [&](const auto& e) { return e->usable(now.count()); }));
      out += first_up ? "" : ",";
      first_up = false;
      core::appendJsonString(out, up.name);
      out += ":\"";
      out += usable == eps.size() ? "healthy" : usable > 0 ? "degraded" : "unavailable";
      out += '"';
    }
  }
  out += "}}";
  return out;
}

void AdminServer::onRequest(evhttp_request* req, void* arg) {
  auto* self = static_cast<AdminServer*>(arg);
  const proxy::Shared& shared = self->shared_;
  const char* path_c = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
  std::string_view path = path_c != nullptr ? path_c : "/";
  // The snapshot of now: a reload that changes admin_auth applies to the next request.
  auto snap = shared.snapshot.load();
  if (!authorized(req, path, snap ? snap->settings.get() : nullptr, self->shared_.metrics)) {
    return;
  }
  bool post = evhttp_request_get_command(req) == EVHTTP_REQ_POST;
  if (post && path != "/explain") {
    evhttp_add_header(evhttp_request_get_output_headers(req), "Allow", "GET, HEAD");
    reply(req, 405, "Method Not Allowed", kText, "method not allowed\n");
    return;
  }
  if (path == "/healthz") {
    reply(req, 200, "OK", kText, "ok\n");
  } else if (path == "/readyz") {
    if (shared.draining.load(std::memory_order_relaxed)) {
      reply(req, 503, "Service Unavailable", kText, "draining\n");
    } else if (!snap) {
      reply(req, 503, "Service Unavailable", kText, "no configuration\n");
    } else if (std::string why = upstreamsNotReady(*snap->settings); !why.empty()) {
      reply(req, 503, "Service Unavailable", kText, why);
    } else {
      reply(req, 200, "OK", kText, "ready\n");
    }
  } else if (path == "/upstreams") {
    reply(req, 200, "OK", kJson, snap ? upstreamsJson(*snap->settings) : "[]\n");
  } else if (path == "/.well-known/jwks.json") {
    // The public keys of the signed_identity upstreams (every server's upstreams are the same).
    std::vector<const settings::Upstream*> ups;
    if (snap) {
      for (const settings::Upstream& u : snap->settings->upstreams) {
        ups.push_back(&u);
      }
    }
    evhttp_add_header(evhttp_request_get_output_headers(req), "Cache-Control", "max-age=300");
    reply(req, 200, "OK", "application/jwk-set+json", policy::identityJwks(ups));
  } else if (path == "/metrics") {
    metrics::Gauges g;
    g.connections = shared.connections.load(std::memory_order_relaxed);
    g.exchanges = shared.streams.load(std::memory_order_relaxed);
    g.draining = shared.draining.load(std::memory_order_relaxed);
    reply(req, 200, "OK", "text/plain; version=0.0.4; charset=utf-8", shared.metrics.scrape(g));
  } else if (path == "/federation" || path == "/pins") {
    // Per server (?server=NAME; not needed with one server).
    filters::ExplainInput in;
    std::string error;
    const char* query = evhttp_uri_get_query(evhttp_request_get_evhttp_uri(req));
    const filters::Snapshot* server = nullptr;
    if (!filters::parseExplainQuery(query != nullptr ? query : "", in, error)) {
      reply(req, 400, "Bad Request", kJson, errorJson(error));
      return;
    }
    if (!in.method.empty() || in.name || in.body || !in.params.empty() || !in.headers.empty()) {
      reply(req, 400, "Bad Request", kJson, errorJson("only 'server' (or host and path) here"));
      return;
    }
    server = filters::explainServer(*snap, in, error);
    if (server == nullptr) {
      reply(req, 400, "Bad Request", kJson, errorJson(error));
    } else if (path == "/federation") {
      reply(req, 200, "OK", kJson, federationJson(*server) + "\n");
    } else {
      // tool_pinning: every pin and pending change (mode off: just that).
      reply(req, 200, "OK", kJson,
            (server->pins ? server->pins->json() : std::string("{\"mode\":\"off\"}")) + "\n");
    }
  } else if (path == "/config") {
    // The running configuration, and each endpoint's state now (as GET /upstreams).
    std::string config = filters::configJson(*snap, &shared.bound);
    std::string state = upstreamsJson(*snap->settings);
    state.pop_back();  // its newline
    if (!config.empty() && config.back() == '}') {
      config.pop_back();
      config += ",\"upstream_state\":" + state + "}";
    }
    reply(req, 200, "OK", kJson, config + "\n");
  } else if (path == "/explain") {
    filters::ExplainInput in;
    std::string error;
    if (!explainInput(req, in, error)) {
      reply(req, 400, "Bad Request", kJson, errorJson(error));
      return;
    }
    if (in.method.empty() && !in.body) {
      reply(req, 400, "Bad Request", kJson, errorJson("'method' is required"));
      return;
    }
    auto answer = filters::explain(*snap, in, shared.limiter.get());
    if (!answer) {
      reply(req, 400, "Bad Request", kJson, errorJson(answer.error().message));
      return;
    }
    reply(req, 200, "OK", kJson, *answer + "\n");
  } else {
    reply(req, 404, "Not Found", kText, "not found\n");
  }
}

}  // namespace gw::admin
