#pragma once
// The effective configuration of a snapshot as JSON (admin /config): every setting with its
// default filled in, and a summary of the policy files. Secrets never appear: API keys and
// JWT/HMAC key material are shown as "<redacted>"; only their subjects and counts are.

#include <string>

#include "gateway/filters/snapshot.h"

namespace gw::filters {

std::string configJson(const Snapshot& snap);

}  // namespace gw::filters
