#pragma once
// A fixed-capacity byte arena for decoded header values: reset per request, never
// reallocates (so views into it stay valid for the request). The storage is allocated on
// first use, so an idle connection, or one that never sees a sentinel, costs nothing.

#include <cstddef>
#include <memory>
#include <new>
#include <string_view>

namespace gw::mcp {

class ValueArena {
 public:
  explicit ValueArena(size_t capacity) : cap_(capacity) {}
  // n bytes of storage, or nullptr when the arena is full (or memory is short).
  char* allocate(size_t n) noexcept {
    if (n > cap_ - used_) {
      return nullptr;
    }
    if (!buf_) {
      buf_.reset(new (std::nothrow) char[cap_]);
      if (!buf_) {
        return nullptr;
      }
    }
    char* p = buf_.get() + used_;
    used_ += n;
    return p;
  }
  void reset() noexcept { used_ = 0; }
  size_t used() const noexcept { return used_; }

 private:
  std::unique_ptr<char[]> buf_;
  size_t cap_;
  size_t used_ = 0;
};

}  // namespace gw::mcp
