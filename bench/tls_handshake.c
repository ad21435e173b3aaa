// TLS handshake client for the mcp-gateway benchmark (bench/run.sh compiles it, bench/tls.py
// runs it). Not part of the gateway or the test suite.
//
// K processes (fork) each loop for SECONDS over new connections to 127.0.0.1:PORT: TCP connect,
// TLS handshake (TLS 1.3 unless VERSION is 1.2; SNI "localhost", ALPN http/1.1, the server's
// certificate is not verified: it is the benchmark's own self-signed one), one 250-byte MCP
// tools/call POST (2026-07-28 headers, Mcp-Name rotating over tool_a, tool_b, tool_c), read the
// whole answer (status line, head, Content-Length body), send close_notify, close. A process
// finishes the connection it is on when its time is up.
//
//   full          no session is ever offered: every handshake is a full one (certificate,
//                 RSA signature, key exchange)
//   resumed       every connection after a process's first offers the newest session the
//                 server handed out (with TLS 1.3 the tickets arrive after the handshake; they
//                 are taken by the new-session callback while the answer is read). A copy is
//                 offered, so a session stays usable when the server sends no new ticket on a
//                 resumption: the client re-offers the last one it got
//   resumed-once  the same, but the stored session itself is offered, so OpenSSL's TLS 1.3
//                 client rule applies: a ticket is used once (SSL_CTX_remove_session marks it
//                 not resumable when the handshake ends); a server that sends no new ticket on
//                 resumption then gets a full handshake on every other connection. A
//                 diagnostic: no resumed fraction is required
// A connection counts as resumed only when SSL_session_reused() says so.
//
// Prints "INFO version=.. cipher=.. group=.. alpn=.." for the first connection and one line
//   RESULT mode=M procs=K ok=N failed=F offered=O resumed=R tickets=T body_bytes=B
//          rate=N/s seconds=S mean_conn_us=U
// (offered = connections that offered a session; tickets = session tickets received, summed).
// Exits 1 when any connection failed or nothing succeeded, 2 when "resumed" was asked for and
// fewer than 99 % of the offering connections were resumed, or when "full" resumed any: a
// benchmark that claims resumption it did not get must not pass.
//
// Usage: tls_handshake PORT full|resumed|resumed-once PROCS SECONDS [1.2|1.3]

#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { kBodyBytes = 250, kMaxProcs = 256, kBufBytes = 64 * 1024 };

typedef struct {
  long ok, failed, offered, resumed, tickets, bodyBytes;
  double seconds;   // this process's own wall time
  double connUsSum; // sum of per-connection times (connect to close)
} Counts;

static SSL_SESSION* gSession;  // resumed modes: the newest session from the server
static int gKeep;              // keep sessions (resumed modes)
static int gOnce;              // resumed-once: offer the stored session itself (single use)
static long gTickets;

