#pragma once
// HTTP/1.1 heads from name/value pairs, and reason phrases. Pure: appends to the caller's
// string, allocates nothing else. The proxy builds a head as a list of fields (views into the
// request it came from, or into strings it owns) and serialises it here once, so the layers
// above never write raw HTTP/1 lines.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>

namespace gw::http {

struct Field {
  std::string_view name;
  std::string_view value;
};

// A field that owns its name and value: one the gateway adds to an answer it makes or
// relays (RateLimit, Retry-After, Allow, WWW-Authenticate…). Codecs serialise these
// themselves; no layer above them writes header lines.
struct OwnedField {
  std::string name;
  std::string value;
};

// The reason phrase of a status the gateway sends itself ("Error" for one it never does).
const char* reasonPhrase(int status) noexcept;

// "METHOD target HTTP/1.1\r\n"
void appendRequestLine(std::string& out, std::string_view method, std::string_view path,
                       std::string_view query);
// "HTTP/1.1 <status> <reason>\r\n"
void appendStatusLine(std::string& out, int status, std::string_view reason);
// "name: value\r\n" for each field.
void appendFields(std::string& out, std::span<const Field> fields);
void appendFields(std::string& out, std::span<const OwnedField> fields);
// "name: value\r\n" for each field whose name is not one of `set`'s (ASCII case-insensitive),
// then for each of `set` (upstreams[].headers: set, not added).
void appendFieldsSetting(std::string& out, std::span<const Field> fields,
                         std::span<const std::pair<std::string, std::string>> set);
void appendField(std::string& out, std::string_view name, std::string_view value);
void appendField(std::string& out, std::string_view name, uint64_t value);
void appendNumber(std::string& out, uint64_t v);

}  // namespace gw::http
