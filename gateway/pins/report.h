#pragma once
// pins/: what one observed tools/list answer means (tool_pinning, issue #16), decided without
// I/O. Book::observe() compares the listing with the pins, learns what is new and records what
// awaits approval; report() turns what it found into what the gateway says about it: the access
// log's "pins_pending" items, the definitions to count once, and the log lines. The request
// path's glue (proxy/forward_pins.cc) writes them; in block mode it also drops blocked tools
// from list answers (Book::hidesTools, Book::blocked) and refuses their calls
// (Book::refusesCall; 403 with kBlockedMessage and blockedData).

#include <string>
#include <string_view>
#include <vector>

#include "gateway/pins/book.h"

namespace gw::pins {

// What one observation of one upstream's listing gives the gateway to say.
struct Report {
  // The access log's "pins_pending" items for this listing: one JSON object per tool awaiting
  // approval, comma-separated ("" when none): {"upstream":U,"tool":T,"change":"new"} or
  // {"upstream":U,"tool":T,"change":"changed","fields":[F,…]} (F: kFields names).
  std::string pending_log;
  // The mcp_gateway_tool_pin_changes_total label ("new" or "changed") of each definition seen
  // pending for the first time (Finding::fresh), in listing order: each is counted once.
  std::vector<std::string_view> changes;
  // Log lines at warning level, in order: each definition seen pending for the first time, then
  // each item that cannot be pinned. What happens to the tool is said by `blocks`.
  std::vector<std::string> warnings;
  // The one line at error level: the store could not be written ("" = none).
  std::string error;
};

// `seen`: Book::observe()'s findings for `upstream`; `blocks`: the book is in block mode.
Report report(std::string_view upstream, const Book::Observed& seen, bool blocks);

}  // namespace gw::pins
