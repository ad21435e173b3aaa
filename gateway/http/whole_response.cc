// http/: whole small responses (see whole_response.h).

#include "gateway/http/whole_response.h"

#include <charconv>

#include "gateway/core/ascii.h"
#include "gateway/http/chunked.h"

namespace gw::http {

namespace {

std::string_view trimOws(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) {
    s.remove_suffix(1);
  }
  return s;
}

WholeResult fail(std::string& error, const char* why) {
  error = why;
  return WholeResult::kError;
}

WholeResult tooLarge(std::string& error, const char* why) {
  error = why;
  return WholeResult::kTooLarge;
}

}  // namespace

const std::string* WholeResponse::field(std::string_view name) const noexcept {
  for (const auto& [k, v] : fields) {
    if (k == name) {
      return &v;
    }
  }
  return nullptr;
}

WholeResult readWholeResponse(std::string_view bytes, bool eof, size_t max_head, size_t max_body,
                              WholeResponse& out, std::string& error, bool no_body) {
  const size_t head_end = bytes.find("\r\n\r\n");
  if (head_end == std::string_view::npos) {
    if (bytes.size() > max_head) {
      return tooLarge(error, "response head too large");
    }
    return eof ? fail(error, "connection closed before the response head") : WholeResult::kNeedMore;
  }
  if (head_end + 4 > max_head) {
    return tooLarge(error, "response head too large");
  }
  out = WholeResponse{};
  std::string_view head = bytes.substr(0, head_end + 2);
  size_t eol = head.find("\r\n");
  std::string_view status_line = head.substr(0, eol);
  if (!(status_line.starts_with("HTTP/1.1 ") || status_line.starts_with("HTTP/1.0 ")) ||
      status_line.size() < 12 || (status_line.size() > 12 && status_line[12] != ' ')) {
    return fail(error, "malformed status line");
  }
  std::string_view code = status_line.substr(9, 3);
  auto [p, ec] = std::from_chars(code.data(), code.data() + 3, out.status);
  if (ec != std::errc() || p != code.data() + 3 || out.status < 100) {
    return fail(error, "malformed status line");
  }
  std::optional<uint64_t> length;
  bool chunked = false;
  for (size_t pos = eol + 2; pos < head.size();) {
    size_t next = head.find("\r\n", pos);
    std::string_view line = head.substr(pos, next - pos);
    pos = next + 2;
    if (line.empty() || line.front() == ' ' || line.front() == '\t') {
      return fail(error, "malformed header field");
    }
    size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0 || !core::isToken(line.substr(0, colon))) {
      return fail(error, "malformed header field");
    }
    std::string name(line.substr(0, colon));
    for (char& c : name) {
      c = core::toLowerAscii(c);
    }
    std::string_view value = trimOws(line.substr(colon + 1));
    if (name == "content-length") {
      uint64_t v = 0;
      auto [q, e] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (value.empty() || e != std::errc() || q != value.data() + value.size() ||
          (length && *length != v)) {
        return fail(error, "invalid Content-Length");
      }
      length = v;
    } else if (name == "transfer-encoding") {
      if (chunked || !core::iequals(value, "chunked")) {
        return fail(error, "unsupported Transfer-Encoding");
      }
      chunked = true;
    }
    out.fields.emplace_back(std::move(name), std::string(value));
  }
  if (chunked && length) {
    return fail(error, "both Transfer-Encoding and Content-Length");
  }
  std::string_view rest = bytes.substr(head_end + 4);
  out.consumed = head_end + 4;
  if (no_body || out.status < 200 || out.status == 204 || out.status == 304) {
    return WholeResult::kDone;
  }
  if (length) {
    if (*length > max_body) {
      return tooLarge(error, "response body too large");
    }
    if (rest.size() < *length) {
      return eof ? fail(error, "connection closed before the end of the body")
                 : WholeResult::kNeedMore;
    }
    out.body.assign(rest.substr(0, static_cast<size_t>(*length)));
    out.consumed += static_cast<size_t>(*length);
    return WholeResult::kDone;
  }
  if (chunked) {
    ChunkedDecoder dec(ChunkedDecoder::Peer::kUpstream);
    while (true) {
      ChunkedDecoder::Step st = dec.next(rest);
      switch (st.kind) {
        case ChunkedDecoder::Kind::kNeedMore:
          out.body.clear();
          return eof ? fail(error, "connection closed before the end of the body")
                     : WholeResult::kNeedMore;
        case ChunkedDecoder::Kind::kError:
          error = st.reason;
          return WholeResult::kError;
        case ChunkedDecoder::Kind::kData:
          out.body.append(rest.substr(0, st.length));
          if (out.body.size() > max_body) {
            return tooLarge(error, "response body too large");
          }
          break;
        case ChunkedDecoder::Kind::kFraming:
          break;
        case ChunkedDecoder::Kind::kDone:
          out.consumed += st.length;
          return WholeResult::kDone;
      }
      out.consumed += st.length;
      rest.remove_prefix(st.length);
    }
  }
  if (rest.size() > max_body) {
    return tooLarge(error, "response body too large");
  }
  if (!eof) {
    return WholeResult::kNeedMore;
  }
  out.body.assign(rest);
  out.consumed = bytes.size();
  return WholeResult::kDone;
}

std::optional<int64_t> cacheMaxAge(std::string_view cc) noexcept {
  while (!cc.empty()) {
    size_t comma = cc.find(',');
    std::string_view d = trimOws(cc.substr(0, comma));
    cc = comma == std::string_view::npos ? std::string_view() : cc.substr(comma + 1);
    if (!core::istartsWith(d, "max-age=")) {
      continue;
    }
    std::string_view v = d.substr(8);
    if (v.size() >= 2 && v.front() == '"' && v.back() == '"') {
      v = v.substr(1, v.size() - 2);
    }
    int64_t n = 0;
    auto [p, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (v.empty() || ec != std::errc() || p != v.data() + v.size() || n < 0) {
      return std::nullopt;
    }
    return n;
  }
  return std::nullopt;
}

}  // namespace gw::http