static double nowUs(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static void warnSsl(const char* what) {
  unsigned long e = ERR_get_error();
  char buf[256] = "";
  if (e != 0) {
    ERR_error_string_n(e, buf, sizeof buf);
  }
  fprintf(stderr, "tls_handshake[%d]: %s%s%s\n", (int)getpid(), what, buf[0] ? ": " : "", buf);
  ERR_clear_error();
}

// Called for every session the server hands out (TLS 1.3: each NewSessionTicket). Returning 1
// keeps the reference.
static int onNewSession(SSL* ssl, SSL_SESSION* sess) {
  (void)ssl;
  ++gTickets;
  if (!gKeep || !SSL_SESSION_is_resumable(sess)) {
    return 0;
  }
  if (gSession != NULL) {
    SSL_SESSION_free(gSession);
  }
  gSession = sess;
  return 1;
}

static int connectTo(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) {
    return -1;
  }
  struct sockaddr_in sa = {0};
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, (struct sockaddr*)&sa, sizeof sa) < 0) {
    close(fd);
    return -1;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

static size_t makeRequest(char* out, size_t cap, const char* name) {
  char body[kBodyBytes + 1];
  int head = snprintf(body, sizeof body,
                      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\",\"params\":"
                      "{\"name\":\"%s\",\"arguments\":{\"q\":\"",
                      name);
  const char* tail = "\"},\"_meta\":{\"io.modelcontextprotocol/protocolVersion\":\"2026-07-28\"}}}";
  int pad = kBodyBytes - head - (int)strlen(tail);
  memset(body + head, 'x', (size_t)pad);
  strcpy(body + head + pad, tail);
  int n = snprintf(out, cap,
                   "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                   "Accept: application/json, text/event-stream\r\n"
                   "MCP-Protocol-Version: 2026-07-28\r\nMcp-Method: tools/call\r\n"
                   "Mcp-Name: %s\r\nContent-Length: %d\r\n\r\n%s",
                   name, kBodyBytes, body);
  return (size_t)n;
}

// Reads one HTTP/1.1 answer: head, then Content-Length bytes. Returns the body length, or -1
// (not 200, no Content-Length, the connection ended early, a TLS error).
static long readAnswer(SSL* ssl, char* buf) {
  size_t have = 0;
  char* end = NULL;
  while (end == NULL) {
    if (have == kBufBytes) {
      return -1;
    }
    int n = SSL_read(ssl, buf + have, (int)(kBufBytes - have));
    if (n <= 0) {
      return -1;
    }
    have += (size_t)n;
    end = memmem(buf, have, "\r\n\r\n", 4);
  }
  *end = '\0';
  if (strncmp(buf, "HTTP/1.1 200 ", 13) != 0) {
    fprintf(stderr, "tls_handshake: answer: %.120s\n", buf);
    return -1;
  }
  long length = -1;
  for (char* line = strstr(buf, "\r\n"); line != NULL; line = strstr(line + 2, "\r\n")) {
    if (strncasecmp(line + 2, "Content-Length:", 15) == 0) {
      length = strtol(line + 17, NULL, 10);
    }
  }
  if (length < 0) {
    fprintf(stderr, "tls_handshake: answer without Content-Length: %.200s\n", buf);
    return -1;
  }
  size_t got = have - (size_t)(end + 4 - buf);
  while ((long)got < length) {
    int n = SSL_read(ssl, buf, kBufBytes);
    if (n <= 0) {
      return -1;
    }
    got += (size_t)n;
  }
  return (long)got == length ? length : -1;
}

static void printInfo(SSL* ssl) {
  const unsigned char* alpn = NULL;
  unsigned alpnLen = 0;
  SSL_get0_alpn_selected(ssl, &alpn, &alpnLen);
  int group = SSL_get_negotiated_group(ssl);
  const char* groupName = group != 0 ? SSL_group_to_name(ssl, group) : NULL;
  printf("INFO version=%s cipher=%s group=%s alpn=%.*s\n", SSL_get_version(ssl),
         SSL_get_cipher_name(ssl), groupName != NULL ? groupName : "?",
         alpnLen ? (int)alpnLen : 1, alpnLen ? (const char*)alpn : "-");
  fflush(stdout);
}

// One connection. Returns 0 on success.
static int oneConnection(SSL_CTX* ctx, int port, const char* request, size_t requestLen,
                         char* buf, Counts* c, int printFirst) {
  int fd = connectTo(port);
  if (fd < 0) {
    fprintf(stderr, "tls_handshake: connect: %s\n", strerror(errno));
    return -1;
  }
  SSL* ssl = SSL_new(ctx);
  int rc = -1;
  if (ssl == NULL || SSL_set_fd(ssl, fd) != 1 ||
      SSL_set_tlsext_host_name(ssl, "localhost") != 1) {
    warnSsl("SSL_new");
    goto out;
  }
  if (gKeep && gSession != NULL) {
    SSL_SESSION* offer = gOnce ? gSession : SSL_SESSION_dup(gSession);
    int set = offer != NULL && SSL_set_session(ssl, offer) == 1;
    if (!gOnce) {
      SSL_SESSION_free(offer);  // SSL_set_session took its own reference
    }
    if (!set) {
      warnSsl("SSL_set_session");
      goto out;
    }
    ++c->offered;
  }
  if (SSL_connect(ssl) != 1) {
    warnSsl("handshake");
    goto out;
  }
  if (SSL_session_reused(ssl)) {
    ++c->resumed;
  }
  if (SSL_write(ssl, request, (int)requestLen) != (int)requestLen) {
    warnSsl("SSL_write");
    goto out;
  }
  long body = readAnswer(ssl, buf);
  if (body < 0) {
    warnSsl("reading the answer");
    goto out;
  }
  c->bodyBytes += body;
  if (printFirst) {
    printInfo(ssl);
  }
  SSL_shutdown(ssl);  // close_notify; the answer is complete, nothing more is awaited
  rc = 0;
out:
  SSL_free(ssl);
  close(fd);
  return rc;
}

static void runLoop(int port, double seconds, SSL_CTX* ctx, int printFirst, Counts* c) {
  static const char* const kNames[] = {"tool_a", "tool_b", "tool_c"};
  char requests[3][1024];
  size_t lens[3];
  for (int i = 0; i < 3; ++i) {
    lens[i] = makeRequest(requests[i], sizeof requests[i], kNames[i]);
  }
  char* buf = malloc(kBufBytes);
  double start = nowUs();
  double deadline = start + seconds * 1e6;
  for (long i = 0;; ++i) {
    double t0 = nowUs();
    if (t0 >= deadline) {
      break;
    }
    int rc = oneConnection(ctx, port, requests[i % 3], lens[i % 3], buf, c, printFirst && i == 0);
    c->connUsSum += nowUs() - t0;
    if (rc == 0) {
      ++c->ok;
    } else {
      ++c->failed;
      if (c->failed > 100) {
        break;  // the server is gone or refusing: stop hammering it
      }
    }
  }
  c->seconds = (nowUs() - start) / 1e6;
  c->tickets = gTickets;
  free(buf);
}

int main(int argc, char** argv) {
  if (argc < 5 || (strcmp(argv[2], "full") != 0 && strcmp(argv[2], "resumed") != 0 &&
                    strcmp(argv[2], "resumed-once") != 0)) {
    fprintf(stderr,
            "usage: tls_handshake PORT full|resumed|resumed-once PROCS SECONDS [1.2|1.3]\n");
    return 64;
  }
  int port = atoi(argv[1]);
  const char* mode = argv[2];
  int procs = atoi(argv[3]);
  double seconds = atof(argv[4]);
  const char* version = argc > 5 ? argv[5] : "1.3";
  if (procs < 1 || procs > kMaxProcs || seconds <= 0 ||
      (strcmp(version, "1.2") != 0 && strcmp(version, "1.3") != 0)) {
    fprintf(stderr, "tls_handshake: bad arguments\n");
    return 64;
  }
  gOnce = strcmp(mode, "resumed-once") == 0;
  gKeep = gOnce || strcmp(mode, "resumed") == 0;

  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  int v = strcmp(version, "1.2") == 0 ? TLS1_2_VERSION : TLS1_3_VERSION;
  static const unsigned char kAlpn[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  if (ctx == NULL || SSL_CTX_set_min_proto_version(ctx, v) != 1 ||
      SSL_CTX_set_max_proto_version(ctx, v) != 1 ||
      SSL_CTX_set_alpn_protos(ctx, kAlpn, sizeof kAlpn) != 0) {
    warnSsl("SSL_CTX");
    return 1;
  }
  SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
  // Sessions reach the program only through the callback (no internal client cache), so
  // "full" never offers one and "resumed" offers exactly the newest.
  SSL_CTX_set_session_cache_mode(ctx, SSL_SESS_CACHE_CLIENT | SSL_SESS_CACHE_NO_INTERNAL_STORE);
  SSL_CTX_sess_set_new_cb(ctx, onNewSession);

  int fds[kMaxProcs][2];
  pid_t pids[kMaxProcs];
  for (int k = 0; k < procs; ++k) {
    if (pipe(fds[k]) != 0) {
      perror("pipe");
      return 1;
    }
    fflush(stdout);
    pids[k] = fork();
    if (pids[k] < 0) {
      perror("fork");
      return 1;
    }
    if (pids[k] == 0) {
      prctl(PR_SET_PDEATHSIG, SIGKILL);  // the driver killed the parent: stop at once
      if (getppid() == 1) {
        _exit(1);
      }
      close(fds[k][0]);
      Counts c = {0};
      runLoop(port, seconds, ctx, k == 0, &c);
      ssize_t w = write(fds[k][1], &c, sizeof c);
      _exit(w == (ssize_t)sizeof c ? 0 : 1);
    }
    close(fds[k][1]);
  }
  Counts total = {0};
  double rate = 0;
  int broken = 0;
  for (int k = 0; k < procs; ++k) {
    Counts c;
    ssize_t r = read(fds[k][0], &c, sizeof c);
    close(fds[k][0]);
    int status = 0;
    waitpid(pids[k], &status, 0);
    if (r != (ssize_t)sizeof c || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      broken = 1;
      continue;
    }
    total.ok += c.ok;
    total.failed += c.failed;
    total.offered += c.offered;
    total.resumed += c.resumed;
    total.tickets += c.tickets;
    total.bodyBytes += c.bodyBytes;
    total.connUsSum += c.connUsSum;
    if (c.seconds > total.seconds) {
      total.seconds = c.seconds;
    }
    rate += c.seconds > 0 ? (double)c.ok / c.seconds : 0;
  }
  long conns = total.ok + total.failed;
  printf("RESULT mode=%s procs=%d ok=%ld failed=%ld offered=%ld resumed=%ld tickets=%ld "
         "body_bytes=%ld rate=%.1f seconds=%.3f mean_conn_us=%.1f\n",
         mode, procs, total.ok, total.failed, total.offered, total.resumed, total.tickets,
         total.bodyBytes, rate, total.seconds, conns ? total.connUsSum / (double)conns : 0.0);
  fflush(stdout);
  SSL_CTX_free(ctx);
  if (broken || total.failed > 0 || total.ok == 0) {
    fprintf(stderr, "tls_handshake: %ld of %ld connections failed%s\n", total.failed, conns,
            broken ? " (and a worker process died)" : "");
    return 1;
  }
  if (gKeep && !gOnce && (total.offered == 0 || total.resumed * 100 < total.offered * 99)) {
    fprintf(stderr,
            "tls_handshake: asked for resumed handshakes but only %ld of %ld connections that "
            "offered a session were resumed\n",
            total.resumed, total.offered);
    return 2;
  }
  if (!gKeep && total.resumed != 0) {
    fprintf(stderr, "tls_handshake: %ld full-mode connections were resumed\n", total.resumed);
    return 2;
  }
  return 0;
}
