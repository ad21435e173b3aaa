// SSE client for the mcp-gateway benchmark (bench/run.sh compiles it, bench/bench.py runs it).
// Not part of the gateway or the test suite.
//
// Sends the benchmark's 250-byte tools/call POST (2026-07-28 headers, Mcp-Name NAME, body
// params.name the same) on one keep-alive connection, reads the text/event-stream answer
// (chunked, Content-Length or close-delimited), and counts complete events (a block ended by an
// empty line that holds at least one non-comment line). Times are taken when read() returns the
// bytes that complete an event, relative to just before the request's write():
//   first_us  first complete event        last_us  the EXPECTED-th event
//   end_us    end of the response body
// Repeats the request (reconnecting only if the server closed) until at least MIN_STREAMS
// streams and MIN_SECONDS have passed. Prints one "STREAM ..." line per stream and a final
// "SUMMARY streams=.. events=.. seconds=.. eps=.." (eps = events / sum of per-stream last_us).
// Exits 1 on any error or when a stream does not carry exactly EXPECTED events.
//
// Usage: sse_client PORT NAME EXPECTED MIN_STREAMS MIN_SECONDS

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kBufBytes = 256 * 1024, kBodyBytes = 250 };

static double nowUs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void die(const char* what) {
  fprintf(stderr, "sse_client: %s\n", what);
  exit(1);
}

