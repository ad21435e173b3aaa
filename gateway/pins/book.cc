// pins/: the pin book, tool_pinning at run time (book.h).

#include "gateway/pins/book.h"

#include <chrono>
#include <ctime>
#include <utility>

#include "gateway/core/clock.h"
#include "gateway/core/json_escape.h"

namespace gw::pins {

namespace {

// How long a write waits for another writer of the store file (one re-read, merge and save).
constexpr std::chrono::milliseconds kLockWait{2000};

std::string_view modeName(Config::Mode m) {
  switch (m) {
    case Config::Mode::kLog:
      return "log";
    case Config::Mode::kBlock:
      return "block";
    default:
      return "off";
  }
}

// Appends `s` as a JSON string: control characters and DEL escaped, bytes that are not UTF-8
// replaced (as mcp::appendJsonEscaped, which the admin answers use).
void appendString(std::string& out, std::string_view s) {
  core::appendJsonString(out, s, {.escape_del = true, .replace_invalid_utf8 = true});
}

// `"key":` after a comma unless it is the first member of its object.
void appendKey(std::string& out, std::string_view key, bool first = false) {
  if (!first) {
    out += ',';
  }
  appendString(out, key);
  out += ':';
}

// A string member whose value may be absent (null).
void appendStringOrNull(std::string& out, bool present, std::string_view s) {
  if (present) {
    appendString(out, s);
  } else {
    out += "null";
  }
}

}  // namespace

Book::Book(const Config& cfg, Store store, bool existed)
    : cfg_(cfg), store_(std::move(store)), existed_(existed) {
  pending_.store(store_.pendingCount(), std::memory_order_release);
}

void Book::replace(const Config& cfg, Store store, bool existed) {
  std::lock_guard lock(mu_);
  cfg_ = cfg;
  // Merged, not replaced: a replica's write must not make this one forget pins it holds.
  store_.merge(store);
  existed_ = existed_ || existed;
  pending_.store(store_.pendingCount(), std::memory_order_release);
}

void Book::observe(std::string_view upstream, std::span<const std::string> items,
                   std::string_view now, ItemName item_name, Observed& out) {
  // Hashing needs no lock: only the store's transitions do.
  std::vector<std::pair<std::string, Definition>> defs;
  defs.reserve(items.size());
  std::set<std::string, std::less<>> unpinnable;
  for (const std::string& item : items) {
    Definition d;
    std::string error;
    std::string name;
    if (!hashTool(item, d, error, &name)) {
      name = item_name != nullptr ? item_name(item) : std::string();
      if (!name.empty()) {
        std::string named;
        appendString(named, name.substr(0, 128));
        error = named + ": " + error;
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
  FileLock file_lock;
  bool can_write = false;
  if (must_write) {
    std::string error;
    Store disk;
    bool disk_existed = false;
    if (!file_lock.acquire(cfg_.store, kLockWait, error)) {
      out.save_error = std::move(error);
    } else if (!Store::load(cfg_.store, disk, disk_existed, error)) {
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
    const Seen seen = store_.observe(upstream, name, def, block_new, now, &fields);
    const bool fresh = store_.dirty();
    changed = changed || fresh;
    if (seen == Seen::kChanged || seen == Seen::kNewPending) {
      Finding f;
      f.tool = name;
      f.is_new = seen == Seen::kNewPending;
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

bool Book::blocked(std::string_view upstream, std::string_view tool) const noexcept {
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

bool Book::isOwnWrite() const {
  std::string text;
  bool existed = false;
  std::string error;
  if (!readStoreFile(cfg_.store, text, existed, error) || !existed) {
    return false;
  }
  std::lock_guard lock(mu_);
  return !last_written_.empty() && text == last_written_;
}

std::string Book::json() const {
  std::lock_guard lock(mu_);
  return storeJson(store_, cfg_);
}

std::string blockedData(std::string_view upstream) {
  std::string out = "{\"reason\":\"tool_definition_changed\",\"upstream\":";
  appendString(out, upstream);
  out += '}';
  return out;
}

std::string utcNow() {
  const std::time_t t = std::chrono::system_clock::to_time_t(core::wallNow());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char b[32];
  const size_t n = std::strftime(b, sizeof(b), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return std::string(b, n);
}

std::string storeJson(const Store& store, const Config& cfg) {
  std::string j = "{";
  appendKey(j, "store", true);
  appendString(j, cfg.store);
  appendKey(j, "mode");
  appendString(j, modeName(cfg.mode));
  appendKey(j, "new_tools");
  appendString(j, cfg.block_new ? "block" : "allow");
  appendKey(j, "pending");
  j += std::to_string(store.pendingCount());
  appendKey(j, "upstreams");
  j += '{';
  bool first_upstream = true;
  for (const auto& [upstream, tools] : store.upstreams()) {
    appendKey(j, upstream, std::exchange(first_upstream, false));
    j += '{';
    bool first_tool = true;
    for (const auto& [tool, e] : tools) {
      appendKey(j, tool, std::exchange(first_tool, false));
      j += '{';
      appendKey(j, "state", true);
      appendString(j, !e.pending ? "pinned" : e.pending->is_new ? "new" : "changed");
      appendKey(j, "sha256");
      appendStringOrNull(j, e.pin.has_value(), e.pin ? e.pin->def.sha256 : "");
      appendKey(j, "since");
      appendStringOrNull(j, e.pin.has_value(), e.pin ? e.pin->since : "");
      if (e.pending) {
        appendKey(j, "pending_sha256");
        appendString(j, e.pending->def.sha256);
        appendKey(j, "pending_since");
        appendString(j, e.pending->since);
        appendKey(j, "changed");
        j += '[';
        if (e.pin) {
          bool first_field = true;
          for (std::string_view f : changedFields(e.pin->def, e.pending->def)) {
            j += std::exchange(first_field, false) ? "" : ",";
            appendString(j, f);
          }
        }
        j += ']';
      }
      j += '}';
    }
    j += '}';
  }
  j += "}}";
  return j;
}

}  // namespace gw::pins
