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

void appendPart(const RequestContext& ctx, std::string_view part, std::string& key) {
  key += kSep;
  const mcp::McpHeaders& m = ctx.mcp;
  if (part == "subject") {
    key += ctx.identity.authenticated ? std::string_view(ctx.identity.subject) : "-";
  } else if (part == "group") {
    key += ctx.identity.groups.empty() ? std::string_view("-")
                                       : std::string_view(ctx.identity.groups.front());
  } else if (part == "method") {
    key += ctx.trusted && m.has_method ? m.method : std::string_view("-");
  } else if (part == "name") {
    key += ctx.trusted && m.has_name ? m.name.value : std::string_view("-");
  } else if (part == "client_ip") {
    key += ctx.client_ip;
  } else if (core::istartsWith(part, "param:")) {
    const mcp::McpParam* p = ctx.trusted ? m.findParam(part.substr(6)) : nullptr;
    key += p ? p->v.value : std::string_view("-");
  } else if (core::istartsWith(part, "header:")) {
    const http::HeaderField* f = http::findField(ctx.head->fields, part.substr(7));
    key += f ? f->value : std::string_view("-");
  }
}

}  // namespace

void collectLimits(const RequestContext& ctx, std::vector<LimitCheck>& out) {
  policy::RequestView view = policyView(ctx);
  for (const policy::RateLimitSpec& spec : ctx.snapshot->policy->rateLimits()) {
    if (!spec.match.matches(view, ctx.identity)) {
      continue;
    }
    LimitCheck c;
    c.spec = &spec;
    c.key = spec.name;
    for (const std::string& part : spec.key) {
      appendPart(ctx, part, c.key);
    }
    c.rate =
        ratelimit::Rate::make(spec.count, std::chrono::milliseconds(spec.window_ms), spec.burst);
    out.push_back(std::move(c));
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
  ctx.reply.extra_headers = ratelimit::headerLines(check.spec->name, check.rate, d, true);
}

}  // namespace gw::filters
