// Unit tests for the MCP header contract (gateway/mcp/contract.h, spec items 38-56).

#include "gateway/mcp/contract.h"

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

namespace gw::mcp {
namespace {

using http::HeaderField;

std::vector<HeaderField> fieldsOf(
    std::initializer_list<std::pair<std::string_view, std::string_view>> kv) {
  std::vector<HeaderField> out;
  for (const auto& [n, v] : kv) {
    out.push_back(HeaderField{n, v, {}});
  }
  return out;
}

TEST_CASE("contract: a complete tools/call head", "[mcp][contract]") {
  const auto fields = fieldsOf({
      {"Host", "localhost"},
      {"mcp-protocol-version", "2026-07-28"},
      {"MCP-METHOD", "tools/call"},
      {"mcp-name", "get_weather"},
      {"Mcp-Param-Region", "us west 1"},
      {"MCP-PARAM-city", "=?base64?5pel5pys6Kqe?="},
      {"Mcp-Param-Empty", ""},
      {"Content-Type", "application/json"},
  });
  ValueArena arena(256);
  McpHeaders h;
  const ContractResult r = readMcpHeaders(fields, arena, h);
  REQUIRE(r.error == ContractError::kNone);
  CHECK(h.has_version);
  CHECK(h.version == "2026-07-28");
  CHECK(h.has_method);
  CHECK(h.method == "tools/call");
  REQUIRE(h.has_name);
  CHECK(h.name.value == "get_weather");
  CHECK_FALSE(h.name.sentinel);
  CHECK(h.name.value.data() == fields[3].value.data());  // literal: a view, no copy
  REQUIRE(h.params.size() == 3);
  CHECK(h.params[0].name == "Region");
  CHECK(h.params[0].v.value == "us west 1");
  CHECK(h.params[1].name == "city");  // as sent
  CHECK(h.params[1].v.sentinel);
  CHECK(h.params[1].v.raw == "=?base64?5pel5pys6Kqe?=");
  CHECK(h.params[1].v.value == "日本語");
  CHECK(h.params[2].v.value.empty());
  CHECK_FALSE(h.has_session_id);
  CHECK_FALSE(h.has_last_event_id);

  // findParam is case-insensitive on {Name}.
  REQUIRE(h.findParam("CITY") != nullptr);
  CHECK(h.findParam("CITY")->v.value == "日本語");
  REQUIRE(h.findParam("region") != nullptr);
  CHECK(h.findParam("region")->v.value == "us west 1");
  CHECK(h.findParam("Tenant") == nullptr);
  CHECK(h.findParam("") == nullptr);
}

TEST_CASE("contract: no MCP headers at all", "[mcp][contract]") {
  const auto fields = fieldsOf({{"Host", "x"}, {"Accept", "*/*"}, {"M", "1"}});
  ValueArena arena(16);
  McpHeaders h;
  CHECK(readMcpHeaders(fields, arena, h).error == ContractError::kNone);
  CHECK_FALSE(h.has_version);
  CHECK_FALSE(h.has_method);
  CHECK_FALSE(h.has_name);
  CHECK(h.params.empty());
}

TEST_CASE("contract: sentinel name decoded, originals untouched", "[mcp][contract]") {
  const auto fields = fieldsOf({{"Mcp-Name", "=?base64?SGVsbG8sIOS4lueVjA==?="},
                                {"Mcp-Param-Literal", "=?BASE64?SGVsbG8=?="}});
  ValueArena arena(64);
  McpHeaders h;
  REQUIRE(readMcpHeaders(fields, arena, h).error == ContractError::kNone);
  CHECK(h.name.sentinel);
  CHECK(h.name.value == "Hello, 世界");
  CHECK(h.name.raw == "=?base64?SGVsbG8sIOS4lueVjA==?=");
  CHECK(fields[0].value == "=?base64?SGVsbG8sIOS4lueVjA==?=");
  REQUIRE(h.findParam("literal") != nullptr);
  CHECK_FALSE(h.findParam("literal")->v.sentinel);
  CHECK(h.findParam("literal")->v.value == "=?BASE64?SGVsbG8=?=");
}

struct RejectCase {
  std::vector<std::pair<std::string_view, std::string_view>> fields;
  ContractError error;
  std::string_view header;  // the offending header as sent
  const char* why;
};

TEST_CASE("contract: rejections", "[mcp][contract]") {
  const std::vector<RejectCase> cases = {
      {{{"Mcp-Method", "tools/call"}, {"mcp-method", "tools/list"}},
       ContractError::kDuplicate,
       "mcp-method",
       "duplicate Mcp-Method in different case"},
      {{{"Mcp-Method", "tools/call"}, {"Mcp-Method", "tools/call"}},
       ContractError::kDuplicate,
       "Mcp-Method",
       "duplicate Mcp-Method, same value"},
      {{{"MCP-Protocol-Version", "2026-07-28"}, {"mcp-protocol-version", "2026-07-28"}},
       ContractError::kDuplicate,
       "mcp-protocol-version",
       "duplicate version"},
      {{{"Mcp-Name", "a"}, {"MCP-NAME", "b"}},
       ContractError::kDuplicate,
       "MCP-NAME",
       "duplicate Mcp-Name"},
      {{{"Mcp-Param-Region", "eu"}, {"mcp-param-REGION", "us"}},
       ContractError::kDuplicate,
       "mcp-param-REGION",
       "duplicate param, {Name} case differs"},
      {{{"Mcp-Method", "tools/call, tools/list"}},
       ContractError::kInvalidValue,
       "Mcp-Method",
       "comma list in Mcp-Method"},
      {{{"Mcp-Method", "tools/call,tools/list"}},
       ContractError::kInvalidValue,
       "Mcp-Method",
       "comma list without space"},
      {{{"MCP-Protocol-Version", "2026-07-28, 2025-11-25"}},
       ContractError::kInvalidValue,
       "MCP-Protocol-Version",
       "comma list in version"},
      {{{"Mcp-Method", ""}}, ContractError::kInvalidValue, "Mcp-Method", "empty method"},
      {{{"MCP-Protocol-Version", ""}},
       ContractError::kInvalidValue,
       "MCP-Protocol-Version",
       "empty version"},
      {{{"Mcp-Method", "tools call"}}, ContractError::kInvalidValue, "Mcp-Method", "SP"},
      {{{"Mcp-Method", "tools\tcall"}}, ContractError::kInvalidValue, "Mcp-Method", "HTAB"},
      {{{"Mcp-Method", "tools/c\xc3\xa4ll"}},
       ContractError::kInvalidValue,
       "Mcp-Method",
       "obs-text in method"},
      {{{"MCP-Protocol-Version", "2026-07-28\x7f"}},
       ContractError::kInvalidValue,
       "MCP-Protocol-Version",
       "DEL in version"},
      {{{"Mcp-Name", "caf\xc3\xa9"}}, ContractError::kInvalidValue, "Mcp-Name", "obs-text"},
      {{{"Mcp-Name", "a\tb"}}, ContractError::kInvalidValue, "Mcp-Name", "HTAB in name"},
      {{{"Mcp-Name",
         "a\x01"
         "b"}},
       ContractError::kInvalidValue,
       "Mcp-Name",
       "CTL in name"},
      {{{"Mcp-Param-X", "v\x7f"}}, ContractError::kInvalidValue, "Mcp-Param-X", "DEL"},
      {{{"Mcp-Param-X", "\xff"}}, ContractError::kInvalidValue, "Mcp-Param-X", "obs-text"},
      {{{"Mcp-Param-", "v"}}, ContractError::kInvalidValue, "Mcp-Param-", "empty {Name}"},
      {{{"mcp-param-", ""}}, ContractError::kInvalidValue, "mcp-param-", "empty {Name}"},
      {{{
           "Mcp-Name",
           "=?base64?SGVsbG8?=",
       }},
       ContractError::kInvalidSentinel,
       "Mcp-Name",
       "missing padding"},
      {{{"Mcp-Param-Q", "=?base64?SGVs!!!bG8=?="}},
       ContractError::kInvalidSentinel,
       "Mcp-Param-Q",
       "bad base64 chars"},
      {{{"Mcp-Param-Q", "=?base64?/w==?="}},
       ContractError::kInvalidSentinel,
       "Mcp-Param-Q",
       "decodes to non-UTF-8"},
      {{{"Mcp-Method", "tools/call"},
        {"Mcp-Name", "ok"},
        {"Mcp-Param-A", "1"},
        {"Mcp-Param-B", "2"},
        {"Mcp-Param-a", "3"}},
       ContractError::kDuplicate,
       "Mcp-Param-a",
       "duplicate after other params"},
  };
  for (const RejectCase& c : cases) {
    CAPTURE(c.why);
    std::vector<HeaderField> fields;
    for (const auto& [n, v] : c.fields) {
      fields.push_back(HeaderField{n, v, {}});
    }
    ValueArena arena(64);
    McpHeaders h;
    const ContractResult r = readMcpHeaders(fields, arena, h);
    CHECK(r.error == c.error);
    CHECK(r.header == c.header);
    CHECK(std::string_view(r.reason).size() > 0);
  }
}

TEST_CASE("contract: values that stay plain", "[mcp][contract]") {
  // Commas are fine in Mcp-Name / Mcp-Param values (taken whole); interior SP is fine;
  // a sentinel in Mcp-Method is just a (visible ASCII) literal (item 52).
  const auto fields = fieldsOf({{"Mcp-Method", "=?base64?dG9vbHMvY2FsbA==?="},
                                {"Mcp-Name", "a, b"},
                                {"Mcp-Param-List", "x,y,z"},
                                {"Mcp-Param-Method", "GET"}});
  ValueArena arena(64);
  McpHeaders h;
  REQUIRE(readMcpHeaders(fields, arena, h).error == ContractError::kNone);
  CHECK(h.method == "=?base64?dG9vbHMvY2FsbA==?=");
  CHECK(h.name.value == "a, b");
  CHECK(h.findParam("list")->v.value == "x,y,z");
  // Item 41: Mcp-Param-Method is unrelated to Mcp-Method.
  CHECK(h.findParam("Method")->v.value == "GET");
  CHECK(arena.used() == 0);
}

TEST_CASE("contract: session and Last-Event-ID flags", "[mcp][contract]") {
  ValueArena arena(16);
  McpHeaders h;
  auto fields = fieldsOf({{"mcp-session-id", "abc"}, {"LAST-EVENT-ID", "42"}});
  REQUIRE(readMcpHeaders(fields, arena, h).error == ContractError::kNone);
  CHECK(h.has_session_id);
  CHECK(h.has_last_event_id);
  fields = fieldsOf({{"Mcp-Session-Id", "abc"}, {"Mcp-Session-Id", "def"}});
  REQUIRE(readMcpHeaders(fields, arena, h).error == ContractError::kNone);
  CHECK(h.has_session_id);
  CHECK_FALSE(h.has_last_event_id);
  fields = fieldsOf({{"Mcp-Session", "abc"}, {"Last-Event", "1"}});
  REQUIRE(readMcpHeaders(fields, arena, h).error == ContractError::kNone);
  CHECK_FALSE(h.has_session_id);
  CHECK_FALSE(h.has_last_event_id);
}

TEST_CASE("contract: state is reset between requests", "[mcp][contract]") {
  ValueArena arena(64);
  McpHeaders h;
  auto first = fieldsOf({{"Mcp-Method", "tools/call"},
                         {"Mcp-Name", "x"},
                         {"Mcp-Param-A", "1"},
                         {"Mcp-Session-Id", "s"}});
  REQUIRE(readMcpHeaders(first, arena, h).error == ContractError::kNone);
  REQUIRE(h.params.size() == 1);
  arena.reset();
  auto second = fieldsOf({{"Mcp-Method", "tools/list"}});
  REQUIRE(readMcpHeaders(second, arena, h).error == ContractError::kNone);
  CHECK(h.method == "tools/list");
  CHECK_FALSE(h.has_name);
  CHECK_FALSE(h.has_session_id);
  CHECK(h.params.empty());
  // The same param in a new request is not a duplicate of the old one.
  auto third = fieldsOf({{"Mcp-Param-A", "2"}});
  REQUIRE(readMcpHeaders(third, arena, h).error == ContractError::kNone);
  CHECK(h.findParam("a")->v.value == "2");
}

TEST_CASE("contract: arena too small for the decoded values", "[mcp][contract]") {
  const auto fields =
      fieldsOf({{"Mcp-Param-A", "=?base64?SGVsbG8=?="}, {"Mcp-Param-B", "=?base64?SGVsbG8=?="}});
  ValueArena arena(8);
  McpHeaders h;
  const ContractResult r = readMcpHeaders(fields, arena, h);
  CHECK(r.error == ContractError::kInvalidSentinel);
  CHECK(r.header == "Mcp-Param-B");
  CHECK(std::string_view(r.reason) == "header values too large");
}

}  // namespace
}  // namespace gw::mcp

