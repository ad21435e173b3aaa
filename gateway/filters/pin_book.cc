// tool_pinning at run time (pin_book.h).

#include "gateway/filters/pin_book.h"

#include <chrono>
#include <ctime>
#include <utility>

#include "gateway/core/clock.h"
#include "gateway/federation/federation.h"
#include "gateway/filters/json_writer.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/settings/settings.h"

namespace gw::filters {

namespace {

// How long a write waits for another writer of the store file (one re-read, merge and save).
constexpr std::chrono::milliseconds kLockWait{2000};

std::string_view modeName(policy::ToolPinning::Mode m) {
  switch (m) {
    case policy::ToolPinning::Mode::kLog:
      return "log";
    case policy::ToolPinning::Mode::kBlock:
      return "block";
    default:
      return "off";
  }
}

}  // namespace

PinBook::PinBook(const policy::ToolPinning& cfg, pins::Store store, bool existed)
    : cfg_(cfg), store_(std::move(store)), existed_(existed) {
  pending_.store(store_.pendingCount(), std::memory_order_release);
}

void PinBook::replace(const policy::ToolPinning& cfg, pins::Store store, bool existed) {
  std::lock_guard lock(mu_);
  cfg_ = cfg;
  // Merged, not replaced: a replica's write must not make this one forget pins it holds.
  store_.merge(store);
  existed_ = existed_ || existed;
  pending_.store(store_.pendingCount(), std::memory_order_release);
}

void PinBook::observe(std::string_view upstream, std::span<const std::string> items,
                      std::string_view now, Observed& out) {
  // Hashing needs no lock: only the store's transitions do.
  std::vector<std::pair<std::string, pins::Definition>> defs;
  defs.reserve(items.size());
  std::set<std::string, std::less<>> unpinnable;
  for (const std::string& item : items) {
    pins::Definition d;
    std::string error;
    std::string name;
    if (!pins::hashTool(item, d, error, &name)) {
      // Its name as the list shows it (the item passed federation::checkItem: one string name).
      if (federation::checkItem(federation::ListKind::kTools, item, 0, name) ==
              federation::ItemFault::kNone &&
          !name.empty()) {
        std::string named = "\"";
        mcp::appendJsonEscaped(named, name.substr(0, 128));
        error = named + "\": " + error;
        unpinnable.insert(std::move(name));
      }
      out.invalid.push_back(std::move(error));
      continue;
    }
    defs.emplace_back(std::move(name), std::move(d));
  }
  std::lock_guard lock(mu_);
  if (unpinnable.empty()) {
    if (auto it = unpinnable_.find(upstream); it != unpinnable_.end()) {
      unpinnable_count_.fetch_sub(it->second.size(), std::memory_order_release);
      unpinnable_.erase(it);
    }
  } else {
    auto& names = unpinnable_[std::string(upstream)];
    unpinnable_count_.fetch_sub(names.size(), std::memory_order_release);
    names = std::move(unpinnable);
    unpinnable_count_.fetch_add(names.size(), std::memory_order_release);
  }
  bool must_write = unsaved_;
  for (const auto& [name, def] : defs) {
    must_write = must_write || store_.wouldChange(upstream, name, def);
  }
  // Before a write, what other writers (replicas sharing the file, `pins approve`) put there
  // is merged in under the file's lock, so that no one's pins are lost and this listing is
  // judged against every pin there is. A store the file cannot be read as is left alone.
  pins::FileLock file_lock;
  bool can_write = false;
  if (must_write) {
    std::string error;
    pins::Store disk;
    bool disk_existed = false;
    if (!file_lock.acquire(cfg_.store, kLockWait, error)) {
      out.save_error = std::move(error);
    } else if (!pins::Store::load(cfg_.store, disk, disk_existed, error)) {
      out.save_error = std::move(error) +
                       "; the file is left as it is, never overwritten, until it is repaired or "
                       "removed";
    } else {
      store_.merge(disk);
      existed_ = existed_ || disk_existed;
      can_write = true;
    }
  }
  // new_tools: block is decided per upstream, before this listing: an upstream with no pins
  // yet (a fresh store, or an upstream the store has never seen) pins everything it lists the
  // first time. Otherwise the first upstream of a federated fan-out to be observed (and
  // saved) would make every other upstream's first listing "new".
  const auto known = store_.upstreams().find(upstream);
  const bool block_new =
      cfg_.block_new && existed_ && known != store_.upstreams().end() && !known->second.empty();
  bool changed = false;
  for (auto& [name, def] : defs) {
    store_.clearDirty();
    std::vector<std::string_view> fields;
    const pins::Seen seen = store_.observe(upstream, name, def, block_new, now, &fields);
    const bool fresh = store_.dirty();
    changed = changed || fresh;
    if (seen == pins::Seen::kChanged || seen == pins::Seen::kNewPending) {
      Finding f;
      f.tool = name;
      f.is_new = seen == pins::Seen::kNewPending;
      f.fresh = fresh;
      f.fields = std::move(fields);
      out.pending.push_back(std::move(f));
    }
  }
  if ((changed || unsaved_) && !can_write) {
    unsaved_ = true;  // written with the next observation that can
  } else if (changed || unsaved_) {
    std::string error;
    if (store_.save(cfg_.store, error)) {
      last_written_ = store_.serialize();
      unsaved_ = false;
      existed_ = true;  // from now on a tool first seen of a pinned upstream is "new"
    } else {
      unsaved_ = true;  // written again with the next observation
      out.save_error = std::move(error);
    }
  }
  store_.clearDirty();
  pending_.store(store_.pendingCount(), std::memory_order_release);
}

bool PinBook::blocked(std::string_view upstream, std::string_view tool) const noexcept {
  if (!anyPending()) {
    return false;
  }
  std::lock_guard lock(mu_);
  if (const auto it = unpinnable_.find(upstream);
      it != unpinnable_.end() && it->second.contains(tool)) {
    return true;
  }
  return store_.blocked(upstream, tool);
}

bool PinBook::isOwnWrite() const {
  std::string text;
  std::string reason;
  if (!settings::readWholeFile(cfg_.store, text, reason)) {
    return false;
  }
  std::lock_guard lock(mu_);
  return !last_written_.empty() && text == last_written_;
}

std::string PinBook::json() const {
  std::lock_guard lock(mu_);
  return pinsJson(store_, cfg_);
}

std::string pinBlockedData(std::string_view upstream) {
  JsonWriter j;
  j.open('{').key("reason").str("tool_definition_changed").key("upstream").str(upstream);
  return j.close('}').take();
}

std::string utcNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(core::wallNow());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  const size_t n = std::strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(b, n);
}

