// JSON string escaping (see json_escape.h).

#include "gateway/core/json_escape.h"

#include "gateway/core/hex.h"
#include "gateway/core/utf8.h"

namespace gw::core {

void appendJsonEscaped(std::string& out, std::string_view s, JsonEscapeOptions options) {
  const auto plain = [&](unsigned char c) {
    return c >= 0x20 && c != '"' && c != '\\' && c < 0x80 && !(options.escape_del && c == 0x7F);
  };
  size_t i = 0;
  while (i < s.size()) {
    size_t run = i;
    while (run < s.size() && plain(static_cast<unsigned char>(s[run]))) {
      ++run;
    }
    out.append(s.data() + i, run - i);
    i = run;
    if (i == s.size()) {
      break;
    }
    const auto c = static_cast<unsigned char>(s[i]);
    if (c >= 0x80) {
      const size_t len = options.replace_invalid_utf8 ? utf8SequenceLength(s, i) : 1;
      if (len == 0) {
        out.append("\\ufffd");
        ++i;
      } else {
        out.append(s.data() + i, len);
        i += len;
      }
      continue;
    }
    switch (c) {
      case '"':
        out.append("\\\"");
        break;
      case '\\':
        out.append("\\\\");
        break;
      case '\b':
        out.append("\\b");
        break;
      case '\f':
        out.append("\\f");
        break;
      case '\n':
        out.append("\\n");
        break;
      case '\r':
        out.append("\\r");
        break;
      case '\t':
        out.append("\\t");
        break;
      default: {  // other controls, and DEL when escape_del
        const char esc[] = {'\\', 'u', '0', '0', kHexDigits[c >> 4], kHexDigits[c & 0xF]};
        out.append(esc, sizeof esc);
        break;
      }
    }
    ++i;
  }
}

void appendJsonString(std::string& out, std::string_view s, JsonEscapeOptions options) {
  out.push_back('"');
  appendJsonEscaped(out, s, options);
  out.push_back('"');
}

}  // namespace gw::core
