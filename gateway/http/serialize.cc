#include "gateway/http/serialize.h"

#include <algorithm>
#include <charconv>

#include "gateway/core/ascii.h"

namespace gw::http {

const char* reasonPhrase(int status) noexcept {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 202:
      return "Accepted";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 413:
      return "Content Too Large";
    case 414:
      return "URI Too Long";
    case 415:
      return "Unsupported Media Type";
    case 417:
      return "Expectation Failed";
    case 421:
      return "Misdirected Request";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 501:
      return "Not Implemented";
    case 502:
      return "Bad Gateway";
    case 503:
      return "Service Unavailable";
    case 504:
      return "Gateway Timeout";
    default:
      return "Error";
  }
}

void appendNumber(std::string& out, uint64_t v) {
  char digits[24];
  auto r = std::to_chars(digits, digits + sizeof(digits), v);
  out.append(digits, r.ptr);
}

void appendRequestLine(std::string& out, std::string_view method, std::string_view path,
                       std::string_view query) {
  out.append(method).append(" ").append(path).append(query).append(" HTTP/1.1\r\n");
}

void appendStatusLine(std::string& out, int status, std::string_view reason) {
  out.append("HTTP/1.1 ");
  appendNumber(out, static_cast<uint64_t>(status));
  out.append(" ").append(reason).append("\r\n");
}

void appendField(std::string& out, std::string_view name, std::string_view value) {
  out.append(name).append(": ").append(value).append("\r\n");
}

void appendField(std::string& out, std::string_view name, uint64_t value) {
  out.append(name).append(": ");
  appendNumber(out, value);
  out.append("\r\n");
}

void appendFields(std::string& out, std::span<const Field> fields) {
  for (const Field& f : fields) {
    appendField(out, f.name, f.value);
  }
}

void appendFields(std::string& out, std::span<const OwnedField> fields) {
  for (const OwnedField& f : fields) {
    appendField(out, f.name, f.value);
  }
}

void appendFieldsSetting(std::string& out, std::span<const Field> fields,
                         std::span<const std::pair<std::string, std::string>> set) {
  for (const Field& f : fields) {
    const bool replaced = std::any_of(
        set.begin(), set.end(), [&](const auto& s) { return core::iequals(f.name, s.first); });
    if (!replaced) {
      appendField(out, f.name, f.value);
    }
  }
  for (const auto& [name, value] : set) {
    appendField(out, name, value);
  }
}

}  // namespace gw::http