namespace gw::mcp {
namespace {

// Spec item 62: "SHOULD reject oversized/excessive headers before base64-decoding or
// parsing" — the Mcp-Param-* count is decided before any value is looked at.
TEST_CASE("contract: spec item 62, Mcp-Param count over the limit before any decoding",
          "[mcp][contract][edge-http]") {
  struct Case {
    const char* name;
    size_t params;
    uint32_t limit;
    const char* spelling;  // name prefix as sent
    bool bad_sentinel;     // every value an invalid sentinel: must not be what is reported
    ContractError want;
  };
  const Case cases[] = {
      {"at the default limit", 32, kDefaultMaxParams, "Mcp-Param-", false, ContractError::kNone},
      {"one over the default", 33, kDefaultMaxParams, "Mcp-Param-", false,
       ContractError::kTooManyParams},
      {"lower case names", 5, 4, "mcp-param-", false, ContractError::kTooManyParams},
      {"upper case names", 5, 4, "MCP-PARAM-", false, ContractError::kTooManyParams},
      {"invalid sentinels, over", 5, 4, "Mcp-Param-", true, ContractError::kTooManyParams},
      {"invalid sentinels, at the limit", 4, 4, "Mcp-Param-", true,
       ContractError::kInvalidSentinel},
      {"limit 1, two", 2, 1, "Mcp-Param-", false, ContractError::kTooManyParams},
  };
  for (const Case& c : cases) {
    INFO(c.name);
    std::vector<std::string> names;
    names.reserve(c.params);
    for (size_t i = 0; i < c.params; ++i) {
      names.push_back(std::string(c.spelling) + "P" + std::to_string(i));
    }
    std::vector<HeaderField> fields;
    fields.push_back(HeaderField{"Mcp-Method", "tools/call", {}});
    for (const std::string& n : names) {
      fields.push_back(HeaderField{n, c.bad_sentinel ? "=?base64?!!!?=" : "=?base64?SGk=?=", {}});
    }
    ValueArena arena(4096);
    McpHeaders h;
    const ContractResult r = readMcpHeaders(fields, arena, h, c.limit);
    CHECK(r.error == c.want);
    if (c.want == ContractError::kTooManyParams) {
      CHECK(arena.used() == 0);  // nothing was decoded
      CHECK(h.params.empty());
      CHECK(r.header == names[c.limit]);  // the first field over the limit
    }
  }
  // Fields that only look similar do not count.
  std::vector<HeaderField> fields = {
      {"Mcp-Params", "1", {}}, {"X-Mcp-Param-A", "1", {}}, {"Mcp-Param-A", "1", {}}};
  ValueArena arena(64);
  McpHeaders h;
  CHECK(readMcpHeaders(fields, arena, h, 1).error == ContractError::kNone);
}

}  // namespace
}  // namespace gw::mcp
