#pragma once
// A small JSON writer for the admin answers (/config, /explain): compact output, members and
// array items get their commas from the nesting state. Strings are escaped with
// mcp::appendJsonEscaped.

#include <charconv>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/mcp/jsonrpc.h"

namespace gw::filters {

class JsonWriter {
 public:
  JsonWriter& open(char c) {
    comma();
    out_ += c;
    first_ = true;
    return *this;
  }
  JsonWriter& close(char c) {
    out_ += c;
    first_ = false;
    return *this;
  }
  JsonWriter& key(std::string_view k) {
    comma();
    quote(k);
    out_ += ':';
    first_ = true;  // the value follows without a comma
    return *this;
  }
  JsonWriter& str(std::string_view v) {
    comma();
    quote(v);
    return *this;
  }
  // A string, or null when absent.
  JsonWriter& strOrNull(bool present, std::string_view v) { return present ? str(v) : null(); }
  // Already-serialised JSON, as it is.
  JsonWriter& raw(std::string_view v) {
    comma();
    out_ += v;
    return *this;
  }
  JsonWriter& null() { return raw("null"); }
  JsonWriter& num(uint64_t v) { return number(v); }
  JsonWriter& integer(int64_t v) { return number(v); }
  JsonWriter& boolean(bool b) { return raw(b ? "true" : "false"); }
  JsonWriter& strings(const std::vector<std::string>& v) {
    open('[');
    for (const auto& s : v) {
      str(s);
    }
    return close(']');
  }
  std::string take() { return std::move(out_); }

 private:
  template <class T>
  JsonWriter& number(T v) {
    char b[24];
    return raw(
        std::string_view(b, static_cast<size_t>(std::to_chars(b, b + sizeof(b), v).ptr - b)));
  }
  void comma() {
    if (!first_) {
      out_ += ',';
    }
    first_ = false;
  }
  void quote(std::string_view s) {
    out_ += '"';
    mcp::appendJsonEscaped(out_, s);
    out_ += '"';
  }
  std::string out_;
  bool first_ = true;
};

}  // namespace gw::filters
