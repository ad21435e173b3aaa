// The byte-exact JSON scanner federation/ reads validated texts with (see json_scan.h).

#include "gateway/federation/json_scan.h"

#include <simdjson.h>

#include <cstdint>
#include <cstring>

#include "gateway/core/hex.h"
#include "gateway/core/json_escape.h"
#include "gateway/core/utf8.h"

namespace gw::federation::json {

namespace {

bool isWs(char c) noexcept {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

bool isScalarChar(char c) noexcept {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '+' ||
         c == '-' || c == '.';
}

// One past the closing quote of the string token at text[pos] == '"'; kNpos if unterminated.
size_t skipString(std::string_view text, size_t pos) noexcept {
  // The closing quote is the first one after `pos` not escaped: preceded by an even run of
  // backslashes (each pair is one escaped backslash). memchr finds quote candidates at the
  // speed of the C library's vector code; most of a list's bytes are inside strings.
  const size_t body = pos + 1;
  size_t i = body;
  while (i < text.size()) {
    const void* q = std::memchr(text.data() + i, '"', text.size() - i);
    if (q == nullptr) {
      return kNpos;
    }
    const size_t at = static_cast<size_t>(static_cast<const char*>(q) - text.data());
    size_t slashes = 0;
    while (at - slashes > body && text[at - slashes - 1] == '\\') {
      ++slashes;
    }
    if (slashes % 2 == 0) {
      return at + 1;
    }
    i = at + 1;
  }
  return kNpos;
}

// Deepest container nesting of the text (strings skipped); stops counting past `limit`.
size_t nesting(std::string_view text, size_t limit) noexcept {
  size_t depth = 0;
  size_t deepest = 0;
  size_t i = 0;
  while (i < text.size()) {
    const char c = text[i];
    if (c == '"') {
      const size_t end = skipString(text, i);
      if (end == kNpos) {
        break;
      }
      i = end;
      continue;
    }
    if (c == '{' || c == '[') {
      ++depth;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) {
          return deepest;
        }
      }
    } else if ((c == '}' || c == ']') && depth > 0) {
      --depth;
    }
    ++i;
  }
  return deepest;
}

// The 4 hex digits at s[i..i+4) as a code unit, or -1.
int32_t hex4(std::string_view s, size_t i) noexcept {
  if (s.size() < i + 4) {
    return -1;
  }
  int32_t v = 0;
  for (size_t k = 0; k < 4; ++k) {
    const int h = core::hexValue(s[i + k]);
    if (h < 0) {
      return -1;
    }
    v = v * 16 + h;
  }
  return v;
}

}  // namespace

namespace {
// Texts up to this size leave validate()'s buffers at their size for the next one.
constexpr size_t kKeepCapacity = 1024 * 1024;
}  // namespace

Validity validate(std::string_view text) {
  thread_local simdjson::dom::parser parser;
  // simdjson's depth count runs ahead of the nesting for some shapes (an object in an array
  // in an object…), so it gets a margin and nesting() below applies the exact limit.
  thread_local bool sized = parser.allocate(4096, 2 * kMaxDepth) == simdjson::SUCCESS;
  (void)sized;  // without it simdjson's default (deeper) limit applies; nesting() still holds
  thread_local std::string padded;
  padded.assign(text);
  padded.append(simdjson::SIMDJSON_PADDING, '\0');
  simdjson::dom::element root;
  const auto err = parser.parse(padded.data(), text.size(), false).get(root);
  if (text.size() > kKeepCapacity) {
    // A large list (rare) leaves no buffers of its size on this thread: the parser's
    // indexes run to several times the text, and idle memory must come back.
    std::string().swap(padded);
    parser = simdjson::dom::parser();
    sized = parser.allocate(4096, 2 * kMaxDepth) == simdjson::SUCCESS;
  }
  if (err == simdjson::DEPTH_ERROR) {
    return Validity::kTooDeep;
  }
  if (err != simdjson::SUCCESS) {
    return Validity::kInvalid;
  }
  if (nesting(text, kMaxDepth) > kMaxDepth) {
    return Validity::kTooDeep;
  }
  return Validity::kValid;
}

size_t skipWs(std::string_view text, size_t pos) noexcept {
  while (pos < text.size() && isWs(text[pos])) {
    ++pos;
  }
  return pos < text.size() ? pos : text.size();
}

size_t skipValue(std::string_view text, size_t pos) noexcept {
  if (pos >= text.size()) {
    return kNpos;
  }
  const char c = text[pos];
  if (c == '"') {
    return skipString(text, pos);
  }
  if (c == '{' || c == '[') {
    size_t depth = 0;
    size_t i = pos;
    while (i < text.size()) {
      const char d = text[i];
      if (d == '"') {
        i = skipString(text, i);
        if (i == kNpos) {
          return kNpos;
        }
        continue;
      }
      if (d == '{' || d == '[') {
        ++depth;
      } else if (d == '}' || d == ']') {
        if (--depth == 0) {
          return i + 1;
        }
      }
      ++i;
    }
    return kNpos;
  }
  size_t i = pos;
  while (i < text.size() && isScalarChar(text[i])) {
    ++i;
  }
  return i == pos ? kNpos : i;
}

