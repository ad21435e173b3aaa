#pragma once
// Integration-test harness: drives the real mcp-gateway binary (GW_BINARY) on loopback ports
// chosen at run time, in front of a scriptable raw upstream, with a blocking raw client.
// Plain POSIX sockets and threads; every blocking operation is bounded by a timeout.
//
// Stand-in mode: with GW_ITEST_STANDIN=nginx in the environment, `Gateway` starts nginx with an
// equivalent configuration instead of the gateway. That only checks the tests' own plumbing;
// tests of gateway-specific behaviour are expected to fail there.

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

namespace gw::itest {

using Clock = std::chrono::steady_clock;
using Ms = std::chrono::milliseconds;

// A loopback port where nothing listens, for as long as this object lives: a socket bound to
// 127.0.0.1:0 without SO_REUSEADDR and never listening holds it. A connect to it is refused
// (RST), and no other socket can take the port meanwhile: the kernel hands it to no bind(0) and
// no outgoing connect, and an explicit bind to it fails. (A port read from a socket that was then
// closed could be taken by another test under `ctest -j` before this one used it.)
class ClosedPort {
 public:
  ClosedPort();  // throws std::runtime_error when no socket can be bound
  ~ClosedPort();
  ClosedPort(const ClosedPort&) = delete;
  ClosedPort& operator=(const ClosedPort&) = delete;
  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }

 private:
  int fd_ = -1;
  uint16_t port_ = 0;
};

// How one try of startOnFreePort's `start` ended.
enum class PortStart {
  kStarted,    // the server listens on the port (its own output says so)
  kPortTaken,  // it could not bind the port (EADDRINUSE): taken between the pick and the bind
  kFailed,     // anything else
};
// For servers that can neither bind port 0 and report the port they got nor be given a listening
// socket (redis-server, nginx; everything else here binds port 0): picks a port free on
// 127.0.0.1 right now and calls start(port). Another process may take that port before the
// server binds it (more so under `ctest -j`); then the server fails to bind, says so, and a fresh
// port is tried, at most `attempts` times in all. `start` must stop a server that did not start,
// and must tell kStarted from its own server's output, never by connecting (that could reach
// whoever took the port). The port started on, or 0 when no try succeeded.
uint16_t startOnFreePort(const std::function<PortStart(uint16_t)>& start, int attempts = 5);

// Resident set size of a live process in KiB (VmRSS of /proc/<pid>/status); -1 if unknown.
long rssKb(pid_t pid);
std::string readFile(const std::string& path);
bool writeFile(const std::string& path, std::string_view text);
// Lower-case hex SHA-256 of s (API keys are configured by their digest).
std::string sha256Hex(std::string_view s);
// Test certificates, made at test time with the openssl CLI (no key is ever committed): P-256
// keys, one day of validity. Files <name>.pem and <name>.key in `dir`; throws when openssl
// fails.
struct TestCert {
  std::string cert;  // path of the PEM certificate
  std::string key;   // path of the PEM private key
};
// A self-signed CA whose subject CN is `cn`.
TestCert makeTestCa(const std::string& dir, const std::string& name, const std::string& cn);
// A leaf for CN `cn` with subjectAltName `san` (e.g. "DNS:localhost,IP:127.0.0.1"; "" for
// none), signed by `ca`.
TestCert makeTestCert(const std::string& dir, const std::string& name, const TestCert& ca,
                      const std::string& cn, const std::string& san);

// RFC 4648 §5 base64url, no padding.
std::string base64Url(std::string_view in);
// A compact JWS, HS256 with `secret`, header {"alg":"HS256","kid":kid,"typ":"JWT"}.
std::string hs256Token(const std::string& secret, const std::string& kid,
                       const std::string& claims_json);
// The endpoint token a gateway puts in front of a legacy Mcp-Session-Id it hands out
// (`<token>.<server id>`), computed here independently of the gateway (same derivation as
// gateway/mcp/session.h): base64url(HMAC-SHA-256(key, "mcp-session/v1" NUL upstream NUL
// endpoint as written))[0..16), key = the upstream's session_secret or a built-in one.
std::string gatewaySessionToken(const std::string& upstream, const std::string& endpoint,
                                const std::string& secret = "");
