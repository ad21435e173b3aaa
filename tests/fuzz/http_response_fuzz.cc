// libFuzzer target: upstream response head parser (all request methods that change
// framing), then the chunked decoder over the body when the head says chunked.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gateway/http/chunked.h"
#include "gateway/http/parser.h"

namespace {

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

bool inside(std::string_view v, std::string_view data) {
  return v.empty() || (v.data() >= data.data() && v.data() + v.size() <= data.data() + data.size());
}

void decodeChunked(std::string_view body) {
  gw::http::ChunkedDecoder dec;
  size_t pos = 0;
  uint64_t payload = 0;
  for (;;) {
    const gw::http::ChunkedDecoder::Step s = dec.next(body.substr(pos));
    if (s.kind == gw::http::ChunkedDecoder::Kind::kNeedMore ||
        s.kind == gw::http::ChunkedDecoder::Kind::kError) {
      break;
    }
    check(s.length <= body.size() - pos);
    if (s.kind == gw::http::ChunkedDecoder::Kind::kData) {
      payload += s.length;
    }
    if (s.kind != gw::http::ChunkedDecoder::Kind::kDone) {
      check(s.length > 0);
    }
    pos += s.length;
    if (s.kind == gw::http::ChunkedDecoder::Kind::kDone) {
      break;
    }
  }
  check(payload == dec.payloadBytes() && payload <= body.size());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  static auto parser = gw::http::makeHttp1Parser();
  static gw::http::ResponseHead head;
  std::string_view data(reinterpret_cast<const char*>(bytes), size);

  gw::http::HeadLimits limits;
  limits.max_head_bytes = 2048;
  limits.max_fields = 32;
  // Walk interim heads the way the upstream connection does.
  for (int heads = 0; heads < 8 && !data.empty(); ++heads) {
    const std::string_view method = (size & 1) != 0 ? "HEAD" : "POST";
    const gw::http::ParseResult r = parser->parseResponse(data, limits, method, head);
    if (r.status != gw::http::ParseStatus::kComplete) {
      if (r.status == gw::http::ParseStatus::kError) {
        check(r.error != gw::http::ParseError::kNone);
      }
      return 0;
    }
    check(head.head_bytes >= 4 && head.head_bytes <= data.size());
    check(head.status >= 100 && head.status <= 999);
    const std::string_view h = data.substr(0, head.head_bytes);
    check(inside(head.reason, h));
    for (const gw::http::HeaderField& f : head.fields) {
      check(inside(f.name, h) && inside(f.value, h) && inside(f.line, h));
    }
    if (head.status < 200 || head.status == 204 || head.status == 304 || method == "HEAD") {
      check(head.framing == gw::http::BodyFraming::kNone);
    }
    if (head.framing == gw::http::BodyFraming::kUntilClose) {
      check(!head.keep_alive);
    }
    const std::string_view rest = data.substr(head.head_bytes);
    if (head.status >= 200) {
      if (head.framing == gw::http::BodyFraming::kChunked) {
        decodeChunked(rest);
      }
      return 0;
    }
    data = rest;
  }
  return 0;
}
