// libFuzzer target: the base64 sentinel codec and the MCP header contract. Must never crash;
// checks that decoding is the exact inverse of encoding (canonical base64 means a decoded
// value re-encodes to the very bytes received) and that every view the contract hands out
// points into the request's header bytes or the value arena.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "gateway/core/ascii.h"
#include "gateway/core/utf8.h"
#include "gateway/http/message.h"
#include "gateway/mcp/arena.h"
#include "gateway/mcp/contract.h"
#include "gateway/mcp/sentinel.h"

namespace {

using gw::mcp::SentinelStatus;
using gw::mcp::ValueArena;

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

bool inside(std::string_view v, const char* base, size_t size) {
  return v.empty() || (v.data() >= base && v.data() + v.size() <= base + size);
}

void fuzzCodec(std::string_view raw) {
  ValueArena arena(raw.size());
  const char* base = arena.allocate(0);
  const gw::mcp::SentinelResult r = gw::mcp::decodeSentinel(raw, arena);
  switch (r.status) {
    case SentinelStatus::kLiteral:
      check(r.value.data() == raw.data() && r.value.size() == raw.size());
      check(arena.used() == 0);
      break;
    case SentinelStatus::kDecoded:
      check(inside(r.value, base, arena.used()));
      check(gw::core::isValidUtf8(r.value));
      check(gw::mcp::encodeSentinel(r.value) == raw);
      break;
    case SentinelStatus::kInvalid:
      check(r.reason != nullptr && r.reason[0] != '\0');
      break;
  }
  // A value that needs no encoding is never read as a sentinel.
  if (!gw::mcp::needsSentinel(raw)) {
    check(r.status == SentinelStatus::kLiteral);
  }
  // Any UTF-8 string survives encode → decode.
  if (gw::core::isValidUtf8(raw)) {
    const std::string enc = gw::mcp::encodeSentinel(raw);
    ValueArena big(raw.size());
    const gw::mcp::SentinelResult back = gw::mcp::decodeSentinel(enc, big);
    check(back.status == SentinelStatus::kDecoded);
    check(back.value == raw);
  }
}

// Splits the input into "name: value" lines, the way the HTTP parser would hand them over
// (value OWS-trimmed), and runs the contract over them with a small arena.
void fuzzContract(std::string_view data) {
  std::vector<gw::http::HeaderField> fields;
  size_t pos = 0;
  while (pos < data.size()) {
    size_t eol = data.find('\n', pos);
    if (eol == std::string_view::npos) {
      eol = data.size();
    }
    const std::string_view line = data.substr(pos, eol - pos);
    pos = eol + 1;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) {
      continue;
    }
    fields.push_back(gw::http::HeaderField{line.substr(0, colon),
                                           gw::core::trimOws(line.substr(colon + 1)), line});
  }
  ValueArena arena(64);
  const char* base = arena.allocate(0);
  gw::mcp::McpHeaders h;
  const gw::mcp::ContractResult r = gw::mcp::readMcpHeaders(fields, arena, h);
  check(arena.used() <= 64);
  if (r.error != gw::mcp::ContractError::kNone) {
    check(inside(r.header, data.data(), data.size()));
    check(r.reason != nullptr && r.reason[0] != '\0');
    return;
  }
  auto checkValue = [&](const gw::mcp::McpValue& v) {
    check(inside(v.raw, data.data(), data.size()));
    if (v.sentinel) {
      check(inside(v.value, base, arena.used()));
      check(gw::core::isValidUtf8(v.value));
    } else {
      check(v.value.data() == v.raw.data() && v.value.size() == v.raw.size());
      for (char c : v.value) {
        check(static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f);
      }
    }
  };
  check(inside(h.version, data.data(), data.size()));
  check(inside(h.method, data.data(), data.size()));
  check(!h.has_method || !h.method.empty());
  if (h.has_name) {
    checkValue(h.name);
  }
  for (const gw::mcp::McpParam& p : h.params) {
    check(inside(p.name, data.data(), data.size()));
    check(!p.name.empty());
    check(h.findParam(p.name) == &p);  // no two params share a {Name}
    checkValue(p.v);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  const std::string_view data(reinterpret_cast<const char*>(bytes), size);
  fuzzCodec(data);
  fuzzContract(data);
  return 0;
}