// Sends all of `bytes` on fd (blocking or not) by the deadline; `stop` (may be null) ends it
// early. False on error, stop or deadline.
bool sendAll(int fd, std::string_view bytes, Clock::time_point deadline,
             const std::atomic<bool>* stop = nullptr);
// Replaces every `${KEY}` in text by vars[KEY]; unknown keys are left as they are.
std::string expand(std::string text, const std::map<std::string, std::string>& vars);
// Milliseconds from a to b (negative when b is earlier).
long long msBetween(Clock::time_point a, Clock::time_point b);

// Polls `done` every 5 ms until it holds or `timeout` passes.
template <class Pred>
bool waitFor(Pred done, Ms timeout) {
  auto deadline = Clock::now() + timeout;
  while (Clock::now() < deadline) {
    if (done()) {
      return true;
    }
    std::this_thread::sleep_for(Ms(5));
  }
  return done();
}
// Whether 127.0.0.1:port accepts a TCP connection right now.
bool canConnect(uint16_t port);
// TCP connections on this host to 127.0.0.1:port whose local end is still open: ESTABLISHED or
// CLOSE_WAIT in /proc/net/tcp. Once a server on that port stopped, 0 says every client of it
// (the gateway's pooled connections, say) has seen the close and closed its end.
size_t openConnectionsTo(uint16_t port);

// A private directory made with mkdtemp, removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(std::string_view name) const { return path_ + "/" + std::string(name); }

 private:
  std::string path_;
};

// A child process started with posix_spawn; stdout and stderr go to files in `dir`
// (<name>.out, <name>.err). Killed (SIGKILL) in the destructor if still running.
class Process {
 public:
  // argv[0] is the executable path (searched in PATH when it has no '/'); extra_env entries
  // ("K=V") are added to the current environment.
  Process(std::vector<std::string> argv, const std::string& dir, std::string name,
          std::vector<std::string> extra_env = {});
  ~Process();
  Process(const Process&) = delete;
  Process& operator=(const Process&) = delete;

  pid_t pid() const { return pid_; }
  std::string stdoutText() const { return readFile(out_path_); }
  std::string stderrText() const { return readFile(err_path_); }
  // Waits until stdout or stderr (as selected) contains `needle` (a plain substring).
  bool waitForOutput(std::string_view needle, Ms timeout, bool in_stdout = true,
                     bool in_stderr = true) const;
  // Same as waitForOutput on both streams; kept for the brief's name.
  bool waitForLine(std::string_view needle, Ms timeout) const {
    return waitForOutput(needle, timeout);
  }
  bool running();
  // Waits up to `timeout` for the process to exit; its exit code, or 128+signal, or nullopt
  // while still running.
  std::optional<int> wait(Ms timeout);
  // The exit code once exited (see wait), nullopt while running.
  std::optional<int> exitCode() { return wait(Ms(0)); }
  // SIGTERM, wait up to 3 s, then SIGKILL. Returns the exit status as wait() does.
  int terminate();

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
  std::string out_path_;
  std::string err_path_;
};

// The port a fixture server (tests/fixtures/*.mjs) reports with its `LISTENING <port>` line
// on stdout; throws when it exits or says nothing within 15 s.
uint16_t fixturePort(Process& process, const std::string& what = "mcp-server.mjs");

// How many times `needle` occurs in `text` (not overlapping).
size_t countOf(std::string_view text, std::string_view needle);

// server-everything (npm, 2025-era only) in Streamable HTTP mode (path /mcp), bound to
// 127.0.0.1 by the force-loopback preload, with an empty environment (its get-env tool prints
// the environment, and a test must not leak the runner's). PORT=0: the kernel picks the port
// and the preload (FORCE_LOOPBACK_REPORT=1) says which. Returns the port; throws, with the
// process stopped, when it did not listen within 15 s.
uint16_t startEverythingServer(std::unique_ptr<Process>& process, const std::string& dir,
                               const std::string& name);

