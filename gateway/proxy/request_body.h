#pragma once
// proxy/: the request body as an exchange holds it — how it is read (none, streamed to the
// upstream, or buffered whole), the buffer a buffered body fills, whether it is whole, and
// the share of limits.max_buffered_body_bytes it holds (process-wide, all connections).

#include <event2/buffer.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "gateway/event/owners.h"

namespace gw::proxy {

struct RequestBody {
  enum class Mode : uint8_t { kNone, kStream, kBuffer };

  Mode mode = Mode::kNone;
  bool whole = false;      // a buffered body was read whole into `buf`
  event::EvBufferPtr buf;  // Mode::kBuffer: the body (made on first use, reused)
  uint64_t reserved = 0;   // bytes of `held` (reserve) this body holds

  // Bytes buffered so far.
  size_t size() const noexcept { return buf ? evbuffer_get_length(buf.get()) : 0; }
  // The buffered bytes, made contiguous ("" when none).
  std::string_view view() noexcept {
    const size_t n = size();
    if (n == 0) {
      return {};
    }
    return {reinterpret_cast<const char*>(evbuffer_pullup(buf.get(), -1)), n};
  }
  // An empty buffer for a body about to be read (false: no memory).
  bool startBuffer() {
    mode = Mode::kBuffer;
    whole = false;
    if (!buf) {
      buf = event::makeBuffer();
    }
    if (!buf) {
      return false;
    }
    evbuffer_drain(buf.get(), evbuffer_get_length(buf.get()));
    return true;
  }
  // Takes n more bytes of `held` against `cap`. False: over the cap; nothing was taken.
  bool reserve(std::atomic<uint64_t>& held, uint64_t cap, uint64_t n) noexcept {
    const uint64_t before = held.fetch_add(n, std::memory_order_relaxed);
    if (before + n > cap) {
      held.fetch_sub(n, std::memory_order_relaxed);
      return false;
    }
    reserved += n;
    return true;
  }
  void release(std::atomic<uint64_t>& held) noexcept {
    if (reserved > 0) {
      held.fetch_sub(reserved, std::memory_order_relaxed);
      reserved = 0;
    }
  }
  // A new request: no body yet (the buffer's memory is kept for the next one).
  void reset() noexcept {
    mode = Mode::kNone;
    whole = false;
    if (buf) {
      evbuffer_drain(buf.get(), evbuffer_get_length(buf.get()));
    }
  }
};

}  // namespace gw::proxy
