// SSE upstream for the mcp-gateway benchmark (bench/run.sh compiles it, bench/bench.py starts
// it). Not part of the gateway or the test suite.
//
// Answers every POST with `Content-Type: text/event-stream`, `Transfer-Encoding: chunked` (what
// the MCP Streamable HTTP servers send), one event per chunk, keep-alive. The stream is chosen
// by the request's Mcp-Name header:
//   tool_sse_gapped  GAPPED events, event i written at t0 + i * GAP_MS (absolute clock, so the
//                    last one leaves at (GAPPED - 1) * GAP_MS), each in its own write
//   tool_sse_fast    FAST events as fast as the socket takes them: the chunked body is built
//                    once at start-up and written in large writes, so the upstream costs next to
//                    nothing and the proxy in front of it is what is measured
// Every event is exactly EVENT_BYTES long: `data: {...}\n\n`; events 1..n-1 are
// notifications/progress, the last one is the tools/call result (id 1). Any other name: 404.
//
// Usage: sse_upstream PORT [GAPPED=100] [GAP_MS=10] [FAST=100000] [EVENT_BYTES=128]
// One thread per connection, blocking I/O, TCP_NODELAY. Prints "READY" once listening and one
// "accepted" line on stderr per connection.

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

enum { kHeadMax = 65536 };

static int gGapped = 100;
static long gGapMs = 10;
static int gFast = 100000;
static int gEventBytes = 128;
static char* gFastBody;  // chunked: every event as one chunk, then the last chunk
static size_t gFastLen;

static const char kHead[] =
    "HTTP/1.1 200 OK\r\n"
    "Content-Type: text/event-stream\r\n"
    "Cache-Control: no-cache\r\n"
    "Transfer-Encoding: chunked\r\n"
    "\r\n";
static const char kNotFound[] =
    "HTTP/1.1 404 Not Found\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nno stream\n";
static const char kLastChunk[] = "0\r\n\r\n";

// Writes event `i` of `n` (exactly gEventBytes bytes, framed as one chunk) at `out`; returns the
// chunk's length.
static size_t makeChunk(char* out, int i, int n) {
  char event[4096];
  int len;
  if (i == n - 1) {
    len = snprintf(event, sizeof event,
                   "data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{\"content\":"
                   "[{\"type\":\"text\",\"text\":\"");
  } else {
    len = snprintf(event, sizeof event,
                   "data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/"
                   "progress\",\"params\":{\"progressToken\":1,\"progress\":%d,\"message\":\"",
                   i + 1);
  }
  const char* tail = i == n - 1 ? "\"}],\"isError\":false}}\n\n" : "\"}}\n\n";
  int pad = gEventBytes - len - (int)strlen(tail);
  if (pad < 0) {
    fprintf(stderr, "sse_upstream: EVENT_BYTES %d is too small\n", gEventBytes);
    exit(2);
  }
  memset(event + len, 'x', (size_t)pad);
  len += pad;
  len += snprintf(event + len, sizeof event - (size_t)len, "%s", tail);
  size_t k = (size_t)sprintf(out, "%x\r\n", len);
  memcpy(out + k, event, (size_t)len);
  memcpy(out + k + (size_t)len, "\r\n", 2);
  return k + (size_t)len + 2;
}

static int writeAll(int fd, const char* p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) {
        continue;
      }
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

// Value of header `name` (lower-case, with the colon) in the head [p, end), or NULL; *len set.
static const char* findHeader(const char* p, const char* end, const char* name, size_t* len) {
  size_t nl = strlen(name);
  const char* line = memchr(p, '\n', (size_t)(end - p));  // skip the request line
  while (line && line + 1 < end) {
    line++;
    const char* eol = memchr(line, '\n', (size_t)(end - line));
    if (!eol) {
      break;
    }
    if ((size_t)(eol - line) > nl && strncasecmp(line, name, nl) == 0) {
      const char* v = line + nl;
      while (v < eol && (*v == ' ' || *v == '\t')) {
        v++;
      }
      const char* e = eol;
      while (e > v && (e[-1] == '\r' || e[-1] == ' ')) {
        e--;
      }
      *len = (size_t)(e - v);
      return v;
    }
    line = eol;
  }
  return NULL;
}

