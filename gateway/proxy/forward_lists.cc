// visibility: filter (issue #16) — a caller's tools/list, prompts/list and resources/list show
// only what its policy lets it use. On a plain route the upstream's answer is read whole
// (bounded) — JSON to its end, SSE up to the event that carries the JSON-RPC response (a
// server may keep its stream open after it; the upstream connection is then closed) — the
// list array filtered (federation::filterListAnswer: every other byte kept, cacheScope set to
// "private"), then sent with a Content-Length; a federated route filters its merged answer
// (serveMerged). Only when the policy can deny anything at all: otherwise lists are relayed
// untouched, as with `visibility: all`. Tool pinning reads tools/list answers the same way,
// and so does a legacy client's list on a `names: prefix` route (its names prefixed).
//
// Fail closed (issue #24): an answer read whole that the gateway cannot read — not JSON, not
// UTF-8, nested deeper than 64, a list member written twice, an SSE event that is not JSON —
// is never relayed unfiltered: the client gets 502 (JSON-RPC, id echoed), the cause is logged
// and counted. Items no client can take are dropped (federation::checkItem), and the answer's
// bytes count against limits.max_buffered_answer_bytes (503 beyond it).

#include <spdlog/spdlog.h>

#include "gateway/core/ascii.h"
#include "gateway/filters/pipeline.h"
#include "gateway/mcp/bridge.h"
#include "gateway/mcp/id_scan.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/forward_target.h"
#include "gateway/proxy/proxy_context.h"

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

bool ForwardTarget::filterForCaller(federation::ListKind kind, std::string_view json,
                                    std::string& out, ListMemo::Entry* e,
                                    const ListMemo::Match* m) {
  const policy::PolicySet& p = *x_.snapshot()->policy;
  const std::string_view call = callOf(kind);
  const bool by_policy = p.filtersLists();
  const bool by_pins = kind == federation::ListKind::kTools && pinCuts();
  const ListMemo::Keep keep = [&](std::string_view key) {
    return (!by_policy || p.mayUse(call, key, x_.ctx().identity)) && !(by_pins && pinHidden(key));
  };
  ListMemo& memo = x_.worker().list_memo;
  size_t hidden = 0;
  const bool ok = (m != nullptr && memo.reuse(*m, keep, out, hidden)) ||
                  memo.filterNew(e, m, kind, json, keep, out, hidden);
  if (ok) {
    hidden_ += hidden;
    filtered_ = true;
  }
  return ok;
}

bool ForwardTarget::filterMerged(federation::ListKind kind,
                                 const std::shared_ptr<const std::string>& shared,
                                 std::string& members) {
  const settings::Route* r = x_.ctx().route;
  if (r == nullptr || shared == nullptr || shared->empty()) {
    return false;
  }
  // The route's answer with id 0, ttlMs 0 and a private scope: what the filter reads, once
  // per merged list and visibility set; each request puts its own id and ttlMs around the
  // filtered members.
  std::string head;
  federation::appendResponseHead(head, "0");
  std::string tail;
  federation::appendResponseTail(tail, false, 0, false);
  std::string source(1, '\0');  // never an upstream's name
  source += r->name;
  ListMemo& memo = x_.worker().list_memo;
  std::string answer;
  ListMemo::Entry* e = memo.findShared(source, kind, shared);
  if (e == nullptr) {
    answer = head;
    answer += *shared;
    answer += tail;
    e = memo.keepShared(source, kind, shared, answer);
  }
  const std::string_view text = e != nullptr ? ListMemo::text(*e) : std::string_view(answer);
  ListMemo::Match found;
  found.entry = e;
  std::string out;
  if (!filterForCaller(kind, text, out, e, e != nullptr ? &found : nullptr) ||
      out.size() < head.size() + tail.size() || !out.starts_with(head) || !out.ends_with(tail)) {
    return false;
  }
  members.assign(out, head.size(), out.size() - head.size() - tail.size());
  return true;
}

bool ForwardTarget::cutsLists() const noexcept {
  return x_.snapshot()->policy->filtersLists() || pinCuts();
}