bool unescape(std::string_view token, std::string& out) {
  out.clear();
  if (token.size() < 2 || token.front() != '"' || token.back() != '"') {
    return false;
  }
  const std::string_view s = token.substr(1, token.size() - 2);
  size_t i = 0;
  while (i < s.size()) {
    const size_t bs = s.find('\\', i);
    if (bs == std::string_view::npos) {
      out.append(s.substr(i));
      break;
    }
    out.append(s.substr(i, bs - i));
    if (bs + 1 >= s.size()) {
      return false;
    }
    const char e = s[bs + 1];
    i = bs + 2;
    switch (e) {
      case '"':
      case '\\':
      case '/':
        out.push_back(e);
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'u': {
        const int32_t u = hex4(s, i);
        if (u < 0) {
          return false;
        }
        i += 4;
        uint32_t cp = static_cast<uint32_t>(u);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          const int32_t lo =
              (i + 6 <= s.size() && s[i] == '\\' && s[i + 1] == 'u') ? hex4(s, i + 2) : -1;
          if (lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (static_cast<uint32_t>(lo) - 0xDC00);
            i += 6;
          } else {
            cp = 0xFFFD;
          }
        } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
          cp = 0xFFFD;
        }
        core::appendUtf8(out, cp);
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

bool tokenEquals(std::string_view token, std::string_view key) {
  if (token.size() < 2) {
    return false;
  }
  const std::string_view inner = token.substr(1, token.size() - 2);
  if (inner.find('\\') == std::string_view::npos) {
    return inner == key;
  }
  thread_local std::string scratch;
  return unescape(token, scratch) && scratch == key;
}

ObjectReader::ObjectReader(std::string_view text, size_t open) noexcept
    : text_(text), pos_(open + 1) {
  if (open >= text.size() || text[open] != '{') {
    ok_ = false;
    pos_ = text.size();
  }
}

bool ObjectReader::next() noexcept {
  if (done_ || !ok_) {
    return false;
  }
  pos_ = skipWs(text_, pos_);
  if (pos_ >= text_.size()) {
    ok_ = false;
    return false;
  }
  if (text_[pos_] == '}') {
    ++pos_;
    done_ = true;
    return false;
  }
  if (!first_) {
    if (text_[pos_] != ',') {
      ok_ = false;
      return false;
    }
    pos_ = skipWs(text_, pos_ + 1);
  }
  first_ = false;
  if (pos_ >= text_.size() || text_[pos_] != '"') {
    ok_ = false;
    return false;
  }
  key_ = pos_;
  key_end_ = skipString(text_, pos_);
  if (key_end_ == kNpos) {
    ok_ = false;
    return false;
  }
  pos_ = skipWs(text_, key_end_);
  if (pos_ >= text_.size() || text_[pos_] != ':') {
    ok_ = false;
    return false;
  }
  value_ = skipWs(text_, pos_ + 1);
  value_end_ = skipValue(text_, value_);
  if (value_end_ == kNpos) {
    ok_ = false;
    return false;
  }
  pos_ = value_end_;
  return true;
}

ArrayReader::ArrayReader(std::string_view text, size_t open) noexcept
    : text_(text), pos_(open + 1) {
  if (open >= text.size() || text[open] != '[') {
    ok_ = false;
    pos_ = text.size();
  }
}

bool ArrayReader::next() noexcept {
  if (done_ || !ok_) {
    return false;
  }
  pos_ = skipWs(text_, pos_);
  if (pos_ >= text_.size()) {
    ok_ = false;
    return false;
  }
  if (text_[pos_] == ']') {
    ++pos_;
    done_ = true;
    return false;
  }
  if (!first_) {
    if (text_[pos_] != ',') {
      ok_ = false;
      return false;
    }
    pos_ = skipWs(text_, pos_ + 1);
  }
  first_ = false;
  value_ = pos_;
  value_end_ = skipValue(text_, value_);
  if (value_end_ == kNpos) {
    ok_ = false;
    return false;
  }
  pos_ = value_end_;
  return true;
}

bool rootSpan(std::string_view text, size_t& begin, size_t& end) noexcept {
  // A validated text is one value between optional whitespace: its ends are found from the
  // two ends of the text, not by reading the value through.
  begin = skipWs(text, 0);
  end = text.size();
  while (end > begin && isWs(text[end - 1])) {
    --end;
  }
  return begin < end;
}

bool findMember(std::string_view text, size_t open, std::string_view key, size_t& begin,
                size_t& end) {
  ObjectReader r(text, open);
  while (r.next()) {
    if (r.keyIs(key)) {
      begin = r.valueBegin();
      end = r.valueEnd();
      return true;
    }
  }
  return false;
}

bool stringMember(std::string_view text, size_t open, std::string_view key, std::string& out) {
  size_t b = 0;
  size_t e = 0;
  if (!findMember(text, open, key, b, e) || text[b] != '"') {
    return false;
  }
  return unescape(text.substr(b, e - b), out);
}

void appendString(std::string& out, std::string_view s) {
  core::appendJsonString(out, s, {.escape_del = false, .replace_invalid_utf8 = true});
}

void appendBounded(std::string& out, std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) {
    out.append(s);
    return;
  }
  size_t cut = max_bytes;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) {
    --cut;
  }
  out.append(s.substr(0, cut));
}

}  // namespace gw::federation::json
