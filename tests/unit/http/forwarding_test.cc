// Hop-by-hop filtering of forwarded fields.

#include <catch.hpp>

#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/cidr.h"

#include "gateway/http/forwarding.h"
#include "gateway/http/parser.h"

namespace gw::http {
namespace {

TEST_CASE("isHopByHop knows the fixed set, case-insensitively", "[http][forwarding]") {
  for (std::string_view n :
       {"Connection", "keep-alive", "Proxy-Connection", "TE", "Trailer", "TRANSFER-ENCODING",
        "Upgrade", "Proxy-Authenticate", "proxy-authorization"}) {
    INFO(n);
    CHECK(isHopByHop(n));
  }
  for (std::string_view n : {"Host", "Content-Type", "Mcp-Method", "Authorization", "Trailers", "T",
                             "Connections", "X-Forwarded-For", ""}) {
    INFO(n);
    CHECK_FALSE(isHopByHop(n));
  }
}

TEST_CASE("request and response fields: hop-by-hop and Connection-named dropped",
          "[http][forwarding]") {
  const std::string_view data =
      "POST /mcp HTTP/1.1\r\n"
      "Host: a\r\n"
      "Connection: keep-alive, X-Secret ,x-other\r\n"
      "Connection: Upgrade\r\n"
      "Keep-Alive: timeout=5\r\n"
      "X-Secret: s\r\n"
      "x-other: o\r\n"
      "Upgrade: websocket\r\n"
      "TE: trailers\r\n"
      "Expect: 100-continue\r\n"
      "Content-Length: 2\r\n"
      "Mcp-Method: tools/call\r\n"
      "X-Forwarded-For: 10.0.0.1\r\n"
      "Proxy-Authorization: Basic x\r\n"
      "\r\n";
  auto parser = makeHttp1Parser();
  RequestHead head;
  REQUIRE(parser->parseRequest(data, HeadLimits{}, head).status == ParseStatus::kComplete);
  ConnectionTokens conn;
  conn.collect(head.fields);
  CHECK(conn.contains("x-secret"));
  CHECK(conn.contains("X-OTHER"));
  CHECK(conn.contains("upgrade"));
  CHECK_FALSE(conn.contains("host"));

  std::vector<std::string_view> kept;
  for (const HeaderField& f : head.fields) {
    if (forwardRequestField(f, conn)) {
      kept.push_back(f.name);
    }
  }
  CHECK(kept == std::vector<std::string_view>{"Host", "Mcp-Method", "X-Forwarded-For"});

  kept.clear();
  for (const HeaderField& f : head.fields) {
    if (forwardResponseField(f, conn)) {
      kept.push_back(f.name);
    }
  }
  // Expect is a request-only concern; Content-Length is rewritten on both sides.
  CHECK(kept == std::vector<std::string_view>{"Host", "Expect", "Mcp-Method", "X-Forwarded-For"});

  conn.clear();
  CHECK_FALSE(conn.contains("x-secret"));
}

TEST_CASE("response framing fields are never forwarded as-is", "[http][forwarding]") {
  const std::string_view data =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: text/event-stream\r\n"
      "Connection: close\r\n\r\n";
  auto parser = makeHttp1Parser();
  ResponseHead head;
  REQUIRE(parser->parseResponse(data, HeadLimits{}, "POST", head).status == ParseStatus::kComplete);
  ConnectionTokens conn;
  conn.collect(head.fields);
  std::vector<std::string_view> kept;
  for (const HeaderField& f : head.fields) {
    if (forwardResponseField(f, conn)) {
      kept.push_back(f.line);
    }
  }
  CHECK(kept == std::vector<std::string_view>{"Content-Type: text/event-stream"});
}

// ---- client address fields (issue #12 item 10, `trusted_proxies`) ------------------------
// RFC 7239 §5.2/§8.1 and the de-facto X-Forwarded-For convention: an address a client
// claims about itself is trusted only when the peer that relayed it is a configured proxy.

std::vector<core::Cidr> cidrs(std::initializer_list<std::string_view> texts) {
  std::vector<core::Cidr> out;
  for (std::string_view t : texts) {
    core::Cidr c;
    REQUIRE(core::parseCidr(t, c));
    out.push_back(c);
  }
  return out;
}

// The field views of "Name: value\r\n" lines, split here rather than by the parser: the parser
// now refuses `_` spellings of the forwarding fields outright (400, edge_parser_test), and
// these tests check that the forwarding rules would still drop them (defence in depth).
struct SplitHead {
  std::string data;
  RequestHead head;
};
void splitFields(SplitHead& h) {
  std::string_view rest = h.data;
  while (!rest.empty()) {
    size_t end = rest.find("\r\n");
    std::string_view line = rest.substr(0, end);
    rest.remove_prefix(end + 2);
    size_t colon = line.find(':');
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && value.front() == ' ') {
      value.remove_prefix(1);
    }
    h.head.fields.push_back(HeaderField{line.substr(0, colon), value, line});
  }
}

// What writeUpstreamHead writes for these request fields (minus the request line and
// Content-Length): forwarded fields as sent, then the gateway's client address fields.
std::string upstreamFields(const std::string& fields, std::string_view peer,
                           const std::vector<core::Cidr>& trusted,
                           std::string_view scheme = "http") {
  SplitHead split{"Host: a\r\n" + fields, {}};
  splitFields(split);
  const RequestHead& head = split.head;
  ConnectionTokens conn;
  conn.collect(head.fields);
  const bool trusted_peer = isTrustedPeer(peer, trusted);
  std::string out;
  for (const HeaderField& f : head.fields) {
    if (!replacedByForwarding(f, trusted_peer) && forwardRequestField(f, conn)) {
      out.append(f.line).append("\r\n");
    }
  }
  appendClientAddressFields(out, head.fields, peer, trusted_peer, scheme);
  return out;
}

// Every client address field in every spelling a client can use for it.
const std::vector<std::string> kClaimFields = {
    "X-Forwarded-For: 1.1.1.1\r\n",
    "x-forwarded-for: 1.1.1.1\r\n",
    "X-FORWARDED-FOR: 1.1.1.1, 2.2.2.2\r\n",
    "X-Forwarded-For:1.1.1.1\r\n",
    "X-Forwarded-For: \r\n",
    "X-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For: 2.2.2.2\r\n",
    "X_Forwarded_For: 1.1.1.1\r\n",
    "x-forwarded_for: 1.1.1.1\r\n",
    "Forwarded: for=1.1.1.1;proto=https\r\n",
    "FORWARDED: for=\"[::1]\"\r\nforwarded: for=1.1.1.1\r\n",
    "X-Real-IP: 1.1.1.1\r\n",
    "x-real-ip: 1.1.1.1\r\nX-REAL-IP: 2.2.2.2\r\n",
    "X_Real_IP: 1.1.1.1\r\n",
    "X-Forwarded-Proto: https\r\n",
    "x-forwarded-proto: https\r\nX-Forwarded-Proto: http\r\n",
    "X_FORWARDED_PROTO: https\r\n",
    "X-Forwarded-Host: evil.example\r\n",
    "x-forwarded-host: evil.example\r\nX-FORWARDED-HOST: b\r\n",
    "X_Forwarded_Host: evil.example\r\n",
    "X-Forwarded-Port: 443\r\n",
    "X-Forwarded-Prefix: /admin\r\n",
    "X-Forwarded-Server: s\r\n",
    "X-Forwarded-Ssl: on\r\n",
    "X-Forwarded-For: 1.1.1.1\r\nForwarded: for=2.2.2.2\r\nX-Real-IP: 3.3.3.3\r\n"
    "X-Forwarded-Proto: https\r\nX-Forwarded-Host: h\r\n",
};

TEST_CASE("client address fields: names in every case and with _ for -",
          "[http][forwarding][edge-fwd]") {
  using K = ClientAddressField;
  struct Row {
    std::string_view name;
    K kind;
  };
  for (const Row& r : {
           Row{"X-Forwarded-For", K::kXForwardedFor},
           Row{"x-forwarded-for", K::kXForwardedFor},
           Row{"X-FORWARDED-FOR", K::kXForwardedFor},
           Row{"X-Forwarded-Proto", K::kXForwardedProto},
           Row{"x-FORWARDED-proto", K::kXForwardedProto},
           Row{"Forwarded", K::kOther},
           Row{"fORWARDED", K::kOther},
           Row{"X-Real-IP", K::kOther},
           Row{"x-real-ip", K::kOther},
           Row{"X-Forwarded-Host", K::kOther},
           Row{"X-Forwarded-Port", K::kOther},
           Row{"X-Forwarded-X", K::kOther},
           Row{"X_Forwarded_For", K::kUnderscored},
           Row{"X-Forwarded_For", K::kUnderscored},
           Row{"x_forwarded_proto", K::kUnderscored},
           Row{"X_Real_IP", K::kUnderscored},
           Row{"X-Forwarded_Host", K::kUnderscored},
           Row{"X-Forwarded-", K::kNone},  // no suffix: not a member of the family
           Row{"X-Forwarded", K::kNone},
           Row{"X-Forwarded-Fo", K::kOther},
           Row{"X-Forwarded-For-Me", K::kOther},
           Row{"Forwarded-For", K::kNone},
           Row{"X-Real-IPs", K::kNone},
           Row{"Host", K::kNone},
           Row{"Authorization", K::kNone},
           Row{"Mcp-Method", K::kNone},
           Row{"", K::kNone},
       }) {
    INFO(r.name);
    CHECK(clientAddressField(r.name) == r.kind);
  }
}

TEST_CASE("isTrustedPeer: IPv4, IPv6, IPv4-mapped IPv6, unparsable",
          "[http][forwarding][edge-fwd]") {
  const auto trusted = cidrs({"127.0.0.1", "10.0.0.0/8", "fd00::/8"});
  struct Row {
    std::string_view peer;
    bool trusted;
  };
  for (const Row& r : {
           Row{"127.0.0.1", true},
           Row{"::ffff:127.0.0.1", true},  // dual-stack listener reporting IPv4
           Row{"10.200.1.1", true},
           Row{"::ffff:10.1.1.1", true},
           Row{"fd12::1", true},
           Row{"127.0.0.2", false},
           Row{"::1", false},
           Row{"fe80::1", false},
           Row{"", false},
           Row{"localhost", false},
           Row{"127.0.0.1:80", false},
       }) {
    INFO(r.peer);
    CHECK(isTrustedPeer(r.peer, trusted) == r.trusted);
  }
  CHECK_FALSE(isTrustedPeer("127.0.0.1", {}));
}

TEST_CASE("untrusted peer: every client address field removed, peer and scheme set",
          "[http][forwarding][edge-fwd]") {
  // Default (empty trusted_proxies) and a list the peer is not in behave the same.
  for (const auto& trusted : {std::vector<core::Cidr>{}, cidrs({"10.0.0.0/8", "::1"})}) {
    for (const std::string& claims : kClaimFields) {
      INFO(claims);
      // Claims alone, before and after ordinary fields.
      CHECK(upstreamFields(claims, "203.0.113.9", trusted) ==
            "Host: a\r\nX-Forwarded-For: 203.0.113.9\r\nX-Forwarded-Proto: http\r\n");
      CHECK(upstreamFields("Accept: */*\r\n" + claims + "X-Other: 1\r\n", "203.0.113.9", trusted) ==
            "Host: a\r\nAccept: */*\r\nX-Other: 1\r\n"
            "X-Forwarded-For: 203.0.113.9\r\nX-Forwarded-Proto: http\r\n");
      CHECK(upstreamFields(claims, "2001:db8::7", trusted, "https") ==
            "Host: a\r\nX-Forwarded-For: 2001:db8::7\r\nX-Forwarded-Proto: https\r\n");
    }
  }
}

TEST_CASE("trusted peer: X-Forwarded-For merged and appended, the rest kept as sent",
          "[http][forwarding][edge-fwd]") {
  const auto trusted = cidrs({"127.0.0.1", "10.0.0.0/8"});
  struct Row {
    std::string_view in;
    std::string_view out;  // after "Host: a\r\n"
  };
  for (const Row& r : {
           Row{"", "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"},
           Row{"X-Forwarded-For: 1.1.1.1\r\n",
               "X-Forwarded-For: 1.1.1.1, 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"},
           // Every field, every list element, in order, as sent (spaces and empties kept).
           Row{"x-forwarded-for: 1.1.1.1 ,, 2.2.2.2\r\nAccept: x\r\nX-FORWARDED-FOR: [::1]:80\r\n",
               "Accept: x\r\nX-Forwarded-For: 1.1.1.1 ,, 2.2.2.2, [::1]:80, 127.0.0.1\r\n"
               "X-Forwarded-Proto: http\r\n"},
           Row{"X-Forwarded-For:\r\nX-Forwarded-For: 1.1.1.1\r\n",
               "X-Forwarded-For: 1.1.1.1, 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"},
           // X-Forwarded-Proto kept (every field, as sent) and then not added.
           Row{"X-Forwarded-Proto: https\r\n",
               "X-Forwarded-Proto: https\r\nX-Forwarded-For: 127.0.0.1\r\n"},
           Row{"x-forwarded-proto: https\r\nX-Forwarded-Proto: wss\r\n",
               "x-forwarded-proto: https\r\nX-Forwarded-Proto: wss\r\n"
               "X-Forwarded-For: 127.0.0.1\r\n"},
           Row{"Forwarded: for=1.1.1.1\r\nX-Real-IP: 1.1.1.1\r\nX-Forwarded-Host: h\r\n"
               "X-Forwarded-Port: 8443\r\n",
               "Forwarded: for=1.1.1.1\r\nX-Real-IP: 1.1.1.1\r\nX-Forwarded-Host: h\r\n"
               "X-Forwarded-Port: 8443\r\n"
               "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"},
           // Underscore spellings are dropped even from a trusted peer.
           Row{"X_Forwarded_For: 6.6.6.6\r\nX_Forwarded_Proto: https\r\nX_Real_IP: 6.6.6.6\r\n",
               "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-Proto: http\r\n"},
       }) {
    INFO(r.in);
    CHECK(upstreamFields(std::string(r.in), "127.0.0.1", trusted) ==
          "Host: a\r\n" + std::string(r.out));
  }
  // The IPv4-mapped spelling of a trusted peer is trusted (and written as reported).
  CHECK(upstreamFields("X-Forwarded-For: 1.1.1.1\r\n", "::ffff:10.1.2.3", trusted) ==
        "Host: a\r\nX-Forwarded-For: 1.1.1.1, ::ffff:10.1.2.3\r\nX-Forwarded-Proto: http\r\n");
}

TEST_CASE("parseForwardedElement: bare, with port, bracketed, garbage",
          "[http][forwarding][edge-fwd]") {
  struct Row {
    std::string_view element;
    bool ok;
    std::string_view addr;
  };
  for (const Row& r : {
           Row{"1.2.3.4", true, "1.2.3.4"},
           Row{"1.2.3.4:5678", true, "1.2.3.4"},
           Row{"1.2.3.4:65535", true, "1.2.3.4"},
           Row{"::1", true, "::1"},
           Row{"2001:db8::1", true, "2001:db8::1"},
           Row{"::ffff:1.2.3.4", true, "::ffff:1.2.3.4"},
           Row{"[::1]", true, "::1"},
           Row{"[::1]:80", true, "::1"},
           Row{"[2001:db8::1]:8080", true, "2001:db8::1"},
           Row{"1.2.3.4:", false, ""},
           Row{"1.2.3.4:65536", false, ""},
           Row{"1.2.3.4:123456", false, ""},
           Row{"1.2.3.4:8a", false, ""},
           Row{"[1.2.3.4]", false, ""},  // IPv4 is never bracketed
           Row{"[1.2.3.4]:80", false, ""},
           Row{"[::1", false, ""},
           Row{"[::1]x", false, ""},
           Row{"[::1]:", false, ""},
           Row{"[]", false, ""},
           Row{"::1]", false, ""},
           Row{"01.2.3.4", false, ""},
           Row{"1.2.3", false, ""},
           Row{"1.2.3.4.5", false, ""},
           Row{"256.1.1.1", false, ""},
           Row{"fe80::1%eth0", false, ""},
           Row{"unknown", false, ""},
           Row{"_hidden", false, ""},
           Row{"for=1.2.3.4", false, ""},
           Row{"1.2.3.4 5.6.7.8", false, ""},
           Row{"\"1.2.3.4\"", false, ""},
           Row{"localhost", false, ""},
       }) {
    INFO(r.element);
    std::string_view addr;
    core::IpAddress ip;
    REQUIRE(parseForwardedElement(r.element, addr, ip) == r.ok);
    if (r.ok) {
      CHECK(addr == r.addr);
    }
  }
}

TEST_CASE("clientAddress: rightmost address not in trusted_proxies",
          "[http][forwarding][edge-fwd]") {
  const auto trusted = cidrs({"127.0.0.1", "10.0.0.0/8", "fd00::/8"});
  struct Row {
    const char* why;
    std::string_view fields;
    std::string_view peer;
    std::string_view client;
  };
  const Row rows[] = {
      {"untrusted peer: the peer, whatever it claims", "X-Forwarded-For: 1.1.1.1\r\n",
       "203.0.113.9", "203.0.113.9"},
      {"untrusted IPv6 peer", "X-Forwarded-For: 1.1.1.1\r\n", "2001:db8::9", "2001:db8::9"},
      {"trusted peer, no field: the peer", "", "127.0.0.1", "127.0.0.1"},
      {"trusted peer, one address", "X-Forwarded-For: 1.1.1.1\r\n", "127.0.0.1", "1.1.1.1"},
      {"mapped trusted peer", "X-Forwarded-For: 1.1.1.1\r\n", "::ffff:127.0.0.1", "1.1.1.1"},
      {"rightmost untrusted wins over spoofed left entries",
       "X-Forwarded-For: 6.6.6.6, 1.1.1.1\r\n", "127.0.0.1", "1.1.1.1"},
      {"trusted hops skipped", "X-Forwarded-For: 6.6.6.6, 1.1.1.1, 10.0.0.2, 10.9.9.9\r\n",
       "127.0.0.1", "1.1.1.1"},
      {"several fields walked last to first",
       "X-Forwarded-For: 6.6.6.6, 1.1.1.1\r\nX-Forwarded-For: 10.0.0.2\r\n", "127.0.0.1",
       "1.1.1.1"},
      {"case of the field name", "x-FORWARDED-for: 1.1.1.1\r\n", "127.0.0.1", "1.1.1.1"},
      {"underscore spelling ignored", "X_Forwarded_For: 6.6.6.6\r\n", "127.0.0.1", "127.0.0.1"},
      {"other fields ignored", "X-Real-IP: 6.6.6.6\r\nForwarded: for=6.6.6.6\r\n", "127.0.0.1",
       "127.0.0.1"},
      {"spaces and tabs around elements", "X-Forwarded-For:  1.1.1.1 ,\t10.0.0.1\t\r\n",
       "127.0.0.1", "1.1.1.1"},
      {"empty elements skipped", "X-Forwarded-For: 1.1.1.1,, ,10.0.0.1,\r\n", "127.0.0.1",
       "1.1.1.1"},
      {"empty field skipped", "X-Forwarded-For: 1.1.1.1\r\nX-Forwarded-For:\r\n", "127.0.0.1",
       "1.1.1.1"},
      {"IPv6 element", "X-Forwarded-For: 2001:db8::1\r\n", "127.0.0.1", "2001:db8::1"},
      {"IPv6 trusted hop", "X-Forwarded-For: 2001:db8::1, fd00::5\r\n", "127.0.0.1", "2001:db8::1"},
      {"IPv4 with port", "X-Forwarded-For: 1.2.3.4:5678\r\n", "127.0.0.1", "1.2.3.4"},
      {"bracketed IPv6 with port", "X-Forwarded-For: [2001:db8::1]:80\r\n", "127.0.0.1",
       "2001:db8::1"},
      {"bracketed trusted hop with port", "X-Forwarded-For: 1.1.1.1, [fd00::1]:80\r\n", "127.0.0.1",
       "1.1.1.1"},
      {"garbage ends the walk at the trusted peer", "X-Forwarded-For: 1.1.1.1, garbage\r\n",
       "127.0.0.1", "127.0.0.1"},
      {"garbage ends the walk at the last trusted hop",
       "X-Forwarded-For: 1.1.1.1, unknown, 10.0.0.7\r\n", "127.0.0.1", "10.0.0.7"},
      {"garbage left of the client does not matter", "X-Forwarded-For: garbage, 1.1.1.1\r\n",
       "127.0.0.1", "1.1.1.1"},
      {"a spoofed zone id is garbage", "X-Forwarded-For: fe80::1%25eth0\r\n", "127.0.0.1",
       "127.0.0.1"},
      {"all trusted: the leftmost", "X-Forwarded-For: 10.0.0.1, 10.0.0.2\r\n", "127.0.0.1",
       "10.0.0.1"},
      {"all trusted across fields",
       "X-Forwarded-For: 10.0.0.3\r\nX-Forwarded-For: 10.0.0.1, 10.0.0.2\r\n", "127.0.0.1",
       "10.0.0.3"},
      {"mapped element in trusted range is trusted",
       "X-Forwarded-For: 1.1.1.1, ::ffff:10.0.0.1\r\n", "127.0.0.1", "1.1.1.1"},
  };
  for (const Row& r : rows) {
    INFO(r.why);
    SplitHead split{"Host: a\r\n" + std::string(r.fields), {}};
    splitFields(split);
    const RequestHead& head = split.head;
    CHECK(clientAddress(head.fields, r.peer, trusted) == r.client);
    // Empty trusted_proxies: always the peer.
    CHECK(clientAddress(head.fields, r.peer, {}) == r.peer);
  }
}

TEST_CASE("clientAddress: long chains are walked at most kMaxForwardedElements deep",
          "[http][forwarding][edge-fwd]") {
  const auto trusted = cidrs({"127.0.0.1", "10.0.0.0/8"});
  auto run = [&](const std::string& xff) {
    static std::string data;
    data = "GET / HTTP/1.1\r\nHost: a\r\nX-Forwarded-For: " + xff + "\r\n\r\n";
    static RequestHead head;
    auto parser = makeHttp1Parser();
    HeadLimits lim;
    lim.max_head_bytes = 1 << 20;
    lim.max_field_line = 1 << 20;
    REQUIRE(parser->parseRequest(data, lim, head).status == ParseStatus::kComplete);
    return std::string(clientAddress(head.fields, "127.0.0.1", trusted));
  };
  // 63 trusted hops right of the client: the client is the 64th element.
  std::string chain = "1.1.1.1";
  for (int i = 0; i < 63; ++i) {
    chain += ", 10.0.0." + std::to_string(i % 250 + 1);
  }
  CHECK(run(chain) == "1.1.1.1");
  // 64 trusted hops: the walk stops at the leftmost one it looked at.
  CHECK(run(chain + ", 10.0.0.250") == "10.0.0.1");
  // Many empty elements count too (no unbounded walk over ",,,,").
  CHECK(run("1.1.1.1" + std::string(10000, ',')) == "127.0.0.1");
  // A huge all-trusted chain: bounded, ends at a trusted hop.
  std::string big;
  for (int i = 0; i < 5000; ++i) {
    big += "10.0.0.9, ";
  }
  CHECK(run(big + "10.0.0.8") == "10.0.0.9");
}

}  // namespace
}  // namespace gw::http
