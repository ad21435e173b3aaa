// libFuzzer target: the legacy session id wrapping (gateway/mcp/session.h). Must never crash;
// checks that unwrap either fails with no views or hands out views inside the input that
// re-wrap to the very bytes received, that whatever wraps unwraps to the same parts, and that
// a wrapped id is only visible ASCII (MCP 2025-06-18 Session Management).

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/mcp/session.h"

namespace {

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

bool inside(std::string_view v, std::string_view in) {
  return v.data() >= in.data() && v.data() + v.size() <= in.data() + in.size();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> tokens = {
      gw::mcp::sessionToken("", "main", "127.0.0.1:9000"),
      gw::mcp::sessionToken("", "main", "127.0.0.1:9001")};

  // As a client's Mcp-Session-Id.
  gw::mcp::WrappedSession w = gw::mcp::unwrapSessionId(in);
  if (w.error == gw::mcp::SessionError::kNone) {
    check(inside(w.token, in) && inside(w.server_id, in));
    std::string again;
    check(gw::mcp::wrapSessionId(w.token, w.server_id, again));
    check(again == in);
    int index = gw::mcp::findSessionEndpoint(tokens, w.token);
    check(index < 0 || tokens[static_cast<size_t>(index)] == w.token);
  } else {
    check(w.token.empty() && w.server_id.empty());
  }

  // As a server's Mcp-Session-Id.
  std::string wrapped;
  if (gw::mcp::wrapSessionId(tokens[1], in, wrapped)) {
    check(wrapped.size() <= gw::mcp::kMaxWrappedSessionId);
    for (char c : wrapped) {
      check(static_cast<unsigned char>(c) >= 0x21 && static_cast<unsigned char>(c) <= 0x7E);
    }
    gw::mcp::WrappedSession back = gw::mcp::unwrapSessionId(wrapped);
    check(back.error == gw::mcp::SessionError::kNone);
    check(back.server_id == in);
    check(gw::mcp::findSessionEndpoint(tokens, back.token) == 1);
  } else {
    check(!gw::mcp::validServerSessionId(in) && wrapped.empty());
  }
  return 0;
}
