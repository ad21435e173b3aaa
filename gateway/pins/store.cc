// pins/: the pin store as a value — its file format (parse, serialize) and the transitions a
// tools/list sighting and an operator's approval make (see pins.h).

#include <simdjson.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gateway/pins/pins.h"

namespace gw::pins {

namespace {

constexpr int64_t kVersion = 1;

std::string_view reasonOf(const Pending& p) noexcept {
  return p.is_new ? "new" : "changed";
}

bool isHex64(std::string_view s) noexcept {
  return s.size() == 64 && std::all_of(s.begin(), s.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

// Validates one JSON object of the store file: every key in `allowed`, none repeated.
// Reports against `where` (a dotted path such as "upstreams.weather").
class Checker {
 public:
  explicit Checker(std::string& error) : error_(error) {}

  bool fail(const std::string& where, std::string_view what) {
    error_ = "pins store: ";
    error_ += where.empty() ? "(top level)" : where;
    error_ += ": ";
    error_ += what;
    return false;
  }

  bool object(simdjson::dom::element el, const std::string& where,
              std::initializer_list<std::string_view> allowed, simdjson::dom::object& out) {
    if (el.get_object().get(out) != simdjson::SUCCESS) {
      return fail(where, "not an object");
    }
    std::set<std::string_view> seen;
    for (const auto field : out) {
      if (!seen.insert(field.key).second) {
        return fail(join(where, field.key), "repeated key");
      }
      if (allowed.size() > 0 &&
          std::find(allowed.begin(), allowed.end(), field.key) == allowed.end()) {
        return fail(join(where, field.key), "unknown key");
      }
    }
    for (const std::string_view key : allowed) {
      if (!seen.contains(key)) {
        return fail(join(where, key), "missing");
      }
    }
    return true;
  }

  bool string(simdjson::dom::object obj, std::string_view key, const std::string& where,
              std::string_view& out) {
    if (obj[key].get_string().get(out) != simdjson::SUCCESS) {
      return fail(join(where, key), "not a string");
    }
    return true;
  }

  bool hash(simdjson::dom::element el, const std::string& where, std::string& out) {
    std::string_view s;
    if (el.get_string().get(s) != simdjson::SUCCESS || !isHex64(s)) {
      return fail(where, "not a 64-digit lowercase hex string");
    }
    out.assign(s);
    return true;
  }

  // {"sha256": …, "fields": {…}, "since": …} plus "reason" for a pending entry.
  bool definition(simdjson::dom::object obj, const std::string& where, Definition& def,
                  std::string& since) {
    if (!hash(obj["sha256"].value_unsafe(), join(where, "sha256"), def.sha256)) {
      return false;
    }
    simdjson::dom::object fields;
    const std::string fields_where = join(where, "fields");
    if (!object(obj["fields"].value_unsafe(), fields_where, {}, fields)) {
      return false;
    }
    for (const auto field : fields) {
      const auto* it = std::find(kFields.begin(), kFields.end(), field.key);
      if (it == kFields.end()) {
        return fail(join(fields_where, field.key), "unknown field name");
      }
      const auto i = static_cast<size_t>(it - kFields.begin());
      if (!hash(field.value, join(fields_where, field.key), def.fields[i])) {
        return false;
      }
    }
    if (def.fields[0].empty()) {
      return fail(join(fields_where, "name"), "missing");
    }
    std::string_view s;
    if (!string(obj, "since", where, s)) {
      return false;
    }
    if (s.empty()) {
      return fail(join(where, "since"), "empty");
    }
    since.assign(s);
    return true;
  }

  static std::string join(const std::string& where, std::string_view key) {
    std::string out = where;
    if (!out.empty()) {
      out.push_back('.');
    }
    out.append(key);
    return out;
  }

 private:
  std::string& error_;
};

bool parseEntry(Checker& check, simdjson::dom::element el, const std::string& where,
                ToolEntry& entry) {
  simdjson::dom::object obj;
  if (!check.object(el, where, {}, obj)) {
    return false;
  }
  for (const auto field : obj) {
    const std::string at = Checker::join(where, field.key);
    if (field.key == "pin") {
      simdjson::dom::object p;
      Pin pin;
      if (!check.object(field.value, at, {"sha256", "fields", "since"}, p) ||
          !check.definition(p, at, pin.def, pin.since)) {
        return false;
      }
      entry.pin = std::move(pin);
    } else if (field.key == "pending") {
      simdjson::dom::object p;
      Pending pending;
      if (!check.object(field.value, at, {"sha256", "fields", "since", "reason"}, p) ||
          !check.definition(p, at, pending.def, pending.since)) {
        return false;
      }
      std::string_view reason;
      if (!check.string(p, "reason", at, reason)) {
        return false;
      }
      if (reason == "new") {
        pending.is_new = true;
      } else if (reason != "changed") {
        return check.fail(Checker::join(at, "reason"), "not \"changed\" or \"new\"");
      }
      entry.pending = std::move(pending);
    } else {
      return check.fail(at, "unknown key");
    }
  }
  if (!entry.pin && !entry.pending) {
    return check.fail(where, "neither \"pin\" nor \"pending\"");
  }
  if (entry.pending && entry.pending->is_new == entry.pin.has_value()) {
    return check.fail(
        Checker::join(where, "pending.reason"),
        entry.pin ? "\"new\" but the tool has a pin" : "\"changed\" but the tool has no pin");
  }
  return true;
}

void indent(std::string& out, int level) {
  out.append(static_cast<size_t>(2 * level), ' ');
}

void writeDefinition(std::string& out, int level, const Definition& def, std::string_view since,
                     const Pending* pending) {
  out += "{\n";
  indent(out, level + 1);
  out += "\"sha256\": ";
  appendJsonString(out, def.sha256);
  out += ",\n";
  indent(out, level + 1);
  out += "\"fields\": {";
  bool first = true;
  for (size_t i = 0; i < kFieldCount; ++i) {
    if (def.fields[i].empty()) {
      continue;
    }
    out += first ? "\n" : ",\n";
    first = false;
    indent(out, level + 2);
    appendJsonString(out, kFields[i]);
    out += ": ";
    appendJsonString(out, def.fields[i]);
  }
  if (!first) {
    out.push_back('\n');
    indent(out, level + 1);
  }
  out += "},\n";
  indent(out, level + 1);
  out += "\"since\": ";
  appendJsonString(out, since);
  if (pending != nullptr) {
    out += ",\n";
    indent(out, level + 1);
    out += "\"reason\": ";
    appendJsonString(out, reasonOf(*pending));
  }
  out.push_back('\n');
  indent(out, level);
  out.push_back('}');
}

}  // namespace

bool Store::parse(std::string_view text, Store& out, std::string& error) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (const auto err = parser.parse(text.data(), text.size(), true).get(root);
      err != simdjson::SUCCESS) {
    error = "pins store: not valid JSON (";
    error += simdjson::error_message(err);
    error += ")";
    return false;
  }
  Checker check(error);
  simdjson::dom::object top;
  if (!check.object(root, "", {"version", "upstreams"}, top)) {
    return false;
  }
  int64_t version = 0;
  if (top["version"].get_int64().get(version) != simdjson::SUCCESS || version != kVersion) {
    return check.fail("version", "not 1 (this gateway reads version 1 only)");
  }
  simdjson::dom::object ups;
  if (!check.object(top["upstreams"].value_unsafe(), "upstreams", {}, ups)) {
    return false;
  }
  Store parsed;
  for (const auto up : ups) {
    const std::string up_where = Checker::join("upstreams", up.key);
    simdjson::dom::object tools;
    if (!check.object(up.value, up_where, {}, tools)) {
      return false;
    }
    Tools& into = parsed.upstreams_[std::string(up.key)];
    for (const auto tool : tools) {
      ToolEntry entry;
      if (!parseEntry(check, tool.value, Checker::join(up_where, tool.key), entry)) {
        return false;
      }
      into.emplace(std::string(tool.key), std::move(entry));
    }
  }
  out = std::move(parsed);
  return true;
}

std::string Store::serialize() const {
  std::string out = "{\n  \"version\": 1,\n  \"upstreams\": {";
  bool first_up = true;
  for (const auto& [upstream, tools] : upstreams_) {
    out += first_up ? "\n" : ",\n";
    first_up = false;
    indent(out, 2);
    appendJsonString(out, upstream);
    out += ": {";
    bool first_tool = true;
    for (const auto& [tool, entry] : tools) {
      out += first_tool ? "\n" : ",\n";
      first_tool = false;
      indent(out, 3);
      appendJsonString(out, tool);
      out += ": {\n";
      if (entry.pin) {
        indent(out, 4);
        out += "\"pin\": ";
        writeDefinition(out, 4, entry.pin->def, entry.pin->since, nullptr);
        out += entry.pending ? ",\n" : "\n";
      }
      if (entry.pending) {
        indent(out, 4);
        out += "\"pending\": ";
        writeDefinition(out, 4, entry.pending->def, entry.pending->since, &*entry.pending);
        out.push_back('\n');
      }
      indent(out, 3);
      out.push_back('}');
    }
    if (!first_tool) {
      out.push_back('\n');
      indent(out, 2);
    }
    out.push_back('}');
  }
  if (!first_up) {
    out += "\n  ";
  }
  out += "}\n}\n";
  return out;
}

Seen Store::observe(std::string_view upstream, std::string_view tool, const Definition& def,
                    bool block_new, std::string_view now,
                    std::vector<std::string_view>* changed_fields) {
  if (changed_fields != nullptr) {
    changed_fields->clear();
  }
  auto up = upstreams_.find(upstream);
  if (up == upstreams_.end()) {
    up = upstreams_.emplace(std::string(upstream), Tools{}).first;
  }
  auto it = up->second.find(tool);
  if (it == up->second.end()) {
    ToolEntry entry;
    if (block_new) {
      entry.pending = Pending{def, std::string(now), true};
    } else {
      entry.pin = Pin{def, std::string(now)};
    }
    up->second.emplace(std::string(tool), std::move(entry));
    dirty_ = true;
    return block_new ? Seen::kNewPending : Seen::kRecorded;
  }
  ToolEntry& entry = it->second;
  if (!entry.pin) {
    // A "new" pending awaiting approval; it stays pending whatever block_new says now.
    if (entry.pending->def.sha256 != def.sha256) {
      entry.pending = Pending{def, std::string(now), true};
      dirty_ = true;
    }
    return Seen::kNewPending;
  }
  if (entry.pin->def.sha256 == def.sha256) {
    if (entry.pending) {
      entry.pending.reset();
      dirty_ = true;
    }
    return Seen::kPinned;
  }
  if (!entry.pending || entry.pending->def.sha256 != def.sha256) {
    entry.pending = Pending{def, std::string(now), false};
    dirty_ = true;
  }
  if (changed_fields != nullptr) {
    *changed_fields = changedFields(entry.pin->def, def);
  }
  return Seen::kChanged;
}

bool Store::wouldChange(std::string_view upstream, std::string_view tool,
                        const Definition& def) const noexcept {
  const ToolEntry* entry = find(upstream, tool);
  if (entry == nullptr) {
    return true;
  }
  if (entry->pin && entry->pin->def.sha256 == def.sha256) {
    return entry->pending.has_value();
  }
  return !entry->pending || entry->pending->def.sha256 != def.sha256;
}

namespace {

// The merged pending entry of one tool, given its merged pin (see Store::merge).
std::optional<Pending> mergePending(const std::optional<Pin>& pin,
                                    const std::optional<Pending>& mine,
                                    const std::optional<Pending>& theirs) {
  const auto live = [&](const std::optional<Pending>& p) {
    return p && (!pin || p->def.sha256 != pin->def.sha256);
  };
  std::optional<Pending> out;
  if (live(mine) && live(theirs)) {
    if (mine->def.sha256 == theirs->def.sha256) {
      out = mine->since < theirs->since ? mine : theirs;
    } else {
      out = mine->since > theirs->since ? mine : theirs;
    }
  } else if (live(mine)) {
    out = mine;
  } else if (live(theirs)) {
    out = theirs;
  }
  if (out) {
    out->is_new = !pin.has_value();
  }
  return out;
}

ToolEntry mergeEntry(const ToolEntry& mine, const ToolEntry& theirs) {
  ToolEntry out;
  if (mine.pin && theirs.pin) {
    const bool keep_mine =
        mine.pin->def.sha256 != theirs.pin->def.sha256 && mine.pin->since > theirs.pin->since;
    out.pin = keep_mine ? mine.pin : theirs.pin;
  } else {
    out.pin = mine.pin ? mine.pin : theirs.pin;
  }
  out.pending = mergePending(out.pin, mine.pending, theirs.pending);
  return out;
}

bool samePin(const std::optional<Pin>& a, const std::optional<Pin>& b) {
  return a.has_value() == b.has_value() && (!a || (a->def == b->def && a->since == b->since));
}

bool samePending(const std::optional<Pending>& a, const std::optional<Pending>& b) {
  return a.has_value() == b.has_value() &&
         (!a || (a->def == b->def && a->since == b->since && a->is_new == b->is_new));
}

}  // namespace

bool Store::merge(const Store& other) {
  bool changed = false;
  for (const auto& [upstream, theirs] : other.upstreams_) {
    auto up = upstreams_.find(upstream);
    if (up == upstreams_.end()) {
      upstreams_.emplace(upstream, theirs);
      changed = changed || !theirs.empty();
      continue;
    }
    for (const auto& [tool, entry] : theirs) {
      auto it = up->second.find(tool);
      if (it == up->second.end()) {
        up->second.emplace(tool, entry);
        changed = true;
        continue;
      }
      ToolEntry merged = mergeEntry(it->second, entry);
      if (!samePin(merged.pin, it->second.pin) ||
          !samePending(merged.pending, it->second.pending)) {
        it->second = std::move(merged);
        changed = true;
      }
    }
  }
  return changed;
}

bool Store::blocked(std::string_view upstream, std::string_view tool) const noexcept {
  const ToolEntry* entry = find(upstream, tool);
  return entry != nullptr && entry->pending.has_value();
}

const ToolEntry* Store::find(std::string_view upstream, std::string_view tool) const noexcept {
  const auto up = upstreams_.find(upstream);
  if (up == upstreams_.end()) {
    return nullptr;
  }
  const auto it = up->second.find(tool);
  return it == up->second.end() ? nullptr : &it->second;
}

size_t Store::pendingCount() const noexcept {
  size_t n = 0;
  for (const auto& [upstream, tools] : upstreams_) {
    for (const auto& [tool, entry] : tools) {
      n += entry.pending ? 1 : 0;
    }
  }
  return n;
}

namespace {

size_t approveEntry(ToolEntry& entry, std::string_view now) {
  if (!entry.pending) {
    return 0;
  }
  entry.pin = Pin{std::move(entry.pending->def), std::string(now)};
  entry.pending.reset();
  return 1;
}

size_t approveTools(Tools& tools, std::string_view now) {
  size_t n = 0;
  for (auto& [tool, entry] : tools) {
    n += approveEntry(entry, now);
  }
  return n;
}

}  // namespace

size_t Store::approve(std::string_view upstream, std::string_view tool, std::string_view now) {
  const auto up = upstreams_.find(upstream);
  if (up == upstreams_.end()) {
    return 0;
  }
  const auto it = up->second.find(tool);
  const size_t n = it == up->second.end() ? 0 : approveEntry(it->second, now);
  dirty_ = dirty_ || n > 0;
  return n;
}

size_t Store::approveUpstream(std::string_view upstream, std::string_view now) {
  const auto up = upstreams_.find(upstream);
  const size_t n = up == upstreams_.end() ? 0 : approveTools(up->second, now);
  dirty_ = dirty_ || n > 0;
  return n;
}

size_t Store::approveAll(std::string_view now) {
  size_t n = 0;
  for (auto& [upstream, tools] : upstreams_) {
    n += approveTools(tools, now);
  }
  dirty_ = dirty_ || n > 0;
  return n;
}

}  // namespace gw::pins
