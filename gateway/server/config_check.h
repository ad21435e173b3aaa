#pragma once
// `mcp-gateway check`: what it says about a configuration that loaded. Errors are the loader's
// business (a file with any is refused before this runs); this adds the warnings — things that
// load but are probably mistakes — and never changes the exit status:
//  - the loader's own (settings::Settings::warnings: an upstream no route uses), and
//  - a federated route with an upstream endpoint that does not accept a TCP connection now. A
//    fan-out leaves such an upstream out of the merged lists with only a log line, so a typo in
//    an address would otherwise show as "some tools are missing".
// Blocking, and run by the command only: a running gateway never probes (its upstreams may
// come up after it does); it logs the loader's warnings (server.cc).

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "gateway/settings/settings.h"

namespace gw::server {

// One endpoint of one upstream of one federated route that did not accept a connection.
struct UnreachableEndpoint {
  std::string route;
  std::string upstream;
  std::string endpoint;  // as written in the file
  std::string error;     // strerror's text ("Connection refused"), or "no answer within N ms"
};

// Starts a TCP connect to every endpoint of every upstream of every federated route at once
// (each address once, however many routes share it) and waits for them for at most `timeout`
// in all. One entry per (route, upstream, endpoint) that did not connect, in file order.
// Nothing is sent on a connection that succeeds; it is closed at once.
std::vector<UnreachableEndpoint> probeFederatedRoutes(const settings::Settings& s,
                                                      std::chrono::milliseconds timeout);

// Writes every warning about `s` (loaded from `file`, named as the command line gave it) to
// `out`, one `file:line:column: warning: message` line each (line and column 0 for a probe
// failure, which has no single place in the file), probing federated routes for at most
// `probe_timeout`. Returns how many it wrote.
size_t printCheckWarnings(const settings::Settings& s, const std::string& file,
                          std::chrono::milliseconds probe_timeout, std::FILE* out);

}  // namespace gw::server