static int streamGapped(int fd) {
  if (writeAll(fd, kHead, sizeof kHead - 1) < 0) {
    return -1;
  }
  struct timespec t0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  char chunk[8192];
  for (int i = 0; i < gGapped; i++) {
    if (i > 0) {
      long long ns = (long long)t0.tv_nsec + (long long)i * gGapMs * 1000000LL;
      struct timespec at = {t0.tv_sec + (time_t)(ns / 1000000000LL), (long)(ns % 1000000000LL)};
      while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &at, NULL) == EINTR) {
      }
    }
    size_t n = makeChunk(chunk, i, gGapped);
    if (i == gGapped - 1) {
      memcpy(chunk + n, kLastChunk, sizeof kLastChunk - 1);
      n += sizeof kLastChunk - 1;
    }
    if (writeAll(fd, chunk, n) < 0) {
      return -1;
    }
  }
  return 0;
}

static void* serve(void* arg) {
  int fd = (int)(long)arg;
  char* buf = malloc(kHeadMax);
  size_t have = 0;
  for (;;) {
    char* end = NULL;
    while (!(end = memmem(buf, have, "\r\n\r\n", 4))) {
      if (have == kHeadMax) {
        goto done;
      }
      ssize_t r = read(fd, buf + have, kHeadMax - have);
      if (r <= 0) {
        goto done;
      }
      have += (size_t)r;
    }
    end += 4;
    size_t len = 0;
    const char* v = findHeader(buf, end, "content-length:", &len);
    long long body = v ? strtoll(v, NULL, 10) : 0;
    const char* name = findHeader(buf, end, "mcp-name:", &len);
    size_t nameLen = len;
    const char* conn = findHeader(buf, end, "connection:", &len);
    int closeAfter = conn && len == 5 && strncasecmp(conn, "close", 5) == 0;
    int mode = 0;
    if (name && nameLen == 15 && memcmp(name, "tool_sse_gapped", 15) == 0) {
      mode = 1;
    } else if (name && nameLen == 13 && memcmp(name, "tool_sse_fast", 13) == 0) {
      mode = 2;
    }
    // Drop the head and the body (they may arrive in pieces), keep any pipelined bytes.
    size_t used = (size_t)(end - buf);
    while ((long long)(have - used) < body) {
      body -= (long long)(have - used);
      have = used = 0;
      ssize_t r = read(fd, buf, kHeadMax);
      if (r <= 0) {
        goto done;
      }
      have = (size_t)r;
    }
    used += (size_t)body;
    memmove(buf, buf + used, have - used);
    have -= used;

    int rc;
    if (mode == 1) {
      rc = streamGapped(fd);
    } else if (mode == 2) {
      rc = writeAll(fd, kHead, sizeof kHead - 1);
      if (rc == 0) {
        rc = writeAll(fd, gFastBody, gFastLen);
      }
    } else {
      rc = writeAll(fd, kNotFound, sizeof kNotFound - 1);
    }
    if (rc < 0 || closeAfter) {
      break;
    }
  }
done:
  free(buf);
  close(fd);
  return NULL;
}

int main(int argc, char** argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s PORT [GAPPED] [GAP_MS] [FAST] [EVENT_BYTES]\n", argv[0]);
    return 2;
  }
  int port = atoi(argv[1]);
  if (argc > 2) gGapped = atoi(argv[2]);
  if (argc > 3) gGapMs = atol(argv[3]);
  if (argc > 4) gFast = atoi(argv[4]);
  if (argc > 5) gEventBytes = atoi(argv[5]);
  if (gGapped < 1 || gFast < 1 || gEventBytes < 120 || gEventBytes > 4000) {
    fprintf(stderr, "bad arguments\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);

  gFastBody = malloc((size_t)gFast * ((size_t)gEventBytes + 16) + sizeof kLastChunk);
  for (int i = 0; i < gFast; i++) {
    gFastLen += makeChunk(gFastBody + gFastLen, i, gFast);
  }
  memcpy(gFastBody + gFastLen, kLastChunk, sizeof kLastChunk - 1);
  gFastLen += sizeof kLastChunk - 1;

  int ls = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(ls, (struct sockaddr*)&sa, sizeof sa) < 0 || listen(ls, 1024) < 0) {
    perror("sse_upstream: bind/listen");
    return 1;
  }
  printf("READY\n");
  fflush(stdout);
  for (;;) {
    int fd = accept(ls, NULL, NULL);
    if (fd < 0) {
      if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE) {
        continue;
      }
      perror("sse_upstream: accept");
      return 1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    // One line per connection, so the driver can tell how many upstream connections each
    // setup opened (a proxy that does not reuse them pays a connect per stream).
    fprintf(stderr, "accepted\n");
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    if (pthread_create(&t, &attr, serve, (void*)(long)fd) != 0) {
      close(fd);
    }
    pthread_attr_destroy(&attr);
  }
}
