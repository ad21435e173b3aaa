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

// A resolver on `base` with the system's name servers; without a resolv.conf, one that still
// knows /etc/hosts and IP literals. Null only when none can be made at all.
inline DnsBasePtr makeResolver(event_base* base) {
  DnsBasePtr dns(evdns_base_new(base, EVDNS_BASE_INITIALIZE_NAMESERVERS));
  if (dns == nullptr) {
    dns.reset(evdns_base_new(base, 0));
    if (dns != nullptr) {
      evdns_base_load_hosts(dns.get(), nullptr);
    }
  }
  return dns;
}

}  // namespace gw::event
