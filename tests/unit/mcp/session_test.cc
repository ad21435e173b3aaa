// mcp/session: the wrapped Mcp-Session-Id that keeps a legacy (2025-era) session on the endpoint
// that created it. MCP transport 2025-06-18 / 2025-03-26 "Session Management": a session id
// MUST only contain visible ASCII (0x21-0x7E); the wrapped form must obey that too, and only a
// token the gateway derived from its configuration may name an endpoint.

#include "gateway/mcp/session.h"

#include <catch.hpp>
#include <set>
#include <string>
#include <vector>

namespace gw::mcp {
namespace {

bool isBase64UrlText(const std::string& s) {
  for (char c : s) {
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_';
    if (!ok) {
      return false;
    }
  }
  return true;
}

TEST_CASE("session token: 16 base64url characters, no separator, visible ASCII", "[session]") {
  const char* endpoints[] = {"127.0.0.1:9000", "[::1]:9000", "mcp-a.internal:8080", "h:1"};
  for (const char* e : endpoints) {
    std::string t = sessionToken("", "main", e);
    INFO(e);
    CHECK(t.size() == kSessionTokenChars);
    CHECK(isBase64UrlText(t));
    CHECK(t.find(kSessionSeparator) == std::string::npos);
  }
}

TEST_CASE("session token: stable for the same configuration (every worker, replica, restart)",
          "[session]") {
  // Known-answer values: a token computed by another process with the same config must be
  // byte-identical, so pin the function's output, not only its self-consistency.
  // (computed independently: Python hmac/hashlib/base64.urlsafe_b64encode)
  std::string a = sessionToken("", "main", "127.0.0.1:9000");
  CHECK(a == "J7Hx0ZWHN-ade4Ji");
  CHECK(sessionToken("s3cret", "main", "127.0.0.1:9000") == "rZkPbkE6stE8GQDl");
  CHECK(a == sessionToken("", "main", "127.0.0.1:9000"));
  CHECK(a == sessionToken(std::string_view{}, std::string("main"), std::string("127.0.0.1:9000")));
  CHECK(sessionToken("s3cret", "main", "127.0.0.1:9000") ==
        sessionToken("s3cret", "main", "127.0.0.1:9000"));
}

TEST_CASE("session token: differs by endpoint, upstream and secret", "[session]") {
  std::set<std::string> seen;
  const char* ups[] = {"main", "other", "mai", "n"};
  const char* eps[] = {"127.0.0.1:9000", "127.0.0.1:9001", "127.0.0.2:9000", "localhost:9000"};
  const char* secrets[] = {"", "a", "b"};
  size_t n = 0;
  for (const char* s : secrets) {
    for (const char* u : ups) {
      for (const char* e : eps) {
        seen.insert(sessionToken(s, u, e));
        ++n;
      }
    }
  }
  CHECK(seen.size() == n);
  // The parts are separated: ("ab", "c") and ("a", "bc") are different inputs.
  CHECK(sessionToken("", "ab", "c:1") != sessionToken("", "a", "bc:1"));
}

TEST_CASE("session wrap/unwrap: round trip of every visible-ASCII server id", "[session]") {
  std::string token = sessionToken("", "main", "127.0.0.1:9000");
  std::string all;
  for (int c = 0x21; c <= 0x7E; ++c) {
    all.push_back(static_cast<char>(c));
  }
  const std::string ids[] = {"a",
                             "7f3c2b1e-1d0a-4c7e-9b2f-0c1d2e3f4a5b",
                             "has.dots.inside",
                             ".leading-dot",
                             "trailing-dot.",
                             std::string(kSessionTokenChars, 'A') + "." + "nested-wrap",
                             all,
                             std::string(kMaxServerSessionId, 'x')};
  for (const std::string& id : ids) {
    std::string wrapped;
    REQUIRE(wrapSessionId(token, id, wrapped));
    INFO(wrapped);
    CHECK(wrapped.size() == kSessionTokenChars + 1 + id.size());
    CHECK(wrapped.size() <= kMaxWrappedSessionId);
    WrappedSession w = unwrapSessionId(wrapped);
    REQUIRE(w.error == SessionError::kNone);
    CHECK(w.token == token);
    CHECK(w.server_id == id);
    for (char c : wrapped) {
      CHECK((static_cast<unsigned char>(c) >= 0x21 && static_cast<unsigned char>(c) <= 0x7E));
    }
  }
}

TEST_CASE("session wrap: a server id the client could not be given is refused", "[session]") {
  // MCP 2025-06-18 Session Management: visible ASCII 0x21-0x7E only.
  std::string token = sessionToken("", "main", "127.0.0.1:9000");
  const std::string bad[] = {
      "",        "has space",     "tab\there", std::string("nul\0x", 5),
      "del\x7f", "utf8-\xc3\xa9", "cr\r",      std::string(kMaxServerSessionId + 1, 'x')};
  for (const std::string& id : bad) {
    std::string out = "keep";
    INFO(id);
    CHECK_FALSE(validServerSessionId(id));
    CHECK_FALSE(wrapSessionId(token, id, out));
    CHECK(out == "keep");
  }
  std::string out;
  CHECK_FALSE(wrapSessionId("short", "id", out));
  CHECK(out.empty());
}

TEST_CASE("session unwrap: every malformed spelling is an error, never a partial match",
          "[session]") {
  std::string t = sessionToken("", "main", "127.0.0.1:9000");
  struct Case {
    std::string value;
    SessionError error;
  };
  const Case cases[] = {
      {"", SessionError::kEmpty},
      {std::string(kMaxWrappedSessionId + 1, 'A'), SessionError::kTooLong},
      {t + "." + std::string(kMaxServerSessionId + 1, 'x'), SessionError::kTooLong},
      {t + ".a b", SessionError::kBadCharacter},
      {t + ".a\tb", SessionError::kBadCharacter},
      {" " + t + ".a", SessionError::kBadCharacter},
      {t + ".\x80", SessionError::kBadCharacter},
      {t + ".a\x7f", SessionError::kBadCharacter},
      {"7f3c2b1e-1d0a-4c7e-9b2f-0c1d2e3f4a5b", SessionError::kNoSeparator},  // pre-feature id
      {t, SessionError::kNoSeparator},                                       // token only
      {t.substr(0, 15) + ".abc", SessionError::kNoSeparator},                // short token
      {t + "x.abc", SessionError::kNoSeparator},                             // long token
      {"." + t + "abc", SessionError::kNoSeparator},                         // separator first
      {t + ":abc", SessionError::kNoSeparator},                              // other separator
      {t.substr(0, 15) + "=.abc", SessionError::kBadToken},                  // padding
      {t.substr(0, 15) + "+.abc", SessionError::kBadToken},                  // base64, not url
      {t.substr(0, 15) + "/.abc", SessionError::kBadToken},
      {t.substr(0, 15) + "..abc", SessionError::kBadToken},
      {t + ".", SessionError::kEmptyServerId},
  };
  for (const Case& c : cases) {
    INFO(c.value);
    WrappedSession w = unwrapSessionId(c.value);
    CHECK(w.error == c.error);
    CHECK(w.token.empty());
    CHECK(w.server_id.empty());
    CHECK(std::string(sessionErrorText(w.error)).size() > 0);
  }
}

TEST_CASE("session endpoint lookup: only a configured endpoint's token names it", "[session]") {
  std::vector<std::string> tokens = {sessionToken("", "main", "127.0.0.1:9000"),
                                     sessionToken("", "main", "127.0.0.1:9001")};
  CHECK(findSessionEndpoint(tokens, tokens[0]) == 0);
  CHECK(findSessionEndpoint(tokens, tokens[1]) == 1);
  // Forged: well-formed but derived from something else (other upstream, other secret,
  // an endpoint since removed), or flipped in one character, or in another letter case.
  CHECK(findSessionEndpoint(tokens, sessionToken("", "other", "127.0.0.1:9000")) == -1);
  CHECK(findSessionEndpoint(tokens, sessionToken("k", "main", "127.0.0.1:9000")) == -1);
  CHECK(findSessionEndpoint(tokens, sessionToken("", "main", "127.0.0.1:9002")) == -1);
  std::string flipped = tokens[0];
  flipped[5] = flipped[5] == 'A' ? 'B' : 'A';
  CHECK(findSessionEndpoint(tokens, flipped) == -1);
  std::string upper = tokens[0];
  for (char& c : upper) {
    c = (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : c;
  }
  if (upper != tokens[0]) {
    CHECK(findSessionEndpoint(tokens, upper) == -1);
  }
  CHECK(findSessionEndpoint(tokens, "") == -1);
  CHECK(findSessionEndpoint(tokens, tokens[0].substr(0, 15)) == -1);
  CHECK(findSessionEndpoint({}, tokens[0]) == -1);
  // Duplicated endpoint in config: the first one answers (same server either way).
  std::vector<std::string> dup = {tokens[0], tokens[0]};
  CHECK(findSessionEndpoint(dup, tokens[0]) == 0);
}

}  // namespace
}  // namespace gw::mcp
