// The warnings of `mcp-gateway check` (see config_check.h).

#include "gateway/server/config_check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <utility>

#include "gateway/core/clock.h"

namespace gw::server {

namespace {

// One address being tried: its socket until the attempt ends, then the outcome.
struct Attempt {
  int fd = -1;
  bool done = false;
  std::string error;  // empty once done: it connected
};

// Closes every socket still open when the probe ends, however it ends.
struct Attempts {
  std::map<std::pair<std::string, uint16_t>, Attempt> by_address;
  ~Attempts() {
    for (auto& [address, a] : by_address) {
      if (a.fd >= 0) {
        ::close(a.fd);
      }
    }
  }
  void finish(Attempt& a, std::string error) {
    ::close(a.fd);
    a.fd = -1;
    a.done = true;
    a.error = std::move(error);
  }
};

// Starts a non-blocking connect to ip:port; `a` is done at once when it fails (or, on
// loopback, when it already connected).
void start(Attempts& all, Attempt& a, const std::string& ip, uint16_t port) {
  sockaddr_storage ss{};
  socklen_t len = 0;
  auto* v4 = reinterpret_cast<sockaddr_in*>(&ss);
  auto* v6 = reinterpret_cast<sockaddr_in6*>(&ss);
  if (::inet_pton(AF_INET, ip.c_str(), &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons(port);
    len = sizeof(sockaddr_in);
  } else if (::inet_pton(AF_INET6, ip.c_str(), &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons(port);
    len = sizeof(sockaddr_in6);
  } else {
    a.done = true;
    a.error = "not a numeric address: '" + ip + "'";
    return;
  }
  a.fd = ::socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (a.fd < 0) {
    a.done = true;
    a.error = std::string("socket: ") + std::strerror(errno);
    return;
  }
  if (::connect(a.fd, reinterpret_cast<sockaddr*>(&ss), len) == 0) {
    all.finish(a, "");
  } else if (errno != EINPROGRESS) {
    all.finish(a, std::strerror(errno));
  }
}

}  // namespace

std::vector<UnreachableEndpoint> probeFederatedRoutes(const settings::Settings& s,
                                                      std::chrono::milliseconds timeout) {
  Attempts all;
  // servers: every server's routes (each view holds the shared upstreams at the same indexes).
  std::vector<const settings::Route*> routes;
  for (const settings::Route& r : s.routes) {
    routes.push_back(&r);
  }
  for (const auto& view : s.servers) {
    for (const settings::Route& r : view->routes) {
      routes.push_back(&r);
    }
  }
  for (const settings::Route* route : routes) {
    const settings::Route& r = *route;
    for (size_t idx : r.upstream_indexes) {
      for (const config::Address& e : s.upstreams[idx].endpoints) {
        auto [it, fresh] = all.by_address.try_emplace({e.ip, e.port});
        if (fresh) {
          start(all, it->second, e.ip, e.port);
        }
      }
    }
  }
  const auto deadline = core::steadyNow() + timeout;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<Attempt*> pending;
    for (auto& [address, a] : all.by_address) {
      if (!a.done) {
        fds.push_back(pollfd{a.fd, POLLOUT, 0});
        pending.push_back(&a);
      }
    }
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - core::steadyNow());
    if (pending.empty()) {
      break;
    }
    if (left.count() <= 0) {
      for (Attempt* a : pending) {
        all.finish(*a, "no answer within " + std::to_string(timeout.count()) + " ms");
      }
      break;
    }
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(left.count()));
    if (n < 0 && errno != EINTR) {
      const std::string why = std::string("poll: ") + std::strerror(errno);
      for (Attempt* a : pending) {
        all.finish(*a, why);
      }
      break;
    }
    for (size_t i = 0; n > 0 && i < fds.size(); ++i) {
      if (fds[i].revents == 0) {
        continue;
      }
      int so_error = 0;
      socklen_t len = sizeof(so_error);
      if (::getsockopt(fds[i].fd, SOL_SOCKET, SO_ERROR, &so_error, &len) != 0) {
        so_error = errno;
      }
      all.finish(*pending[i], so_error == 0 ? "" : std::strerror(so_error));
    }
  }
  std::vector<UnreachableEndpoint> out;
  for (const settings::Route* route : routes) {
    const settings::Route& r = *route;
    for (size_t idx : r.upstream_indexes) {
      const settings::Upstream& u = s.upstreams[idx];
      for (const config::Address& e : u.endpoints) {
        const Attempt& a = all.by_address.at({e.ip, e.port});
        if (!a.error.empty()) {
          out.push_back(UnreachableEndpoint{r.name, u.name, e.text, a.error});
        }
      }
    }
  }
  return out;
}

size_t printCheckWarnings(const settings::Settings& s, const std::string& file,
                          std::chrono::milliseconds probe_timeout, std::FILE* out) {
  size_t n = 0;
  auto print = [&](settings::Diagnostic d) {
    d.message = "warning: " + d.message;
    std::fprintf(out, "%s\n", d.str().c_str());
    ++n;
  };
  for (const settings::Diagnostic& d : s.warnings) {
    print(d);
  }
  for (const UnreachableEndpoint& u : probeFederatedRoutes(s, probe_timeout)) {
    print(settings::Diagnostic{
        file, 0, 0,
        "federated route '" + u.route + "': upstream '" + u.upstream + "' endpoint " + u.endpoint +
            " cannot be reached now (" + u.error +
            "); until it can, its tools, prompts and resources are missing from the route's "
            "lists"});
  }
  return n;
}

}  // namespace gw::server
