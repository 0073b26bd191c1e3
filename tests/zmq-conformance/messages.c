// Messages (zmq_msg_init(3), zmq_msg_init_data(3), zmq_msg_copy(3), zmq_msg_move(3),
// zmq_msg_get(3), zmq_msg_gets(3), zmq_msg_set(3)): sizes, ZMQ_MORE, ZMQ_SHARED as
// libzmq reports it, free functions, and the properties of a received message.
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "conformance.h"

static char buffer[100000];
static int freed;

static void count_free(void *data, void *hint) {
  (void)data;
  (void)hint;
  freed++;
}

static int shared(zmq_msg_t *m) { return zmq_msg_get(m, ZMQ_SHARED); }

// A copy of a message of `size` bytes made by zmq_msg_init_size.
static void copy_of_size(size_t size, int want_shared) {
  zmq_msg_t a, b;
  zmq_msg_init_size(&a, size);
  zmq_msg_init(&b);
  int before = shared(&a);
  zmq_msg_copy(&b, &a);
  int src = shared(&a), dst = shared(&b);
  zmq_msg_close(&b);
  int after = shared(&a);
  zmq_msg_close(&a);
  char name[128];
  snprintf(name, sizeof name, "message: ZMQ_SHARED of a copied %zu-byte message is %d, and stays so",
           size, want_shared);
  check(name, before == 0 && src == want_shared && dst == want_shared && after == want_shared,
        "before %d, source %d, copy %d, after the copy closed %d", before, src, dst, after);
}

static void constant_data(size_t size) {
  zmq_msg_t m;
  zmq_msg_init_data(&m, buffer, size, NULL, NULL);
  int s = shared(&m);
  zmq_msg_t moved;
  zmq_msg_init(&moved);
  zmq_msg_move(&moved, &m);
  int after_move = shared(&moved), left = shared(&m);
  zmq_msg_close(&moved);
  zmq_msg_close(&m);
  char name[128];
  snprintf(name, sizeof name, "message: constant data (no free function), %zu bytes, is shared", size);
  check(name, s == 1 && after_move == 1 && left == 0, "ZMQ_SHARED %d, moved %d, left behind %d", s, after_move,
        left);
}

// A message received over tcp from a PAIR.
static void *pair_in, *pair_out;

static void connect_pair(void) {
  pair_in = sock(ZMQ_PAIR, 2000);
  pair_out = sock(ZMQ_PAIR, 2000);
  zmq_bind(pair_in, "tcp://127.0.0.1:*");
  zmq_connect(pair_out, last_endpoint(pair_in));
}

static void received(void) {
  static const size_t sizes[] = {10, 32, 33, 100, 5000, 100000};
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
    zmq_send(pair_out, buffer, sizes[i], 0);
    zmq_msg_t a, b;
    zmq_msg_init(&a);
    int n = zmq_msg_recv(&a, pair_in, 0);
    zmq_msg_init(&b);
    zmq_msg_copy(&b, &a);
    // libzmq's decoder keeps up to 32 bytes inside the message, one byte fewer than
    // zmq_msg_init_size does.
    int want = sizes[i] >= 33;
    char name[128];
    snprintf(name, sizeof name, "message: a received %zu-byte message, copied, is %sshared", sizes[i],
             want ? "" : "not ");
    check(name, n == (int)sizes[i] && shared(&a) == want && shared(&b) == want, "received %d, ZMQ_SHARED %d/%d", n,
          shared(&a), shared(&b));
    zmq_msg_close(&a);
    zmq_msg_close(&b);
  }
}

