// mcp::looksLikeResponse: whether a JSON-RPC message prefix is a response (JSON-RPC 2.0 §5: a
// "result" or an "error" member; a request or notification has "method"), decided on the
// top-level members inside the prefix only, in any member order and spacing.

#include <catch.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/mcp/id_scan.h"

TEST_CASE("mcp: looksLikeResponse tells responses from requests and notifications",
          "[mcp][response-scan]") {
  struct Case {
    std::string_view prefix;
    bool response;
  };
  const Case cases[] = {
      // Responses, every member order and spacing.
      {R"({"jsonrpc":"2.0","id":1,"result":{}})", true},
      {R"({"result":{"content":[]},"jsonrpc":"2.0","id":"a"})", true},
      {R"({"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"x"}})", true},
      {"{ \"jsonrpc\" : \"2.0\" ,\n \"id\" : 3 ,\t\"result\" : 1 }", true},
      {R"({"id":{"nested":[1,2,{"result":0}]},"error":{}})", true},
      {R"({"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"cut)", true},
      {R"([{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}])", true},
      // Requests and notifications.
      {R"({"jsonrpc":"2.0","method":"notifications/progress","params":{}})", false},
      {R"({"method":"elicitation/create","id":5,"jsonrpc":"2.0","params":{}})", false},
      {R"({"jsonrpc":"2.0","id":5,"method":"x","result":{}})", false},     // method decides first
      {R"({"jsonrpc":"2.0","params":{"result":1},"method":"m"})", false},  // nested key
      {R"([{"jsonrpc":"2.0","method":"m"}])", false},
      // Undecidable inside the prefix, or not a message.
      {R"({"jsonrpc":"2.0","id":"cut before the key)", false},
      {R"({"jsonrpc":"2.0","params":{"long":"value that never ends)", false},
      {R"({"res\u0075lt":{}})", false},  // an escaped key is not looked into
      {"", false},
      {"null", false},
      {"\"result\"", false},
      {"{}", false},
      {"[]", false},
  };
  for (const Case& c : cases) {
    INFO(c.prefix);
    CHECK(gw::mcp::looksLikeResponse(c.prefix) == c.response);
  }
}

TEST_CASE("sameApartFromId: the same answer to another request is the same") {
  using gw::mcp::sameApartFromId;
  const std::string list = R"("result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}]})";
  struct Case {
    std::string a;
    std::string b;
    bool same;
  };
  const std::vector<Case> cases = {
      // Equal bytes.
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}", R"({"jsonrpc":"2.0","id":1,)" + list + "}",
       true},
      // Ids of every kind and length, first or last.
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}", R"({"jsonrpc":"2.0","id":2,)" + list + "}",
       true},
      {R"({"jsonrpc":"2.0","id":9,)" + list + "}", R"({"jsonrpc":"2.0","id":10,)" + list + "}",
       true},
      {R"({"jsonrpc":"2.0","id":21,)" + list + "}", R"({"jsonrpc":"2.0","id":31,)" + list + "}",
       true},
      {R"({"jsonrpc":"2.0","id":"a-1",)" + list + "}",
       R"({"jsonrpc":"2.0","id":"a-22",)" + list + "}", true},
      {R"({"jsonrpc":"2.0","id":7,)" + list + "}", R"({"jsonrpc":"2.0","id":"7",)" + list + "}",
       true},
      {R"({"id":1,"jsonrpc":"2.0",)" + list + "}", R"({"id":12,"jsonrpc":"2.0",)" + list + "}",
       true},
      {"{" + list + R"(,"jsonrpc":"2.0","id":1})", "{" + list + R"(,"jsonrpc":"2.0","id":99})",
       true},
      {"{" + list + R"(,"jsonrpc":"2.0","id" : 1 })", "{" + list + R"(,"jsonrpc":"2.0","id" : 2 })",
       true},
      // The list differs (too, or only).
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}",
       R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"b","inputSchema":{"type":"object"}}]}})",
       false},
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}",
       R"({"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b","inputSchema":{"type":"object"}}]}})",
       false},
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}", R"({"jsonrpc":"2.0","id":1,)" + list + " }",
       false},
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}", R"({"jsonrpc":"2.0","id":1,)" + list, false},
      // An "id" inside the result is part of the list, not the message's id.
      {R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"default":{"id":1}}}]}})",
       R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"default":{"id":2}}}]}})",
       false},
      {R"({"jsonrpc":"2.0","result":{"tools":[{"id":1,"name":"a"}]},"id":5})",
       R"({"jsonrpc":"2.0","result":{"tools":[{"id":2,"name":"a"}]},"id":5})", false},
      // Ids the scan does not take apart: escapes, a key spelled otherwise.
      {R"({"jsonrpc":"2.0","id":"a\"1",)" + list + "}",
       R"({"jsonrpc":"2.0","id":"a\"2",)" + list + "}", false},
      {R"({"jsonrpc":"2.0","\u0069d":1,)" + list + "}",
       R"({"jsonrpc":"2.0","\u0069d":2,)" + list + "}", false},
      {R"({"jsonrpc":"2.0","xid":1,)" + list + "}", R"({"jsonrpc":"2.0","xid":2,)" + list + "}",
       false},
      // Empty and tiny texts.
      {"", "", true},
      {"", "{}", false},
      {"{", "}", false},
  };
  for (const Case& c : cases) {
    INFO(c.a << "\n" << c.b);
    CHECK(sameApartFromId(c.a, c.b) == c.same);
    CHECK(sameApartFromId(c.b, c.a) == c.same);
  }
}