bool ForwardTarget::readsAnswerWhole() const noexcept {
  if (!x_.ctx().mcp.has_method) {
    return false;
  }
  const auto kind = federation::listKindOf(x_.ctx().mcp.method);
  if (!kind || *kind == federation::ListKind::kDiscover ||
      *kind == federation::ListKind::kTemplates) {
    return false;
  }
  // tool_pinning reads every tools/list answer whole (to observe it), even when nothing is
  // cut from it.
  const bool pins = *kind == federation::ListKind::kTools && x_.snapshot()->pins != nullptr;
  return pins || x_.snapshot()->policy->filtersLists();
}

bool ForwardTarget::beginListFilter(const http::ResponseHead& resp) {
  filtering_ = false;
  // Every 2xx with a body is read whole (a client takes any 2xx body as the answer); an error
  // status is the server's refusal, relayed as it came.
  if (resp.status < 200 || resp.status >= 300 || resp.status == 202 || resp.status == 204 ||
      !readsAnswerWhole()) {
    return false;
  }
  filtering_ = true;
  filter_stop_ = FilterStop::kNone;
  filter_kind_ = *federation::listKindOf(x_.ctx().mcp.method);
  filter_status_ = resp.status;
  if (!filter_chain_) {
    filter_chain_ = event::makeBuffer();
  }
  evbuffer_drain(filter_chain_.get(), evbuffer_get_length(filter_chain_.get()));
  if (resp_sse_) {
    filter_answer_.begin(kMaxFilteredBytes);
  } else {
    filter_answer_.reset();
  }
  return true;  // nothing goes to the client yet: a failure still gets a 502
}

// Keeps n more bytes of the answer (the upstream's chunks are moved, not copied, so the
// answer grows chunk by chunk). True when the answer is complete before the upstream ends
// it — an SSE answer's response event is in (the events after it are not waited for) — or
// cannot be kept (too large, over the answer budget): sendFilteredList then decides.
bool ForwardTarget::collectListAnswer(evbuffer* in, size_t n) {
  if (filter_stop_ != FilterStop::kNone) {
    evbuffer_drain(in, n);
    return true;
  }
  if (evbuffer_get_length(filter_chain_.get()) + n > kMaxFilteredBytes) {
    filter_stop_ = FilterStop::kTooLarge;
  } else if (!answer_hold_.take(x_.worker().shared->buffered_answer_bytes,
                                x_.settings().limits.max_buffered_answer_bytes, n)) {
    filter_stop_ = FilterStop::kBudget;
  }
  if (filter_stop_ != FilterStop::kNone) {
    evbuffer_drain(in, n);
    return true;
  }
  filter_answer_.feed(in, n);
  evbuffer_remove_buffer(in, filter_chain_.get(), n);
  return filter_answer_.done();
}

bool ForwardTarget::listAnswerReady() const noexcept {
  return filter_stop_ != FilterStop::kNone || filter_answer_.done();
}

// The answer is not sent: the client gets the gateway's error (id echoed), the cause is
// logged and counted (mcp_gateway_list_answers_refused_total{reason}).
void ForwardTarget::refuseList(int st, std::string_view reason, const char* message, Outcome why,
                               std::string_view cause) {
  x_.worker().metrics->list_answers_refused.at({x_.serverLabel(), reason}).add(1);
  spdlog::warn("upstream '{}': {} answer refused ({}): {}", x_.settings().upstreams[up_index_].name,
               x_.ctx().mcp.method, reason, cause);
  dropListAnswer();
  x_.upstreamFailed(st, st == 503 ? mcp::code::kOverloaded : mcp::code::kUpstreamUnavailable,
                    message, why, st == 503 ? 1 : 0);
}

void ForwardTarget::dropListAnswer() noexcept {
  filtering_ = false;
  filter_answer_.reset();
  if (filter_chain_) {
    evbuffer_drain(filter_chain_.get(), evbuffer_get_length(filter_chain_.get()));
  }
  answer_hold_.release();  // after the bytes are freed: a large hold trims the heap
}

