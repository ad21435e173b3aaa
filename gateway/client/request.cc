// client/: requests, responses and their pure helpers (see request.h).

#include "gateway/client/request.h"

#include <charconv>

#include "gateway/core/ascii.h"

namespace gw::client {

namespace {

constexpr char kHex[] = "0123456789ABCDEF";

bool isAlnum(unsigned char c) noexcept {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

void appendEscaped(std::string& out, unsigned char c) {
  out += '%';
  out += kHex[c >> 4];
  out += kHex[c & 0xf];
}

void appendForm(std::string& out, std::string_view s) {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (isAlnum(c) || c == '*' || c == '-' || c == '.' || c == '_') {
      out += ch;
    } else if (c == ' ') {
      out += '+';
    } else {
      appendEscaped(out, c);
    }
  }
}

bool printable(std::string_view s) noexcept {
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c <= 0x20 || c == 0x7f) {
      return false;
    }
  }
  return true;
}

}  // namespace

std::string Url::authority() const {
  std::string a = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  if (port != (https ? 443 : 80)) {
    a += ':';
    a += std::to_string(port);
  }
  return a;
}

bool parseUrl(std::string_view url, Url& out, std::string& error) {
  out = Url{};
  if (core::istartsWith(url, "https://")) {
    out.https = true;
    out.port = 443;
    url.remove_prefix(8);
  } else if (core::istartsWith(url, "http://")) {
    out.https = false;
    out.port = 80;
    url.remove_prefix(7);
  } else {
    error = "not an http:// or https:// URL";
    return false;
  }
  if (!printable(url)) {
    error = "the URL holds a space or a control byte";
    return false;
  }
  if (size_t hash = url.find('#'); hash != std::string_view::npos) {
    url = url.substr(0, hash);
  }
  const size_t end = url.find_first_of("/?");
  std::string_view authority = url.substr(0, end);
  std::string_view rest = end == std::string_view::npos ? std::string_view() : url.substr(end);
  if (authority.find('@') != std::string_view::npos) {
    error = "userinfo in the URL";
    return false;
  }
  std::string_view host;
  std::string_view port;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) {
      error = "unterminated IPv6 literal";
      return false;
    }
    host = authority.substr(1, close - 1);
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') {
        error = "bytes after the IPv6 literal";
        return false;
      }
      port = after.substr(1);
      if (port.empty()) {
        error = "empty port";
        return false;
      }
    }
  } else {
    const size_t colon = authority.find(':');
    host = authority.substr(0, colon);
    if (colon != std::string_view::npos) {
      port = authority.substr(colon + 1);
      if (port.empty()) {
        error = "empty port";
        return false;
      }
    }
  }
  if (host.empty()) {
    error = "no host in the URL";
    return false;
  }
  if (!port.empty()) {
    unsigned v = 0;
    auto [p, ec] = std::from_chars(port.data(), port.data() + port.size(), v);
    if (ec != std::errc() || p != port.data() + port.size() || v == 0 || v > 65535) {
      error = "invalid port";
      return false;
    }
    out.port = static_cast<uint16_t>(v);
  }
  out.host.assign(host);
  out.target = rest.empty() ? "/" : std::string(rest);
  if (out.target.front() == '?') {
    out.target.insert(0, "/");
  }
  return true;
}

std::string percentEncode(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (isAlnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += ch;
    } else {
      appendEscaped(out, c);
    }
  }
  return out;
}

std::string formEncode(const Fields& fields) {
  std::string out;
  for (const auto& [name, value] : fields) {
    if (!out.empty()) {
      out += '&';
    }
    appendForm(out, name);
    out += '=';
    appendForm(out, value);
  }
  return out;
}

void Request::setJson(std::string json) {
  body = std::move(json);
  content_type = "application/json";
}

void Request::setForm(const Fields& fields) {
  body = formEncode(fields);
  content_type = "application/x-www-form-urlencoded";
}

const std::string* Response::header(std::string_view name) const noexcept {
  for (const auto& [k, v] : headers) {
    if (k == name) {
      return &v;
    }
  }
  return nullptr;
}

const char* errorName(Error e) noexcept {
  switch (e) {
    case Error::kNone:
      return "none";
    case Error::kInvalidRequest:
      return "invalid_request";
    case Error::kDns:
      return "dns";
    case Error::kConnect:
      return "connect";
    case Error::kTls:
      return "tls";
    case Error::kTimeout:
      return "timeout";
    case Error::kTooLarge:
      return "too_large";
    case Error::kBadResponse:
      return "bad_response";
  }
  return "unknown";
}

}  // namespace gw::client
