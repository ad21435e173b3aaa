// The fan-out's era bridge (see fanout.h, Slot): a 2025-era upstream's part asked in the
// worker's session with it (legacy_sessions.h).

#include "gateway/core/ascii.h"
#include "gateway/mcp/bridge.h"
#include "gateway/mcp/jsonrpc.h"
#include "gateway/proxy/fanout.h"
#include "gateway/proxy/proxy_context.h"

namespace gw::proxy {

bool FanOut::bridgeSlot(Slot& slot) {
  const settings::Upstream& up = s_->upstreams[route_->upstream_indexes[slot.index]];
  if (up.era == settings::UpstreamEra::kModern) {
    return true;
  }
  LegacySessions& ls = w_->legacySessions();
  const LegacySessions::Era era = ls.era(up);
  if (era == LegacySessions::Era::kModern) {
    slot.bridge = Slot::Bridge::kOff;
    return true;
  }
  if (era == LegacySessions::Era::kUnknown && slot.bridge == Slot::Bridge::kOff) {
    slot.bridge = Slot::Bridge::kTrying;  // as it is: a modern server costs no probe
    return true;
  }
  if (slot.bridge != Slot::Bridge::kWaiting) {
    slot.bridge_endpoint = ls.pickEndpoint(up);
  }
  if (ls.wait(up, slot.bridge_endpoint, slot)) {
    slot.bridge = Slot::Bridge::kWaiting;  // bridgeReady takes it up
    return false;
  }
  if (ls.era(up) == LegacySessions::Era::kModern) {
    slot.bridge = Slot::Bridge::kOff;  // found modern: as it is
    return true;
  }
  const LegacySessions::Session* session = ls.session(up, slot.bridge_endpoint);
  if (session == nullptr) {
    slot.bridge = Slot::Bridge::kOff;
    finishSlot(slot, false, "connect_failed", "the 2025-era upstream could not be initialized");
    return false;
  }
  slot.bridge = Slot::Bridge::kOn;
  slot.bridge_version = session->init.version;
  slot.bridge_session = session->id;
  slot.bridge_generation = session->generation;
  if (kind_ == federation::ListKind::kDiscover && mode_ == Mode::kList) {
    // No server/discover in 2025: the page is made from the session's initialize result.
    // Finished on the next turn (afterFlush), never inside start().
    slot.resp = mcp::bridge::discoverAnswer(session->init, s_->mcp.protocol_versions,
                                            mcp::extractId(base_body_));
    slot.finish_pending = true;
    scheduleFlush();
    return false;
  }
  slot.fields.clear();
  for (const http::Field& f : fields_.fields()) {
    if (core::iequals(f.name, "mcp-protocol-version")) {
      slot.fields.push_back(http::Field{f.name, slot.bridge_version});
    } else {
      slot.fields.push_back(f);
    }
  }
  if (!slot.bridge_session.empty()) {
    slot.fields.push_back(http::Field{"Mcp-Session-Id", slot.bridge_session});
  }
  slot.head.fields = slot.fields;
  slot.head.pinned_endpoint = static_cast<int>(slot.bridge_endpoint);
  return true;
}

void FanOut::leaveBridge(Slot& slot) noexcept {
  if (slot.bridge == Slot::Bridge::kWaiting && w_ != nullptr) {
    w_->legacySessions().leave(slot);
  }
  slot.bridge = Slot::Bridge::kOff;
}

void FanOut::Slot::onBridgeReady(bool ok, const char* why) {
  owner->bridgeReady(*this, ok, why);
}

// The era or session a slot waited for is known (or could not be had).
void FanOut::bridgeReady(Slot& slot, bool ok, const char* why) {
  if (slot.bridge != Slot::Bridge::kWaiting || slot.done) {
    return;
  }
  if (!ok) {
    slot.bridge = Slot::Bridge::kOff;
    finishSlot(slot, false, "connect_failed", why);
    return;
  }
  startSlot(slot);
}

}  // namespace gw::proxy
