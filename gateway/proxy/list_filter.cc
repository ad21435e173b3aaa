// visibility: filter (issue #16) — a caller's tools/list, prompts/list and resources/list show
// only what its policy lets it use. On a plain route the upstream's answer is read whole
// (bounded) — JSON to its end, SSE up to the event that carries the JSON-RPC response (a
// server may keep its stream open after it; the upstream connection is then closed) — the
// list array filtered (federation::filterListAnswer: every other byte kept, cacheScope set to
// "private"), then sent with a Content-Length; a federated route filters its merged answer
// (serveMerged). Only when the policy can deny anything at all: otherwise lists are relayed
// untouched, as with `visibility: all`. Tool pinning reads tools/list answers the same way.

#include "gateway/core/ascii.h"
#include "gateway/filters/pipeline.h"
#include "gateway/mcp/id_scan.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/worker_context.h"

namespace gw::proxy {

namespace {

// Upper bound on a list answer read whole for filtering (larger: 502, never unfiltered).
constexpr size_t kMaxFilteredBytes = 16 * 1024 * 1024;

// The call a list item stands for.
std::string_view callOf(federation::ListKind kind) {
  switch (kind) {
    case federation::ListKind::kTools:
      return "tools/call";
    case federation::ListKind::kPrompts:
      return "prompts/get";
    default:
      return "resources/read";
  }
}

// The SSE events of a whole answer, in order.
struct EventList final : sse::EventSink {
  std::vector<std::pair<std::string, std::string>> events;
  void onEvent(std::string_view event, std::string_view data) noexcept override {
    events.emplace_back(std::string(event), std::string(data));
  }
};

void appendEvent(std::string& out, std::string_view event, std::string_view data) {
  out += "event: ";
  out += event.empty() ? std::string_view("message") : event;
  out += '\n';
  size_t start = 0;
  while (true) {
    const size_t nl = data.find('\n', start);
    out += "data: ";
    out.append(data.substr(start, nl == std::string_view::npos ? nl : nl - start));
    out += '\n';
    if (nl == std::string_view::npos) {
      break;
    }
    start = nl + 1;
  }
  out += '\n';
}

}  // namespace

// The list answer filtered for this request's caller. False: not a list answer (an error,
// another shape), relayed as it came.
bool Exchange::filterForCaller(federation::ListKind kind, std::string_view json, std::string& out) {
  const policy::PolicySet& p = *snap_->policy;
  const std::string_view call = callOf(kind);
  const bool by_policy = p.filtersLists();
  const bool by_pins = kind == federation::ListKind::kTools && pinCuts();
  size_t hidden = 0;
  const bool ok = federation::filterListAnswer(
      kind, json,
      [&](std::string_view key) {
        if (key.empty()) {
          return true;
        }
        return (!by_policy || p.mayUse(call, key, ctx_.identity)) && !(by_pins && pinHidden(key));
      },
      out, hidden);
  if (ok) {
    hidden_ += hidden;
    filtered_ = true;
  }
  return ok;
}

bool Exchange::cutsLists() const noexcept {
  return snap_->policy->filtersLists() || pinCuts();
}

bool Exchange::beginListFilter(const http::ResponseHead& resp) {
  filtering_ = false;
  if (resp.status != 200 || !ctx_.mcp.has_method) {
    return false;
  }
  const auto kind = federation::listKindOf(ctx_.mcp.method);
  if (!kind || *kind == federation::ListKind::kDiscover ||
      *kind == federation::ListKind::kTemplates) {
    return false;
  }
  // tool_pinning reads every tools/list answer whole (to observe it), even when nothing is
  // cut from it.
  const bool pins = *kind == federation::ListKind::kTools && snap_->pins != nullptr;
  if (!pins && !snap_->policy->filtersLists()) {
    return false;
  }
  filtering_ = true;
  filter_overflow_ = false;
  filter_kind_ = *kind;
  filter_status_ = resp.status;
  filter_buf_.clear();
  if (resp_sse_) {
    filter_answer_.begin(kMaxFilteredBytes);
  } else {
    filter_answer_.reset();
  }
  resp_started = false;  // nothing went to the client yet: a failure still gets a 502
  return true;
}

// Keeps n more bytes of the answer. True when the answer is complete before the upstream ends
// it: an SSE answer's response event is in (the events after it are not waited for).
bool Exchange::collectListAnswer(evbuffer* in, size_t n) {
  if (filter_buf_.size() + n > kMaxFilteredBytes) {
    filter_overflow_ = true;
  } else {
    filter_answer_.feed(in, n);
    const size_t at = filter_buf_.size();
    filter_buf_.resize(at + n);
    evbuffer_copyout(in, filter_buf_.data() + at, n);
  }
  evbuffer_drain(in, n);
  return !filter_overflow_ && filter_answer_.done();
}

void Exchange::sendFilteredList() {
  filtering_ = false;
  filter_answer_.reset();
  if (filter_overflow_) {
    upstreamFailed(502, mcp::code::kUpstreamUnavailable,
                   "Bad Gateway: the list answer is too large to filter for this caller (16 MiB)",
                   Outcome::kUpstreamMalformed);
    return;
  }
  std::string out;
  if (resp_sse_) {
    EventList events;
    sse::Framer framer(&events, kMaxFilteredBytes);
    framer.feed(filter_buf_);
    std::string filtered;
    for (const auto& [event, data] : events.events) {
      if (mcp::looksLikeResponse(data)) {
        if (ctx_.learn_tools) {
          learnTools(data);
        }
        if (filter_kind_ == federation::ListKind::kTools) {
          observePinsInAnswer(s_->upstreams[up_index_].name, data);
        }
        if (cutsLists() && filterForCaller(filter_kind_, data, filtered)) {
          appendEvent(out, event, filtered);
          continue;
        }
      }
      appendEvent(out, event, data);
    }
  } else {
    if (ctx_.learn_tools) {
      learnTools(filter_buf_);
    }
    if (filter_kind_ == federation::ListKind::kTools) {
      observePinsInAnswer(s_->upstreams[up_index_].name, filter_buf_);
    }
    if (!cutsLists() || !filterForCaller(filter_kind_, filter_buf_, out)) {
      out = std::move(filter_buf_);
    }
  }
  // The head the upstream sent, now with this body's length.
  std::erase_if(resp_fields_, [](const http::Field& f) {
    return core::iequals(f.name, "content-length") || core::iequals(f.name, "transfer-encoding");
  });
  downstream::ResponseHeaders h;
  h.status = filter_status_;
  h.reason = http::reasonPhrase(filter_status_);
  h.fields = &resp_fields_;
  h.framing = http::BodyFraming::kContentLength;
  h.content_length = out.size();
  h.extra_lines = ratelimit_lines_;
  resp_started = true;
  stream_->encodeHeaders(h);
  event::EvBufferPtr b = event::makeBuffer();
  evbuffer_add(b.get(), out.data(), out.size());
  stream_->encodeData(b.get(), out.size());
  filter_buf_.clear();
  outcome = Outcome::kComplete;
  releaseUpstream();
  stream_->encodeEnd();
}

}  // namespace gw::proxy
