// The exchange's metrics and its access-log line (see exchange.h).

#include <spdlog/spdlog.h>

#include <charconv>
#include <cinttypes>
#include <cstdio>
#include <ctime>

#include "gateway/mcp/jsonrpc.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

// ---- metrics and access log ------------------------------------------------------------

namespace {

// The tool-name label of a trusted (or body-inspected legacy) tools/call (capped, see
// metrics::ToolNames), else "". Only a request that reached an upstream may admit a new name.
std::string_view toolLabel(ProxyContext& w, const filters::RequestContext& ctx,
                           const settings::Settings& s, bool forwarded) {
  if (!(ctx.trusted || ctx.body_view) || !ctx.mcp.has_method || ctx.mcp.method != "tools/call" ||
      !ctx.mcp.has_name) {
    return {};
  }
  return w.metrics->tool_labels.label(w.shared->metrics.toolNames(), ctx.mcp.name.value,
                                      s.metrics_max_tool_names, forwarded);
}

std::string_view methodLabel(const filters::RequestContext& ctx) {
  return ctx.mcp.has_method ? metrics::methodLabel(ctx.mcp.method) : std::string_view{};
}

}  // namespace

// The server the request ran on: its name ("default" without `servers:`), or "" when no
// server took it (the access log's "server": null).
std::string_view Exchange::serverLabel() const noexcept {
  return snap_->servers.empty() ? std::string_view(settings().server_name) : std::string_view{};
}

// One upstream attempt ends (answered, failed or cut): mcp.client.operation.duration.
void Exchange::recordAttempt(Outcome error_type, core::Nanos duration) {
  const settings::Upstream& up = settings().upstreams[fwd_.upstreamIndex()];
  w_->metrics->client_ops
      .at({serverLabel(), up.name, methodLabel(ctx_), toolLabel(*w_, ctx_, settings(), true),
           core::outcomeName(error_type)})
      .observe(duration);
  if (trace_.on()) {
    const upstream::Endpoint* endpoint = fwd_.endpoint();
    trace_.attemptEnded(
        spanName(), up.name, endpoint != nullptr ? endpoint->text : "",
        static_cast<uint64_t>(duration.count()),
        error_type == Outcome::kNone ? std::string_view{} : core::outcomeName(error_type),
        error_type == Outcome::kNone ? status : 0);
  }
}

// The span name of MCP semantic conventions: "{mcp.method.name} {target}" (the tool or
// prompt name, the resource URI), the method alone without a target, the HTTP method for a
// request that names no MCP method.
std::string Exchange::spanName() const {
  if (!ctx_.mcp.has_method) {
    return std::string(head.method);
  }
  std::string name(ctx_.mcp.method);
  if (ctx_.mcp.has_name && !ctx_.mcp.name.value.empty()) {
    name += ' ';
    name.append(ctx_.mcp.name.value.substr(0, 256));
  }
  return name;
}

