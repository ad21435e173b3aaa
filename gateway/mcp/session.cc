// Session id wrapping (see session.h).

#include "gateway/mcp/session.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <cstdint>

#include "gateway/core/base64.h"

namespace gw::mcp {

namespace {

constexpr std::string_view kBuiltinKey = "mcp-gateway session token key v1";
constexpr std::string_view kDomain = "mcp-session/v1";

bool isVisible(char c) noexcept {
  auto u = static_cast<unsigned char>(c);
  return u >= 0x21 && u <= 0x7E;
}

}  // namespace

std::string sessionTag(std::string_view secret, std::string_view message) {
  std::string_view key = secret.empty() ? kBuiltinKey : secret;
  unsigned char mac[EVP_MAX_MD_SIZE];
  unsigned int mac_len = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
           reinterpret_cast<const unsigned char*>(message.data()), message.size(), mac,
           &mac_len) == nullptr ||
      mac_len < 12) {
    return {};  // never with SHA-256; an empty tag matches nothing
  }
  // 12 bytes → exactly 16 base64url characters, no padding.
  std::string out;
  out.reserve(kSessionTokenChars);
  core::appendBase64(out, std::string_view(reinterpret_cast<const char*>(mac), 12),
                     core::Base64Alphabet::kUrl, core::Base64Padding::kNone);
  return out;
}

std::string sessionToken(std::string_view secret, std::string_view upstream,
                         std::string_view endpoint) {
  std::string msg;
  msg.reserve(kDomain.size() + upstream.size() + endpoint.size() + 2);
  msg.append(kDomain).append(1, '\0').append(upstream).append(1, '\0').append(endpoint);
  return sessionTag(secret, msg);
}

bool validServerSessionId(std::string_view id) noexcept {
  if (id.empty() || id.size() > kMaxServerSessionId) {
    return false;
  }
  for (char c : id) {
    if (!isVisible(c)) {
      return false;
    }
  }
  return true;
}

bool wrapSessionId(std::string_view token, std::string_view server_id, std::string& out) {
  if (token.size() != kSessionTokenChars || !validServerSessionId(server_id)) {
    return false;
  }
  out.append(token).append(1, kSessionSeparator).append(server_id);
  return true;
}

const char* sessionErrorText(SessionError e) noexcept {
  switch (e) {
    case SessionError::kNone:
      return "ok";
    case SessionError::kEmpty:
      return "empty session id";
    case SessionError::kTooLong:
      return "session id too long";
    case SessionError::kBadCharacter:
      return "session id has a byte outside visible ASCII";
    case SessionError::kNoSeparator:
      return "session id is not one the gateway issued";
    case SessionError::kBadToken:
      return "session id has a malformed endpoint token";
    case SessionError::kEmptyServerId:
      return "session id has no server part";
  }
  return "invalid session id";
}

WrappedSession unwrapSessionId(std::string_view value) noexcept {
  WrappedSession w;
  if (value.empty()) {
    w.error = SessionError::kEmpty;
    return w;
  }
  if (value.size() > kMaxWrappedSessionId) {
    w.error = SessionError::kTooLong;
    return w;
  }
  for (char c : value) {
    if (!isVisible(c)) {
      w.error = SessionError::kBadCharacter;
      return w;
    }
  }
  if (value.size() <= kSessionTokenChars || value[kSessionTokenChars] != kSessionSeparator) {
    w.error = SessionError::kNoSeparator;
    return w;
  }
  std::string_view token = value.substr(0, kSessionTokenChars);
  for (char c : token) {
    if (!core::isBase64Symbol(c, core::Base64Alphabet::kUrl)) {
      w.error = SessionError::kBadToken;
      return w;
    }
  }
  std::string_view server = value.substr(kSessionTokenChars + 1);
  if (server.empty()) {
    w.error = SessionError::kEmptyServerId;
    return w;
  }
  w.token = token;
  w.server_id = server;
  return w;
}

int findSessionEndpoint(const std::vector<std::string>& tokens, std::string_view token) noexcept {
  if (token.size() != kSessionTokenChars) {
    return -1;
  }
  int found = -1;
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i].size() == kSessionTokenChars &&
        CRYPTO_memcmp(tokens[i].data(), token.data(), kSessionTokenChars) == 0 && found < 0) {
      found = static_cast<int>(i);
    }
  }
  return found;
}

}  // namespace gw::mcp
