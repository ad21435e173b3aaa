#pragma once
// pins/: the pin book — tool_pinning (issue #16) at run time. Held by the settings snapshot
// (filters::Snapshot::pins) of the running configuration, shared by every worker and kept
// across reloads while `store` names the same file (a reload merges the file's contents in:
// `mcp-gateway pins approve` and other gateways sharing the file write it). Workers observe
// each upstream's tools/list items here (proxy/forward_pins.cc); a change is written to the
// file at once: under the file's lock (FileLock) the file is re-read and merged in
// (Store::merge), the listing observed, and the result saved atomically. A file that cannot
// be read (corrupt) is never overwritten: the pins stay in memory and the error is reported
// with every write attempt. Calls ask blocked(): nothing at all while no tool is pending,
// else one lookup under the book's mutex.
//
// Unlike pins.h this is not a plain value: it holds a mutex, reads the wall clock (utcNow)
// and writes the store file from observe(). It logs nothing and counts nothing: its callers
// do.

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/pins/pins.h"

namespace gw::pins {

class Book {
 public:
  // `existed`: the store file was there when it was loaded (new_tools: block applies to the
  // upstreams it has pins of; an upstream with none pins its first listing whole).
  Book(const Config& cfg, Store store, bool existed);

  const std::string& path() const noexcept { return cfg_.store; }
  Config::Mode mode() const noexcept { return cfg_.mode; }
  bool blocks() const noexcept { return cfg_.mode == Config::Mode::kBlock; }

  // At a reload naming the same file: its settings become these and the file's contents are
  // merged in (Store::merge).
  void replace(const Config& cfg, Store store, bool existed);

  // What observing one upstream's list found.
  struct Finding {
    std::string tool;
    std::vector<std::string_view> fields;  // changed fields (into kFields); empty: new
    bool is_new = false;                   // first seen after the store existed
    bool fresh = false;                    // first time this definition was seen pending
  };
  struct Observed {
    std::vector<Finding> pending;      // every tool of the list awaiting approval
    std::vector<std::string> invalid;  // items that could not be hashed: "why"
    std::string save_error;            // the store could not be locked, read or written ("" = fine)
  };
  // The name a tools/list item has as the list shows it, for an item hashTool() refuses (""
  // when it has none). The caller's list reader gives it (federation::checkItem on the
  // request path): lists are filtered and calls matched by that reader's names.
  using ItemName = std::string (*)(std::string_view item);

  // Hashes and records each item (a tools/list `tools` element's JSON text) of `upstream`;
  // when that changes the store, first merges the file in and then writes it (see above), all
  // under the file's lock (waits up to 2 s for another writer). `now`: RFC 3339 UTC. With
  // new_tools: block, a tool not pinned yet is "new" (pending) only when the store already holds
  // pins of `upstream`. An item that cannot be hashed goes to `out.invalid`, prefixed with its
  // `item_name` (quoted, at most 128 bytes of it) when it has one; blocked() then holds that
  // name of `upstream` until a later listing of `upstream` has no such item.
  void observe(std::string_view upstream, std::span<const std::string> items, std::string_view now,
               ItemName item_name, Observed& out);

  // A pending tool, or one its upstream's last listing gave in a form that cannot be pinned
  // (a member written twice at any depth, a lone surrogate escape: readers may differ on what
  // it says, so it is trusted no more than a changed one). Block mode hides it and refuses
  // its calls.
  bool blocked(std::string_view upstream, std::string_view tool) const noexcept;
  bool anyPending() const noexcept {
    return pending_.load(std::memory_order_acquire) > 0 ||
           unpinnable_count_.load(std::memory_order_acquire) > 0;
  }
  // Block mode with a tool blocked: tools/list answers lose the blocked tools' items (the
  // caller maps each item to its upstream and tool and asks blocked()).
  bool hidesTools() const noexcept { return blocks() && anyPending(); }
  // Block mode refuses this request: a tools/call of a blocked tool of `upstream` (403 with
  // kBlockedMessage and blockedData(upstream)).
  bool refusesCall(std::string_view method, std::string_view upstream,
                   std::string_view tool) const noexcept {
    return blocks() && method == "tools/call" && blocked(upstream, tool);
  }

  // The store file holds exactly what this book last wrote (its own write, not an edit).
  bool isOwnWrite() const;

  // The store as admin /pins shows it.
  std::string json() const;

 private:
  mutable std::mutex mu_;
  Config cfg_;  // mode and new_tools may change at a reload (path does not)
  Store store_;
  bool existed_ = false;
  bool unsaved_ = false;      // a change the last save failed to write
  std::string last_written_;  // the text of the last successful save
  std::atomic<size_t> pending_{0};
  // upstream → the names of its last listing's items that could not be hashed
  std::map<std::string, std::set<std::string, std::less<>>, std::less<>> unpinnable_;
  std::atomic<size_t> unpinnable_count_{0};
};

// The 403 a tools/call of a pending tool gets (block mode): its message and error.data
// ({"reason":"tool_definition_changed","upstream":…}).
inline constexpr const char* kBlockedMessage =
    "Forbidden: this tool's definition changed (or the tool is new) and awaits an operator's "
    "approval";
std::string blockedData(std::string_view upstream);

// RFC 3339 UTC, second precision: "2026-12-05T14:03:00Z" (core::wallNow).
std::string utcNow();

// The store's JSON for /pins and `pins list --json`: {"store":path,"mode":…,"new_tools":…,
// "pending":N,"upstreams":{U:{T:{"state":"pinned"|"changed"|"new","sha256":…,"since":…,
// "pending_sha256":…,"pending_since":…,"changed":[fields]}}}}.
std::string storeJson(const Store& store, const Config& cfg);

}  // namespace gw::pins