std::string pinsJson(const pins::Store& store, const policy::ToolPinning& cfg) {
  JsonWriter j;
  j.open('{').key("store").str(cfg.store).key("mode").str(modeName(cfg.mode));
  j.key("new_tools").str(cfg.block_new ? "block" : "allow");
  j.key("pending").num(store.pendingCount());
  j.key("upstreams").open('{');
  for (const auto& [upstream, tools] : store.upstreams()) {
    j.key(upstream).open('{');
    for (const auto& [tool, e] : tools) {
      j.key(tool).open('{');
      j.key("state").str(!e.pending ? "pinned" : e.pending->is_new ? "new" : "changed");
      j.key("sha256").strOrNull(e.pin.has_value(), e.pin ? e.pin->def.sha256 : "");
      j.key("since").strOrNull(e.pin.has_value(), e.pin ? e.pin->since : "");
      if (e.pending) {
        j.key("pending_sha256").str(e.pending->def.sha256);
        j.key("pending_since").str(e.pending->since);
        j.key("changed").open('[');
        if (e.pin) {
          for (std::string_view f : pins::changedFields(e.pin->def, e.pending->def)) {
            j.str(f);
          }
        }
        j.close(']');
      }
      j.close('}');
    }
    j.close('}');
  }
  j.close('}').close('}');
  return j.take();
}

}  // namespace gw::filters
