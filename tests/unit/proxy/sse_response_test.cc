// proxy::SseResponse: an SSE answer read until the event that carries the JSON-RPC response
// (the federation fan-out and a plain route's filtered list both stop there), whatever the
// bytes' split, with notifications before it ignored and anything after it not waited for.

#include <catch.hpp>

#include <string>

#include "gateway/event/owners.h"
#include "gateway/proxy/sse_response.h"

using gw::proxy::SseResponse;

namespace {

constexpr char kNote[] = R"({"jsonrpc":"2.0","method":"notifications/progress","params":{}})";
constexpr char kResp[] = R"({"jsonrpc":"2.0","id":7,"result":{"tools":[]}})";

// Feeds `text` in pieces of `step` bytes, each from the front of a buffer (not drained by
// feed, as the callers drain themselves).
void feedIn(SseResponse& r, const std::string& text, size_t step) {
  gw::event::EvBufferPtr b = gw::event::makeBuffer();
  for (size_t at = 0; at < text.size(); at += step) {
    const size_t n = std::min(step, text.size() - at);
    evbuffer_add(b.get(), text.data() + at, n);
    r.feed(b.get(), n);
    evbuffer_drain(b.get(), n);
  }
}

}  // namespace

TEST_CASE("sse response: done at the response event, notifications before it skipped",
          "[proxy][federation]") {
  const size_t step = GENERATE(1, 3, 17, 4096);
  SseResponse r;
  r.begin(1024);
  feedIn(r, std::string("event: message\ndata: ") + kNote + "\n\n", step);
  CHECK_FALSE(r.done());
  feedIn(r, std::string("event: message\ndata: ") + kResp + "\n\n: keepalive\n\nevent: m", step);
  REQUIRE(r.done());
  CHECK(r.response() == kResp);
  feedIn(r, std::string("essage\ndata: ") + kResp + "x\n\n", step);  // after it: no change
  CHECK(r.response() == kResp);
}

TEST_CASE("sse response: a half event or a too large one is not the response", "[proxy]") {
  SseResponse r;
  r.begin(32);
  feedIn(r, std::string("data: ") + kResp + "\n\n", 5);  // longer than 32 bytes: skipped
  CHECK_FALSE(r.done());
  r.begin(1024);
  feedIn(r, std::string("data: ") + kResp + "\n", 5);  // no blank line yet
  CHECK_FALSE(r.done());
  r.reset();
  CHECK_FALSE(r.active());
}
