#pragma once
// The era bridge's pure half: what the gateway says and reads as a 2025 client of a legacy
// (2025-era) upstream, on behalf of 2026-07-28 clients (issue #26). The proxy side
// (proxy/legacy_sessions.h) sends these bodies through the outbound client and keeps the
// session; the federation fan-out can use the same pieces. Pure: no I/O; simdjson through
// its error-code API; nothing throws.
//
// What differs between the eras on a request, and what the bridge does about it:
//   - MCP-Protocol-Version: the client's 2026-07-28 is replaced by the session's version.
//   - Mcp-Session-Id: the gateway's session with the upstream is added (a client's is not sent).
//   - params._meta's io.modelcontextprotocol/* keys stay: 2025 servers ignore unknown _meta
//     keys (the schema leaves _meta open), so the body goes as sent (no copy).
//   - server/discover does not exist in 2025: the gateway answers it from the initialize result.
// Answers: a 2026-07-28 client requires `resultType` in every result, which a 2025 server
// never writes, so each JSON-RPC response's result gets "resultType":"complete"
// (completeResult); SSE answers are re-framed event by event (no `id:` lines, no empty
// priming event).

#include <span>
#include <string>
#include <string_view>

#include "gateway/mcp/jsonrpc.h"

namespace gw::mcp::bridge {

// The 2025-era protocol versions the gateway speaks as a client, newest first. The
// initialize request offers the first; the server answers the version it will use.
inline constexpr std::string_view kLegacyVersions[] = {"2025-11-25", "2025-06-18", "2025-03-26",
                                                       "2024-11-05"};

// Whether `version` is one of kLegacyVersions (the only answers to initialize accepted).
bool speaksLegacy(std::string_view version) noexcept;

// The initialize request (id 0) the gateway sends: kLegacyVersions[0], no client
// capabilities (so a 2025 server makes no sampling, elicitation or roots requests of a
// bridged call), and clientInfo {"name":"mcp-gateway","version": gateway_version}.
std::string initializeRequest(std::string_view gateway_version);
// The notification that completes the handshake.
std::string_view initializedNotification() noexcept;

// What a legacy upstream's initialize answer says (raw JSON texts, minified).
struct InitResult {
  std::string version;       // result.protocolVersion (one of kLegacyVersions)
  std::string capabilities;  // result.capabilities ("{}" when absent)
  std::string server_info;   // result.serverInfo (empty when absent)
  std::string instructions;  // result.instructions as a JSON string (empty when absent)
};

// Reads an initialize answer body: a JSON object, or (`sse`) a text/event-stream whose
// first event holding a JSON-RPC response is taken. False with `why` set when the body is not
// a successful initialize result, or names a protocol version the gateway does not speak.
bool parseInitializeAnswer(std::string_view body, bool sse, InitResult& out, std::string& why);

// The server/discover request the gateway sends to find a server's era (era: auto).
std::string discoverProbe(std::string_view modern_version);
// Whether a probe's answer is a 2026-07-28 server/discover result: status 200 and a JSON-RPC
// result (JSON, or the first response event of an SSE body) carrying supportedVersions.
bool probeSaysModern(int status, std::string_view body, bool sse);

// The server/discover answer for a legacy upstream, made from its initialize result:
// supportedVersions = `offered` (what the gateway offers for it), its capabilities and
// instructions, serverInfo in _meta, ttlMs 0 / cacheScope private, resultType complete.
std::string discoverAnswer(const InitResult& init, std::span<const std::string> offered,
                           const RequestId& id);

// Whether `message` is a server-to-client request (an object with a string "method" and an
// "id"); `id_json` is then its id as JSON text. A 2025 server may make one inside a bridged
// call (on its SSE answer) although the gateway declared no capabilities: it is answered
// with refusalFor(id_json), never relayed to a 2026-07-28 client (which takes no requests).
bool serverRequest(std::string_view message, std::string& id_json);

// Whether `message` is a JSON-RPC error response with code -32601 (method not found): a 2025
// server answers an unknown method so with HTTP 200, a 2026-07-28 server with HTTP 404.
bool isMethodNotFound(std::string_view message);

// Whether `method` is a 2025 client-to-server method 2026-07-28 removed (initialize, ping,
// logging/setLevel, resources/subscribe|unsubscribe, notifications/initialized,
// notifications/roots/list_changed): a 2026-07-28 server answers it 404 -32601, so a bridged
// request for it never reaches the 2025 server.
bool removedIn2026(std::string_view method) noexcept;

// The JSON-RPC error the gateway answers a legacy upstream's server-to-client request
// (sampling, elicitation, roots, ping) within a bridged call: -32601, since the gateway
// declared no client capabilities. `id_json` is the request's id as JSON text.
std::string refusalFor(std::string_view id_json);

// `message` with the members a 2026-07-28 result must have and a 2025 one lacks put first
// in its top-level "result" object: "resultType":"complete", and for a `cacheable` answer
// (a list, resources/read: isCacheable) "ttlMs":0 and "cacheScope":"private" — each only when
// absent. False (out untouched) when nothing is to change (an error, a notification, a
// request, text that is not JSON, a result that has them already).
bool completeResult(std::string_view message, bool cacheable, std::string& out);
// Whether a method's result is a CacheableResult in 2026-07-28 (ttlMs, cacheScope).
bool isCacheable(std::string_view method) noexcept;

// The data of the first SSE event line (`data: ...`) of `body` that holds a JSON-RPC
// response (mcp::looksLikeResponse); empty when none. Single-line data only (2025 servers
// write one JSON message per data line).
std::string_view firstSseResponse(std::string_view body) noexcept;

}  // namespace gw::mcp::bridge
