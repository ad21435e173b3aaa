#pragma once
// federation/: one MCP endpoint in front of several MCP servers — the pure half. The list
// answers of each upstream (tools/list, prompts/list, resources/list,
// resources/templates/list, server/discover) parsed and merged into one result, the
// ownership table a call is routed by (names, resource URIs, RFC 6570 URI templates, task
// ids), the `names: prefix` rewrite of a call's body, the cursor a next page is asked for
// with, and the union of subscription acknowledgements. No I/O, no clocks read (callers pass
// `now`), no locks (the proxy's federation registry holds them).
//
// Inputs from upstreams are untrusted: every parser checks the whole text with simdjson
// first and returns false (with a short reason) for anything not of the expected shape.

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "gateway/core/clock.h"

namespace gw::federation {

// ---- list methods -------------------------------------------------------------------------

enum class ListKind : uint8_t { kTools, kPrompts, kResources, kTemplates, kDiscover };
inline constexpr size_t kListKinds = 5;

// "tools/list", "prompts/list", "resources/list", "resources/templates/list",
// "server/discover".
std::string_view methodOf(ListKind kind) noexcept;
std::optional<ListKind> listKindOf(std::string_view method) noexcept;
// The result member holding the array: "tools", "prompts", "resources", "resourceTemplates"
// (empty for kDiscover).
std::string_view arrayKey(ListKind kind) noexcept;
// The item member that identifies an item: "name" (tools, prompts), "uri" (resources),
// "uriTemplate" (templates); empty for kDiscover.
std::string_view keyMember(ListKind kind) noexcept;

// ---- list items a client can take (issue #24) ------------------------------------------------

// Why an item of an upstream's list answer is dropped rather than listed: an item a client
// cannot take (the TypeScript SDK rejects the whole list for one such item, so one bad
// upstream would hide every upstream's tools), or one that readers could read differently.
enum class ItemFault : uint8_t {
  kNone,
  kNotObject,        // not a JSON object
  kMissingKey,       // no string name (uri for resources, uriTemplate for templates)
  kEmptyKey,         // the key is ""
  kKeyTooLong,       // a name over kMaxItemName bytes, a uri / uriTemplate over kMaxItemUri
  kControlChar,      // a control character (U+0000-U+001F, U+007F) in the key
  kRepeatedMember,   // the key member (or inputSchema) twice: JSON readers differ on which counts
  kSchemaNotObject,  // a tool whose inputSchema or outputSchema is there and is not an
                     // object (outputSchema: null is taken as absent)
  kDuplicate,        // an earlier item of the same upstream's answer has the same key
};
inline constexpr size_t kItemFaults = 9;
inline constexpr size_t kMaxItemName = 128;  // the MCP tool-name rule (1-128 characters)
inline constexpr size_t kMaxItemUri = 8192;

// The metric label / log name: "not_object", "missing_key", "empty_key", "key_too_long",
// "control_character", "repeated_member", "schema_not_object", "duplicate" ("" for kNone).
std::string_view itemFaultName(ItemFault f) noexcept;

// Items dropped from one answer (or one upstream's pages), by fault.
struct ItemDrops {
  std::array<uint32_t, kItemFaults> count{};
  size_t total() const noexcept;
  void add(ItemFault f) noexcept { ++count[static_cast<size_t>(f)]; }
  void add(const ItemDrops& other) noexcept;
  // "missing_key 1, duplicate 2" (faults in enum order).
  std::string summary() const;
};

// The fault of the list item whose first byte is json[at] (a validated text), kNone for an
// item a client can take; the item's key, unescaped, goes into `key` (cleared when absent).
// kDuplicate is the caller's to find (it knows the earlier keys).
ItemFault checkItem(ListKind kind, std::string_view json, size_t at, std::string& key);

// What one JSON-RPC message text is, as read before relaying it in a list answer read whole:
// kUnreadable — not valid JSON or UTF-8, nested over 64 deep, or not one object (a batch);
// kAnswer — an object with a top-level "result" or "error" member (wherever it stands, so
// a member order no client cares about cannot pass an answer off as a notification);
// kOther — any other object (a notification or a request of the server's).
enum class MessageKind : uint8_t { kUnreadable, kAnswer, kOther };
MessageKind messageKind(std::string_view text);

// One JSON-RPC answer of one upstream to a list request (one page) or to server/discover.
struct Page {
  std::vector<std::string> items;  // each array element's JSON text exactly as written
  std::vector<std::string> keys;   // each item's keyMember() string, unescaped ("" if absent)
  bool has_next = false;           // result.nextCursor is a string
  std::string next_cursor;         // its unescaped value
  uint64_t ttl_ms = 0;             // result.ttlMs (absent or not a non-negative integer: 0)
  bool public_scope = false;       // result.cacheScope == "public" (absent: not public)
  std::string result;              // kDiscover: the whole result object's JSON text
  ItemDrops dropped;               // items left out of `items` (checkItem, duplicates)
};

enum class PageError : uint8_t {
  kNone,
  kInvalidJson,  // not JSON, or nested deeper than 64
  kRpcError,     // a JSON-RPC error answer ({"error":…})
  kShape,        // no result object, the array missing or not an array, or a member the
                 // gateway reads (result, error, the array, nextCursor, ttlMs, cacheScope)
                 // written twice
};

// Parses one JSON-RPC response text. On kRpcError `detail` gets "code: message" (bounded to
// 200 bytes), on the others a short reason. Items a client cannot take (checkItem), and an
// item whose key an earlier item of the page has, are left out and counted in `dropped`.
PageError parsePage(ListKind kind, std::string_view json, Page& out, std::string& detail);

enum class NamesMode : uint8_t { kKeep, kPrefix };

// One upstream's contribution to a merged list (route order). `items`/`keys` as in Page
// (all pages appended); null items: the upstream is left out of this answer.
struct Contribution {
  std::string_view upstream;
  const std::vector<std::string>* items = nullptr;
  const std::vector<std::string>* keys = nullptr;
};

struct Conflict {
  std::string key;    // the colliding name / uri / uriTemplate
  size_t kept = 0;    // index (into the contributions) of the upstream that keeps it
  size_t hidden = 0;  // index of the one whose item is hidden
};

struct MergedItems {
  std::string array;  // "[…]": every item, route order, as written (prefix: name rewritten)
  size_t count = 0;
  std::vector<Conflict> conflicts;  // keep mode (and resources/templates in either mode)
};

// Merges the contributions' items. kKeep: an item whose key an earlier contribution already
// listed is hidden and reported as a conflict. kPrefix: for tools and prompts every item's
// "name" string value is replaced by "<upstream><separator><name>" (only that JSON string
// is rewritten; every other byte of the item is kept), so there are no conflicts among
// them; resources and templates are merged as in kKeep (URIs are not renamed).
void mergeItems(ListKind kind, std::span<const Contribution> parts, NamesMode mode,
                std::string_view separator, MergedItems& out);

// The members of a merged list result without ttlMs/cacheScope, e.g.
// `"tools":[…],"resultType":"complete"` — the proxy appends `,"ttlMs":N,"cacheScope":"…"`
// when it serves it (the served ttlMs is what remains of the cache entry).
std::string listResultMembers(ListKind kind, const MergedItems& merged);

// The whole JSON-RPC response: {"jsonrpc":"2.0","id":<id_json>,"result":{<members>,
// "ttlMs":<ttl>,"cacheScope":"public"|"private"}}.
void appendResponse(std::string& out, std::string_view id_json, std::string_view members,
                    uint64_t ttl_ms, bool public_scope);
// Its two ends, for a response whose members go out by reference: `{"jsonrpc":"2.0","id":…,
// "result":{` and `[,]"ttlMs":…,"cacheScope":…}}` (the comma when `members` is not empty).
void appendResponseHead(std::string& out, std::string_view id_json);
void appendResponseTail(std::string& out, bool members_empty, uint64_t ttl_ms, bool public_scope);

// ---- visibility (issue #16) ------------------------------------------------------------------

// A JSON-RPC list answer (tools/prompts/resources/templates) with only the items whose key
// (keyMember: name, uri, uriTemplate) `keep` accepts, and `cacheScope` set to "private"
// (replaced, or added to the result): a per-caller list must not be shared. Items a client
// cannot take (checkItem) and repeated keys are dropped first, counted in `drops` when given
// (not in `hidden`). With a `prefix`, tools' and prompts' names become "<prefix><name>" (the
// view a `names: prefix` route gives legacy clients of its first upstream) and `keep` sees
// the prefixed name. Every other byte is kept. `hidden` counts the items `keep` took out.
// False when the text is not such an answer (parsePage says why).
bool filterListAnswer(ListKind kind, std::string_view json,
                      const std::function<bool(std::string_view key)>& keep, std::string& out,
                      size_t& hidden, ItemDrops* drops = nullptr, std::string_view prefix = {});

// ---- server/discover ----------------------------------------------------------------------

struct DiscoverPart {
  std::string_view upstream;
  std::string_view result;  // Page::result of its server/discover answer
};

// The merged discover result members (no ttlMs/cacheScope, as listResultMembers):
// `supportedVersions` = gateway_versions ∩ every part's supportedVersions (gateway order),
// `capabilities` = the union (mergeObjects), `instructions` = each part's instructions as
// "<upstream>:\n<text>" joined by "\n\n" (absent when none has any), `resultType`
// "complete", `_meta` {"io.modelcontextprotocol/serverInfo":{"name":…,"version":…}} the
// gateway's own. False (with `error`) when no version is common to all.
bool mergeDiscover(std::span<const DiscoverPart> parts,
                   std::span<const std::string> gateway_versions, std::string_view server_name,
                   std::string_view server_version, std::string& members, std::string& error);

// The union of JSON objects (texts, each valid JSON objects): members merged recursively;
// for a key in several, objects merge, booleans are OR'ed (a `listChanged: true` anywhere is
// true), arrays are concatenated without repeating an element whose text is identical, and
// any other value keeps the first one. Keys in first-seen order. Invalid inputs are skipped.
std::string mergeObjects(std::span<const std::string_view> objects);

// ---- ownership ------------------------------------------------------------------------------

// RFC 6570 URI template match for the expression forms servers use: `{var}` (simple string
// expansion: one or more characters, none of "/?#"), `{+var}` and `{#var}` (reserved: one
// or more of any character), `{var1,var2}` treated as `{var}`. Literal text must match
// exactly. Any other operator (`{/var}`, `{?q}`, `{.x}`, `{;x}`, `{&x}`): the expression
// matches one or more characters, none of "/?#" (best effort). Malformed template (an
// unclosed brace): false. O(len(template) × len(uri)); no recursion.
bool templateMatches(std::string_view uri_template, std::string_view uri) noexcept;

// Which upstream (index in route order) owns what, built once per refresh from every
// upstream's last good items. Lookups take string_views (no allocation).
class Ownership {
 public:
  // Replaces what `kind` maps to: `keys[u]` are upstream u's item keys (null: none known).
  // The first upstream (route order) listing a key owns it.
  void assign(ListKind kind, std::span<const std::vector<std::string>* const> keys);

