// mcp::looksLikeResponse: whether a JSON-RPC message prefix is a response (JSON-RPC 2.0 §5: a
// "result" or an "error" member; a request or notification has "method"), decided on the
// top-level members inside the prefix only, in any member order and spacing.

#include <catch.hpp>
#include <string_view>

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