// What the tests ask of the proxy under test; rendered as gateway YAML (DESIGN.md §5) or, in
// stand-in mode, as an nginx config. Durations are strings as a user writes them ("300ms").
struct GatewayConfig {
  std::vector<std::string> upstream_endpoints;  // "127.0.0.1:PORT"
  std::string upstream_path = "/mcp";
  int workers = 1;
  std::string max_body_bytes = "4MiB";
  std::string header_timeout = "10s";
  std::string keepalive_timeout = "60s";
  std::string sse_keepalive = "15s";
  std::string connect_timeout = "2s";
  std::string response_timeout = "10s";
  std::string stream_idle_timeout = "5m";
  std::string max_duration = "30m";
  std::string extra_yaml;  // appended at top level (gateway only)
};

// Renders cfg as gateway YAML; ${PORT} and ${ACCESS_LOG} remain placeholders.
std::string gatewayYaml(const GatewayConfig& cfg);

// The proxy under test: writes its config into a temp dir with ${PORT} as 0, starts
// `GW_BINARY run -c FILE --ports-file F` and reads the ports it bound from F (≤ 5 s); in
// stand-in mode starts nginx through startOnFreePort and waits until it bound its port. A config
// may name `admin: 127.0.0.1:0` too: adminPort() is the port the gateway chose.
// Throws std::runtime_error with the child's stderr when it does not come up. Stops it on
// destruction.
class Gateway {
 public:
  explicit Gateway(const GatewayConfig& cfg);
  // Raw YAML; ${PORT} and ${ACCESS_LOG} are filled in, then `vars` (a `${NAME}` not in them
  // is left for the gateway: upstreams[].headers expand it from the environment). `env`
  // entries ("K=V") are added to the gateway's environment.
  explicit Gateway(std::string yaml_template, const std::map<std::string, std::string>& vars = {},
                   std::vector<std::string> env = {});
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  uint16_t port() const { return port_; }
  // The admin port from the ports file (0 when the config has no admin listener).
  uint16_t adminPort() const { return admin_port_; }
  // The port of listener `i` (`listeners:`; 0 when the ports file names none).
  uint16_t listenerPort(size_t i) const {
    return i < listener_ports_.size() ? listener_ports_[i] : 0;
  }
  pid_t pid() const { return process_->pid(); }
  Process& process() { return *process_; }
  const std::string& accessLogPath() const { return access_log_; }
  const std::string& configText() const { return config_text_; }
  static bool standIn();  // GW_ITEST_STANDIN=nginx
  // The config file the proxy was started with (rewrite it, then SIGHUP, to reload).
  std::string configPath() const { return dir_.file("gateway.yaml"); }

 private:
  void start(const std::vector<std::string>& argv, std::vector<std::string> env = {});
  void startNginx(const GatewayConfig& cfg);
  // Reads the ports file into port_ and admin_port_; whether it named the listen port.
  bool readPorts();

  TempDir dir_;
  uint16_t port_ = 0;
  uint16_t admin_port_ = 0;
  std::vector<uint16_t> listener_ports_;
  std::string access_log_;
  std::string config_text_;
  std::unique_ptr<Process> process_;
};

// One request as the raw upstream read it: the head (request line through the blank line) and
// the body bytes exactly as they arrived (still chunk-framed if the request was chunked).
struct RecordedRequest {
  std::string head;
  std::string body;
  Clock::time_point at;  // when the head was complete
  // Field values of `name` (case-insensitive), in order.
  std::vector<std::string> headerValues(std::string_view name) const;
  std::optional<std::string> header(std::string_view name) const;
  bool hasHeader(std::string_view name) const { return !headerValues(name).empty(); }
  std::string requestLine() const;
};

class RawUpstream;

// The upstream's side of one accepted connection, handed to the script. Every call returns
// false once the peer is gone, the operation timed out, or the upstream is stopping.
class UpstreamConn {
 public:
  // Reads one request (head + Content-Length body or chunked body) and records it.
  std::optional<RecordedRequest> readRequest(Ms timeout = Ms(5000));
  bool send(std::string_view bytes, Ms timeout = Ms(10000));
  void sleep(Ms ms);
  void close();  // FIN
  void reset();  // RST: SO_LINGER 0 then close
  void stall();  // hold the connection, never answer, until the upstream stops or peer closes
  // Waits for the peer to close (EOF or error on read); records and returns when it did.
  std::optional<Clock::time_point> waitPeerClose(Ms timeout);
  // When the last send() completed.
  Clock::time_point lastSendAt() const { return last_send_; }
  int index() const { return index_; }
  bool stopping() const;
  // Records Clock::now() under `name` on the owning RawUpstream (see RawUpstream::markAt).
  void mark(const std::string& name);