TEST_CASE("sameApartFromId: a large list differing in one byte anywhere is not the same") {
  std::string tools;
  for (int i = 0; i < 2000; ++i) {
    tools += R"({"name":"tool_)" + std::to_string(i) + R"(","inputSchema":{"type":"object"}},)";
  }
  tools.pop_back();
  const std::string a = R"({"jsonrpc":"2.0","id":1,"result":{"tools":[)" + tools + "]}}";
  const std::string b = R"({"jsonrpc":"2.0","id":2,"result":{"tools":[)" + tools + "]}}";
  CHECK(gw::mcp::sameApartFromId(a, b));
  for (size_t at :
       {size_t{40}, size_t{4095}, size_t{4096}, size_t{4097}, b.size() / 2, b.size() - 3}) {
    std::string changed = b;
    changed[at] = changed[at] == 'x' ? 'y' : 'x';
    INFO(at);
    CHECK_FALSE(gw::mcp::sameApartFromId(a, changed));
  }
}

TEST_CASE(
    "SameAnswerMatcher: fed in any pieces, it agrees with sameApartFromId and rebuilds "
    "what it was fed") {
  using gw::mcp::SameAnswerMatcher;
  const std::string list = R"("result":{"tools":[{"name":"a","inputSchema":{"type":"object"}}]})";
  const std::vector<std::pair<std::string, std::string>> pairs = {
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}", R"({"jsonrpc":"2.0","id":1,)" + list + "}"},
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}", R"({"jsonrpc":"2.0","id":2,)" + list + "}"},
      {R"({"jsonrpc":"2.0","id":9,)" + list + "}", R"({"jsonrpc":"2.0","id":10,)" + list + "}"},
      {R"({"jsonrpc":"2.0","id":10,)" + list + "}", R"({"jsonrpc":"2.0","id":9,)" + list + "}"},
      {R"({"jsonrpc":"2.0","id":21,)" + list + "}", R"({"jsonrpc":"2.0","id":31,)" + list + "}"},
      {R"({"jsonrpc":"2.0","id":"a-1",)" + list + "}",
       R"({"jsonrpc":"2.0","id":"a-22",)" + list + "}"},
      {R"({"jsonrpc":"2.0","id":"a",)" + list + "}", R"({"jsonrpc":"2.0","id":"a"x)" + list + "}"},
      {R"({"jsonrpc":"2.0","id":7,)" + list + "}", R"({"jsonrpc":"2.0","id":"7",)" + list + "}"},
      {"{" + list + R"(,"jsonrpc":"2.0","id":1})", "{" + list + R"(,"jsonrpc":"2.0","id":99})"},
      {"{" + list + R"(,"jsonrpc":"2.0","id" : 1 })",
       "{" + list + R"(,"jsonrpc":"2.0","id" : 2 })"},
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}",
       R"({"jsonrpc":"2.0","id":2,"result":{"tools":[{"name":"b","inputSchema":{"type":"object"}}]}})"},
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}", R"({"jsonrpc":"2.0","id":1,)" + list + " }"},
      {R"({"jsonrpc":"2.0","id":1,)" + list + "}", R"({"jsonrpc":"2.0","id":1,)" + list},
      {R"({"jsonrpc":"2.0","id":1,)" + list, R"({"jsonrpc":"2.0","id":1,)" + list + "}"},
      {R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"default":{"id":1}}}]}})",
       R"({"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"a","inputSchema":{"default":{"id":2}}}]}})"},
      {R"({"jsonrpc":"2.0","id":"a\"1",)" + list + "}",
       R"({"jsonrpc":"2.0","id":"a\"2",)" + list + "}"},
      {R"({"jsonrpc":"2.0","id":null,)" + list + "}", R"({"jsonrpc":"2.0","id":1,)" + list + "}"},
  };
  for (const auto& [seen, answer] : pairs) {
    const bool want = gw::mcp::sameApartFromId(seen, answer);
    // Every way to cut the answer in two and in three pieces, and byte by byte.
    std::vector<std::vector<size_t>> cuts;
    for (size_t a = 0; a <= answer.size(); ++a) {
      cuts.push_back({a});
      for (size_t b = a; b <= answer.size(); b += 7) {
        cuts.push_back({a, b});
      }
    }
    std::vector<size_t> bytes;
    for (size_t a = 1; a < answer.size(); ++a) {
      bytes.push_back(a);
    }
    cuts.push_back(bytes);
    for (const std::vector<size_t>& cut : cuts) {
      SameAnswerMatcher m;
      m.reset(seen);
      std::string rebuilt;
      bool matching = true;
      size_t from = 0;
      for (size_t k = 0; k <= cut.size(); ++k) {
        const size_t to = k < cut.size() ? cut[k] : answer.size();
        const std::string_view piece = std::string_view(answer).substr(from, to - from);
        from = to;
        if (matching && !m.feed(piece)) {
          matching = false;
          m.appendFed(rebuilt);
        }
        if (!matching) {
          rebuilt.append(piece);
        }
      }
      INFO(seen << "\n" << answer << "\ncut at " << cut.size() << " places, first " << cut[0]);
      if (matching) {
        CHECK(m.same() == want);
        m.appendFed(rebuilt);
      } else {
        CHECK_FALSE(want);
      }
      CHECK(rebuilt == answer);
    }
  }
}
