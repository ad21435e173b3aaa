#pragma once
// config/: the value grammars gateway.yaml and policy files share (durations, sizes,
// addresses), the one place a host name in either file is resolved, the diagnostics both
// loaders report in, and the file reader they use. Pure text → value, except resolveHost
// and readWholeFile, which block: they are called while loading, never on the request path.
// settings/settings.h re-exports these names in gw::settings.

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>

namespace gw::config {

using Duration = std::chrono::milliseconds;

struct Address {
  std::string host;  // as written: IPv4 or IPv6 literal (no brackets), or a DNS host name
  uint16_t port = 0;
  std::string text;  // as written, for logs
  std::string ip;    // numeric form used to connect/bind; a name is resolved once at load
};

// One validation problem, pointing into the file that caused it.
struct Diagnostic {
  std::string file;
  int line = 0;    // 1-based; 0 when unknown
  int column = 0;  // 1-based; 0 when unknown
  std::string message;
  std::string str() const;  // "file:line:column: message"
};

// "250ms", "10s", "5m", "1h", "0" → Duration; false on anything else (no negative, no
// bare number but 0, no overflow).
bool parseDuration(std::string_view text, Duration& out) noexcept;
// "512", "8KiB", "4MiB", "1GiB", "10KB"(=10*1000) → bytes; false on anything else.
bool parseSize(std::string_view text, uint64_t& out) noexcept;
// "127.0.0.1:8080", "[::1]:8080", "mcp-server:3000" → Address; false on anything else. A
// host name is checked for syntax only (RFC 1123: dot-separated labels of letters, digits and
// '-', not starting or ending with '-', each 1-63 characters, 253 in all, not a numeric
// shorthand such as "127.1"). `ip` is set for IP literals and left empty for a name: the
// loaders resolve names (resolveHost) when they load the file.
bool parseAddress(std::string_view text, Address& out);

// The first address getaddrinfo gives for `host` (AF_UNSPEC, SOCK_STREAM), in numeric form.
// Blocks on the system resolver (/etc/hosts, then DNS). False with gai_strerror's text in
// `why` when it fails.
bool resolveHost(const std::string& host, std::string& ip, std::string& why);

// Reads the whole file at `path` into `out`. False when it cannot, with `reason` the
// system's words for why (strerror: "No such file or directory", "Permission denied", "Is a
// directory"), for messages such as "cannot read config file: No such file or directory".
bool readWholeFile(const std::string& path, std::string& out, std::string& reason);

// Test hook for the loader fuzz targets (tests/fuzz/config_fuzz.cc, policy_fuzz.cc): while
// on, settings::loadString and PolicySet::loadString resolve no host name (no getaddrinfo,
// so no DNS) and stat or read no file a document names (`policies`, `jwt.keys_file`,
// `admin_auth.token_file`); each such entry is an error saying so. Off by default; the
// gateway never turns it on.
void setHermeticLoadForTesting(bool on) noexcept;
bool hermeticLoad() noexcept;

}  // namespace gw::config
