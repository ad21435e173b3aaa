// pins/: the canonical JSON form and the definition hashes a tool is pinned by (see pins.h).
// The reader is a strict RFC 8259 recursive-descent parser that writes the canonical text as
// it goes: simdjson's DOM keeps neither number tokens nor repeated keys, both of which the
// canonical form needs. UTF-8 is checked up front (Unicode Table 3-7: no overlong forms, no
// encoded surrogates, nothing above U+10FFFF), so every error carries a byte offset.

#include <openssl/sha.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gateway/core/hex.h"
#include "gateway/core/json_escape.h"
#include "gateway/core/utf8.h"

#include "gateway/pins/pins.h"

namespace gw::pins {

namespace {

constexpr size_t kMaxDepth = 64;

struct Member {
  std::string key;    // decoded
  std::string value;  // canonical text
  size_t offset = 0;  // of the key's opening quote in the input
};

bool isDigit(char c) noexcept {
  return c >= '0' && c <= '9';
}

// At most `max` bytes of the (valid UTF-8) text, cut at a code point boundary.
std::string_view prefixOf(std::string_view s, size_t max) noexcept {
  if (s.size() <= max) {
    return s;
  }
  while (max > 0 && (static_cast<unsigned char>(s[max]) & 0xC0) == 0x80) {
    --max;
  }
  return s.substr(0, max);
}

// One JSON text → its canonical form. Each object's members are collected, sorted and
// checked for repeats before the object is written, so the output of a nested value is final
// when its parent sees it.
class Reader {
 public:
  explicit Reader(std::string_view in) : in_(in) {}

  // The whole input as one value. `top`, when given and the value is an object, receives
  // its members (sorted by key).
  bool document(std::string& out, std::vector<Member>* top) {
    if (const size_t bad = core::invalidUtf8At(in_); bad != in_.size()) {
      pos_ = bad;
      return fail("not valid UTF-8");
    }
    if (!value(out, 0, top)) {
      return false;
    }
    skipWs();
    if (pos_ != in_.size()) {
      return fail("trailing characters");
    }
    return true;
  }

  // The input is exactly one string token (a canonical string): its decoded value.
  bool decodeString(std::string& decoded) {
    return pos_ < in_.size() && in_[pos_] == '"' && string(decoded);
  }

  const std::string& error() const noexcept { return error_; }

 private:
  bool fail(std::string_view what) { return failAt(what, pos_); }

  bool failAt(std::string_view what, size_t offset) {
    error_.assign(what);
    error_ += " at offset ";
    error_ += std::to_string(offset);
    return false;
  }

  void skipWs() noexcept {
    while (pos_ < in_.size() &&
           (in_[pos_] == ' ' || in_[pos_] == '\t' || in_[pos_] == '\n' || in_[pos_] == '\r')) {
      ++pos_;
    }
  }

  bool value(std::string& out, size_t depth, std::vector<Member>* members) {
    skipWs();
    if (pos_ >= in_.size()) {
      return fail("unexpected end of input");
    }
    const char c = in_[pos_];
    switch (c) {
      case '{':
        return object(out, depth, members);
      case '[':
        return array(out, depth);
      case '"': {
        std::string decoded;
        if (!string(decoded)) {
          return false;
        }
        appendJsonString(out, decoded);
        return true;
      }
      case 't':
        return literal("true", out);
      case 'f':
        return literal("false", out);
      case 'n':
        return literal("null", out);
      default:
        if (c == '-' || isDigit(c)) {
          return number(out);
        }
        return fail("unexpected character");
    }
  }

