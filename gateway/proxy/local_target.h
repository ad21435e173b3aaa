#pragma once
// proxy/: what answers a request with the gateway's own reply, chosen when a stage decided
// the answer (401, 403, 404, 405, 413, 415, 429, 503, resource metadata, a refused head…)
// instead of a forwarding or federated target. It decides what the reply needs of the
// request — the body left unread (skipped, its id echoed when it is all there), or read
// whole (its id echoed) — and hands the reply (RequestContext::reply) to the exchange's one
// response start for local replies (Exchange::sendLocalReply).
//
// Stateless: made on the spot from its Exchange (Exchange::local()), which names it a
// friend; it reads the request's head, body and context.

#include "gateway/core/outcome.h"

namespace gw::proxy {

class Exchange;

class LocalTarget {
 public:
  explicit LocalTarget(Exchange& x) noexcept : x_(x) {}

  // The reply a stage put in the request's context, answered without reading the body: the
  // body is skipped when it is all there (the id echoed from it), else the answer carries
  // "id": null and the connection closes after it (the bytes still to come cannot be told
  // from a next request). A body already read whole gives its id.
  void answer();
  // An error the exchange or its client side decided (413, 503, 408, a refused head, 417):
  // whatever waits is stopped, the upstream request released, and the reply sent as it
  // stands (nothing of the body is read for it).
  void error(int status, int code, const char* message, core::Outcome why,
             int retry_after_s = 0);  // Retry-After seconds (0: none)

 private:
  Exchange& x_;
};

}  // namespace gw::proxy
