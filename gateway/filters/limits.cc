// Rate-limit matching and keys (see limits.h).

#include "gateway/filters/limits.h"

#include <chrono>
#include <cstdio>

#include "gateway/core/ascii.h"
#include "gateway/filters/pipeline.h"
#include "gateway/http/message.h"
#include "gateway/mcp/jsonrpc.h"

namespace gw::filters {

namespace {

constexpr char kSep = '\x1f';  // cannot appear in a header value or a YAML key part

// `m` is the message's view, or null when the request has none (untrusted headers).
void appendPart(const RequestContext& ctx, const mcp::McpHeaders* m, std::string_view part,
                std::string& key) {
  key += kSep;
  if (part == "subject") {
    key += ctx.identity.authenticated ? std::string_view(ctx.identity.subject) : "-";
  } else if (part == "group") {
    key += ctx.identity.groups.empty() ? std::string_view("-")
                                       : std::string_view(ctx.identity.groups.front());
  } else if (part == "method") {
    key += m != nullptr && m->has_method ? m->method : std::string_view("-");
  } else if (part == "name") {
    key += m != nullptr && m->has_name ? m->name.value : std::string_view("-");
  } else if (part == "client_ip") {
    key += ctx.client_ip;
  } else if (core::istartsWith(part, "param:")) {
    const mcp::McpParam* p = m != nullptr ? m->findParam(part.substr(6)) : nullptr;
    key += p ? p->v.value : std::string_view("-");
  } else if (core::istartsWith(part, "header:")) {
    const http::HeaderField* f = http::findField(ctx.head->fields, part.substr(7));
    key += f ? f->value : std::string_view("-");
  }
}

void collectFor(const RequestContext& ctx, const mcp::McpHeaders* m, std::vector<LimitCheck>& out) {
  const policy::RequestView view = m != nullptr ? viewOf(*m) : policy::RequestView{};
  for (const policy::RateLimitSpec& spec : ctx.snapshot->policy->rateLimits()) {
    if (!spec.match.matches(view, ctx.identity)) {
      continue;
    }
    LimitCheck c;
    c.spec = &spec;
    c.key.clear();
    if (ctx.snapshot->settings->named_server) {
      // One bucket set per server: two servers' limits of one name never share a bucket
      // (the Redis key carries the server's name too).
      c.key = ctx.snapshot->settings->server_name;
      c.key += kSep;
    }
    c.key += spec.name;
    for (const std::string& part : spec.key) {
      appendPart(ctx, m, part, c.key);
    }
    c.rate =
        ratelimit::Rate::make(spec.count, std::chrono::milliseconds(spec.window_ms), spec.burst);
    out.push_back(std::move(c));
  }
}

}  // namespace

void collectLimits(const RequestContext& ctx, std::vector<LimitCheck>& out) {
  if (!ctx.body_view) {
    collectFor(ctx, ctx.trusted ? &ctx.mcp : nullptr, out);
    return;
  }
  // A legacy body: every message that is a request or notification is charged in order (a
  // response to a server-initiated request carries no method and is not checked).
  if (ctx.mcp.has_method) {
    collectFor(ctx, &ctx.mcp, out);
  }
  for (const mcp::McpHeaders& m : ctx.batch) {
    if (m.has_method) {
      collectFor(ctx, &m, out);
    }
  }
}

void setRateLimitedReply(RequestContext& ctx, const LimitCheck& check,
                         const ratelimit::Decision& d) {
  std::string msg = "Too Many Requests: rate limit '";
  mcp::appendJsonEscaped(msg, check.spec->name);
  msg += "' exceeded";
  setReply(ctx, 429, mcp::code::kRateLimited, std::move(msg), "rate_limited");
  long long secs = (d.retry_after.count() + 999) / 1000;
  if (secs < 1) {
    secs = 1;
  }
  char num[32];
  std::snprintf(num, sizeof(num), "%lld", secs);
  std::string data = "{\"retryAfter\":";
  data += num;
  data += ",\"limit\":\"";
  mcp::appendJsonEscaped(data, check.spec->name);
  data += "\"}";
  ctx.reply.data_json = std::move(data);
  ratelimit::headerFields(check.spec->name, check.rate, d, true, ctx.reply.extra_fields);
}

}  // namespace gw::filters
