// The gateway's own answers (see reply.h).

#include "gateway/mcp/reply.h"

namespace gw::mcp {

std::string renderReplyBody(const LocalReply& reply) {
  if (!reply.json_rpc) {
    return reply.text;
  }
  RequestId id = reply.id;
  if (reply.omit_id) {
    id = RequestId::absent();
  } else if (id.kind == RequestId::Kind::kAbsent) {
    id = RequestId::null();
  }
  return errorBody(id, reply.code, reply.message, reply.data_json);
}

}  // namespace gw::mcp
