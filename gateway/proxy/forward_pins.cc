// tool_pinning (issue #16) on the request path: the glue between the forwarding target and
// pins/. Each upstream's tools/list answer is observed in the pin book (pins::Book) and what
// that means (pins::report: warnings, counters, the access log's "pins_pending") is written
// here; in block mode a blocked tool is cut from lists (forward_lists.cc, serveMerged) and its
// calls get 403 / -31004 with data.reason "tool_definition_changed". A call pays nothing while
// no tool is pending, else one lookup. Deciding is pins/'s; this file reads the exchange (the
// snapshot's book, the route, the federated owner) and applies the decision.

#include <spdlog/spdlog.h>

#include "gateway/filters/pipeline.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/pins/book.h"
#include "gateway/pins/report.h"
#include "gateway/proxy/exchange.h"
#include "gateway/proxy/forward_target.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

namespace {

// A tools/list item's name as the list shows it (pins::Book::ItemName). The items observed
// passed federation::checkItem when the list was read: each has one string name.
std::string itemName(std::string_view item) {
  std::string name;
  if (federation::checkItem(federation::ListKind::kTools, item, 0, name) !=
      federation::ItemFault::kNone) {
    name.clear();
  }
  return name;
}

}  // namespace

void ForwardTarget::observePins(std::string_view upstream, std::span<const std::string> items) {
  pins::Book* book = x_.snapshot()->pins.get();
  if (book == nullptr) {
    return;
  }
  pins::Book::Observed seen;
  book->observe(upstream, items, pins::utcNow(), itemName, seen);
  pin_observed_ = true;
  const pins::Report report = pins::report(upstream, seen, book->blocks());
  if (!report.pending_log.empty()) {
    pin_log_ += pin_log_.empty() ? "" : ",";
    pin_log_ += report.pending_log;
  }
  for (std::string_view change : report.changes) {
    x_.worker().metrics->tool_pin_changes.at({x_.serverLabel(), upstream, change}).add(1);
  }
  for (const std::string& line : report.warnings) {
    spdlog::warn("{}", line);
  }
  if (!report.error.empty()) {
    spdlog::error("{}", report.error);
  }
}

bool ForwardTarget::pinCuts() const noexcept {
  return x_.snapshot()->pins != nullptr && x_.snapshot()->pins->hidesTools();
}

// A tools/list item this request's answer leaves out (block mode): `key` is the name as the
// client sees it (on a federated route, maybe prefixed).
bool ForwardTarget::pinHidden(std::string_view key) const {
  const pins::Book& book = *x_.snapshot()->pins;
  const settings::Route* r = x_.ctx().route;
  if (x_.federated().catalog() == nullptr || r == nullptr) {
    return book.blocked(x_.settings().upstreams[up_index_].name, key);
  }
  if (r->names == settings::FederationNames::kPrefix) {
    std::vector<std::string_view> names(r->upstreams.begin(), r->upstreams.end());
    size_t owner = 0;
    std::string_view inner;
    return federation::splitPrefixed(key, names, x_.settings().federation.separator, owner,
                                     inner) &&
           book.blocked(r->upstreams[owner], inner);
  }
  const int owner = x_.federated().catalog()->owner(federation::ListKind::kTools, key);
  return owner >= 0 && book.blocked(r->upstreams[static_cast<size_t>(owner)], key);
}

// Block mode: a tools/call of a tool awaiting approval is refused. True: go on.
bool ForwardTarget::pinAdmits() {
  const pins::Book* book = x_.snapshot()->pins.get();
  if (book == nullptr || !x_.ctx().mcp.has_method || !x_.ctx().mcp.has_name) {
    return true;
  }
  const std::string_view upstream = x_.settings().upstreams[up_index_].name;
  const std::string_view tool =
      x_.federated().ownerName().empty() ? x_.ctx().mcp.name.value : x_.federated().ownerName();
  if (!book->refusesCall(x_.ctx().mcp.method, upstream, tool)) {
    return true;
  }
  filters::setReply(x_.ctx(), 403, mcp::code::kPolicyDenied, pins::kBlockedMessage,
                    "tool_pin_blocked", true);
  x_.ctx().reply.data_json = pins::blockedData(upstream);
  x_.refuseBeforeBody();  // the limits refunded: a refused request consumes no quota
  return false;
}

}  // namespace gw::proxy
