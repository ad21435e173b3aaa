// Top-level "id" of a JSON-RPC body prefix (see id_scan.h).

#include "gateway/mcp/id_scan.h"

#include <algorithm>
#include <cctype>
#include <cstring>

namespace gw::mcp {

namespace {

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
    while (more() && (peek() == ' ' || peek() == '\t' || peek() == '\n' || peek() == '\r')) {
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

  static bool numberChar(char c) noexcept {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
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

// The first index where a and b differ (both have at least n bytes).
size_t firstDifference(std::string_view a, std::string_view b, size_t n) noexcept {
  constexpr size_t kStep = 4096;
  size_t at = 0;
  while (at + kStep <= n && std::memcmp(a.data() + at, b.data() + at, kStep) == 0) {
    at += kStep;
  }
  while (at < n && a[at] == b[at]) {
    ++at;
  }
  return at;
}

bool isSpace(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
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
  while (i < t.size() && (std::isdigit(static_cast<unsigned char>(t[i])) != 0 || t[i] == '-' ||
                          t[i] == '+' || t[i] == '.' || t[i] == 'e' || t[i] == 'E')) {
    ++i;
  }
  return i > at ? i : std::string_view::npos;
}

}  // namespace

bool sameApartFromId(std::string_view a, std::string_view b) noexcept {
  const size_t n = std::min(a.size(), b.size());
  const size_t diff = firstDifference(a, b, n);
  if (diff == n && a.size() == b.size()) {
    return true;
  }
  // Back to the start of the value the difference is in: after `"id"` `:`, both texts being
  // equal up to there.
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
    return false;
  }
  --k;
  while (k > 0 && isSpace(a[k - 1])) {
    --k;
  }
  if (k < 4 || a.substr(k - 4, 4) != "\"id\"") {
    return false;
  }
  const size_t end_a = scalarEnd(a, start);
  const size_t end_b = scalarEnd(b, start);
  if (end_a == std::string_view::npos || end_b == std::string_view::npos || end_a < diff ||
      end_b < diff || a.size() - end_a != b.size() - end_b) {
    return false;
  }
  // The message's own id, not an "id" inside its result (a tool schema's default, say): the
  // answer's first members ({"jsonrpc":"2.0","id":…) or its last ones (…,"id":…}), seen
  // whole in a few bytes.
  auto count = [](std::string_view t, char c) {
    return static_cast<size_t>(std::count(t.begin(), t.end(), c));
  };
  constexpr size_t kNear = 64;
  const std::string_view before = a.substr(0, k - 4);
  const std::string_view after = a.substr(end_a);
  const bool first = before.size() <= kNear && count(before, '{') == 1 && count(before, '[') == 0;
  const bool last = after.size() <= kNear && count(after, '}') == 1 && count(after, '{') == 0 &&
                    count(after, '[') == 0 && count(after, ']') == 0;
  if (!first && !last) {
    return false;
  }
  return std::memcmp(a.data() + end_a, b.data() + end_b, a.size() - end_a) == 0;
}

}  // namespace gw::mcp
