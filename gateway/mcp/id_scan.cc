// Top-level "id" of a JSON-RPC body prefix (see id_scan.h).

#include "gateway/mcp/id_scan.h"

#include <algorithm>
#include <cstring>

namespace gw::mcp {

namespace {

bool isSpace(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool numberChar(char c) noexcept {
  return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  RequestId run() noexcept {
    ws();
    if (!eat('{')) {
      return {};
    }
    return idMember();
  }

  // "result" or "error" among the top-level members before any "method" (see id_scan.h).
  bool response() noexcept {
    ws();
    if (eat('[')) {
      ws();  // a batch: its first element decides
    }
    if (!eat('{')) {
      return false;
    }
    for (int members = 0; members < 256; ++members) {
      ws();
      size_t key_start = pos_;
      if (!skipString()) {
        return false;
      }
      std::string_view key = s_.substr(key_start, pos_ - key_start);
      if (key == "\"result\"" || key == "\"error\"") {
        return true;
      }
      if (key == "\"method\"") {
        return false;
      }
      ws();
      if (!eat(':')) {
        return false;
      }
      ws();
      if (!skipValue(0)) {
        return false;
      }
      ws();
      if (!eat(',')) {
        return false;
      }
    }
    return false;
  }

 private:
  RequestId idMember() noexcept {
    for (int members = 0; members < 256; ++members) {
      ws();
      if (members == 0 && eat('}')) {
        return {};
      }
      size_t key_start = pos_;
      if (!skipString()) {
        return {};
      }
      std::string_view key = s_.substr(key_start, pos_ - key_start);
      ws();
      if (!eat(':')) {
        return {};
      }
      ws();
      if (key == "\"id\"") {
        return idValue();
      }
      if (!skipValue(0)) {
        return {};
      }
      ws();
      if (!eat(',')) {
        return {};
      }
    }
    return {};
  }

  bool more() const noexcept { return pos_ < s_.size(); }
  char peek() const noexcept { return s_[pos_]; }
  bool eat(char c) noexcept {
    if (more() && peek() == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  void ws() noexcept {
    while (more() && isSpace(peek())) {
      ++pos_;
    }
  }

  // A JSON string starting at pos_ (the quotes included); false when it does not end in s_.
  bool skipString() noexcept {
    if (!eat('"')) {
      return false;
    }
    while (more()) {
      char c = s_[pos_++];
      if (c == '"') {
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return false;
      }
      if (c == '\\') {
        if (!more()) {
          return false;
        }
        ++pos_;
      }
    }
    return false;
  }

  // A number or literal; false when it may continue past s_.
  bool skipScalar() noexcept {
    size_t start = pos_;
    while (more() && (numberChar(peek()) || (peek() >= 'a' && peek() <= 'z'))) {
      ++pos_;
    }
    return pos_ > start && more();
  }

  bool skipValue(int depth) noexcept {
    if (!more() || depth > 64) {
      return false;
    }
    char c = peek();
    if (c == '"') {
      return skipString();
    }
    if (c != '{' && c != '[') {
      return skipScalar();
    }
    const char close = c == '{' ? '}' : ']';
    ++pos_;
    ws();
    if (eat(close)) {
      return true;
    }
    for (;;) {
      if (c == '{') {
        if (!skipString()) {
          return false;
        }
        ws();
        if (!eat(':')) {
          return false;
        }
        ws();
      }
      if (!skipValue(depth + 1)) {
        return false;
      }
      ws();
      if (eat(close)) {
        return true;
      }
      if (!eat(',')) {
        return false;
      }
      ws();
    }
  }

  RequestId idValue() noexcept {
    size_t start = pos_;
    if (more() && peek() == '"') {
      if (!skipString()) {
        return {};
      }
    } else if (more() && (peek() == '-' || (peek() >= '0' && peek() <= '9'))) {
      while (more() && numberChar(peek())) {
        ++pos_;
      }
      if (!more()) {
        return {};  // the number may go on past the prefix
      }
    } else if (s_.substr(pos_, 4) == "null") {
      pos_ += 4;
      return more() ? RequestId::null() : RequestId{};
    } else {
      return {};
    }
    // What follows must end the member, or the text was not a clean id.
    size_t end = pos_;
    ws();
    if (!more() || (peek() != ',' && peek() != '}')) {
      return {};
    }
    RequestId id;
    id.kind = RequestId::Kind::kJson;
    id.json.assign(s_.substr(start, end - start));
    return id;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

}  // namespace

RequestId scanIdPrefix(std::string_view prefix) noexcept {
  return Scanner(prefix).run();
}

bool looksLikeResponse(std::string_view prefix) noexcept {
  return Scanner(prefix).response();
}

namespace {

// The first index where a and b differ (both have at least n bytes): n when none does.
size_t firstDifference(std::string_view a, std::string_view b, size_t n) noexcept {
  if (std::memcmp(a.data(), b.data(), n) == 0) {
    return n;  // the common case, at memcmp's speed
  }
  constexpr size_t kStep = 64;
  size_t at = 0;
  while (at + kStep <= n && std::memcmp(a.data() + at, b.data() + at, kStep) == 0) {
    at += kStep;
  }
  while (at < n && a[at] == b[at]) {
    ++at;
  }
  return at;
}

// Where the scalar JSON value starting at `at` ends (one past it), or npos when it is not a
// number or an escape-free string.
size_t scalarEnd(std::string_view t, size_t at) noexcept {
  if (at >= t.size()) {
    return std::string_view::npos;
  }
  if (t[at] == '"') {
    for (size_t i = at + 1; i < t.size(); ++i) {
      if (t[i] == '\\') {
        return std::string_view::npos;
      }
      if (t[i] == '"') {
        return i + 1;
      }
    }
    return std::string_view::npos;
  }
  size_t i = at;
  while (i < t.size() && numberChar(t[i])) {
    ++i;
  }
  return i > at ? i : std::string_view::npos;
}

// For texts equal up to `diff` and differing there: where the top-level "id" value of `a` the
// difference lies in starts and ends ({npos, npos} when the difference is anywhere else; see
// sameApartFromId).
struct IdSpan {
  size_t start = std::string_view::npos;
  size_t end = std::string_view::npos;
};

IdSpan idValueAt(std::string_view a, size_t diff) noexcept {
  // Back to the start of the value the difference is in: after `"id"` `:`.
  size_t start = diff;
  while (start > 0 && a[start - 1] != ':' && a[start - 1] != ',' && a[start - 1] != '{' &&
         !isSpace(a[start - 1]) && diff - start <= 256) {
    --start;
  }
  size_t k = start;
  while (k > 0 && isSpace(a[k - 1])) {
    --k;
  }
  if (k == 0 || a[k - 1] != ':') {
    return {};
  }
  --k;
  while (k > 0 && isSpace(a[k - 1])) {
    --k;
  }
  if (k < 4 || a.substr(k - 4, 4) != "\"id\"") {
    return {};
  }
  const size_t end = scalarEnd(a, start);
  if (end == std::string_view::npos || end < diff) {
    return {};
  }
  // The message's own id, not an "id" inside its result (a tool schema's default, say): the
  // answer's first members ({"jsonrpc":"2.0","id":…) or its last ones (…,"id":…}), seen
  // whole in a few bytes.
  auto count = [](std::string_view t, char c) {
    return static_cast<size_t>(std::count(t.begin(), t.end(), c));
  };
  constexpr size_t kNear = 64;
  const std::string_view before = a.substr(0, k - 4);
  const std::string_view after = a.substr(end);
  const bool first = before.size() <= kNear && count(before, '{') == 1 && count(before, '[') == 0;
  const bool last = after.size() <= kNear && count(after, '}') == 1 && count(after, '{') == 0 &&
                    count(after, '[') == 0 && count(after, ']') == 0;
  if (!first && !last) {
    return {};
  }
  return {start, end};
}

}  // namespace

bool sameApartFromId(std::string_view a, std::string_view b) noexcept {
  SameAnswerMatcher m;
  m.reset(a);
  return m.feed(b) && m.same();
}

namespace {

// Whether an id's bytes are all in: a string's closing quote, or the byte after a number.
bool idComplete(std::string_view id) noexcept {
  if (id.empty()) {
    return false;
  }
  if (id[0] == '"') {
    return id.size() >= 2 && id.back() == '"';
  }
  return scalarEnd(id, 0) != id.size();
}

}  // namespace

void SameAnswerMatcher::reset(std::string_view seen) noexcept {
  seen_ = seen;
  fed_ = 0;
  phase_ = Phase::kEqual;
  start_ = seen_end_ = diff_ = 0;
  id_.clear();
}

bool SameAnswerMatcher::feed(std::string_view piece) {
  // Worked on copies: a piece that breaks the rule leaves the state as it was before it.
  Phase phase = phase_;
  size_t fed = fed_;
  size_t start = start_;
  size_t seen_end = seen_end_;
  size_t diff = diff_;
  std::string id = id_;
  size_t i = 0;
  while (i < piece.size() || (phase == Phase::kId && idComplete(id))) {
    if (phase == Phase::kEqual) {
      const size_t avail = std::min(piece.size() - i, seen_.size() - fed);
      const size_t d = firstDifference(seen_.substr(fed), piece.substr(i), avail);
      fed += d;
      i += d;
      if (i == piece.size()) {
        break;
      }
      if (fed == seen_.size()) {
        return false;  // longer than the answer seen
      }
      const IdSpan span = idValueAt(seen_, fed);
      if (span.start == std::string_view::npos) {
        return false;
      }
      start = span.start;
      seen_end = span.end;
      diff = fed;
      id.assign(seen_.substr(start, fed - start));
      phase = Phase::kId;
      continue;
    }
    if (phase == Phase::kId) {
      if (!idComplete(id)) {
        id.push_back(piece[i]);
        ++i;
        ++fed;
        if (id.size() > 258) {
          return false;
        }
        continue;
      }
      const size_t e = scalarEnd(id, 0);
      // The answer's id must reach the first difference, as the seen one does.
      if (e == std::string_view::npos || start + e < diff) {
        return false;
      }
      const std::string_view extra = std::string_view(id).substr(e);
      if (seen_.size() - seen_end < extra.size() ||
          seen_.compare(seen_end, extra.size(), extra) != 0) {
        return false;
      }
      id.resize(e);
      phase = Phase::kAfter;
      continue;
    }
    // kAfter: the rest is the seen answer's rest, shifted by the ids' lengths.
    const size_t at = fed - (start + id.size()) + seen_end;
    const size_t n = piece.size() - i;
    if (seen_.size() - at < n || std::memcmp(seen_.data() + at, piece.data() + i, n) != 0) {
      return false;
    }
    fed += n;
    i += n;
  }
  phase_ = phase;
  fed_ = fed;
  start_ = start;
  seen_end_ = seen_end;
  diff_ = diff;
  id_ = std::move(id);
  return true;
}

bool SameAnswerMatcher::same() const noexcept {
  switch (phase_) {
    case Phase::kEqual:
      return fed_ == seen_.size();
    case Phase::kId:
      return false;
    case Phase::kAfter:
      return fed_ - (start_ + id_.size()) + seen_end_ == seen_.size();
  }
  return false;
}

bool SameAnswerMatcher::idRun(size_t& start, size_t& seen_end,
                              std::string_view& id) const noexcept {
  if (phase_ != Phase::kAfter) {
    return false;
  }
  start = start_;
  seen_end = seen_end_;
  id = id_;
  return true;
}

void SameAnswerMatcher::appendFed(std::string& out) const {
  if (phase_ == Phase::kEqual) {
    out.append(seen_.substr(0, fed_));
    return;
  }
  out.append(seen_.substr(0, start_));
  if (phase_ == Phase::kId) {
    out.append(id_);
    return;
  }
  out.append(id_);
  out.append(seen_.substr(seen_end_, fed_ - (start_ + id_.size())));
}

}  // namespace gw::mcp
