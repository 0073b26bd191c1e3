/* A libzmq client that counts its own zmq calls, so a test can compare them with the
 * counts the shim reports (ZEBRA_STATS): equal counts and delivered messages prove that
 * every call went through the shim exactly once and that the real libzmq did the work.
 *
 *   forward_check [--dlopen-local PATH] [--expect-refused EINVAL|ENOTSUP]
 *
 * --dlopen-local PATH  first opens PATH with RTLD_LOCAL, as Python's ctypes opens
 *                      libmxnet.so, so the shim must find it by walking loaded objects.
 * --expect-refused E   expects zmq_ctx_new to fail with errno E (a refused mode).
 *
 * Prints "call NAME COUNT" lines (the shim's report format) and "forward_check: OK". */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zmq.h>

enum { ZMQ_CTX_NEW, ZMQ_CTX_SET, ZMQ_CTX_DESTROY, ZMQ_SOCKET, ZMQ_CLOSE, ZMQ_SETSOCKOPT,
       ZMQ_GETSOCKOPT, ZMQ_BIND, ZMQ_CONNECT, ZMQ_SEND, ZMQ_RECV, ZMQ_MSG_INIT,
       ZMQ_MSG_INIT_SIZE, ZMQ_MSG_INIT_DATA, ZMQ_MSG_SEND, ZMQ_MSG_RECV, ZMQ_MSG_CLOSE,
       ZMQ_MSG_DATA, ZMQ_MSG_SIZE, ZMQ_MSG_MORE, ZMQ_VERSION_, N_CALLS };
static const char *names[N_CALLS] = {
    "zmq_ctx_new", "zmq_ctx_set", "zmq_ctx_destroy", "zmq_socket", "zmq_close",
    "zmq_setsockopt", "zmq_getsockopt", "zmq_bind", "zmq_connect", "zmq_send", "zmq_recv",
    "zmq_msg_init", "zmq_msg_init_size", "zmq_msg_init_data", "zmq_msg_send", "zmq_msg_recv",
    "zmq_msg_close", "zmq_msg_data", "zmq_msg_size", "zmq_msg_more", "zmq_version"};
static unsigned long calls[N_CALLS];
#define CALL(id, expr) (calls[id]++, (expr))

#define CHECK(cond, what)                                                            \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      fprintf(stderr, "forward_check: FAIL %s (errno %d: %s)\n", what, errno,        \
              strerror(errno));                                                      \
      exit(1);                                                                       \
    }                                                                                \
  } while (0)

static int freed;
static void free_buffer(void *data, void *hint) {
  (void)hint;
  free(data);
  freed++;
}

/* A DEALER sends `rounds` two-part messages to a ROUTER over `endpoint`; the ROUTER
 * echoes each back through its identity frame. Every byte is checked. */