static int connectTo(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&sa, sizeof sa) < 0) {
    die("connect failed");
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

// Event scanner state (per stream).
typedef struct {
  size_t lineLen;
  char lineFirst;
  int blockField;
  long events;
} Scanner;

// Feeds body bytes; returns how many events they completed.
static long scan(Scanner* s, const char* p, size_t n) {
  long before = s->events;
  const char* end = p + n;
  while (p < end) {
    const char* nl = memchr(p, '\n', (size_t)(end - p));
    size_t seg = (size_t)((nl ? nl : end) - p);
    if (seg > 0) {
      if (s->lineLen == 0) {
        s->lineFirst = p[0];
      }
      s->lineLen += seg;
    }
    if (!nl) {
      break;
    }
    int empty = s->lineLen == 0 || (s->lineLen == 1 && s->lineFirst == '\r');
    if (empty) {
      if (s->blockField) {
        s->events++;
      }
      s->blockField = 0;
    } else if (s->lineFirst != ':') {
      s->blockField = 1;
    }
    s->lineLen = 0;
    p = nl + 1;
  }
  return s->events - before;
}

enum Framing { kChunked, kLength, kClose };
enum ChunkState { kSize, kSizeExt, kData, kDataCr, kDataLf, kTrailer, kDone };

typedef struct {
  enum ChunkState st;
  unsigned long long left;
  size_t trailerLine;
} Dechunk;

// Feeds raw chunked bytes; calls scan on the payload. Returns 1 when the last chunk (and the
// trailer section) has been seen, 0 when more is needed, -1 on malformed framing.
static int dechunk(Dechunk* d, Scanner* s, const char* p, size_t n, long* newEvents) {
  const char* end = p + n;
  while (p < end) {
    switch (d->st) {
      case kSize: {
        char c = *p++;
        int v = (c >= '0' && c <= '9') ? c - '0'
                : (c >= 'a' && c <= 'f') ? c - 'a' + 10
                : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
        if (v >= 0) {
          d->left = d->left * 16 + (unsigned)v;
        } else if (c == '\n') {
          d->st = d->left ? kData : kTrailer;
          d->trailerLine = 0;
        } else if (c == ';' || c == ' ' || c == '\t' || c == '\r') {
          d->st = kSizeExt;
        } else {
          return -1;
        }
        break;
      }
      case kSizeExt: {
        const char* nl = memchr(p, '\n', (size_t)(end - p));
        if (!nl) {
          return 0;
        }
        p = nl + 1;
        d->st = d->left ? kData : kTrailer;
        d->trailerLine = 0;
        break;
      }
      case kData: {
        size_t take = (size_t)(end - p) < d->left ? (size_t)(end - p) : (size_t)d->left;
        *newEvents += scan(s, p, take);
        p += take;
        d->left -= take;
        if (d->left == 0) {
          d->st = kDataCr;
        }
        break;
      }
      case kDataCr:
        if (*p == '\r') {
          p++;
          d->st = kDataLf;
        } else if (*p == '\n') {
          p++;
          d->st = kSize;
        } else {
          return -1;
        }
        break;
      case kDataLf:
        if (*p++ != '\n') {
          return -1;
        }
        d->st = kSize;
        break;
      case kTrailer: {
        char c = *p++;
        if (c == '\n') {
          if (d->trailerLine == 0) {
            d->st = kDone;
            return 1;
          }
          d->trailerLine = 0;
        } else if (c != '\r') {
          d->trailerLine++;
        }
        break;
      }
      case kDone:
        return 1;
    }
  }
  return d->st == kDone;
}

int main(int argc, char** argv) {
  if (argc != 6) {
    fprintf(stderr, "usage: %s PORT NAME EXPECTED MIN_STREAMS MIN_SECONDS\n", argv[0]);
    return 2;
  }
  int port = atoi(argv[1]);
  const char* name = argv[2];
  long expected = atol(argv[3]);
  int minStreams = atoi(argv[4]);
  double minSeconds = atof(argv[5]);

  char body[1024];
  int hl = snprintf(body, sizeof body,
                    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":{\"name\":"
                    "\"%s\",\"arguments\":{\"q\":\"", name);
  const char* tail = "\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}";
  int pad = kBodyBytes - hl - (int)strlen(tail);
  if (pad < 0) {
    die("name too long");
  }
  memset(body + hl, 'x', (size_t)pad);
  snprintf(body + hl + pad, sizeof body - (size_t)(hl + pad), "%s", tail);
  char req[2048];
  int reqLen = snprintf(req, sizeof req,
                        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                        "Content-Type: application/json\r\n"
                        "Accept: application/json, text/event-stream\r\n"
                        "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                        "Mcp-Name: %s\r\nContent-Length: %zu\r\n\r\n%s",
                        name, strlen(body), body);

  char* buf = malloc(kBufBytes);
  int fd = -1;
  double start = nowUs();
  double sumLast = 0;
  long long total = 0;
  int streams = 0;
  while (streams < minStreams || nowUs() - start < minSeconds * 1e6) {
    if (fd < 0) {
      fd = connectTo(port);
    }
    double t0 = nowUs();
    if (write(fd, req, (size_t)reqLen) != reqLen) {
      die("write failed");
    }
    // Head.
    size_t have = 0;
    char* headEnd = NULL;
    while (!(headEnd = memmem(buf, have, "\r\n\r\n", 4))) {
      if (have == kBufBytes) {
        die("response head too large");
      }
      ssize_t r = read(fd, buf + have, kBufBytes - have);
      if (r <= 0) {
        die("connection closed before the response head");
      }
      have += (size_t)r;
    }
    double tHead = nowUs();
    headEnd += 4;
    *(headEnd - 2) = '\0';
    if (strncmp(buf, "HTTP/1.1 200", 12) != 0 && strncmp(buf, "HTTP/1.0 200", 12) != 0) {
      fprintf(stderr, "sse_client: status: %.80s\n", buf);
      exit(1);
    }
    if (!strcasestr(buf, "\ncontent-type: text/event-stream")) {
      fprintf(stderr, "sse_client: not an event stream:\n%s\n", buf);
      exit(1);
    }
    enum Framing framing = kClose;
    unsigned long long length = 0;
    if (strcasestr(buf, "\ntransfer-encoding: chunked")) {
      framing = kChunked;
    } else {
      const char* cl = strcasestr(buf, "\ncontent-length:");
      if (cl) {
        framing = kLength;
        length = strtoull(cl + 16, NULL, 10);
      }
    }
    int closeAfter = framing == kClose || strcasestr(buf, "\nconnection: close") != NULL;

    Scanner sc = {0};
    Dechunk dc = {0};
    double tFirst = -1, tLast = -1;
    const char* p = headEnd;
    size_t n = have - (size_t)(headEnd - buf);
    double tRead = tHead;
    int done = 0;
    for (;;) {
      long newEvents = 0;
      if (framing == kChunked) {
        int rc = dechunk(&dc, &sc, p, n, &newEvents);
        if (rc < 0) {
          die("malformed chunked body");
        }
        done = rc == 1;
      } else if (framing == kLength) {
        size_t take = n < length ? n : (size_t)length;
        newEvents = scan(&sc, p, take);
        length -= take;
        done = length == 0;
      } else {
        newEvents = scan(&sc, p, n);
      }
      if (newEvents > 0) {
        if (tFirst < 0) {
          tFirst = tRead;
        }
        if (tLast < 0 && sc.events >= expected) {
          tLast = tRead;
        }
      }
      if (done) {
        break;
      }
      ssize_t r = read(fd, buf, kBufBytes);
      tRead = nowUs();
      if (r < 0) {
        die("read failed");
      }
      if (r == 0) {
        if (framing == kClose) {
          break;
        }
        die("connection closed mid-body");
      }
      p = buf;
      n = (size_t)r;
    }
    double tEnd = nowUs();
    if (sc.events != expected) {
      fprintf(stderr, "sse_client: stream %d carried %ld events, expected %ld\n", streams + 1,
              sc.events, expected);
      exit(1);
    }
    printf("STREAM events=%ld head_us=%.1f first_us=%.1f last_us=%.1f end_us=%.1f\n", sc.events,
           tHead - t0, tFirst - t0, tLast - t0, tEnd - t0);
    sumLast += tLast - t0;
    total += sc.events;
    streams++;
    if (closeAfter) {
      close(fd);
      fd = -1;
    }
  }
  printf("SUMMARY streams=%d events=%lld seconds=%.6f eps=%.1f\n", streams, total, sumLast / 1e6,
         (double)total / (sumLast / 1e6));
  return 0;
}
