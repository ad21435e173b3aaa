// Hop-by-hop filtering for the canonical heads the proxy writes (see forwarding.h).

#include "gateway/http/forwarding.h"

#include "gateway/core/ascii.h"

namespace gw::http {

void ConnectionTokens::collect(const std::vector<HeaderField>& fields) noexcept {
  tokens_.clear();
  for (const HeaderField& f : fields) {
    if (!core::iequals(f.name, "connection")) {
      continue;
    }
    std::string_view v = f.value;
    while (!v.empty()) {
      const size_t comma = v.find(',');
      const std::string_view token = core::trimOws(v.substr(0, comma));
      if (!token.empty()) {
        // Bounded by the head limits (at most max_head_bytes / 2 tokens); the vector's
        // capacity is kept across requests.
        tokens_.push_back(token);
      }
      if (comma == std::string_view::npos) {
        break;
      }
      v.remove_prefix(comma + 1);
    }
  }
}

bool ConnectionTokens::contains(std::string_view name) const noexcept {
  for (std::string_view t : tokens_) {
    if (core::iequals(t, name)) {
      return true;
    }
  }
  return false;
}

bool isHopByHop(std::string_view name) noexcept {
  switch (name.size()) {
    case 2:
      return core::iequals(name, "te");
    case 7:
      return core::iequals(name, "trailer") || core::iequals(name, "upgrade");
    case 10:
      return core::iequals(name, "connection") || core::iequals(name, "keep-alive");
    case 16:
      return core::iequals(name, "proxy-connection");
    case 17:
      return core::iequals(name, "transfer-encoding");
    case 18:
      return core::iequals(name, "proxy-authenticate");
    case 19:
      return core::iequals(name, "proxy-authorization");
    default:
      return false;
  }
}

namespace {

// Lower-case names compared with `_` read as `-` in `name` (targets contain no `_`).
bool dashedEquals(std::string_view name, std::string_view lower) noexcept {
  if (name.size() != lower.size()) {
    return false;
  }
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i] == '_' ? '-' : core::toLowerAscii(name[i]);
    if (c != lower[i]) {
      return false;
    }
  }
  return true;
}

bool dashedStartsWith(std::string_view name, std::string_view lower) noexcept {
  return name.size() >= lower.size() && dashedEquals(name.substr(0, lower.size()), lower);
}

constexpr std::string_view kProtected[] = {
    "content-length", "transfer-encoding",
    "host",           "authorization",
    "cookie",         "expect",
    "content-type",   "content-encoding",
    "origin",         "mcp-protocol-version",
    "forwarded",      "x-real-ip",
};
constexpr std::string_view kProtectedPrefixes[] = {"mcp-", "x-forwarded-"};
constexpr std::string_view kHopByHop[] = {
    "connection", "keep-alive", "proxy-connection",   "te",
    "trailer",    "upgrade",    "proxy-authenticate", "proxy-authorization",
};

// `name` (either spelling) is a protected field.
bool protectedDashed(std::string_view name) noexcept {
  for (std::string_view p : kProtected) {
    if (dashedEquals(name, p)) {
      return true;
    }
  }
  for (std::string_view p : kProtectedPrefixes) {
    if (dashedStartsWith(name, p)) {
      return true;
    }
  }
  return false;
}

}  // namespace

bool isProtectedField(std::string_view name) noexcept {
  if (name.find('_') != std::string_view::npos) {
    return false;  // the real fields have no `_` (an alias is caught by isUnderscoreAlias)
  }
  return protectedDashed(name);
}

bool isUnderscoreAlias(std::string_view name) noexcept {
  if (name.find('_') == std::string_view::npos) {
    return false;
  }
  if (protectedDashed(name)) {
    return true;
  }
  for (std::string_view p : kHopByHop) {
    if (dashedEquals(name, p)) {
      return true;
    }
  }
  return false;
}

bool forwardRequestField(const HeaderField& f, const ConnectionTokens& conn) noexcept {
  if (isHopByHop(f.name) || core::iequals(f.name, "content-length") ||
      core::iequals(f.name, "expect")) {
    return false;
  }
  return !conn.contains(f.name);
}

bool forwardResponseField(const HeaderField& f, const ConnectionTokens& conn) noexcept {
  if (isHopByHop(f.name) || core::iequals(f.name, "content-length")) {
    return false;
  }
  return !conn.contains(f.name);
}

}  // namespace gw::http
