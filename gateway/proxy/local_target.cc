// The gateway's own replies (see local_target.h).

#include "gateway/proxy/local_target.h"

#include <string>

#include "gateway/filters/pipeline.h"
#include "gateway/mcp/id_scan.h"
#include "gateway/proxy/exchange.h"

namespace gw::proxy {

void LocalTarget::answer() {
  filters::RequestContext& ctx = x_.ctx_;
  if (x_.head.framing != http::BodyFraming::kNone) {
    if (x_.body.whole) {
      if (ctx.reply.id.kind == mcp::RequestId::Kind::kAbsent && x_.body.size() > 0) {
        ctx.reply.id = mcp::extractId(x_.body.view());
      }
    } else {
      const bool want_id = ctx.reply.echo_id && ctx.reply.id.kind == mcp::RequestId::Kind::kAbsent;
      std::string& copy = x_.verify_buf_;
      copy.clear();
      if (x_.stream_->skipBody(want_id ? &copy : nullptr) && want_id) {
        ctx.reply.id = mcp::extractId(copy);
      }
    }
  }
  x_.sendLocalReply();
}

void LocalTarget::error(int status, int code, const char* message, core::Outcome why,
                        int retry_after_s) {
  x_.stopStages();
  x_.releaseUpstream();
  filters::setReply(x_.ctx_, status, code, message, core::outcomeName(why).data(), false);
  if (retry_after_s > 0) {
    x_.ctx_.reply.addField("Retry-After", std::to_string(retry_after_s));
  }
  x_.sendLocalReply();
}

}  // namespace gw::proxy
