#pragma once
// Incremental chunked transfer-coding decoder (RFC 9112 §7.1) that never copies payload.
//
// The caller peeks at the next contiguous bytes of the stream, asks next(), and then
// consumes exactly step.length bytes: payload bytes (kData) are moved to where they go,
// framing bytes (kFraming, kDone) are dropped; the CRLF after chunk data and the next size
// line, when both are there, are one kFraming step. kNeedMore means nothing can be decided from
// `data`: call again with at least one more byte (the same unconsumed bytes first). Chunk
// extensions are checked and dropped; trailer fields are dropped. Rejected (kError), for
// request bodies and upstream responses alike (RFC 9112 §7.1, §7.1.1):
//  - a size that is not exactly 1*HEXDIG: whitespace before ";" or CRLF, "0x", a sign,
//    more than kMaxSizeDigits digits (even leading zeros), a value over 2^63-1;
//  - a chunk extension that is not exactly `;name[=token|quoted-string]` (no BWS, no empty
//    name or value, quoted-string with qdtext / quoted-pair only, no CTL), or more than
//    kMaxExtensionBytes extension bytes over the whole message;
//  - a size line over kMaxLineBytes, bare CR or bare LF anywhere in the framing, a missing
//    CRLF after chunk data, a malformed trailer field line, trailers over kMaxTrailerBytes.

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace gw::http {

class ChunkedDecoder {
 public:
  static constexpr size_t kMaxLineBytes = 4096;
  static constexpr size_t kMaxTrailerBytes = 16 * 1024;
  static constexpr size_t kMaxSizeDigits = 16;
  static constexpr size_t kMaxExtensionBytes = 4096;  // per message, from ";" to CR

  enum class Kind : uint8_t { kNeedMore, kData, kFraming, kDone, kError };

  // Whose body is decoded. kClient (request bodies, the default) is strict as described
  // above. kUpstream (response bodies) also takes the BWS RFC 9112 §7.1.1 allows around ";"
  // and "=" and has no per-message extension budget (each size line is still bounded by
  // kMaxLineBytes): the gateway re-frames what it relays, so an upstream's spelling cannot
  // smuggle anything, and servers that pad extensions keep working.
  enum class Peer : uint8_t { kClient, kUpstream };

  ChunkedDecoder() = default;
  explicit ChunkedDecoder(Peer peer) : peer_(peer) {}
  struct Step {
    Kind kind = Kind::kNeedMore;
    size_t length = 0;        // bytes of `data` this step covers
    const char* reason = "";  // static text when kind == kError
  };

  Step next(std::string_view data) noexcept;

  // Total payload bytes reported so far.
  uint64_t payloadBytes() const noexcept { return payload_; }
  bool done() const noexcept { return state_ == State::kDone; }
  void reset() noexcept { *this = ChunkedDecoder(peer_); }
  void reset(Peer peer) noexcept { *this = ChunkedDecoder(peer); }

 private:
  enum class State : uint8_t { kSize, kData, kDataCrlf, kTrailer, kDone, kError };
  State state_ = State::kSize;
  uint64_t remaining_ = 0;
  uint64_t payload_ = 0;
  size_t trailer_bytes_ = 0;
  size_t ext_bytes_ = 0;
  Peer peer_ = Peer::kClient;

  size_t extBudget() const noexcept {
    return peer_ == Peer::kUpstream ? SIZE_MAX : kMaxExtensionBytes - ext_bytes_;
  }
};

// Writes the chunk-size line for a chunk of n bytes ("1a2b\r\n") into buf; returns the view.
std::string_view chunkSizeLine(size_t n, char (&buf)[24]) noexcept;

inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace gw::http