  // -1 when unknown.
  int tool(std::string_view name) const noexcept;
  int prompt(std::string_view name) const noexcept;
  // The upstream that listed the URI, else the first whose template matches it.
  int resource(std::string_view uri) const noexcept;

  size_t size(ListKind kind) const noexcept;

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept;
  };
  using Map = std::unordered_map<std::string, int, Hash, std::equal_to<>>;
  Map tools_, prompts_, resources_;
  std::vector<std::pair<std::string, int>> templates_;
};

// taskId → upstream, for tasks/get|update|cancel: at most `capacity` entries, each kept for
// `ttl` after it was last put (the oldest dropped first when full).
class TaskTable {
 public:
  TaskTable(size_t capacity, core::Nanos ttl) : capacity_(capacity), ttl_(ttl) {}
  void put(std::string_view task_id, int upstream, core::Nanos now);
  int find(std::string_view task_id, core::Nanos now) const noexcept;  // -1: unknown/expired
  size_t size() const noexcept { return map_.size(); }

 private:
  struct Entry {
    int upstream;
    core::Nanos expires;
    uint64_t seq;
  };
  struct Hash {  // find() looks up a string_view without allocating (as Ownership)
    using is_transparent = void;
    size_t operator()(std::string_view s) const noexcept;
  };
  size_t capacity_;
  core::Nanos ttl_;
  uint64_t seq_ = 0;
  std::unordered_map<std::string, Entry, Hash, std::equal_to<>> map_;
};

