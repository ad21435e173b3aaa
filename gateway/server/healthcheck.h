#pragma once
// `mcp-gateway healthcheck`: asks a running gateway's /healthz on a loopback port, for a
// container HEALTHCHECK that needs no shell or curl in the image.

#include <chrono>
#include <cstdint>
#include <string>

namespace gw::server {

// GET /healthz on 127.0.0.1:port within `timeout`. True when the answer's status is 200;
// otherwise false with a one-line `error` ("connect: Connection refused", "status 503", ...).
bool probeHealth(uint16_t port, std::chrono::milliseconds timeout, std::string& error);

}  // namespace gw::server
