// Admin listener (see admin.h).

#include "gateway/admin/admin.h"

#include <event2/buffer.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include <cinttypes>
#include <cstring>
#include <string>

namespace gw::admin {

AdminServer::~AdminServer() {
  stop();
}

bool AdminServer::start(const settings::Address& addr, std::string& error) {
  base_.reset(event_base_new());
  http_ = evhttp_new(base_.get());
  std::string host = addr.host == "localhost" ? "127.0.0.1" : addr.host;
  if (evhttp_bind_socket(http_, host.c_str(), addr.port) != 0) {
    error = "cannot bind admin listener " + addr.text + ": " + std::strerror(errno);
    evhttp_free(http_);
    http_ = nullptr;
    base_.reset();
    return false;
  }
  evhttp_set_allowed_methods(http_, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
  evhttp_set_gencb(http_, &AdminServer::onRequest, this);
  thread_ = std::thread([this] { event_base_dispatch(base_.get()); });
  return true;
}

void AdminServer::stop() {
  if (!base_) {
    return;
  }
  event_base_loopbreak(base_.get());
  if (thread_.joinable()) {
    thread_.join();
  }
  if (http_) {
    evhttp_free(http_);
    http_ = nullptr;
  }
  base_.reset();
}

void AdminServer::onRequest(evhttp_request* req, void* arg) {
  auto* self = static_cast<AdminServer*>(arg);
  const char* uri = evhttp_request_get_uri(req);
  std::string path(uri ? uri : "/");
  path = path.substr(0, path.find('?'));
  event::EvBufferPtr buf = event::makeBuffer();
  evbuffer* out = buf.get();
  evkeyvalq* headers = evhttp_request_get_output_headers(req);
  int code = 200;
  const char* reason = "OK";
  bool draining = self->shared_.draining.load(std::memory_order_relaxed);
  if (path == "/healthz") {
    evbuffer_add_printf(out, "ok\n");
  } else if (path == "/readyz") {
    if (draining || !self->shared_.snapshot.load()) {
      code = 503;
      reason = "Service Unavailable";
      evbuffer_add_printf(out, "draining\n");
    } else {
      evbuffer_add_printf(out, "ready\n");
    }
  } else if (path == "/metrics") {
    evhttp_add_header(headers, "Content-Type", "text/plain; version=0.0.4");
    const proxy::Shared& s = self->shared_;
    evbuffer_add_printf(out,
                        "# TYPE mcp_gateway_connections gauge\n"
                        "mcp_gateway_connections %" PRId64
                        "\n"
                        "# TYPE mcp_gateway_streams gauge\n"
                        "mcp_gateway_streams %" PRId64
                        "\n"
                        "# TYPE mcp_gateway_requests_total counter\n"
                        "mcp_gateway_requests_total %" PRIu64 "\n",
                        s.connections.load(), s.streams.load(), s.requests.load());
  } else {
    code = 404;
    reason = "Not Found";
    evbuffer_add_printf(out, "not found\n");
  }
  evhttp_send_reply(req, code, reason, out);
}

}  // namespace gw::admin