// tracing: the request's SERVER span (MCP semantic conventions), when it is sampled.
void Exchange::endTrace(std::string_view error_type) {
  if (!trace_.on() || !trace_.sampled()) {
    return;
  }
  trace::Span s = trace_.serverSpan();
  s.name = spanName();
  if (ctx_.mcp.has_method) {
    s.add("mcp.method.name", ctx_.mcp.method);
    if (ctx_.mcp.has_name) {
      const std::string_view v = ctx_.mcp.name.value.substr(0, 1024);
      if (ctx_.mcp.method == "tools/call") {
        s.add("gen_ai.tool.name", v);
        s.add("gen_ai.operation.name", "execute_tool");
      } else if (ctx_.mcp.method == "prompts/get") {
        s.add("gen_ai.prompt.name", v);
      } else if (ctx_.mcp.method.starts_with("resources/")) {
        s.add("mcp.resource.uri", v);
      }
    }
  }
  if (ctx_.mcp.has_version) {
    s.add("mcp.protocol.version", ctx_.mcp.version);
  }
  if (ctx_.reply.id.kind == mcp::RequestId::Kind::kJson) {
    std::string_view id = ctx_.reply.id.json;
    if (id.size() >= 2 && id.front() == '"') {
      id = id.substr(1, id.size() - 2);
    }
    s.add("jsonrpc.request.id", id);
  }
  if (const http::HeaderField* session = http::findField(head.fields, "mcp-session-id");
      ctx_.legacy && session != nullptr) {
    s.add("mcp.session.id", session->value.substr(0, 256));
  }
  s.add("http.request.method", head.method);
  s.add("http.response.status_code", int64_t{status});
  s.add("client.address", ctx_.client_ip.empty() ? peer_.address : ctx_.client_ip);
  s.add("network.protocol.name", "http");
  if (const std::string_view server = serverLabel(); !server.empty()) {
    s.add("mcp_gateway.server", server);
  }
  if (ctx_.route != nullptr) {
    s.add("mcp_gateway.route", ctx_.route->name);
  }
  if (!ctx_.policy_rule.empty()) {
    s.add("mcp_gateway.policy.rule", ctx_.policy_rule);
  }
  for (const policy::Verdict& v : ctx_.verdicts) {
    if (v.audit) {
      continue;
    }
    // The enforced rule's decision, then each rate limit that applied.
    s.add(v.limit ? "mcp_gateway.rate_limit.decision" : "mcp_gateway.policy.decision",
          v.allow ? "allow" : "deny");
    if (v.limit) {
      s.add("mcp_gateway.rate_limit.name", v.name);
    }
  }
  s.add("mcp_gateway.outcome", core::outcomeName(outcome));
  if (!error_type.empty()) {
    s.add("error.type", error_type);
    s.status = trace::Status::kError;
    s.status_message =
        ctx_.reply.message.empty() ? std::string(error_type) : ctx_.reply.message.substr(0, 256);
    if (ctx_.reply.code != 0) {
      s.add("rpc.response.status_code", std::to_string(ctx_.reply.code));
    }
  }
  trace_.finish(std::move(s));
}

void Exchange::countSse(bool open) {
  if (open != sse_counted_) {
    sse_counted_ = open;
    auto& g = w_->metrics->sse_streams;
    g.store(g.load(std::memory_order_relaxed) + (open ? 1 : -1), std::memory_order_relaxed);
  }
}

void Exchange::endRequest() {
  logged_ = true;
  metrics::WorkerMetrics& m = *w_->metrics;
  const std::string_view name = core::outcomeName(outcome);
  const bool failed = core::outcomeFailed(outcome);
  char digits[8];
  std::string_view status_text(
      digits,
      static_cast<size_t>(std::to_chars(digits, digits + sizeof(digits), status).ptr - digits));
  std::string_view error_type = failed ? name : std::string_view{};
  if (!failed && status >= 500) {
    error_type = status_text;
  }
  m.server_ops
      .at({serverLabel(), ctx_.route ? std::string_view(ctx_.route->name) : std::string_view{},
           methodLabel(ctx_), toolLabel(*w_, ctx_, settings(), forwarded_), status_text,
           error_type})
      .observe(now() - started_);
  if (failed) {
    m.rejections.at({serverLabel(), name}).add(1);
  }
  for (const policy::Verdict& v : ctx_.verdicts) {
    m.policy_decisions
        .at({serverLabel(), v.name, v.allow ? "allow" : "deny", v.audit ? "audit" : "enforce"})
        .add(1);
  }
  m.bytes_in.add(stream_->bytesReceived());
  m.bytes_out.add(stream_->bytesSent());
  endTrace(error_type);
  if (head.head_bytes > 0) {
    logAccess();  // one line per request whose head arrived (else: the connection's logGarbage)
  }
}