 private:
  friend class RawUpstream;
  UpstreamConn(RawUpstream* owner, int fd, int index) : owner_(owner), fd_(fd), index_(index) {}
  bool fill(Clock::time_point deadline);  // one recv into buf_; false on EOF/error/timeout

  RawUpstream* owner_;
  int fd_;
  int index_;
  std::string buf_;  // bytes read but not yet consumed
  Clock::time_point last_send_{};
};

using UpstreamScript = std::function<void(UpstreamConn&)>;

// A scriptable TCP server on 127.0.0.1:<ephemeral>. Each accepted connection runs the script
// in its own thread. Stops (closes the listener, shuts the connections down) and joins in the
// destructor.
class RawUpstream {
 public:
  explicit RawUpstream(UpstreamScript script);
  ~RawUpstream();
  RawUpstream(const RawUpstream&) = delete;
  RawUpstream& operator=(const RawUpstream&) = delete;

  uint16_t port() const { return port_; }
  std::string address() const { return "127.0.0.1:" + std::to_string(port_); }
  int acceptCount() const { return accepts_.load(); }
  std::vector<RecordedRequest> requests() const;
  size_t requestCount() const;
  bool waitForRequests(size_t n, Ms timeout) const;
  bool waitForAccepts(int n, Ms timeout) const;
  // Times at which peers were seen closing (waitPeerClose), in order.
  std::vector<Clock::time_point> peerCloses() const;
  // Stores a time point under a name (scripts use this to tell tests when they did something).
  void mark(const std::string& name);
  std::optional<Clock::time_point> markAt(const std::string& name) const;
  bool waitForMark(const std::string& name, Ms timeout) const;
  void stop();

  // Ready-made scripts.
  // Answers every request on the connection (keep-alive) with status and body.
  static UpstreamScript respond(int status, std::string body,
                                std::string content_type = "application/json",
                                std::string extra_headers = "");
  // Reads the request, then sends `bytes` verbatim and closes.
  static UpstreamScript respondRaw(std::string bytes);

 private:
  friend class UpstreamConn;
  void acceptLoop();
  void record(RecordedRequest req);

  UpstreamScript script_;
  int listen_fd_ = -1;
  uint16_t port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> accepts_{0};
  std::thread acceptor_;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::vector<std::thread> workers_;
  std::vector<int> conn_fds_;
  std::vector<RecordedRequest> requests_;
  std::vector<Clock::time_point> peer_closes_;
  std::map<std::string, Clock::time_point> marks_;
};

// A parsed HTTP response (or the head of one being streamed).
struct Response {
  int status = 0;
  std::string head;  // status line through the blank line
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // de-chunked
  bool chunked = false;
  bool complete = false;  // body fully framed (CL reached, last chunk, or close)
  std::optional<std::string> header(std::string_view name) const;  // first, case-insensitive
  size_t headerCount(std::string_view name) const;
};

// A blocking client of 127.0.0.1:port. Responses are parsed from a buffer that keeps any
// extra bytes, so pipelined responses are read one after the other.
class Client {
 public:
  // rcvbuf > 0 sets SO_RCVBUF before connecting (small windows for backpressure tests).
  explicit Client(uint16_t port, Ms connect_timeout = Ms(2000), int rcvbuf = 0);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  bool connected() const { return fd_ >= 0; }
  bool send(std::string_view bytes, Ms timeout = Ms(5000));
  // A whole response: head, then body per Content-Length / chunked / until close.
  std::optional<Response> readResponse(Ms timeout = Ms(5000));
  // Only the head; the body is then read with readBodyUntil / readBodyToEnd.
  std::optional<Response> readHead(Ms timeout = Ms(5000));
  // Reads the current response's body until the de-chunked body contains needle (searching
  // from `from`); returns the time the bytes completing it arrived, nullopt on timeout/end.
  std::optional<Clock::time_point> readBodyUntil(std::string_view needle, Ms timeout,
                                                 size_t from = 0);
  // Reads the current response's body until it is complete (last chunk / CL / close).
  bool readBodyToEnd(Ms timeout);
  // Reads and throws away up to max_bytes of the current body (nothing is stored, neither in
  // body() nor received()); body bytes already decoded count as drained and are cleared.
  // Returns how many bytes were discarded before timeout/end.
  size_t drainBody(size_t max_bytes, Ms timeout);
  const std::string& body() const { return current_.body; }
  const Response& current() const { return current_; }
  // Raw bytes: reads until the raw stream (everything received) contains needle.
  std::optional<Clock::time_point> readUntil(std::string_view needle, Ms timeout);
  const std::string& received() const { return raw_; }
  // Waits for the server to close (EOF or reset); true if it did within timeout.
  bool waitClosed(Ms timeout);
  bool peerClosed() const { return eof_; }
  void close();
  int fd() const { return fd_; }

