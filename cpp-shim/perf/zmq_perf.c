/* A throughput/latency pair for any libzmq (the real one, or Zebra's shim with
 * ZEBRA_ENABLE=1): two processes on one endpoint, a DEALER and a ROUTER, or two PAIRs.
 *
 *   zmq_perf thr ENDPOINT SIZE COUNT [pair]   the connecting side sends COUNT messages
 *                                      of SIZE bytes; the binding side times their
 *                                      arrival: msg/s and MB/s
 *   zmq_perf lat ENDPOINT SIZE COUNT [pair]   the connecting side sends, the binding side
 *                                      echoes, COUNT round trips: mean one-way latency in
 *                                      microseconds
 *
 * Without `pair` the connecting side is a DEALER and the binding side a ROUTER (which
 * reads and writes the identity frame); with it both are PAIR sockets.
 * Prints one line: "thr SIZE COUNT MSGS_PER_S MB_PER_S" or "lat SIZE COUNT USEC".
 * The binding side runs in the parent, the connecting side in a child forked before
 * either process creates a context (so no library state crosses the fork); both use the
 * zmq library this binary was linked or preloaded with. ENDPOINT must be concrete (no
 * wildcard): the child connects in the background until the parent has bound it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zmq.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void die(const char *what) {
  fprintf(stderr, "zmq_perf: %s: %s\n", what, zmq_strerror(zmq_errno()));
  exit(1);
}

static void *open_socket(void *ctx, int type) {
  void *s = zmq_socket(ctx, type);
  if (s == NULL) die("zmq_socket");
  int hwm = 100000;
  zmq_setsockopt(s, ZMQ_SNDHWM, &hwm, sizeof hwm);
  zmq_setsockopt(s, ZMQ_RCVHWM, &hwm, sizeof hwm);
  return s;
}

/* The connecting side (DEALER or PAIR), in the child. */
static int dealer(const char *mode, const char *endpoint, size_t size, long count, int type) {
  void *ctx = zmq_ctx_new();
  if (ctx == NULL) die("zmq_ctx_new");
  void *s = open_socket(ctx, type);
  if (zmq_connect(s, endpoint) != 0) die("zmq_connect");
  char *buf = calloc(1, size ? size : 1);
  /* One handshake message so the ROUTER knows us before timing starts. */
  if (zmq_send(s, "hello", 5, 0) != 5) die("zmq_send hello");
  if (strcmp(mode, "thr") == 0) {
    for (long i = 0; i < count; i++) {
      if (zmq_send(s, buf, size, 0) != (int)size) die("zmq_send");
    }
    char ack[8];
    if (zmq_recv(s, ack, sizeof ack, 0) < 0) die("zmq_recv ack");
  } else {
    for (long i = 0; i < count; i++) {
      if (zmq_send(s, buf, size, 0) != (int)size) die("zmq_send");
      zmq_msg_t reply;
      zmq_msg_init(&reply);
      if (zmq_msg_recv(&reply, s, 0) != (int)size) die("zmq_msg_recv echo");
      zmq_msg_close(&reply);
    }
  }
  int linger = 1000;
  zmq_setsockopt(s, ZMQ_LINGER, &linger, sizeof linger);
  zmq_close(s);
  zmq_ctx_destroy(ctx);
  free(buf);
  return 0;
}

static void recv_part(void *s, zmq_msg_t *msg) {
  if (zmq_msg_recv(msg, s, 0) < 0) die("zmq_msg_recv");
}

int main(int argc, char **argv) {
  if ((argc != 5 && argc != 6) || (strcmp(argv[1], "thr") != 0 && strcmp(argv[1], "lat") != 0) ||
      (argc == 6 && strcmp(argv[5], "pair") != 0)) {
    fprintf(stderr, "usage: %s thr|lat ENDPOINT SIZE COUNT [pair]\n", argv[0]);
    return 2;
  }
  const char *mode = argv[1], *endpoint = argv[2];
  int pair = argc == 6;
  size_t size = strtoul(argv[3], NULL, 10);
  long count = strtol(argv[4], NULL, 10);

  fflush(stdout);
  pid_t child = fork();
  if (child < 0) {
    perror("zmq_perf: fork");
    return 1;
  }
  if (child == 0) _exit(dealer(mode, endpoint, size, count, pair ? ZMQ_PAIR : ZMQ_DEALER));

  void *ctx = zmq_ctx_new();
  if (ctx == NULL) die("zmq_ctx_new");
  void *router = open_socket(ctx, pair ? ZMQ_PAIR : ZMQ_ROUTER);
  if (zmq_bind(router, endpoint) != 0) die("zmq_bind");

  zmq_msg_t id, body;
  zmq_msg_init(&id);
  zmq_msg_init(&body);
  if (!pair) recv_part(router, &id);
  recv_part(router, &body); /* hello */
  double start = now();
  for (long i = 0; i < count; i++) {
    zmq_msg_t part;
    if (!pair) {
      zmq_msg_init(&part);
      recv_part(router, &part); /* identity */
      zmq_msg_close(&part);
    }
    zmq_msg_init(&part);
    recv_part(router, &part);
    if (zmq_msg_size(&part) != size) {
      fprintf(stderr, "zmq_perf: message %ld has %zu bytes, expected %zu\n", i, zmq_msg_size(&part), size);
      return 1;
    }
    if (strcmp(mode, "lat") == 0) {
      if (!pair) {
        zmq_msg_t to;
        zmq_msg_init(&to);
        zmq_msg_copy(&to, &id);
        if (zmq_msg_send(&to, router, ZMQ_SNDMORE) < 0) die("zmq_msg_send id");
      }
      if (zmq_msg_send(&part, router, 0) < 0) die("zmq_msg_send echo");
    }
    zmq_msg_close(&part);
  }
  double elapsed = now() - start;
  if (strcmp(mode, "thr") == 0) {
    if ((!pair && zmq_msg_send(&id, router, ZMQ_SNDMORE) < 0) || zmq_send(router, "done", 4, 0) != 4) die("ack");
    printf("thr %zu %ld %.0f %.1f\n", size, count, count / elapsed, count * (double)size / elapsed / 1e6);
  } else {
    printf("lat %zu %ld %.2f\n", size, count, elapsed / count / 2 * 1e6);
  }
  int status = 0;
  waitpid(child, &status, 0);
  zmq_msg_close(&id);
  zmq_msg_close(&body);
  zmq_close(router);
  zmq_ctx_destroy(ctx);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