// The taskId a tools/call (or tasks/*) answer created, if any: result.task.taskId or
// result.taskId (a string). JSON-RPC response text.
std::optional<std::string> taskIdOf(std::string_view json);

// ---- names: prefix --------------------------------------------------------------------------

// "<upstream><separator><name>" → the upstream's index in `upstreams` and the name it knows.
// The longest upstream name that matches wins (names may contain the separator). False:
// no upstream prefix, or an empty inner name.
bool splitPrefixed(std::string_view name, std::span<const std::string_view> upstreams,
                   std::string_view separator, size_t& upstream, std::string_view& inner);

// `body` (a JSON-RPC request) with the string value of params.name replaced by `name`
// (JSON-escaped), every other byte unchanged. False when the body is not valid JSON, has no
// params object or no string params.name, or has a duplicate "params" or "name" key there.
bool rewriteParamsName(std::string_view body, std::string_view name, std::string& out);

// `body` (a JSON-RPC list request) with params.cursor set to `cursor` — an existing cursor
// member's value replaced, else the member inserted first in params (a params object added
// when there is none). Every other byte unchanged. False when the body is not a valid JSON
// object or params is present and not an object.
bool setParamsCursor(std::string_view body, std::string_view cursor, std::string& out);

// Appends `s` as a JSON string (quotes included, RFC 8259 escapes).
void appendJsonString(std::string& out, std::string_view s);

