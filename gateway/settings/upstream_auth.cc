// settings/: upstreams[].auth — how the gateway authenticates to an upstream (forward,
// client_credentials, token_exchange, signed_identity). The client secret and the signing
// key are read here, at every load: a missing file, an empty secret or a key of the wrong
// kind is a load error, and a reload that brings one keeps the running snapshot.

#include <cctype>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include <openssl/sha.h>

#include "gateway/core/hex.h"
#include "gateway/settings/loader.h"
#include "gateway/tls/signing.h"

namespace gw::settings {

namespace fs = std::filesystem;

namespace {

constexpr std::string_view kAuthKeys[] = {
    "type",        "token_endpoint", "client_id", "client_secret_file",
    "client_auth", "audience",       "resource",  "scopes",
    "ca",          "timeout",        "issuer",    "key_file",
    "ttl"};
constexpr std::string_view kAuthTypes[] = {"forward", "client_credentials", "token_exchange",
                                           "signed_identity"};
constexpr std::string_view kClientAuths[] = {"basic", "post"};
// The keys each type takes besides `type`.
constexpr std::string_view kTokenKeys[] = {"token_endpoint", "client_id", "client_secret_file",
                                           "client_auth",    "audience",  "resource",
                                           "scopes",         "ca",        "timeout"};
constexpr std::string_view kSignedKeys[] = {"issuer", "key_file", "audience", "ttl"};

constexpr Duration kMaxTtl = std::chrono::minutes(10);
constexpr Duration kMaxTimeout = std::chrono::seconds(60);

bool takes(UpstreamAuthType t, std::string_view key) {
  auto in = [&](const auto& keys) {
    for (std::string_view k : keys) {
      if (k == key) {
        return true;
      }
    }
    return false;
  };
  switch (t) {
    case UpstreamAuthType::kForward:
      return false;
    case UpstreamAuthType::kClientCredentials:
    case UpstreamAuthType::kTokenExchange:
      return in(kTokenKeys);
    case UpstreamAuthType::kSignedIdentity:
      return in(kSignedKeys);
  }
  return false;
}

// A scope token (RFC 6749 §3.3): printable ASCII but space, '"' and '\'.
bool scopeToken(std::string_view s) {
  if (s.empty()) {
    return false;
  }
  for (char c : s) {
    const auto b = static_cast<unsigned char>(c);
    if (b <= 0x20 || b >= 0x7f || c == '"' || c == '\\') {
      return false;
    }
  }
  return true;
}

}  // namespace

// An absolute http(s) URL (the token endpoint, RFC 8707 resource): `https` and its host set;
// false with `why` for anything else (userinfo, no host, spaces or control bytes). The
// gateway's HTTP client parses it again when it sends; this only checks it at load.
bool httpUrl(std::string_view url, bool& https, std::string& host, std::string& why) {
  std::string_view rest;
  if (url.starts_with("https://")) {
    https = true;
    rest = url.substr(8);
  } else if (url.starts_with("http://")) {
    https = false;
    rest = url.substr(7);
  } else {
    why = "is not an http:// or https:// URL";
    return false;
  }
  for (char c : url) {
    const auto b = static_cast<unsigned char>(c);
    if (b <= 0x20 || b >= 0x7f) {
      why = "holds a space or a byte that is not printable ASCII";
      return false;
    }
  }
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.find('@') != std::string_view::npos) {
    why = "must not hold credentials";
    return false;
  }
  if (authority.starts_with("[")) {
    const size_t close = authority.find(']');
    host.assign(close == std::string_view::npos ? authority : authority.substr(1, close - 1));
  } else {
    host.assign(authority.substr(0, authority.rfind(':')));
  }
  if (host.empty()) {
    why = "has no host";
    return false;
  }
  return true;
}

const char* authTypeName(UpstreamAuthType t) noexcept {
  return kAuthTypes[static_cast<size_t>(t)].data();
}

// client_secret_file: read now (config::Walker::readSecretFile).
bool Loader::readSecretFile(const Entry& e, std::string& abs, std::string& secret) {
  std::string text;
  if (!readNonEmptyString(e, text)) {
    return false;
  }
  abs = resolve(text);
  return Walker::readSecretFile(e, abs, text, secret);
}