// Access-log fields of issue #13: "legacy" (no trusted version, passthrough) and "view",
// where mcp_method / mcp_name came from: "headers" (trusted), "body" (a legacy body read by
// the gateway) or "none" (untrusted headers, logged but used for nothing).
void Exchange::appendLegacyFields(std::string& line) const {
  line += ",\"legacy\":";
  line += ctx_.legacy ? "true" : "false";
  line += ",\"view\":\"";
  line += ctx_.trusted ? "headers" : ctx_.body_view ? "body" : "none";
  line += '"';
}

void Exchange::logAccess() {
  spdlog::logger* log = w_->accessLog();
  if (log == nullptr) {
    return;
  }
  thread_local std::string line;
  line.clear();
  auto ms = std::chrono::duration<double, std::milli>(now() - started_).count();
  char tbuf[64];
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  std::strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  line += "{\"time\":\"";
  line += tbuf;
  line += "\",\"client\":\"";
  mcp::appendJsonEscaped(line, ctx_.client_ip.empty() ? peer_.address : ctx_.client_ip);
  line += "\",\"method\":\"";
  mcp::appendJsonEscaped(line, head.method);
  line += "\",\"path\":\"";
  mcp::appendJsonEscaped(line, head.path);
  char nums[160];
  std::snprintf(nums, sizeof(nums),
                "\",\"status\":%d,\"bytes_in\":%" PRIu64 ",\"bytes_out\":%" PRIu64
                ",\"duration_ms\":%.3f",
                status, stream_->bytesReceived(), stream_->bytesSent(), ms);
  line += nums;
  line += ",\"upstream\":";
  if (const upstream::Endpoint* endpoint = fwd_.endpoint()) {
    line += '"';
    mcp::appendJsonEscaped(line, endpoint->text);
    line += '"';
  } else {
    line += "null";
  }
  // The server the request ran on (null: with `servers:`, none answers its Host and path).
  line += ",\"server\":";
  if (const std::string_view server = serverLabel(); !server.empty()) {
    line += '"';
    mcp::appendJsonEscaped(line, server);
    line += '"';
  } else {
    line += "null";
  }
  line += ",\"route\":";
  if (ctx_.route) {
    line += '"';
    mcp::appendJsonEscaped(line, ctx_.route->name);
    line += '"';
  } else {
    line += "null";
  }
  auto optional = [&](const char* key, bool present, std::string_view v) {
    line += ",\"";
    line += key;
    line += "\":";
    if (present) {
      line += '"';
      mcp::appendJsonEscaped(line, v.substr(0, 256));
      line += '"';
    } else {
      line += "null";
    }
  };
  optional("mcp_version", ctx_.mcp.has_version, ctx_.mcp.version);
  optional("mcp_method", ctx_.mcp.has_method, ctx_.mcp.method);
  optional("mcp_name", ctx_.mcp.has_name, ctx_.mcp.name.value);
  optional("subject", ctx_.identity.authenticated, ctx_.identity.subject);
  optional("policy_rule", !ctx_.policy_rule.empty(), ctx_.policy_rule);
  if (ctx_.snapshot != nullptr && ctx_.snapshot->policy->hasAudit()) {
    // mode: audit — the rules and limits that would have rejected this request.
    line += ",\"audit\":[";
    bool first = true;
    for (const policy::Verdict& v : ctx_.verdicts) {
      if (v.audit && !v.allow) {
        line += first ? "\"" : ",\"";
        mcp::appendJsonEscaped(line, v.name);
        line += '"';
        first = false;
      }
    }
    line += ']';
  }
  fwd_.appendLogFields(line);
  fed_.appendLogFields(line);
  trace_.appendLogFields(line);
  line += ",\"trusted\":";
  line += ctx_.trusted ? "true" : "false";
  appendLegacyFields(line);
  line += ",\"verify\":\"";
  line += ctx_.verify_body ? "on" : "off";
  line += "\",\"params\":\"";
  line += filters::paramCheckName(ctx_.param_check);
  line += "\",\"outcome\":\"";
  line += core::outcomeName(outcome);
  line += "\"}";
  log->info(line);
}

}  // namespace gw::proxy
