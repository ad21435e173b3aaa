// Who owns what: RFC 6570 template matching, the name/URI ownership table, the task table and
// the taskId of a tasks answer (see federation.h).

#include <functional>
#include <limits>
#include <utility>

#include "gateway/federation/federation.h"
#include "gateway/federation/json_scan.h"

namespace gw::federation {

namespace {

// One step of a compiled template: a literal byte, or an expression's character class.
enum class Step : uint8_t { kLiteral, kSimple, kReserved };
struct Element {
  Step step;
  char ch;
};

bool simpleChar(char c) noexcept {
  return c != '/' && c != '?' && c != '#';
}

// The template as steps; false when it is malformed (an unclosed brace, an empty expression).
bool compile(std::string_view t, std::vector<Element>& out) {
  out.clear();
  size_t i = 0;
  while (i < t.size()) {
    if (t[i] != '{') {
      out.push_back(Element{Step::kLiteral, t[i]});
      ++i;
      continue;
    }
    const size_t close = t.find('}', i + 1);
    if (close == std::string_view::npos) {
      return false;
    }
    std::string_view expr = t.substr(i + 1, close - i - 1);
    Step step = Step::kSimple;
    if (!expr.empty() && (expr[0] == '+' || expr[0] == '#')) {
      step = Step::kReserved;
      expr.remove_prefix(1);
    } else if (!expr.empty() && std::string_view("/?.;&=,!@|").find(expr[0]) != expr.npos) {
      expr.remove_prefix(1);  // other operators: best effort, as {var}
    }
    if (expr.empty()) {
      return false;
    }
    out.push_back(Element{step, '\0'});
    i = close + 1;
  }
  return true;
}

core::Nanos saturatingAdd(core::Nanos a, core::Nanos b) noexcept {
  using Rep = core::Nanos::rep;
  constexpr Rep kMax = std::numeric_limits<Rep>::max();
  constexpr Rep kMin = std::numeric_limits<Rep>::min();
  if (b.count() > 0 && a.count() > kMax - b.count()) {
    return core::Nanos(kMax);
  }
  if (b.count() < 0 && a.count() < kMin - b.count()) {
    return core::Nanos(kMin);
  }
  return a + b;
}

}  // namespace

bool templateMatches(std::string_view uri_template, std::string_view uri) noexcept {
  thread_local std::vector<Element> steps;
  thread_local std::vector<char> cur;
  thread_local std::vector<char> next;
  if (!compile(uri_template, steps)) {
    return false;
  }
  // cur[i]: the steps so far can consume exactly uri[0..i). One pass over the URI per step.
  const size_t n = uri.size();
  cur.assign(n + 1, 0);
  next.assign(n + 1, 0);
  cur[0] = 1;
  for (const Element& e : steps) {
    std::fill(next.begin(), next.end(), 0);
    bool any = false;
    if (e.step == Step::kLiteral) {
      for (size_t i = 0; i < n; ++i) {
        if (cur[i] != 0 && uri[i] == e.ch) {
          next[i + 1] = 1;
          any = true;
        }
      }
    } else {
      // One or more characters of the class: `open` while some reachable start has been
      // followed only by characters of the class.
      bool open = false;
      for (size_t i = 0; i < n; ++i) {
        open = open || cur[i] != 0;
        if (e.step == Step::kSimple && !simpleChar(uri[i])) {
          open = false;
        } else if (open) {
          next[i + 1] = 1;
          any = true;
        }
      }
    }
    if (!any) {
      return false;
    }
    cur.swap(next);
  }
  return cur[n] != 0;
}

size_t Ownership::Hash::operator()(std::string_view s) const noexcept {
  return std::hash<std::string_view>{}(s);
}

void Ownership::assign(ListKind kind, std::span<const std::vector<std::string>* const> keys) {
  Map* map = nullptr;
  switch (kind) {
    case ListKind::kTools:
      map = &tools_;
      break;
    case ListKind::kPrompts:
      map = &prompts_;
      break;
    case ListKind::kResources:
      map = &resources_;
      break;
    case ListKind::kTemplates:
      templates_.clear();
      for (size_t u = 0; u < keys.size(); ++u) {
        if (keys[u] == nullptr) {
          continue;
        }
        for (const std::string& k : *keys[u]) {
          if (!k.empty()) {
            templates_.emplace_back(k, static_cast<int>(u));
          }
        }
      }
      return;
    case ListKind::kDiscover:
      return;
  }
  map->clear();
  for (size_t u = 0; u < keys.size(); ++u) {
    if (keys[u] == nullptr) {
      continue;
    }
    for (const std::string& k : *keys[u]) {
      if (!k.empty()) {
        map->try_emplace(k, static_cast<int>(u));
      }
    }
  }
}

int Ownership::tool(std::string_view name) const noexcept {
  const auto it = tools_.find(name);
  return it == tools_.end() ? -1 : it->second;
}

int Ownership::prompt(std::string_view name) const noexcept {
  const auto it = prompts_.find(name);
  return it == prompts_.end() ? -1 : it->second;
}

int Ownership::resource(std::string_view uri) const noexcept {
  const auto it = resources_.find(uri);
  if (it != resources_.end()) {
    return it->second;
  }
  for (const auto& [uri_template, upstream] : templates_) {
    if (templateMatches(uri_template, uri)) {
      return upstream;
    }
  }
  return -1;
}

size_t Ownership::size(ListKind kind) const noexcept {
  switch (kind) {
    case ListKind::kTools:
      return tools_.size();
    case ListKind::kPrompts:
      return prompts_.size();
    case ListKind::kResources:
      return resources_.size();
    case ListKind::kTemplates:
      return templates_.size();
    case ListKind::kDiscover:
      break;
  }
  return 0;
}

size_t TaskTable::Hash::operator()(std::string_view s) const noexcept {
  return std::hash<std::string_view>{}(s);
}

void TaskTable::put(std::string_view task_id, int upstream, core::Nanos now) {
  if (capacity_ == 0) {
    return;
  }
  const core::Nanos expires = saturatingAdd(now, ttl_);
  const auto it = map_.find(task_id);
  if (it != map_.end()) {
    it->second = Entry{upstream, expires, ++seq_};
    return;
  }
  if (map_.size() >= capacity_) {
    // Full: the expired entries go, and if none had, the one put longest ago.
    auto oldest = map_.end();
    for (auto e = map_.begin(); e != map_.end();) {
      if (now >= e->second.expires) {
        e = map_.erase(e);
        continue;
      }
      if (oldest == map_.end() || e->second.seq < oldest->second.seq) {
        oldest = e;
      }
      ++e;
    }
    if (map_.size() >= capacity_ && oldest != map_.end()) {
      map_.erase(oldest);
    }
  }
  map_.emplace(std::string(task_id), Entry{upstream, expires, ++seq_});
}

int TaskTable::find(std::string_view task_id, core::Nanos now) const noexcept {
  const auto it = map_.find(task_id);
  if (it == map_.end() || now >= it->second.expires) {
    return -1;
  }
  return it->second.upstream;
}

std::optional<std::string> taskIdOf(std::string_view json) {
  if (json::validate(json) != json::Validity::kValid) {
    return std::nullopt;
  }
  size_t root = 0;
  size_t end = 0;
  if (!json::rootSpan(json, root, end) || json[root] != '{') {
    return std::nullopt;
  }
  size_t result = 0;
  if (!json::findMember(json, root, "result", result, end) || json[result] != '{') {
    return std::nullopt;
  }
  std::string id;
  size_t task = 0;
  if (json::findMember(json, result, "task", task, end) && json[task] == '{' &&
      json::stringMember(json, task, "taskId", id)) {
    return id;
  }
  if (json::stringMember(json, result, "taskId", id)) {
    return id;
  }
  return std::nullopt;
}

}  // namespace gw::federation
