// config/: the value grammars both configuration files share, the load-time resolver and
// the file reader (see values.h). The YAML walk is in yaml_walker.cc.

#include "gateway/config/values.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <string_view>

namespace gw::config {

namespace {

// Leading decimal digits of `text` as an unsigned number; `digits` is how many were read.
// False on overflow or when there are none.
bool leadingNumber(std::string_view text, uint64_t& value, size_t& digits) noexcept {
  digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') {
    ++digits;
  }
  if (digits == 0) {
    return false;
  }
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + digits, value);
  return ec == std::errc() && ptr == text.data() + digits;
}

// RFC 1123 host name syntax: labels of letters, digits and '-' separated by '.', each 1-63
// characters and neither starting nor ending with '-', at most 253 characters in all. The
// last label must not be all digits (no top-level domain is; "1.2.3.4.5" is a typo, not a
// name), and names that inet_aton would read as an IPv4 address ("127.1", "0x7f000001") are
// refused: they are numbers that only look like names.
bool isHostName(std::string_view host) {
  constexpr size_t kMaxName = 253;
  constexpr size_t kMaxLabel = 63;
  if (host.empty() || host.size() > kMaxName) {
    return false;
  }
  size_t label = 0;
  char prev = '.';
  for (char c : host) {
    bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (c == '.') {
      if (label == 0 || prev == '-') {
        return false;
      }
      label = 0;
    } else if (alnum || (c == '-' && label > 0)) {
      if (++label > kMaxLabel) {
        return false;
      }
    } else {
      return false;
    }
    prev = c;
  }
  if (label == 0 || prev == '-') {
    return false;
  }
  std::string_view last = host.substr(host.size() - label);
  if (std::all_of(last.begin(), last.end(), [](char c) { return c >= '0' && c <= '9'; })) {
    return false;
  }
  in_addr a4{};
  return inet_aton(std::string(host).c_str(), &a4) == 0;
}

bool multiply(uint64_t a, uint64_t b, uint64_t& out) noexcept {
  if (a != 0 && b > std::numeric_limits<uint64_t>::max() / a) {
    return false;
  }
  out = a * b;
  return true;
}

}  // namespace

std::string Diagnostic::str() const {
  std::string out = file;
  out += ':';
  out += std::to_string(line);
  out += ':';
  out += std::to_string(column);
  out += ": ";
  out += message;
  return out;
}

bool parseDuration(std::string_view text, Duration& out) noexcept {
  uint64_t n = 0;
  size_t digits = 0;
  if (!leadingNumber(text, n, digits)) {
    return false;
  }
  std::string_view unit = text.substr(digits);
  uint64_t factor = 0;
  if (unit.empty()) {
    // A bare number is ambiguous (seconds? milliseconds?); only zero reads the same in all.
    if (n != 0) {
      return false;
    }
    factor = 1;
  } else if (unit == "ms") {
    factor = 1;
  } else if (unit == "s") {
    factor = 1000;
  } else if (unit == "m") {
    factor = 60 * 1000;
  } else if (unit == "h") {
    factor = 60 * 60 * 1000;
  } else {
    return false;
  }
  uint64_t ms = 0;
  if (!multiply(n, factor, ms) ||
      ms > static_cast<uint64_t>(std::numeric_limits<Duration::rep>::max())) {
    return false;
  }
  out = Duration(static_cast<Duration::rep>(ms));
  return true;
}

bool parseSize(std::string_view text, uint64_t& out) noexcept {
  uint64_t n = 0;
  size_t digits = 0;
  if (!leadingNumber(text, n, digits)) {
    return false;
  }
  std::string_view unit = text.substr(digits);
  uint64_t factor = 0;
  if (unit.empty()) {
    factor = 1;
  } else if (unit == "KiB") {
    factor = uint64_t{1} << 10;
  } else if (unit == "MiB") {
    factor = uint64_t{1} << 20;
  } else if (unit == "GiB") {
    factor = uint64_t{1} << 30;
  } else if (unit == "KB") {
    factor = 1000;
  } else if (unit == "MB") {
    factor = 1000 * 1000;
  } else if (unit == "GB") {
    factor = 1000 * 1000 * 1000;
  } else {
    return false;
  }
  return multiply(n, factor, out);
}

bool parseAddress(std::string_view text, Address& out) {
  std::string_view host;
  std::string_view port;
  bool numeric = false;
  if (!text.empty() && text.front() == '[') {
    size_t close = text.find(']');
    if (close == std::string_view::npos || close + 1 >= text.size() || text[close + 1] != ':') {
      return false;
    }
    host = text.substr(1, close - 1);
    port = text.substr(close + 2);
    in6_addr a6{};
    if (!inet_pton(AF_INET6, std::string(host).c_str(), &a6)) {
      return false;
    }
    numeric = true;
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return false;
    }
    host = text.substr(0, colon);
    port = text.substr(colon + 1);
    in_addr a4{};
    if (inet_pton(AF_INET, std::string(host).c_str(), &a4) == 1) {
      numeric = true;
    } else if (!isHostName(host)) {
      return false;  // also rejects unbracketed IPv6 ("::1:80")
    }
  }
  uint64_t p = 0;
  size_t digits = 0;
  if (port.size() > 5 || !leadingNumber(port, p, digits) || digits != port.size() || p > 65535) {
    return false;
  }
  out.host = std::string(host);
  out.port = static_cast<uint16_t>(p);
  out.text = std::string(text);
  out.ip = numeric ? out.host : std::string();
  return true;
}

bool resolveHost(const std::string& host, std::string& ip, std::string& why) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    why = rc != 0 ? ::gai_strerror(rc) : "no address";
    return false;
  }
  char buf[NI_MAXHOST] = {};
  rc = ::getnameinfo(res->ai_addr, res->ai_addrlen, buf, sizeof(buf), nullptr, 0, NI_NUMERICHOST);
  ::freeaddrinfo(res);
  if (rc != 0) {
    why = ::gai_strerror(rc);
    return false;
  }
  ip = buf;
  return true;
}

bool readWholeFile(const std::string& path, std::string& out, std::string& reason) {
  out.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    reason = std::strerror(errno);
    return false;
  }
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
    } else if (n == 0) {
      break;
    } else if (errno != EINTR) {
      reason = std::strerror(errno);  // EISDIR for a directory
      ::close(fd);
      return false;
    }
  }
  ::close(fd);
  return true;
}

namespace {
std::atomic<bool> g_hermetic_load{false};
}  // namespace

void setHermeticLoadForTesting(bool on) noexcept {
  g_hermetic_load.store(on, std::memory_order_relaxed);
}

bool hermeticLoad() noexcept {
  return g_hermetic_load.load(std::memory_order_relaxed);
}

}  // namespace gw::config