  bool object(std::string& out, size_t depth, std::vector<Member>* top) {
    if (depth + 1 > kMaxDepth) {
      return fail("nested deeper than 64");
    }
    ++pos_;  // '{'
    std::vector<Member> members;
    skipWs();
    if (pos_ < in_.size() && in_[pos_] == '}') {
      ++pos_;
    } else {
      while (true) {
        skipWs();
        if (pos_ >= in_.size() || in_[pos_] != '"') {
          return fail("expected a member name");
        }
        Member m;
        m.offset = pos_;
        if (!string(m.key)) {
          return false;
        }
        skipWs();
        if (pos_ >= in_.size() || in_[pos_] != ':') {
          return fail("expected ':'");
        }
        ++pos_;
        if (!value(m.value, depth + 1, nullptr)) {
          return false;
        }
        members.push_back(std::move(m));
        skipWs();
        if (pos_ < in_.size() && in_[pos_] == ',') {
          ++pos_;
          continue;
        }
        if (pos_ < in_.size() && in_[pos_] == '}') {
          ++pos_;
          break;
        }
        return fail("expected ',' or '}'");
      }
    }
    // std::string's ordering is char_traits<char>::compare, i.e. unsigned bytes. Stable, so
    // of two equal keys the later one in the input comes second.
    std::stable_sort(members.begin(), members.end(),
                     [](const Member& a, const Member& b) { return a.key < b.key; });
    for (size_t i = 1; i < members.size(); ++i) {
      if (members[i].key == members[i - 1].key) {
        std::string what = "duplicate key ";
        appendJsonString(what, prefixOf(members[i].key, 100));
        return failAt(what, members[i].offset);
      }
    }
    out.push_back('{');
    for (size_t i = 0; i < members.size(); ++i) {
      if (i > 0) {
        out.push_back(',');
      }
      appendJsonString(out, members[i].key);
      out.push_back(':');
      out += members[i].value;
    }
    out.push_back('}');
    if (top != nullptr) {
      *top = std::move(members);
    }
    return true;
  }

  bool array(std::string& out, size_t depth) {
    if (depth + 1 > kMaxDepth) {
      return fail("nested deeper than 64");
    }
    ++pos_;  // '['
    out.push_back('[');
    skipWs();
    if (pos_ < in_.size() && in_[pos_] == ']') {
      ++pos_;
      out.push_back(']');
      return true;
    }
    bool first = true;
    while (true) {
      if (!first) {
        out.push_back(',');
      }
      first = false;
      if (!value(out, depth + 1, nullptr)) {
        return false;
      }
      skipWs();
      if (pos_ < in_.size() && in_[pos_] == ',') {
        ++pos_;
        continue;
      }
      if (pos_ < in_.size() && in_[pos_] == ']') {
        ++pos_;
        out.push_back(']');
        return true;
      }
      return fail("expected ',' or ']'");
    }
  }

  bool hex4(uint32_t& v) {
    if (in_.size() - pos_ < 4) {
      return false;
    }
    v = 0;
    for (size_t k = 0; k < 4; ++k) {
      const int h = core::hexValue(in_[pos_ + k]);
      if (h < 0) {
        return false;
      }
      v = v * 16 + static_cast<uint32_t>(h);
    }
    pos_ += 4;
    return true;
  }

  // The string token at in_[pos_] == '"', decoded (the raw bytes are valid UTF-8 already).
  bool string(std::string& decoded) {
    ++pos_;
    while (true) {
      if (pos_ >= in_.size()) {
        return fail("unterminated string");
      }
      const char c = in_[pos_];
      if (c == '"') {
        ++pos_;
        return true;
      }
      if (static_cast<unsigned char>(c) < 0x20) {
        return fail("control character in a string");
      }
      if (c != '\\') {
        decoded.push_back(c);
        ++pos_;
        continue;
      }
      ++pos_;
      if (pos_ >= in_.size()) {
        return fail("unterminated string");
      }
      const char e = in_[pos_++];
      switch (e) {
        case '"':
        case '\\':
        case '/':
          decoded.push_back(e);
          break;
        case 'b':
          decoded.push_back('\b');
          break;
        case 'f':
          decoded.push_back('\f');
          break;
        case 'n':
          decoded.push_back('\n');
          break;
        case 'r':
          decoded.push_back('\r');
          break;
        case 't':
          decoded.push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(cp)) {
            return fail("bad \\u escape");
          }
          if (cp >= 0xDC00 && cp <= 0xDFFF) {
            return fail("lone surrogate escape");
          }
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t lo = 0;
            if (in_.size() - pos_ < 2 || in_[pos_] != '\\' || in_[pos_ + 1] != 'u') {
              return fail("lone surrogate escape");
            }
            pos_ += 2;
            if (!hex4(lo)) {
              return fail("bad \\u escape");
            }
            if (lo < 0xDC00 || lo > 0xDFFF) {
              return fail("lone surrogate escape");
            }
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          }
          core::appendUtf8(decoded, cp);
          break;
        }
        default:
          return fail("bad escape");
      }
    }
  }

  // -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?, copied as written.
  bool number(std::string& out) {
    const size_t start = pos_;
    if (in_[pos_] == '-') {
      ++pos_;
    }
    if (pos_ < in_.size() && in_[pos_] == '0') {
      ++pos_;
    } else if (pos_ < in_.size() && isDigit(in_[pos_])) {
      while (pos_ < in_.size() && isDigit(in_[pos_])) {
        ++pos_;
      }
    } else {
      return fail("bad number");
    }
    if (pos_ < in_.size() && in_[pos_] == '.') {
      ++pos_;
      if (pos_ >= in_.size() || !isDigit(in_[pos_])) {
        return fail("bad number");
      }
      while (pos_ < in_.size() && isDigit(in_[pos_])) {
        ++pos_;
      }
    }
    if (pos_ < in_.size() && (in_[pos_] == 'e' || in_[pos_] == 'E')) {
      ++pos_;
      if (pos_ < in_.size() && (in_[pos_] == '+' || in_[pos_] == '-')) {
        ++pos_;
      }
      if (pos_ >= in_.size() || !isDigit(in_[pos_])) {
        return fail("bad number");
      }
      while (pos_ < in_.size() && isDigit(in_[pos_])) {
        ++pos_;
      }
    }
    out.append(in_.substr(start, pos_ - start));
    return true;
  }

  bool literal(std::string_view word, std::string& out) {
    if (in_.substr(pos_, word.size()) != word) {
      return fail("unexpected character");
    }
    pos_ += word.size();
    out.append(word);
    return true;
  }

  std::string_view in_;
  size_t pos_ = 0;
  std::string error_;
};

}  // namespace