// ---- subscriptions/listen -------------------------------------------------------------------

// params.notifications of a notifications/subscriptions/acknowledged message (JSON text of
// the whole notification). False when the text is not that notification.
bool ackNotifications(std::string_view json, std::string& notifications_object);

// The list-change kinds a subscriptions/listen request asks for: params.notifications'
// toolsListChanged, promptsListChanged and resourcesListChanged set to true. What the
// merged stream honours for a 2025-era upstream's GET stream, which has no filter of its own.
struct ListenFilter {
  bool tools = false;
  bool prompts = false;
  bool resources = false;
  bool wants(ListKind kind) const noexcept;
  // {"toolsListChanged":true,…} for the kinds asked ("{}" for none): its acknowledgement.
  std::string ackObject() const;
};
ListenFilter listenFilterOf(std::string_view request_json);

// The merged acknowledgement: {"jsonrpc":"2.0","method":"notifications/subscriptions/
// acknowledged","params":{"notifications":<merged>,"_meta":{"io.modelcontextprotocol/
// subscriptionId":<subscription_id_json>}}}.
std::string ackMessage(std::string_view merged_notifications,
                       std::string_view subscription_id_json);

// For a notification method, the list kind whose list it says changed
// (notifications/tools/list_changed, …/prompts/…, …/resources/list_changed → kResources and
// kTemplates are both stale). nullopt for anything else.
std::optional<ListKind> changedListOf(std::string_view method) noexcept;

// The merged stream reopens an upstream subscription stream that ended after a backoff that
// starts at kFirstReopenMs and doubles up to kMaxReopenMs. It starts again at kFirstReopenMs
// only after a stream that had stayed open kHealthyStreamOpen or longer: an acknowledgement
// alone proves nothing (a server that acknowledges and drops at once would else be reopened
// every second forever).
inline constexpr uint64_t kFirstReopenMs = 1000;
inline constexpr uint64_t kMaxReopenMs = 30000;
inline constexpr core::Nanos kHealthyStreamOpen = std::chrono::milliseconds(30000);

// The wait (ms) before reopening a stream that ended after being open `stayed_open`, when the
// wait before it was `previous_ms` (0: it was the first open).
uint64_t reopenBackoffMs(uint64_t previous_ms, core::Nanos stayed_open) noexcept;

}  // namespace gw::federation
