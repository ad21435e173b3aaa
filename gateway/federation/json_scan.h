#pragma once
// A byte-exact JSON scanner for federation/: where a value starts and ends in the text, so a
// merge can copy items as written and a rewrite can replace one token and keep every other
// byte. Internal to gateway/federation (not for other modules).
//
// The scanner trusts its input to be JSON: callers first run validate() (simdjson, nesting at
// most kMaxDepth) on the whole text and scan only texts that passed. On any text it still stays
// in bounds and terminates (every step advances), but on invalid JSON its spans are unspecified.
// No recursion: containers are skipped by counting brackets outside strings.

#include <cstddef>
#include <string>
#include <string_view>

namespace gw::federation::json {

inline constexpr size_t kMaxDepth = 64;  // the root container is depth 1
inline constexpr size_t kNpos = std::string_view::npos;

enum class Validity : unsigned char { kValid, kInvalid, kTooDeep };

// The whole text is one JSON value (simdjson, which also checks UTF-8), nested at most
// kMaxDepth deep.
Validity validate(std::string_view text);

// The first non-whitespace position at or after `pos` (text.size() when none).
size_t skipWs(std::string_view text, size_t pos) noexcept;

// One past the end of the value starting exactly at `pos` (no leading whitespace), kNpos when
// none starts there or it runs past the text.
size_t skipValue(std::string_view text, size_t pos) noexcept;

// A string token (quotes included) unescaped into `out` (replaced). \u escapes become UTF-8; a
// lone surrogate becomes U+FFFD. False when `token` is not a string token.
bool unescape(std::string_view token, std::string& out);

// Whether the string token `token` (quotes included) spells `key` after unescaping.
bool tokenEquals(std::string_view token, std::string_view key);

// The members of the object whose '{' is at text[open], in order.
//
//   ObjectReader r(text, open);
//   while (r.next()) { … r.keyToken(), r.value() … }
//   if (!r.ok()) { malformed }
class ObjectReader {
 public:
  ObjectReader(std::string_view text, size_t open) noexcept;

  // Moves to the next member. False at the closing brace (ok() stays true; end() is one past
  // it) or when the text is malformed (ok() false).
  bool next() noexcept;

  bool ok() const noexcept { return ok_; }
  std::string_view keyToken() const noexcept { return text_.substr(key_, key_end_ - key_); }
  bool keyIs(std::string_view key) const { return tokenEquals(keyToken(), key); }
  size_t valueBegin() const noexcept { return value_; }
  size_t valueEnd() const noexcept { return value_end_; }
  std::string_view value() const noexcept { return text_.substr(value_, value_end_ - value_); }
  char valueType() const noexcept { return value_ < text_.size() ? text_[value_] : '\0'; }
  size_t end() const noexcept { return pos_; }

 private:
  std::string_view text_;
  size_t pos_;
  bool first_ = true;
  bool done_ = false;
  bool ok_ = true;
  size_t key_ = 0, key_end_ = 0, value_ = 0, value_end_ = 0;
};

// The elements of the array whose '[' is at text[open], in order (as ObjectReader).
class ArrayReader {
 public:
  ArrayReader(std::string_view text, size_t open) noexcept;
  bool next() noexcept;
  bool ok() const noexcept { return ok_; }
  size_t valueBegin() const noexcept { return value_; }
  size_t valueEnd() const noexcept { return value_end_; }
  std::string_view value() const noexcept { return text_.substr(value_, value_end_ - value_); }
  char valueType() const noexcept { return value_ < text_.size() ? text_[value_] : '\0'; }

 private:
  std::string_view text_;
  size_t pos_;
  bool first_ = true;
  bool done_ = false;
  bool ok_ = true;
  size_t value_ = 0, value_end_ = 0;
};

// The root value of a text validate() accepted (only such texts: the value is not read
// through, its ends are taken from the text's): its first and one-past-last byte (surrounding
// whitespace excluded). False when there is no value.
bool rootSpan(std::string_view text, size_t& begin, size_t& end) noexcept;

// The first member `key` of the object at text[open]; false when absent or malformed.
bool findMember(std::string_view text, size_t open, std::string_view key, size_t& begin,
                size_t& end);

// The unescaped string value of member `key` of the object at text[open]: false when the first
// such member is absent or not a string.
bool stringMember(std::string_view text, size_t open, std::string_view key, std::string& out);

// Appends `s` as a JSON string, quotes included (see federation.h appendJsonString).
void appendString(std::string& out, std::string_view s);

// Appends at most `max_bytes` of `s`, cut at a UTF-8 boundary.
void appendBounded(std::string& out, std::string_view s, size_t max_bytes);

}  // namespace gw::federation::json
