// libFuzzer target: request head parser, then the chunked decoder over whatever follows the
// head. Must never crash; checks the invariants the connection code relies on.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gateway/http/chunked.h"
#include "gateway/http/parser.h"

namespace {

using gw::http::ChunkedDecoder;

void check(bool ok) {
  if (!ok) {
    std::abort();
  }
}

bool inside(std::string_view v, std::string_view data) {
  return v.empty() || (v.data() >= data.data() && v.data() + v.size() <= data.data() + data.size());
}

// Drives the decoder the way a connection does (consume exactly step.length) over `body`,
// also once in small pieces; both runs must agree.
void fuzzChunked(std::string_view body) {
  ChunkedDecoder whole;
  size_t pos = 0;
  uint64_t payload = 0;
  ChunkedDecoder::Kind last = ChunkedDecoder::Kind::kNeedMore;
  for (int guard = 0; guard < 1 << 20; ++guard) {
    const ChunkedDecoder::Step s = whole.next(body.substr(pos));
    last = s.kind;
    if (s.kind == ChunkedDecoder::Kind::kNeedMore || s.kind == ChunkedDecoder::Kind::kError) {
      check(s.length == 0);
      break;
    }
    check(s.length <= body.size() - pos);
    if (s.kind == ChunkedDecoder::Kind::kData) {
      check(s.length > 0);
      payload += s.length;
    } else if (s.kind == ChunkedDecoder::Kind::kFraming) {
      check(s.length > 0);
    }
    pos += s.length;
    if (s.kind == ChunkedDecoder::Kind::kDone) {
      check(whole.done());
      break;
    }
  }
  check(payload == whole.payloadBytes());
  check(payload <= body.size());

  // Same bytes revealed three at a time: same verdict, same payload.
  ChunkedDecoder split;
  size_t consumed = 0;
  size_t visible = 0;
  ChunkedDecoder::Kind split_last = ChunkedDecoder::Kind::kNeedMore;
  for (int guard = 0; guard < 1 << 22; ++guard) {
    const ChunkedDecoder::Step s = split.next(body.substr(consumed, visible - consumed));
    split_last = s.kind;
    if (s.kind == ChunkedDecoder::Kind::kNeedMore) {
      if (visible == body.size()) {
        break;
      }
      visible = visible + 3 < body.size() ? visible + 3 : body.size();
      continue;
    }
    if (s.kind == ChunkedDecoder::Kind::kError || s.kind == ChunkedDecoder::Kind::kDone) {
      consumed += s.length;
      break;
    }
    check(s.length <= visible - consumed);
    consumed += s.length;
  }
  check(split_last == last);
  check(split.payloadBytes() == payload);
  if (last == ChunkedDecoder::Kind::kDone) {
    check(consumed == pos);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* bytes, size_t size) {
  static auto parser = gw::http::makeHttp1Parser();
  static gw::http::RequestHead head;
  const std::string_view data(reinterpret_cast<const char*>(bytes), size);

  gw::http::HeadLimits limits;
  limits.max_request_line = 512;
  limits.max_head_bytes = 2048;
  limits.max_fields = 32;
  const gw::http::ParseResult r = parser->parseRequest(data, limits, head);
  if (r.status == gw::http::ParseStatus::kError) {
    check(r.error != gw::http::ParseError::kNone);
    const int st = gw::http::statusFor(r.error);
    check(st == 400 || st == 414 || st == 431 || st == 501);
  }
  if (r.status == gw::http::ParseStatus::kComplete) {
    check(head.head_bytes >= 4 && head.head_bytes <= size);
    check(head.head_bytes <= limits.max_head_bytes);
    check(data.substr(head.head_bytes - 4, 4) == "\r\n\r\n");
    check(head.fields.size() <= limits.max_fields);
    const std::string_view h = data.substr(0, head.head_bytes);
    check(inside(head.method, h) && inside(head.target, h) && inside(head.path, h));
    check(inside(head.host, h));
    check(!head.method.empty() && !head.target.empty());
    for (const gw::http::HeaderField& f : head.fields) {
      check(inside(f.name, h) && inside(f.value, h) && inside(f.line, h));
      check(!f.name.empty());
    }
    // Every strict prefix of a complete head is incomplete (or an early limit/syntax error,
    // never complete).
    for (size_t n = head.head_bytes > 64 ? head.head_bytes - 64 : 0; n < head.head_bytes; ++n) {
      gw::http::RequestHead other;
      check(parser->parseRequest(data.substr(0, n), limits, other).status !=
            gw::http::ParseStatus::kComplete);
    }
    // Parsing again gives the same head.
    gw::http::RequestHead again;
    check(parser->parseRequest(data, limits, again).status == gw::http::ParseStatus::kComplete);
    check(again.head_bytes == head.head_bytes && again.fields.size() == head.fields.size());
    fuzzChunked(data.substr(head.head_bytes));
  } else {
    fuzzChunked(data);
  }
  return 0;
}