// One JSON-RPC response to the list request: observed (tool pinning, schema learning), its
// malformed items dropped and counted, filtered for the caller. kUnchanged: send it as it
// came (a JSON-RPC error, or nothing to cut); kRewritten: send `out`; kUnreadable: `why`.
ForwardTarget::ListRead ForwardTarget::readListResponse(std::string_view json, std::string& out,
                                                        std::string& why) {
  // The answer this upstream sent last, its id aside, is not parsed again (ListMemo).
  const std::string_view upstream = x_.settings().upstreams[up_index_].name;
  ListMemo::Match m;
  ListMemo::Entry* e = nullptr;
  federation::Page parsed;
  const federation::Page* read = nullptr;
  const federation::PageError pe =
      x_.worker().list_memo.read(upstream, filter_kind_, json, m, parsed, read, e, why);
  if (pe == federation::PageError::kRpcError) {
    why.clear();
    return ListRead::kUnchanged;  // the server's error answer: nothing to filter
  }
  if (pe != federation::PageError::kNone) {
    return ListRead::kUnreadable;
  }
  const federation::Page& page = *read;
  if (x_.ctx().learn_tools) {
    learnTools(json);
  }
  if (filter_kind_ == federation::ListKind::kTools) {
    observePins(upstream, page.items);
  }
  reportDroppedItems(x_.worker(), x_.serverLabel(), upstream, filter_kind_, page.dropped);
  if (!cutsLists() && page.dropped.total() == 0) {
    return ListRead::kUnchanged;
  }
  if (!filterForCaller(filter_kind_, json, out, e, m.entry != nullptr ? &m : nullptr)) {
    why = "the list answer could not be rewritten";
    return ListRead::kUnreadable;
  }
  return ListRead::kRewritten;
}

void ForwardTarget::sendFilteredList() {
  filtering_ = false;
  filter_answer_.reset();
  if (filter_stop_ == FilterStop::kTooLarge) {
    refuseList(502, "answer_too_large",
               "Bad Gateway: the list answer is too large to filter for this caller (16 MiB)",
               Outcome::kUpstreamMalformed, "over 16 MiB");
    return;
  }
  if (filter_stop_ == FilterStop::kBudget) {
    refuseList(503, "answer_buffer_full",
               "Service Unavailable: the gateway holds too many upstream answers; retry",
               Outcome::kAnswerBufferFull, "limits.max_buffered_answer_bytes reached");
    return;
  }
  const size_t len = evbuffer_get_length(filter_chain_.get());
  std::string out;
  std::string why;
  if (resp_sse_) {
    // Every event must be readable: an event the gateway cannot read may be the answer a
    // lenient client reads (one invalid UTF-8 byte, a 70-deep schema), so it is not relayed.
    EventList events;
    sse::Framer framer(&events, kMaxFilteredBytes);
    feedFramer(framer, filter_chain_.get(), len);
    std::string rewritten;
    for (const auto& [event, data] : events.events) {
      if (data.empty()) {
        appendEvent(out, event, data);  // an event that only primes a reconnection id
        continue;
      }
      const federation::MessageKind k = federation::messageKind(data);
      if (k == federation::MessageKind::kUnreadable) {
        why = "an event's data is not one JSON object (or not UTF-8, or nested deeper than 64)";
        break;
      }
      if (k == federation::MessageKind::kOther) {
        appendEvent(out, event, data);  // a notification or request of the server's
        continue;
      }
      const ListRead r = readListResponse(data, rewritten, why);
      if (r == ListRead::kUnreadable) {
        break;
      }
      std::string_view answer = r == ListRead::kRewritten ? std::string_view(rewritten) : data;
      std::string completed;
      if (bridge_ == Bridge::kOn &&
          mcp::bridge::completeResult(answer, bridgeCacheable(), completed)) {
        answer = completed;  // a 2025 server's result, for a 2026-07-28 client
      }
      appendEvent(out, event, answer);
    }
  } else {
    const std::string_view json(
        reinterpret_cast<const char*>(evbuffer_pullup(filter_chain_.get(), -1)), len);
    if (readListResponse(json, out, why) == ListRead::kUnchanged) {
      out.assign(json);
    }
    std::string completed;
    if (bridge_ == Bridge::kOn && mcp::bridge::completeResult(out, bridgeCacheable(), completed)) {
      out.swap(completed);
    }
  }
  if (!why.empty()) {
    refuseList(502, "list_unreadable",
               "Bad Gateway: the upstream's list answer cannot be read, so it cannot be "
               "filtered for this caller",
               Outcome::kListUnreadable, why);
    return;
  }
  dropListAnswer();
  // The head the upstream sent, now with this body's length.
  std::erase_if(x_.responseFields(), [](const http::Field& f) {
    return core::iequals(f.name, "content-length") || core::iequals(f.name, "transfer-encoding");
  });
  x_.respond(filter_status_, http::reasonPhrase(filter_status_), out);
}

}  // namespace gw::proxy
