#pragma once
// mcp/: what the gateway answers itself — a JSON-RPC error (or a plain-text body) with its
// HTTP status and extra header fields. The pipeline's stages and the proxy fill one in; a
// downstream codec (downstream/stream.h) renders it. Pure data, no I/O.

#include <string>
#include <string_view>
#include <vector>

#include "gateway/http/serialize.h"
#include "gateway/mcp/jsonrpc.h"

namespace gw::mcp {

// When `json_rpc` is set the body is a JSON-RPC error built from code/message/data; the id is
// echoed from the body when `echo_id` is set and the body can be read (proxy/ reads it,
// bounded, only on this path).
struct LocalReply {
  int status = 0;
  bool json_rpc = true;
  int code = 0;
  std::string message;
  std::string data_json;                       // optional JSON value for error.data
  bool echo_id = false;                        // read the body to echo the request id
  bool omit_id = false;                        // no "id" member at all (403 Origin)
  RequestId id;                                // when already known (verify mode)
  std::string text;                            // plain-text body when !json_rpc
  const char* content_type = nullptr;          // when !json_rpc: instead of text/plain
  std::vector<http::OwnedField> extra_fields;  // Allow, Retry-After, WWW-Authenticate…
  const char* reason = "";  // short machine name for logs/metrics ("header_mismatch")

  void addField(std::string_view name, std::string_view value) {
    extra_fields.push_back(http::OwnedField{std::string(name), std::string(value)});
  }
};

// The final body of a LocalReply (id from `id`, or absent/null rules).
std::string renderReplyBody(const LocalReply& reply);

}  // namespace gw::mcp
