#pragma once
// Where the parts of a JSON-RPC list answer are, read strictly once for parsePage and
// filterListAnswer (internal to gateway/federation). A member the gateway reads that is
// written twice is an error: JSON readers differ on which one counts (simdjson's and ours
// take the first, JavaScript's JSON.parse the last), so a list filtered on one and read by a
// client on the other would show what was filtered out.

#include <cstddef>
#include <string>
#include <string_view>

#include "gateway/federation/federation.h"
#include "gateway/federation/json_scan.h"

namespace gw::federation::detail {

struct ListSpans {
  size_t result = json::kNpos;        // '{' of result
  size_t result_close = json::kNpos;  // its '}'
  size_t array = json::kNpos;         // '[' of the list array (not for kDiscover)
  size_t array_end = 0;               // one past its ']'
  size_t scope = json::kNpos;         // result.cacheScope's value
  size_t scope_end = 0;
  size_t cursor = json::kNpos;  // result.nextCursor's value
  size_t cursor_end = 0;
  size_t ttl = json::kNpos;  // result.ttlMs's value
  size_t ttl_end = 0;
};

// Validates `json` (simdjson, depth) and finds the spans. kRpcError: `detail` gets
// "code: message"; any other error a short reason.
PageError locateList(ListKind kind, std::string_view json, ListSpans& out, std::string& detail);

}  // namespace gw::federation::detail
