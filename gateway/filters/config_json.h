#pragma once
// The effective configuration of a snapshot as JSON (admin /config): every setting with its
// default filled in, and a summary of the policy files. Secrets never appear: API keys and
// JWT/HMAC key material are shown as "<redacted>"; only their subjects and counts are.

#include <cstdint>
#include <optional>
#include <string>

#include "gateway/filters/snapshot.h"

namespace gw::filters {

// What the process bound at start. A reload cannot change these; when the file asks for other
// values, /config shows the bound ones and lists the file's under "restart_pending".
struct Bound {
  std::string listen;
  uint32_t workers = 0;
  std::optional<std::string> admin;  // nullopt: no admin listener
  bool tls = false;                  // `listen` speaks HTTPS (fixed at start)
  // Every listener as bound: "address" or "address (tls)", in order.
  std::vector<std::string> listeners;
  // tracing as started: its otlp_endpoint, or "off" (the exporter is fixed at start).
  std::string tracing = "off";
};

// A listener as Bound::listeners and /config's restart_pending name it: "address" or
// "address (tls)".
std::string listenerText(const settings::Listener& l);
// Whether listeners other than the first were added, removed or changed (the first one's
// changes are `listen`'s and `tls`'s).
bool laterListenersDiffer(const std::vector<std::string>& bound,
                          const std::vector<std::string>& file);

// `bound`: the running process's listen/workers/admin/tls (null: the snapshot's, as for the
// `explain` command, which binds nothing).
std::string configJson(const Snapshot& snap, const Bound* bound = nullptr);

}  // namespace gw::filters