 private:
  bool recvSome(Clock::time_point deadline);  // appends to raw_ and pending_
  bool parseHead();                           // from pending_ into current_
  void decodeBody();                          // moves pending_ into current_.body
  void keep(size_t n);  // first n bytes of pending_ → body (or discarded), erased

  int fd_ = -1;
  bool eof_ = false;
  std::string raw_;      // every byte ever received
  std::string pending_;  // received, not yet consumed by the parser
  Response current_;
  bool in_body_ = false;
  long long remaining_ = -1;  // CL body bytes left; -1 = until close
  long long chunk_left_ = 0;  // bytes left in current chunk (chunked)
  bool chunk_need_crlf_ = false;
  bool chunk_trailers_ = false;
  bool discard_ = false;  // drainBody in progress: count body bytes, keep none
  size_t discarded_ = 0;
};

// Sends one request on a fresh connection and returns the whole response; REQUIREs that the
// connection, the send and a complete response all happen.
Response fetch(uint16_t port, const std::string& request, Ms timeout = Ms(8000));
// GET `target` from an admin listener (no token), Connection: close.
Response adminGet(uint16_t port, const std::string& target);
// The value on the Prometheus exposition line of `series` ("name{labels}"), or -1.
double sample(const std::string& text, const std::string& series);

// The raw JSON token after `"key":` in a flat JSON text (a string keeps its quotes), for log
// lines whose exact spacing is not ours to fix; nullopt if the key is absent.
std::optional<std::string> jsonToken(std::string_view json, std::string_view key);
// The lines of a text file that are not empty.
std::vector<std::string> fileLines(const std::string& path);
// The first access-log line of `gw` containing `needle` (waits up to 3 s), or "" when none
// appears.
std::string waitLogLine(const Gateway& gw, std::string_view needle);

// The barrier behind "nothing was forwarded" checks, instead of a sleep: sends one request
// (default: a tools/call of `echo`) that the gateway on `port` forwards to `up` (a new client
// connection; `request` must be one the gateway's config lets through) and waits
// until `up` has recorded it. A request the gateway had decided to forward before is then
// already at `up`: the gateway contacts upstreams in the order it decides to, and one accepted
// before the marker's connection is counted first. True when the marker arrived (whatever
// the upstream then answered).
bool forwardMarker(uint16_t port, const RawUpstream& up, const std::string& request = "",
                   Ms timeout = Ms(5000));

// Request builders.
// A POST /mcp with MCP 2026-07-28 headers for tools/call of `tool`, the given extra header
// lines ("Name: value\r\n" each) and body. Content-Length is set unless extra has framing.
std::string mcpPost(std::string_view body, std::string_view extra_headers = "",
                    std::string_view tool = "echo", bool content_length = true);
// A 2026-07-28 subscriptions/listen POST (id "listen:0") asking for tools list changes only.
std::string toolsListenRequest();
// The JSON-RPC body matching mcpPost's headers.
std::string toolsCallBody(std::string_view tool = "echo", int id = 1);
// Chunked-encodes `data` as one chunk ("" gives the last chunk "0\r\n\r\n").
std::string chunk(std::string_view data);
// A 200 text/event-stream response head, chunked.
std::string sseHead(std::string_view extra_headers = "");

}  // namespace gw::itest
