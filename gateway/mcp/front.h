#pragma once
// The front of the era bridge, pure half: the gateway answering 2025-era ("legacy") clients
// itself on a federated route whose upstreams speak 2026-07-28, and translating their traffic
// for those upstreams. (bridge.h is the other direction: the gateway as a 2025 client of
// legacy upstreams.) The proxy side reads a legacy client's initialize, answers it from the
// merged server/discover result, mints the client's gateway session id, then rewrites each
// later request with the 2026-07-28 `_meta` envelope and each answer back into what a 2025
// client can act on. Pure: no I/O; simdjson through its error-code API; nothing throws.
//
// What differs between the eras, and what the front does about it:
//   - initialize does not exist in 2026-07-28: the gateway answers it (initializeAnswer) with
//     the version negotiated by the 2025 rule (negotiateLegacy) and the discover capabilities.
//   - Every 2026-07-28 request carries params._meta's protocolVersion, clientCapabilities and
//     clientInfo (spec A.7): modernizeRequest adds what the client's initialize declared.
//   - A 2026-07-28 result may be "resultType":"input_required" (MRTR), which a 2025 client
//     cannot answer: legacyAnswer turns it into a JSON-RPC error.
//   - 2025 clients expect an Mcp-Session-Id from initialize; 2026-07-28 upstreams keep none,
//     so the gateway's id is self-certifying (mintFrontSession / checkFrontSession): any
//     worker, replica or restart with the same secret accepts it without a table.

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "gateway/mcp/jsonrpc.h"

namespace gw::mcp::front {

// The protocol version of the upstreams the front speaks for (the `_meta` envelope's value).
inline constexpr std::string_view kModernVersion = "2026-07-28";

// What a legacy client's initialize request says (raw JSON texts, minified).
struct InitRequest {
  RequestId id;              // the request's id (kJson: a string or a number, as written)
  std::string version;       // params.protocolVersion, as sent (negotiateLegacy picks ours)
  std::string capabilities;  // params.capabilities ("{}" when absent or null)
  std::string client_info;   // params.clientInfo (empty when absent or null)
};

// Reads a legacy client's initialize request: a JSON object with "method":"initialize", an
// "id" that is a string or a number, and params holding a string protocolVersion. False with
// `why` set (out partly written) when the body is not such a request: not JSON, a batch, a
// notification, another method, params not an object, protocolVersion missing or not a
// string, capabilities or clientInfo present but neither an object nor null.
bool parseInitializeRequest(std::string_view body, InitRequest& out, std::string& why);

// The version the gateway answers a legacy initialize with (2025 rule: the requested version
// when the server supports it, else one it supports): `requested` when it is one of
// bridge::kLegacyVersions, else kLegacyVersions[0]. The view is into kLegacyVersions (static).
std::string_view negotiateLegacy(std::string_view requested) noexcept;

// The JSON-RPC response to a legacy client's initialize, made from a server/discover result:
// {"jsonrpc":"2.0","id":<id>,"result":{"protocolVersion":<version>,"capabilities":<the
// discover capabilities, minified, every key kept; {} when absent>,"serverInfo":{"name":
// <server_name>,"version":<server_version>}[,"instructions":<discover instructions>]}}.
// `discover_result` is the result object's JSON text, or its members without the braces
// (federation::mergeDiscover's `members`). Text that does not parse as an object gives the
// answer with "capabilities":{} and no instructions. An id that is not kJson is written null.
std::string initializeAnswer(std::string_view discover_result, std::string_view version,
                             std::string_view server_name, std::string_view server_version,
                             const RequestId& id);

// A legacy request or notification made a 2026-07-28 one: `body` with params._meta holding
// "io.modelcontextprotocol/protocolVersion":kModernVersion, ".../clientCapabilities":
// <client_caps_json, {} when empty> and ".../clientInfo":<client_info_json, left out when
// empty>, each added only when absent (a value the client sent, even null, is kept). Every
// byte of `body` is kept but a null params or _meta (replaced in place by the object); the
// added members go at the end of _meta, a missing _meta at the end of params, a missing
// params at the end of the message (so the id stays where scanIdPrefix finds it). Keys are
// compared unescaped ("par\u0061ms" is params). The two JSON texts must be valid JSON
// objects (as parseInitializeRequest gives them); `body` is bounded by the caller.
// True with `out` replaced by the message (a copy of `body` when every key was there). False
// (out untouched) when `body` is not a JSON object with a string "method" (a batch, a
// response, not JSON), when params or params._meta is neither an object nor null, or when
// either of them appears twice (which one a server reads is not defined).
bool modernizeRequest(std::string_view body, std::string_view client_info_json,
                      std::string_view client_caps_json, std::string& out);

// The message of legacyAnswer's error.
inline constexpr std::string_view kInputRequiredMessage =
    "the server asked the client for input, which the gateway cannot ask a 2025-era client";

// A 2026-07-28 upstream's answer as a 2025 client must see it. A response whose result has
// "resultType":"input_required" (the server asks the client for input, which a 2025 client
// cannot give in this form) becomes the JSON-RPC error {"code":-32603,"message":
// kInputRequiredMessage} with the same id: true, `out` replaced. False (out untouched, the
// message goes as it is) for every other message: a "complete" result (or one without
// resultType), an error, a request or notification, a batch, text that is not JSON.
bool legacyAnswer(std::string_view message, std::string& out);

// Gateway session ids for legacy clients on federated routes:
//   "gw1." base64url(random, 16 bytes: 22 chars) "." base64url(tag: 16 chars)
// where tag = the first 12 bytes of HMAC-SHA-256(key, "mcp-front/v1" NUL random) with the key
// rule of sessionToken (secret when non-empty, else the built-in key). Always
// kFrontSessionChars characters of visible ASCII (a valid Mcp-Session-Id); never has the
// shape of a wrapped upstream session id (its 17th character is not '.').
inline constexpr std::string_view kFrontSessionPrefix = "gw1.";
inline constexpr size_t kFrontSessionChars = 4 + 22 + 1 + 16;

// A new session id from 16 random bytes the caller draws (RAND_bytes). Empty when
// `random16` is not 16 bytes long (a caller's bug).
std::string mintFrontSession(std::string_view secret, std::span<const uint8_t> random16);

// Whether `id` is a session id mintFrontSession made with `secret`: exactly that shape (the
// prefix, canonical base64url parts, nothing before or after) and a tag that matches,
// compared in constant time.
bool checkFrontSession(std::string_view secret, std::string_view id);

}  // namespace gw::mcp::front