static void properties(void) {
  zmq_send(pair_out, "a", 1, ZMQ_SNDMORE);
  zmq_send(pair_out, "b", 1, 0);
  zmq_msg_t m;
  zmq_msg_init(&m);
  zmq_msg_recv(&m, pair_in, 0);
  int more = zmq_msg_get(&m, ZMQ_MORE), more2 = zmq_msg_more(&m);
  const char *type = zmq_msg_gets(&m, "Socket-Type");
  const char *peer = zmq_msg_gets(&m, "Peer-Address");
  int srcfd = zmq_msg_get(&m, ZMQ_SRCFD);
  errno = 0;
  const char *nothing = zmq_msg_gets(&m, "No-Such-Property");
  int nothing_errno = errno;
  zmq_msg_recv(&m, pair_in, 0);
  int last_more = zmq_msg_get(&m, ZMQ_MORE);
  zmq_msg_close(&m);
  check("message: ZMQ_MORE of a received part", more == 1 && more2 == 1 && last_more == 0,
        "first part %d/%d, last part %d", more, more2, last_more);
  check("message: zmq_msg_gets(\"Socket-Type\") of a received message is the peer's type",
        type != NULL && strcmp(type, "PAIR") == 0, "%s", type ? type : "NULL");
  check("message: zmq_msg_gets(\"Peer-Address\") of a received message is the peer's address",
        peer != NULL && strcmp(peer, "127.0.0.1") == 0, "%s", peer ? peer : "NULL");
  check("message: zmq_msg_gets of an unknown property is NULL with EINVAL", nothing == NULL && nothing_errno == EINVAL,
        "%s, %s", nothing ? nothing : "NULL", errno_name(nothing_errno));
  check("message: ZMQ_SRCFD of a received message is its connection's descriptor", srcfd >= 0, "%d", srcfd);
}

void check_messages(void) {
  zmq_msg_t m;
  zmq_msg_init(&m);
  check("message: zmq_msg_init is empty, not more, not shared",
        zmq_msg_size(&m) == 0 && zmq_msg_more(&m) == 0 && shared(&m) == 0 && zmq_msg_get(&m, ZMQ_SRCFD) == -1,
        "size %zu, more %d, shared %d", zmq_msg_size(&m), zmq_msg_more(&m), shared(&m));
  errno = 0;
  int bad = zmq_msg_get(&m, 42);
  check("message: zmq_msg_get of an unknown property is EINVAL", bad == -1 && errno == EINVAL, "%d %s", bad,
        errno_name(errno));
  errno = 0;
  bad = zmq_msg_set(&m, ZMQ_MORE, 1);
  check("message: zmq_msg_set has no property to set (EINVAL)", bad == -1 && errno == EINVAL, "%d %s", bad,
        errno_name(errno));
  zmq_msg_close(&m);

  zmq_msg_init_size(&m, 100);
  memset(zmq_msg_data(&m), 7, 100);
  check("message: zmq_msg_init_size gives that many writable bytes",
        zmq_msg_size(&m) == 100 && ((char *)zmq_msg_data(&m))[99] == 7, "size %zu", zmq_msg_size(&m));
  zmq_msg_close(&m);

  copy_of_size(10, 0);
  copy_of_size(33, 0);
  copy_of_size(34, 1);
  copy_of_size(1000, 1);
  constant_data(0);
  constant_data(10);
  constant_data(1000);

  freed = 0;
  zmq_msg_init_data(&m, buffer, 1000, count_free, NULL);
  int with_ffn = shared(&m);
  zmq_msg_t copy;
  zmq_msg_init(&copy);
  zmq_msg_copy(&copy, &m);
  zmq_msg_close(&m);
  int freed_early = freed;
  zmq_msg_close(&copy);
  check("message: data with a free function is not shared, and freed once, by its last reference",
        with_ffn == 0 && freed_early == 0 && freed == 1, "shared %d, freed %d before the last close, %d after",
        with_ffn, freed_early, freed);

  connect_pair();
  freed = 0;
  zmq_msg_init_data(&m, buffer, 1000, count_free, NULL);
  zmq_msg_send(&m, pair_out, 0);
  zmq_msg_init(&m);
  int n = zmq_msg_recv(&m, pair_in, 0);
  zmq_msg_close(&m);
  for (int i = 0; i < 100 && freed == 0; i++) pause_ms(10);
  check("message: data sent with a free function is freed once, after it went out", n == 1000 && freed == 1,
        "received %d, freed %d times", n, freed);

  received();
  properties();
  zmq_close(pair_in);
  zmq_close(pair_out);
}
