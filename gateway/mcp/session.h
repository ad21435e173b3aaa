#pragma once
// Legacy (2025-era) session affinity without shared state. An upstream's answer that carries
// `Mcp-Session-Id: <server id>` reaches the client as `Mcp-Session-Id: <token>.<server id>`,
// where <token> names the endpoint that created the session; a later request's wrapped id is
// split again, the token picks the endpoint and the upstream gets <server id> back. The token
// is derived from configuration alone (a keyed hash of the upstream name and the endpoint's
// address as written), so every worker, replica and restart with the same configuration
// agrees without a table. Pure: no I/O, no exceptions, no allocation except the token.
//
// Session ids (MCP transport 2025-03-26 / 2025-06-18 "Session Management"): only visible
// ASCII 0x21-0x7E. The wrapped form stays in that set: the token is base64url (no '.'), the
// separator is '.', the server's id is checked before it is wrapped.

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace gw::mcp {

inline constexpr size_t kSessionTokenChars = 16;  // base64url of 96 bits of HMAC-SHA-256
inline constexpr char kSessionSeparator = '.';
// The longest server session id the gateway wraps (a UUID is 36, a JWT-ish id a few hundred).
inline constexpr size_t kMaxServerSessionId = 1024;
inline constexpr size_t kMaxWrappedSessionId = kSessionTokenChars + 1 + kMaxServerSessionId;

// The endpoint token: base64url(HMAC-SHA-256(key, "mcp-session/v1" NUL upstream NUL
// endpoint))[0..16). `secret` is the key when non-empty; otherwise a fixed built-in key, so the
// token depends only on the upstream name and the endpoint address as written in config.
std::string sessionToken(std::string_view secret, std::string_view upstream,
                         std::string_view endpoint);

// The keyed tag both session schemes use (sessionToken here, front::mintFrontSession):
// base64url(HMAC-SHA-256(key, message))[0..16), i.e. the first 12 bytes of the MAC, where the
// key is `secret` when non-empty and the built-in key otherwise. kSessionTokenChars
// characters; empty only if HMAC itself fails (never with SHA-256). `message` carries its
// own domain prefix.
std::string sessionTag(std::string_view secret, std::string_view message);

// True when `id` is 1..kMaxServerSessionId bytes of visible ASCII (0x21-0x7E).
bool validServerSessionId(std::string_view id) noexcept;

// Appends `<token>.<server_id>` to out. False (out unchanged) when server_id is not valid.
bool wrapSessionId(std::string_view token, std::string_view server_id, std::string& out);

enum class SessionError : unsigned char {
  kNone,
  kEmpty,          // no value
  kTooLong,        // over kMaxWrappedSessionId
  kBadCharacter,   // a byte outside 0x21-0x7E
  kNoSeparator,    // no '.' right after kSessionTokenChars characters
  kBadToken,       // the token part is not base64url
  kEmptyServerId,  // nothing after the separator
};
const char* sessionErrorText(SessionError e) noexcept;

// A client's Mcp-Session-Id split into its parts (views into `value`).
struct WrappedSession {
  std::string_view token;
  std::string_view server_id;
  SessionError error = SessionError::kNone;
};
WrappedSession unwrapSessionId(std::string_view value) noexcept;

// The index of the endpoint whose token is `token` (compared in constant time), -1 when none.
int findSessionEndpoint(const std::vector<std::string>& tokens, std::string_view token) noexcept;

}  // namespace gw::mcp
