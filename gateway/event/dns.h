#pragma once
// event/: the owner of an evdns_base (non-blocking name resolution), kept apart from
// owners.h so that only the code that resolves names includes <event2/dns.h>.

#include <event2/dns.h>

#include <memory>

namespace gw::event {

struct DnsBaseDeleter {
  // Pending requests fail (their callbacks run with an error) before the base goes.
  void operator()(evdns_base* d) const noexcept { evdns_base_free(d, 1); }
};

using DnsBasePtr = std::unique_ptr<evdns_base, DnsBaseDeleter>;

}  // namespace gw::event
