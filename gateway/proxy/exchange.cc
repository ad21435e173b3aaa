#include "gateway/proxy/exchange.h"

#include <new>

namespace gw::proxy {

namespace {

// A buffer a large request grew past this is released when its exchange goes back to the
// pool (the next request grows it again if it needs to).
constexpr size_t kKeepCapacity = 16 * 1024;

void trim(std::string& s) {
  if (s.capacity() > kKeepCapacity) {
    std::string().swap(s);
  } else {
    s.clear();
  }
}

}  // namespace

ExchangePool::~ExchangePool() {
  clear();
}

Exchange* ExchangePool::take(event_base* base, Connection* conn, event_callback_fn keepalive_cb) {
  Exchange* x = nullptr;
  if (!free_.empty()) {
    x = free_.back();
    free_.pop_back();
  } else {
    x = new (std::nothrow) Exchange;
    if (x == nullptr) {
      return nullptr;
    }
    x->keepalive_timer.reset(evtimer_new(base, keepalive_cb, x));
    if (!x->keepalive_timer) {
      delete x;
      return nullptr;
    }
  }
  x->conn = conn;
  return x;
}

void ExchangePool::give(Exchange* x) noexcept {
  evtimer_del(x->keepalive_timer.get());
  x->conn = nullptr;
  x->framer.reset();
  x->up.release(false);
  x->up_open = false;
  x->redis_handle = 0;
  x->redis_owner = nullptr;
  x->ctx.reset();
  x->arena.reset();
  x->limits.clear();
  if (x->body) {
    evbuffer_drain(x->body.get(), evbuffer_get_length(x->body.get()));
  }
  x->session_server_id = {};
  trim(x->head_buf);
  trim(x->verify_buf);
  trim(x->capture);
  trim(x->ratelimit_lines);
  if (free_.size() >= kKeep) {
    delete x;
    return;
  }
  free_.push_back(x);
}

void ExchangePool::clear() noexcept {
  for (Exchange* x : free_) {
    delete x;
  }
  free_.clear();
}

}  // namespace gw::proxy