void appendJsonString(std::string& out, std::string_view decoded) {
  // Non-ASCII bytes are copied as they are: canonicalJson has checked the text is UTF-8.
  core::appendJsonString(out, decoded, {.escape_del = false, .replace_invalid_utf8 = false});
}

std::string sha256Hex(std::string_view bytes) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), digest);
  return core::hexEncode(std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
}

bool canonicalJson(std::string_view json, std::string& out, std::string& error) noexcept {
  Reader reader(json);
  std::string text;
  if (!reader.document(text, nullptr)) {
    error = "not valid JSON: " + reader.error();
    return false;
  }
  out = std::move(text);
  return true;
}

bool hashTool(std::string_view tool_json, Definition& out, std::string& error,
              std::string* name) noexcept {
  Reader reader(tool_json);
  std::string canonical;
  std::vector<Member> members;
  if (!reader.document(canonical, &members)) {
    error = "tool definition: not valid JSON: " + reader.error();
    return false;
  }
  if (canonical.front() != '{') {
    error = "tool definition: not a JSON object";
    return false;
  }
  Definition def;
  const Member* name_member = nullptr;
  // The members are sorted, so the pinned subset is already in canonical order.
  std::string pinned = "{";
  for (const Member& m : members) {
    const auto* it = std::find(kFields.begin(), kFields.end(), m.key);
    if (it == kFields.end()) {
      continue;  // not pinned (_meta, icons, …)
    }
    const auto i = static_cast<size_t>(it - kFields.begin());
    if (i == 0) {
      if (m.value.front() != '"') {
        break;
      }
      name_member = &m;
    }
    def.fields[i] = sha256Hex(m.value);
    if (pinned.size() > 1) {
      pinned.push_back(',');
    }
    appendJsonString(pinned, m.key);
    pinned.push_back(':');
    pinned += m.value;
  }
  if (name_member == nullptr) {
    error = "tool definition: no string \"name\"";
    return false;
  }
  pinned.push_back('}');
  def.sha256 = sha256Hex(pinned);
  if (name != nullptr) {
    name->clear();
    Reader name_reader(name_member->value);
    name_reader.decodeString(*name);
  }
  out = std::move(def);
  return true;
}

std::vector<std::string_view> changedFields(const Definition& pinned,
                                            const Definition& seen) noexcept {
  std::vector<std::string_view> changed;
  for (size_t i = 0; i < kFieldCount; ++i) {
    if (pinned.fields[i] != seen.fields[i]) {
      changed.push_back(kFields[i]);
    }
  }
  return changed;
}

}  // namespace gw::pins
