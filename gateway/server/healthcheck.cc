// /healthz probe for `mcp-gateway healthcheck` (see healthcheck.h).

#include "gateway/server/healthcheck.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string_view>

#include "gateway/core/clock.h"

namespace gw::server {

namespace {

using Clock = std::chrono::steady_clock;

// Waits for `events` on fd until `deadline`; false on timeout or error.
bool waitFd(int fd, short events, Clock::time_point deadline) {
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - core::steadyNow());
    if (left.count() <= 0) {
      return false;
    }
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, static_cast<int>(left.count()));
    if (n > 0) {
      return true;
    }
    if (n < 0 && errno != EINTR) {
      return false;
    }
  }
}

bool fail(std::string& error, std::string what) {
  error = std::move(what);
  return false;
}

}  // namespace

bool probeHealth(uint16_t port, std::chrono::milliseconds timeout, std::string& error) {
  Clock::time_point deadline = core::steadyNow() + timeout;
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    return fail(error, std::string("socket: ") + std::strerror(errno));
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0 && errno != EINPROGRESS) {
    return fail(error, std::string("connect: ") + std::strerror(errno));
  }
  if (!waitFd(fd, POLLOUT, deadline)) {
    return fail(error, "connect: timed out");
  }
  int so_error = 0;
  socklen_t len = sizeof(so_error);
  ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &so_error, &len);
  if (so_error != 0) {
    return fail(error, std::string("connect: ") + std::strerror(so_error));
  }
  static constexpr std::string_view kRequest =
      "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (::send(fd, kRequest.data(), kRequest.size(), MSG_NOSIGNAL) !=
      static_cast<ssize_t>(kRequest.size())) {
    return fail(error, std::string("send: ") + std::strerror(errno));
  }
  // The status line is all that matters: "HTTP/1.x 200 ".
  char buf[64];
  size_t have = 0;
  while (have < 13) {
    if (!waitFd(fd, POLLIN, deadline)) {
      return fail(error, "no answer in time");
    }
    ssize_t n = ::recv(fd, buf + have, sizeof(buf) - have, 0);
    if (n == 0) {
      break;
    }
    if (n < 0) {
      if (errno == EAGAIN || errno == EINTR) {
        continue;
      }
      return fail(error, std::string("recv: ") + std::strerror(errno));
    }
    have += static_cast<size_t>(n);
  }
  std::string_view line(buf, have);
  line = line.substr(0, line.find('\r'));
  if (line.size() < 12 || !line.starts_with("HTTP/1.")) {
    return fail(error, "not an HTTP answer");
  }
  std::string_view status = line.substr(9, 3);
  if (status != "200") {
    return fail(error, "status " + std::string(status));
  }
  return true;
}

}  // namespace gw::server
