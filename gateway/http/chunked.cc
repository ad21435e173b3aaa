// ChunkedDecoder (see chunked.h for the step protocol). Each call decides from the front of
// `data` only; the decoder keeps no copy of the bytes, so a size line or trailer line that
// arrives in pieces is re-scanned from its start (bounded by kMaxLineBytes /
// kMaxTrailerBytes).

#include "gateway/http/chunked.h"

#include "gateway/core/ascii.h"
#include "gateway/core/hex.h"

namespace gw::http {

namespace {

using Step = ChunkedDecoder::Step;
using Kind = ChunkedDecoder::Kind;

constexpr uint64_t kMaxChunkSize = static_cast<uint64_t>(INT64_MAX);

constexpr Step needMore() noexcept {
  return Step{Kind::kNeedMore, 0, ""};
}
constexpr Step error(const char* reason) noexcept {
  return Step{Kind::kError, 0, reason};
}

bool isQdtext(unsigned char c) noexcept {
  return c == '\t' || c == ' ' || c == 0x21 || (c >= 0x23 && c <= 0x5b) ||
         (c >= 0x5d && c <= 0x7e) || c >= 0x80;
}

bool isQuotedPairChar(unsigned char c) noexcept {
  return c == '\t' || (c >= 0x20 && c != 0x7f);
}

// Parses `chunk-size [ chunk-ext ] CRLF` at the front of data (RFC 9112 §7.1, §7.1.1), with
// no BWS anywhere:
//   chunk-size = 1*16HEXDIG
//   chunk-ext  = *( ";" token [ "=" ( token / quoted-string ) ] )
// On success sets size and ext_bytes (the bytes from the first ";" to the CR) and returns
// kFraming covering the line and its CRLF. `ext_budget` is how many extension bytes this
// message may still carry.
// `bws` (upstream responses only) also takes the BWS RFC 9112 §7.1.1 allows around ";" and
// "=" of an extension.
Step parseSizeLine(std::string_view data, size_t ext_budget, bool bws, uint64_t& size,
                   size_t& ext_bytes) noexcept {
  const size_t limit =
      data.size() < ChunkedDecoder::kMaxLineBytes ? data.size() : ChunkedDecoder::kMaxLineBytes;
  const auto ranOut = [&]() {
    return limit == ChunkedDecoder::kMaxLineBytes ? error("chunk size line too long") : needMore();
  };
  uint64_t n = 0;
  size_t i = 0;
  for (; i < limit; ++i) {
    const int d = core::hexValue(data[i]);
    if (d < 0) {
      break;
    }
    if (i == ChunkedDecoder::kMaxSizeDigits) {
      return error("chunk size has too many digits");
    }
    if (n > (kMaxChunkSize - static_cast<uint64_t>(d)) / 16) {
      return error("chunk size overflow");
    }
    n = n * 16 + static_cast<uint64_t>(d);
  }
  if (i == limit) {
    return ranOut();
  }
  if (i == 0) {
    return error("invalid chunk size");
  }
  const size_t ext_start = i;
  const auto skipBws = [&]() {
    while (bws && i < limit && core::isOws(data[i])) {
      ++i;
    }
  };
  skipBws();
  while (i < limit && data[i] == ';') {
    ++i;
    skipBws();
    const size_t name = i;
    while (i < limit && core::isTchar(static_cast<unsigned char>(data[i]))) {
      ++i;
    }
    if (i == limit) {
      return ranOut();
    }
    if (i == name) {
      return error("malformed chunk extension");
    }
    skipBws();
    if (i < limit && data[i] == '=') {
      ++i;
      skipBws();
      if (i == limit) {
        return ranOut();
      }
      if (data[i] == '"') {
        ++i;
        for (;;) {
          if (i == limit) {
            return ranOut();
          }
          const auto c = static_cast<unsigned char>(data[i]);
          if (c == '"') {
            ++i;
            break;
          }
          if (c == '\\') {
            if (i + 1 == limit) {
              return ranOut();
            }
            if (!isQuotedPairChar(static_cast<unsigned char>(data[i + 1]))) {
              return error("malformed chunk extension");
            }
            i += 2;
          } else if (isQdtext(c)) {
            ++i;
          } else {
            return error("malformed chunk extension");
          }
        }
      } else {
        const size_t value = i;
        while (i < limit && core::isTchar(static_cast<unsigned char>(data[i]))) {
          ++i;
        }
        if (i == value) {
          return error("malformed chunk extension");
        }
      }
    }
    if (i - ext_start > ext_budget) {
      return error("chunk extensions too large");
    }
    skipBws();
    if (i == limit) {
      return ranOut();
    }
  }
  if (i == limit) {
    return ranOut();
  }
  if (data[i] != '\r') {
    if (data[i] == '\n') {
      return error("bare LF in chunk size line");
    }
    return error(ext_start == i ? "invalid chunk size" : "malformed chunk extension");
  }
  if (i + 1 == data.size()) {
    return needMore();
  }
  if (data[i + 1] != '\n') {
    return error("bare CR in chunk size line");
  }
  size = n;
  ext_bytes = i - ext_start;
  return Step{Kind::kFraming, i + 2, ""};
}

// One trailer field line, or the final empty line. Returns kFraming (a field line, to be
// dropped), kDone (the empty line) or kNeedMore / kError. `budget` is how many trailer bytes
// may still arrive.
Step parseTrailerLine(std::string_view data, size_t budget) noexcept {
  if (data.empty()) {
    return needMore();
  }
  if (data[0] == '\r') {
    if (data.size() < 2) {
      return needMore();
    }
    return data[1] == '\n' ? Step{Kind::kDone, 2, ""} : error("bare CR in trailer");
  }
  size_t i = 0;
  while (i < data.size() && core::isTchar(static_cast<unsigned char>(data[i]))) {
    ++i;
  }
  if (i < data.size() && (i == 0 || data[i] != ':')) {
    return error("malformed trailer field");
  }
  for (; i < data.size(); ++i) {
    if (i >= budget) {
      return error("trailer section too large");
    }
    const char c = data[i];
    if (c == '\r') {
      if (i + 1 == data.size()) {
        return needMore();
      }
      if (data[i + 1] != '\n') {
        return error("bare CR in trailer");
      }
      if (i + 2 > budget) {
        return error("trailer section too large");
      }
      return Step{Kind::kFraming, i + 2, ""};
    }
    if (!core::isFieldValueChar(static_cast<unsigned char>(c))) {
      return error(c == '\n' ? "bare LF in trailer" : "control character in trailer");
    }
  }
  return i >= budget ? error("trailer section too large") : needMore();
}

}  // namespace

ChunkedDecoder::Step ChunkedDecoder::next(std::string_view data) noexcept {
  switch (state_) {
    case State::kSize: {
      uint64_t size = 0;
      size_t ext = 0;
      const Step step = parseSizeLine(data, extBudget(), peer_ == Peer::kUpstream, size, ext);
      if (step.kind == Kind::kError) {
        state_ = State::kError;
      } else if (step.kind == Kind::kFraming) {
        ext_bytes_ += ext;
        remaining_ = size;
        state_ = size == 0 ? State::kTrailer : State::kData;
      }
      return step;
    }
    case State::kData: {
      if (data.empty()) {
        return needMore();
      }
      const size_t n = remaining_ < data.size() ? static_cast<size_t>(remaining_) : data.size();
      remaining_ -= n;
      payload_ += n;
      if (remaining_ == 0) {
        state_ = State::kDataCrlf;
      }
      return Step{Kind::kData, n, ""};
    }
    case State::kDataCrlf: {
      if (data.empty()) {
        return needMore();
      }
      if (data[0] != '\r') {
        state_ = State::kError;
        return error("missing CRLF after chunk data");
      }
      if (data.size() < 2) {
        return needMore();
      }
      if (data[1] != '\n') {
        state_ = State::kError;
        return error("missing CRLF after chunk data");
      }
      state_ = State::kSize;
      // The next size line is usually here too: one step covers both (a short or bad one is
      // left to the next call, which decides it on its own).
      if (data.size() > 2) {
        uint64_t size = 0;
        size_t ext = 0;
        const Step line =
            parseSizeLine(data.substr(2), extBudget(), peer_ == Peer::kUpstream, size, ext);
        if (line.kind == Kind::kFraming) {
          ext_bytes_ += ext;
          remaining_ = size;
          state_ = size == 0 ? State::kTrailer : State::kData;
          return Step{Kind::kFraming, 2 + line.length, ""};
        }
      }
      return Step{Kind::kFraming, 2, ""};
    }
    case State::kTrailer: {
      const Step step = parseTrailerLine(data, kMaxTrailerBytes - trailer_bytes_);
      if (step.kind == Kind::kError) {
        state_ = State::kError;
      } else if (step.kind == Kind::kDone) {
        state_ = State::kDone;
      } else if (step.kind == Kind::kFraming) {
        trailer_bytes_ += step.length;
      }
      return step;
    }
    case State::kDone:
      return Step{Kind::kDone, 0, ""};
    case State::kError:
      break;
  }
  return error("chunked decoder in error state");
}

std::string_view chunkSizeLine(size_t n, char (&buf)[24]) noexcept {
  char digits[16];
  size_t len = 0;
  do {
    digits[len++] = core::kHexDigits[n & 0xf];
    n >>= 4;
  } while (n != 0);
  size_t out = 0;
  while (len > 0) {
    buf[out++] = digits[--len];
  }
  buf[out++] = '\r';
  buf[out++] = '\n';
  return std::string_view(buf, out);
}

}  // namespace gw::http