void Loader::walkUpstreamAuth(const Entry& ae, Upstream& u) {
  std::vector<Entry> es = entries(ae.value, ae.key_node.Mark(), kAuthKeys, ae.path);
  if (!ae.value.IsMap()) {
    return;  // reported by entries()
  }
  const Entry* te = find(es, "type");
  if (te == nullptr) {
    error(valueMark(ae), "'" + ae.path +
                             "' has no 'type' (forward, client_credentials, token_exchange or "
                             "signed_identity)");
    return;
  }
  size_t type_index = 0;
  if (!readChoice(*te, kAuthTypes, type_index)) {
    return;
  }
  UpstreamAuth a;
  a.type = static_cast<UpstreamAuthType>(type_index);
  const std::string type_name = authTypeName(a.type);
  const size_t before = errorCount();
  for (const Entry& e : es) {
    if (e.key == "type") {
      continue;
    }
    if (!takes(a.type, e.key)) {
      error(e.key_node.Mark(),
            "'" + e.path + "' does not apply to auth type " + type_name +
                (a.type == UpstreamAuthType::kForward ? " (forward sends the caller's own "
                                                        "Authorization and takes no other key)"
                                                      : ""));
      continue;
    }
    if (e.key == "token_endpoint") {
      bool https = true;
      std::string host;
      std::string why;
      if (!readNonEmptyString(e, a.token_endpoint)) {
        continue;
      }
      if (!httpUrl(a.token_endpoint, https, host, why)) {
        error(valueMark(e), "'" + e.path + "': '" + a.token_endpoint + "' " + why);
      } else if (!https && !isLoopback(host) && host != "localhost") {
        // Secrets and callers' tokens go there.
        error(valueMark(e), "'" + e.path + "': '" + a.token_endpoint +
                                "' http is allowed only for a loopback host; use https");
      }
    } else if (e.key == "client_id") {
      readNonEmptyString(e, a.client_id);
    } else if (e.key == "client_secret_file") {
      readSecretFile(e, a.client_secret_file, a.client_secret);
    } else if (e.key == "client_auth") {
      bool basic = true;
      if (readChoice(e, kClientAuths[0], kClientAuths[1], basic)) {
        a.client_auth_post = !basic;
      }
    } else if (e.key == "audience") {
      readNonEmptyString(e, a.audience);
    } else if (e.key == "resource") {
      bool https = true;
      std::string host;
      std::string why;
      if (readNonEmptyString(e, a.resource) && !httpUrl(a.resource, https, host, why)) {
        error(valueMark(e),
              "'" + e.path + "': '" + a.resource + "' " + why + " (RFC 8707: an absolute URI)");
      }
    } else if (e.key == "scopes") {
      std::vector<YAML::Node> nodes;
      if (readStringList(e, a.scopes, &nodes)) {
        for (size_t i = 0; i < a.scopes.size(); ++i) {
          if (!scopeToken(a.scopes[i])) {
            error(nodes[i].Mark(), "'" + e.path + "[" + std::to_string(i) + "]': '" + a.scopes[i] +
                                       "' is not a scope (RFC 6749 §3.3: no spaces, quotes or "
                                       "backslashes)");
          }
        }
      }
    } else if (e.key == "ca") {
      std::string rel;
      if (readNonEmptyString(e, rel)) {
        a.ca = resolve(rel);
        std::error_code ec;
        if (!hermeticLoad() && !fs::is_regular_file(a.ca, ec)) {
          error(valueMark(e),
                "'" + e.path + "': CA file '" + rel + "' does not exist (looked for " + a.ca + ")");
        }
      }
    } else if (e.key == "timeout") {
      if (readDuration(e, a.timeout) &&
          (a.timeout <= Duration::zero() || a.timeout > kMaxTimeout)) {
        error(valueMark(e), "'" + e.path + "' must be more than 0 and at most 60s");
      }
    } else if (e.key == "issuer") {
      readNonEmptyString(e, a.issuer);
    } else if (e.key == "key_file") {
      std::string rel;
      if (readNonEmptyString(e, rel)) {
        a.key_file = resolve(rel);
        if (!hermeticLoad()) {
          std::string why;
          a.key = tls::SigningKey::load(a.key_file, why);
          if (a.key == nullptr) {
            error(valueMark(e), "'" + e.path + "': " + why +
                                    " (make one with: openssl genpkey -algorithm EC -pkeyopt "
                                    "ec_paramgen_curve:P-256 -out identity-key.pem)");
          }
        }
      }
    } else if (e.key == "ttl") {
      if (readDuration(e, a.ttl) && (a.ttl <= Duration::zero() || a.ttl > kMaxTtl)) {
        error(valueMark(e), "'" + e.path + "' must be more than 0 and at most 10m");
      }
    }
  }
  auto need = [&](std::string_view key) {
    if (find(es, key) == nullptr) {
      error(valueMark(ae),
            "'" + ae.path + "' of type " + type_name + " needs '" + std::string(key) + "'");
    }
  };
  switch (a.type) {
    case UpstreamAuthType::kForward:
      break;
    case UpstreamAuthType::kClientCredentials:
    case UpstreamAuthType::kTokenExchange:
      need("token_endpoint");
      need("client_id");
      need("client_secret_file");
      break;
    case UpstreamAuthType::kSignedIdentity:
      need("issuer");
      need("key_file");
      need("audience");
      break;
  }
  if (errorCount() == before) {
    auto part = [&](std::string_view v) {
      a.key_prefix += std::to_string(v.size());
      a.key_prefix += ':';
      a.key_prefix += v;
    };
    part(authTypeName(a.type));
    part(a.token_endpoint);
    part(a.client_id);
    part(a.audience);
    part(a.resource);
    for (const std::string& sc : a.scopes) {
      part(sc);
    }
    if (a.type == UpstreamAuthType::kClientCredentials) {
      a.cc_key = credentialKey(a, {});
    }
    u.auth = std::move(a);
  }
}

std::string credentialKey(const UpstreamAuth& a, std::string_view token_digest) {
  std::string input = a.key_prefix;
  input += '|';
  input += token_digest;
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(input.data()), input.size(), digest);
  std::string out;
  core::appendHex(out, std::string_view(reinterpret_cast<const char*>(digest), sizeof digest));
  return out;
}

}  // namespace gw::settings