static void router_dealer(void *ctx, const char *endpoint, int rounds) {
  void *router = CALL(ZMQ_SOCKET, zmq_socket(ctx, ZMQ_ROUTER));
  void *dealer = CALL(ZMQ_SOCKET, zmq_socket(ctx, ZMQ_DEALER));
  CHECK(router && dealer, "zmq_socket");
  int mandatory = 1, linger = 0;
  CHECK(CALL(ZMQ_SETSOCKOPT, zmq_setsockopt(router, ZMQ_ROUTER_MANDATORY, &mandatory,
                                            sizeof mandatory)) == 0, "ZMQ_ROUTER_MANDATORY");
  CHECK(CALL(ZMQ_SETSOCKOPT, zmq_setsockopt(dealer, ZMQ_IDENTITY, "w1", 2)) == 0, "ZMQ_IDENTITY");
  CHECK(CALL(ZMQ_SETSOCKOPT, zmq_setsockopt(dealer, ZMQ_LINGER, &linger, sizeof linger)) == 0,
        "ZMQ_LINGER");
  CHECK(CALL(ZMQ_BIND, zmq_bind(router, endpoint)) == 0, "zmq_bind");
  char bound[256];
  size_t bound_len = sizeof bound;
  CHECK(CALL(ZMQ_GETSOCKOPT, zmq_getsockopt(router, ZMQ_LAST_ENDPOINT, bound, &bound_len)) == 0,
        "ZMQ_LAST_ENDPOINT");
  CHECK(CALL(ZMQ_CONNECT, zmq_connect(dealer, bound)) == 0, "zmq_connect");

  for (int i = 0; i < rounds; i++) {
    char head[32];
    int head_len = snprintf(head, sizeof head, "head-%d", i);
    CHECK(CALL(ZMQ_SEND, zmq_send(dealer, head, head_len, ZMQ_SNDMORE)) == head_len, "send head");
    size_t body_len = 1000 + (size_t)i * 37;
    char *body = malloc(body_len);
    for (size_t b = 0; b < body_len; b++) body[b] = (char)(b * 7 + i);
    zmq_msg_t msg;
    CHECK(CALL(ZMQ_MSG_INIT_DATA, zmq_msg_init_data(&msg, body, body_len, free_buffer, NULL)) == 0,
          "zmq_msg_init_data");
    CHECK(CALL(ZMQ_MSG_SEND, zmq_msg_send(&msg, dealer, 0)) == (int)body_len, "zmq_msg_send");

    /* ROUTER receives identity, head, body; checks them; echoes the body back. */
    zmq_msg_t parts[3];
    for (int p = 0; p < 3; p++) {
      CHECK(CALL(ZMQ_MSG_INIT, zmq_msg_init(&parts[p])) == 0, "zmq_msg_init");
      CHECK(CALL(ZMQ_MSG_RECV, zmq_msg_recv(&parts[p], router, 0)) >= 0, "zmq_msg_recv");
      int more = CALL(ZMQ_MSG_MORE, zmq_msg_more(&parts[p]));
      CHECK(more == (p < 2), "MORE flags");
    }
    CHECK(CALL(ZMQ_MSG_SIZE, zmq_msg_size(&parts[0])) == 2 &&
              memcmp(CALL(ZMQ_MSG_DATA, zmq_msg_data(&parts[0])), "w1", 2) == 0,
          "identity frame");
    CHECK(CALL(ZMQ_MSG_SIZE, zmq_msg_size(&parts[1])) == (size_t)head_len &&
              memcmp(CALL(ZMQ_MSG_DATA, zmq_msg_data(&parts[1])), head, head_len) == 0,
          "head frame");
    CHECK(CALL(ZMQ_MSG_SIZE, zmq_msg_size(&parts[2])) == body_len, "body size");
    const char *got = CALL(ZMQ_MSG_DATA, zmq_msg_data(&parts[2]));
    for (size_t b = 0; b < body_len; b++) CHECK(got[b] == (char)(b * 7 + i), "body bytes");

    CHECK(CALL(ZMQ_MSG_SEND, zmq_msg_send(&parts[0], router, ZMQ_SNDMORE)) == 2, "reply identity");
    zmq_msg_t reply;
    CHECK(CALL(ZMQ_MSG_INIT_SIZE, zmq_msg_init_size(&reply, 8)) == 0, "zmq_msg_init_size");
    memcpy(CALL(ZMQ_MSG_DATA, zmq_msg_data(&reply)), "reply-ok", 8);
    CHECK(CALL(ZMQ_MSG_SEND, zmq_msg_send(&reply, router, 0)) == 8, "reply body");
    for (int p = 1; p < 3; p++) CHECK(CALL(ZMQ_MSG_CLOSE, zmq_msg_close(&parts[p])) == 0, "close");

    char answer[16];
    CHECK(CALL(ZMQ_RECV, zmq_recv(dealer, answer, sizeof answer, 0)) == 8 &&
              memcmp(answer, "reply-ok", 8) == 0,
          "dealer reply");
  }
  /* An unknown identity with ROUTER_MANDATORY must fail with EHOSTUNREACH. */
  CHECK(CALL(ZMQ_SEND, zmq_send(router, "nobody", 6, ZMQ_SNDMORE)) == -1 && errno == EHOSTUNREACH,
        "ROUTER_MANDATORY EHOSTUNREACH");
  CHECK(CALL(ZMQ_CLOSE, zmq_close(dealer)) == 0 && CALL(ZMQ_CLOSE, zmq_close(router)) == 0,
        "zmq_close");
}

int main(int argc, char **argv) {
  const char *expect_refused = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--dlopen-local") == 0 && i + 1 < argc) {
      const char *path = argv[++i];
      CHECK(dlopen(path, RTLD_NOW | RTLD_LOCAL) != NULL, "dlopen --dlopen-local");
    } else if (strcmp(argv[i], "--expect-refused") == 0 && i + 1 < argc) {
      expect_refused = argv[++i];
    } else {
      fprintf(stderr, "usage: %s [--dlopen-local PATH] [--expect-refused EINVAL|ENOTSUP]\n", argv[0]);
      return 2;
    }
  }

  void *ctx = CALL(ZMQ_CTX_NEW, zmq_ctx_new());
  if (expect_refused != NULL) {
    int want = strcmp(expect_refused, "EINVAL") == 0 ? EINVAL : ENOTSUP;
    CHECK(ctx == NULL, "zmq_ctx_new should have been refused");
    CHECK(errno == want, "zmq_ctx_new refused with the wrong errno");
    printf("forward_check: OK refused with %s\n", expect_refused);
    return 0;
  }
  CHECK(ctx != NULL, "zmq_ctx_new");
  int major = 0, minor = 0, patch = 0;
  CALL(ZMQ_VERSION_, zmq_version(&major, &minor, &patch));
  CHECK(major == 4, "zmq_version major 4");
  CHECK(CALL(ZMQ_CTX_SET, zmq_ctx_set(ctx, ZMQ_MAX_SOCKETS, 64)) == 0, "zmq_ctx_set");

  router_dealer(ctx, "inproc://forward-check", 20);
  router_dealer(ctx, "tcp://127.0.0.1:*", 20);
  CHECK(freed == 40, "zmq_msg_init_data free function called once per message");

  CHECK(CALL(ZMQ_CTX_DESTROY, zmq_ctx_destroy(ctx)) == 0, "zmq_ctx_destroy");
  for (int i = 0; i < N_CALLS; i++) {
    if (calls[i] != 0) printf("call %s %lu\n", names[i], calls[i]);
  }
  printf("forward_check: OK\n");
  return 0;
}
