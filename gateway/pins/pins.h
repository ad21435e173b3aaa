#pragma once
// pins/: tool pinning (issue "tool pinning") — the pure half. For each upstream the gateway
// keeps the SHA-256 of every tool's definition in a store file; the first sight of a tool
// records its pin, a definition that differs from its pin is a pending change (the tool is
// hidden and its calls refused in block mode) until an operator approves it with
// `mcp-gateway pins approve`. This header hashes tools/list items, holds the store as a plain
// value, merges two stores, reads and writes its file (atomically) and locks it for writers
// sharing it (FileLock), and nothing else: no logging, no event loop, no clocks read (callers
// pass `now` as RFC 3339 UTC text), no in-process locks (the owner of a Store serialises
// access to it), no exceptions thrown (allocation failure aside). The rest of the feature is
// beside it: book.h, the store the running gateway shares between its workers;
// command.cc, `mcp-gateway pins` (linked into the binary). The request path's glue is
// proxy/forward_pins.cc; the `tool_pinning` section of a policy file, policy/loader_pins.cc.
//
// Inputs from upstreams are untrusted: hashTool() parses the whole text strictly (RFC 8259,
// UTF-8 checked, nesting bounded) and returns false with a short reason for anything else.

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gw::pins {

// ---- settings -------------------------------------------------------------------------------

// A policy file's `tool_pinning` section as the pin book reads it (policy/loader_pins.cc
// parses it; policy::ToolPinning adds where it was set).
struct Config {
  enum class Mode : uint8_t { kOff, kLog, kBlock };
  Mode mode = Mode::kOff;
  std::string store;       // absolute (relative paths are taken from the policy file's dir)
  bool block_new = false;  // new_tools: block
};

// ---- definitions ----------------------------------------------------------------------------

// The members of a tool object that are pinned, in the order Definition::fields holds them.
// Every other member of the tool (e.g. "_meta", "icons", "execution") is NOT pinned: it may
// change without making the definition pending.
inline constexpr std::array<std::string_view, 6> kFields{
    "name", "title", "description", "inputSchema", "outputSchema", "annotations"};
inline constexpr size_t kFieldCount = kFields.size();

// A tool definition as pinned. All hashes are lowercase hex SHA-256 (64 digits) of canonical
// JSON (see canonicalJson()).
struct Definition {
  // Of the object made of just the present pinned members, e.g.
  // {"description":…,"inputSchema":…,"name":…} — canonical, so keys sorted.
  std::string sha256;
  // fields[i]: of the canonical JSON of member kFields[i]'s value; "" when the member is
  // absent (a present `null` is hashed like any value, so absent and null differ).
  std::array<std::string, kFieldCount> fields;

  bool operator==(const Definition&) const = default;
};

// The canonical form of a JSON text, the one every pin hash is computed over:
//  - no whitespace outside strings;
//  - object members sorted by their decoded keys' UTF-8 bytes (unsigned); a key that occurs
//    twice in one object is an error (the definition would be ambiguous);
//  - arrays keep their order;
//  - strings re-serialised from their decoded value (so "\u0041" and "A" are the same): `"`
//    and `\` are escaped as \" and \\, U+0008/0009/000A/000C/000D as \b \t \n \f \r, every
//    other code point below U+0020 as \u00xx (lowercase hex), everything else (including
//    "/", U+007F and all non-ASCII) as its raw UTF-8 bytes;
//  - numbers as their token text, unchanged: 1, 1.0 and 1e0 are different definitions;
//  - true, false and null as themselves.
// False (with `error`: what and the byte offset) for a text that is not exactly one JSON
// value (trailing characters are errors), not UTF-8, has a lone surrogate escape, or nests
// objects/arrays deeper than 64.
bool canonicalJson(std::string_view json, std::string& out, std::string& error) noexcept;

// Appends `decoded` as a JSON string in the canonical form above (quotes included).
void appendJsonString(std::string& out, std::string_view decoded);

// Lowercase hex SHA-256 of the bytes.
std::string sha256Hex(std::string_view bytes);

// Hashes one element of a tools/list result's `tools` array. False (with `error`) when it is
// not valid JSON (as canonicalJson()), not an object, or has no string "name". `name`, when
// given, receives the decoded tool name. `out` is only written on success.
bool hashTool(std::string_view tool_json, Definition& out, std::string& error,
              std::string* name = nullptr) noexcept;

// The kFields names whose hashes differ between the two (a member present in one and absent
// in the other included), in kFields order. The views point into kFields.
std::vector<std::string_view> changedFields(const Definition& pinned,
                                            const Definition& seen) noexcept;

// ---- the store ------------------------------------------------------------------------------

struct Pin {
  Definition def;
  std::string since;  // RFC 3339 UTC time the pin was recorded or approved
};

struct Pending {
  Definition def;
  std::string since;    // when this definition (this hash) was first seen
  bool is_new = false;  // true: no pin yet (new_tools: block); false: differs from the pin
};

// One tool of one upstream: at least one of the two is set. `pending` set means the tool is
// blocked (in block mode). A "new" pending never has a pin; a "changed" one always has.
struct ToolEntry {
  std::optional<Pin> pin;
  std::optional<Pending> pending;
};

// Ordered maps: listing and the file are in a stable (byte) order.
using Tools = std::map<std::string, ToolEntry, std::less<>>;  // tool name → entry
using Upstreams = std::map<std::string, Tools, std::less<>>;  // upstream name → its tools

// What observe() found.
enum class Seen : uint8_t {
  kPinned,      // matches its pin (a pending change it had is cleared: the tool went back)
  kRecorded,    // first sight: the pin was recorded
  kChanged,     // differs from its pin: a pending change is recorded (or already was)
  kNewPending,  // first sight while new tools are blocked (or still awaiting approval)
};

// The pins of every upstream's tools and their pending changes: a plain value, copyable.
// The file is JSON, pretty-printed in map order:
//   {
//     "version": 1,
//     "upstreams": {
//       "weather": {
//         "get_weather": {
//           "pin": {"sha256": "<hex>", "fields": {"name": "<hex>", …}, "since": "<time>"},
//           "pending": {"sha256": …, "fields": {…}, "since": …, "reason": "changed"|"new"}
//         }
//       }
//     }
//   }
// ("fields" lists only the present members, in kFields order; "pin"/"pending" as available.)
class Store {
 public:
  // Parses and validates a whole store text: version 1, every member known and of its type,
  // every hash 64 lowercase hex digits, "name" among the fields, reasons consistent with the
  // pin. Unknown or repeated keys are errors. On failure `error` is precise, e.g.
  // "pins store: upstreams.weather.get_weather.pin.sha256: not a 64-digit lowercase hex
  // string", and `out` is untouched.
  static bool parse(std::string_view text, Store& out, std::string& error);
  std::string serialize() const;

  // Reads the store at `path`. A missing file (ENOENT) is an empty store with
  // existed = false; otherwise existed = true and an unreadable, oversized (> 64 MiB) or
  // corrupt file is false with `error` naming the path (never a silent reset). `out` is only
  // written on success. The loaded store is not dirty.
  static bool load(const std::string& path, Store& out, bool& existed, std::string& error);

  // Writes the store to `path` atomically: a uniquely named temp file in the same directory
  // (O_CLOEXEC, mode 0644), fsync, rename over `path`, fsync of the directory. On a failure
  // before the rename the old file is untouched and the temp file removed; a failure of the
  // final directory fsync is reported although the new file is already in place. Does not
  // clear dirty() (call clearDirty() after a successful save).
  bool save(const std::string& path, std::string& error) const;

  // Records that `upstream` lists `tool` with definition `def` (see Seen). `block_new`: the
  // caller's `new_tools: block` AND the store already existed when loaded — then a tool with
  // no pin becomes a "new" pending instead of being pinned on sight. A pending entry stays
  // until approved even if the caller stops blocking new tools. A pending whose hash is seen
  // again keeps its `since`; a different hash replaces it (since = now). `changed_fields`,
  // when given, is cleared and, for kChanged, gets changedFields(pin, def). Sets dirty() when
  // the store changed.
  Seen observe(std::string_view upstream, std::string_view tool, const Definition& def,
               bool block_new, std::string_view now,
               std::vector<std::string_view>* changed_fields = nullptr);

  // Whether observe() of this definition would change the store (set dirty()): false only when
  // it matches its pin with nothing pending, or is the very definition already pending.
  bool wouldChange(std::string_view upstream, std::string_view tool,
                   const Definition& def) const noexcept;

  // Merges `other` (the file as another gateway sharing it or `mcp-gateway pins approve` left
  // it) into this store; no pin and no pending change of either is lost. Per tool:
  //  - the pin: the one side's when only one has it; of two different pins the one with the
  //    later `since` (an approval is later than the pin it replaces), `other`'s on a tie;
  //  - the pending entry: dropped when its hash is the merged pin's (approved, or the tool
  //    went back to its pin: an approval is not undone by an older pending copy); of two
  //    different ones the later `since` (`other`'s on a tie), of two equal ones the earlier
  //    `since`; "new" becomes "changed" when the merged tool has a pin.
  // Tools and upstreams only one side has are kept. Returns whether this store changed; does
  // not set dirty().
  bool merge(const Store& other);

  // True when the tool has a pending entry (hide it and refuse its calls in block mode).
  bool blocked(std::string_view upstream, std::string_view tool) const noexcept;

  // Approvals: each pending entry becomes the pin (since = now) and is removed. Return how
  // many were approved (0 for an unknown upstream or tool or one with nothing pending).
  size_t approve(std::string_view upstream, std::string_view tool, std::string_view now);
  size_t approveUpstream(std::string_view upstream, std::string_view now);
  size_t approveAll(std::string_view now);

  // Listing.
  const Upstreams& upstreams() const noexcept { return upstreams_; }
  const ToolEntry* find(std::string_view upstream, std::string_view tool) const noexcept;
  size_t pendingCount() const noexcept;

  // Whether the store changed (observe, approve) since it was loaded or clearDirty().
  bool dirty() const noexcept { return dirty_; }
  void clearDirty() noexcept { dirty_ = false; }

 private:
  Upstreams upstreams_;
  bool dirty_ = false;
};

// The text of the store file at `path`, unparsed, read as Store::load() reads it: a missing
// file is "" with existed = false; a file that is there but cannot be read, is not a regular
// file or is larger than 64 MiB is false with `error` naming the path (existed = true).
bool readStoreFile(const std::string& path, std::string& text, bool& existed, std::string& error);

// An exclusive advisory lock (flock(2)) on "<store path>.lock", taken by every writer of a
// store file — the gateways sharing it and `mcp-gateway pins approve` — from re-reading the
// file to replacing it, so that no writer replaces what another wrote without merging it.
// (The lock is on a sidecar file because the store itself is replaced by rename.) Released
// by the destructor, or by the kernel when the process dies: a crashed writer leaves no stale
// lock. Readers need no lock: a save is atomic.
class FileLock {
 public:
  FileLock() = default;
  ~FileLock();
  FileLock(const FileLock&) = delete;
  FileLock& operator=(const FileLock&) = delete;

  // Creates "<store_path>.lock" (mode 0644) when missing and waits up to `wait` for the
  // lock, polling every 5 ms. False with `error` naming the lock file when it cannot be
  // opened or another writer held it all that time. Releases a lock this object held before.
  bool acquire(const std::string& store_path, std::chrono::milliseconds wait, std::string& error);
  bool held() const noexcept { return fd_ >= 0; }
  void release() noexcept;

 private:
  int fd_ = -1;
};

}  // namespace gw::pins
