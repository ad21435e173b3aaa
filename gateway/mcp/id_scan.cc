// Top-level "id" of a JSON-RPC body prefix (see id_scan.h).

#include "gateway/mcp/id_scan.h"

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

}  // namespace gw::mcp
