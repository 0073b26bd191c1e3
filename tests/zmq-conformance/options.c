// Every socket option libzmq 4.3 has for PAIR, DEALER and ROUTER sockets, as
// zmq_setsockopt(3)/zmq_getsockopt(3) document it and libzmq 4.3.4 checks it: the
// value's type and range, its default, the socket types that take it, whether it can
// be read or written, what NULL does, and the caller's buffer sizes. One check per
// option covers the three socket types.
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "conformance.h"

enum { PAIR = 1, DEALER = 2, ROUTER = 4, ALL = 7 };

enum kind {
  INT,       // int within lo..hi; exactly 4 bytes in and out
  FLAG,      // any int, read back as 0 or 1
  INT64,     // int64_t; exactly 8 bytes in and out
  ID,        // binary, 1..hi bytes (hi 0: no limit)
  STR,       // string of at most hi bytes (0: no limit), not empty; NULL is EINVAL;
             // reads back NUL-terminated
  STR_NULL,  // the same, and NULL resets it
  STR_ANY,   // the same, empty allowed, and NULL resets it
  SET,       // an int added to a set; NULL empties it; write only
  CIDR,      // address[/bits] added to a list; NULL empties it; write only
  KEY,       // CURVE key: 32 bytes or 40 characters of Z85
  STATE,     // read only
};

struct option {
  int id;
  const char *name;
  enum kind kind;
  int types;
  int readable;
  long long dflt;
  int lo, hi;
};

#define RW(id, kind, dflt, lo, hi) {id, #id, kind, ALL, 1, dflt, lo, hi}
#define WO(id, kind, types, lo, hi) {id, #id, kind, types, 0, 0, lo, hi}
#define RO(id) {id, #id, STATE, ALL, 1, 0, 0, 0}

static const struct option options[] = {
    RW(ZMQ_AFFINITY, INT64, 0, 0, 0),
    RW(ZMQ_ROUTING_ID, ID, 0, 0, 255),
    RW(ZMQ_RATE, INT, 100, 1, INT_MAX),
    RW(ZMQ_RECOVERY_IVL, INT, 10000, 0, INT_MAX),
    RW(ZMQ_SNDBUF, INT, -1, -1, INT_MAX),
    RW(ZMQ_RCVBUF, INT, -1, -1, INT_MAX),
    RO(ZMQ_RCVMORE),
    RO(ZMQ_FD),
    RO(ZMQ_EVENTS),
    RO(ZMQ_TYPE),
    RW(ZMQ_LINGER, INT, -1, -1, INT_MAX),
    RW(ZMQ_RECONNECT_IVL, INT, 100, -1, INT_MAX),
    RW(ZMQ_BACKLOG, INT, 100, 0, INT_MAX),
    RW(ZMQ_RECONNECT_IVL_MAX, INT, 0, 0, INT_MAX),
    RW(ZMQ_MAXMSGSIZE, INT64, -1, 0, 0),
    RW(ZMQ_SNDHWM, INT, 1000, 0, INT_MAX),
    RW(ZMQ_RCVHWM, INT, 1000, 0, INT_MAX),
    RW(ZMQ_MULTICAST_HOPS, INT, 1, 1, INT_MAX),
    RW(ZMQ_RCVTIMEO, INT, -1, -1, INT_MAX),
    RW(ZMQ_SNDTIMEO, INT, -1, -1, INT_MAX),
    RW(ZMQ_IPV4ONLY, INT, 1, 0, 1),
    RO(ZMQ_LAST_ENDPOINT),
    WO(ZMQ_ROUTER_MANDATORY, INT, ROUTER, 0, INT_MAX),
    RW(ZMQ_TCP_KEEPALIVE, INT, -1, -1, 1),
    RW(ZMQ_TCP_KEEPALIVE_CNT, INT, -1, -1, INT_MAX),
    RW(ZMQ_TCP_KEEPALIVE_IDLE, INT, -1, -1, INT_MAX),
    RW(ZMQ_TCP_KEEPALIVE_INTVL, INT, -1, -1, INT_MAX),
    WO(ZMQ_TCP_ACCEPT_FILTER, CIDR, ALL, 0, 0),
    RW(ZMQ_IMMEDIATE, INT, 0, 0, 1),
    WO(ZMQ_ROUTER_RAW, INT, ROUTER, 0, INT_MAX),
    RW(ZMQ_IPV6, INT, 0, 0, 1),
    RO(ZMQ_MECHANISM),
    RW(ZMQ_PLAIN_SERVER, INT, 0, 0, 1),
    RW(ZMQ_PLAIN_USERNAME, STR_NULL, 0, 0, 255),
    RW(ZMQ_PLAIN_PASSWORD, STR_NULL, 0, 0, 255),
    RW(ZMQ_CURVE_SERVER, INT, 0, 0, 1),
    RW(ZMQ_CURVE_PUBLICKEY, KEY, 0, 0, 0),
    RW(ZMQ_CURVE_SECRETKEY, KEY, 0, 0, 0),
    RW(ZMQ_CURVE_SERVERKEY, KEY, 0, 0, 0),
    WO(ZMQ_PROBE_ROUTER, INT, DEALER | ROUTER, 0, INT_MAX),
    RW(ZMQ_CONFLATE, INT, 0, 0, 1),
    RW(ZMQ_ZAP_DOMAIN, STR, 0, 0, 255),
    WO(ZMQ_ROUTER_HANDOVER, INT, ROUTER, 0, INT_MAX),
    RW(ZMQ_TOS, INT, 0, 0, INT_MAX),
    WO(ZMQ_IPC_FILTER_PID, SET, ALL, 0, 0),
    WO(ZMQ_IPC_FILTER_UID, SET, ALL, 0, 0),
    WO(ZMQ_IPC_FILTER_GID, SET, ALL, 0, 0),
    WO(ZMQ_CONNECT_ROUTING_ID, ID, ROUTER, 0, 0),
    RW(ZMQ_GSSAPI_SERVER, INT, 0, 0, 1),
    RW(ZMQ_GSSAPI_PRINCIPAL, STR, 0, 0, 255),
    RW(ZMQ_GSSAPI_SERVICE_PRINCIPAL, STR, 0, 0, 255),
    RW(ZMQ_GSSAPI_PLAINTEXT, INT, 0, 0, 1),
    RW(ZMQ_HANDSHAKE_IVL, INT, 30000, 0, INT_MAX),
    RW(ZMQ_SOCKS_PROXY, STR_NULL, 0, 0, 0),
    RW(ZMQ_INVERT_MATCHING, FLAG, 0, 0, 0),
    RW(ZMQ_HEARTBEAT_IVL, INT, 0, 0, INT_MAX),
    // Kept in whole deciseconds (read back rounded down to 100 ms).
    RW(ZMQ_HEARTBEAT_TTL, INT, 0, -99, 6553599),
    RW(ZMQ_HEARTBEAT_TIMEOUT, INT, -1, 0, INT_MAX),
    RW(ZMQ_CONNECT_TIMEOUT, INT, 0, 0, INT_MAX),
    RW(ZMQ_TCP_MAXRT, INT, 0, 0, INT_MAX),
    RO(ZMQ_THREAD_SAFE),
    RW(ZMQ_MULTICAST_MAXTPDU, INT, 1500, 1, INT_MAX),
    RW(ZMQ_USE_FD, INT, -1, -1, INT_MAX),
    RW(ZMQ_GSSAPI_PRINCIPAL_NAMETYPE, INT, 0, 0, 2),
    RW(ZMQ_GSSAPI_SERVICE_PRINCIPAL_NAMETYPE, INT, 0, 0, 2),
    RW(ZMQ_BINDTODEVICE, STR_NULL, 0, 0, 255),
    // Options of zmq.h's draft API that this libzmq build takes all the same: 93, 94,
    // 96, 99, 100 are stable from libzmq 4.3.3 on, 109 (ZMQ_RECONNECT_STOP) is a draft.
    {93, "ZMQ_ZAP_ENFORCE_DOMAIN", FLAG, ALL, 1, 0, 0, 0},
    {94, "ZMQ_LOOPBACK_FASTPATH", FLAG, ALL, 1, 0, 0, 0},
    {96, "ZMQ_MULTICAST_LOOP", FLAG, ALL, 1, 1, 0, 0},
    {99, "ZMQ_SOCKS_USERNAME", STR_ANY, ALL, 1, 0, 0, 255},
    {100, "ZMQ_SOCKS_PASSWORD", STR_ANY, ALL, 1, 0, 0, 255},
    {109, "ZMQ_RECONNECT_STOP", INT, ALL, 1, 0, INT_MIN, INT_MAX},
};

static const int types[] = {ZMQ_PAIR, ZMQ_DEALER, ZMQ_ROUTER};
static const int type_bits[] = {PAIR, DEALER, ROUTER};
static const char *type_names[] = {"PAIR", "DEALER", "ROUTER"};

// What went wrong with one option, gathered over the socket types.
static char problems[1024];

static void problem(const char *type, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void problem(const char *type, const char *fmt, ...) {
  size_t n = strlen(problems);
  if (n + 2 >= sizeof problems) return;
  n += (size_t)snprintf(problems + n, sizeof problems - n, "%s%s: ", n ? "; " : "", type);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(problems + n, sizeof problems - n, fmt, ap);
  va_end(ap);
}

// zmq_setsockopt's result: 0 or the errno.
static int set(void *s, int id, const void *value, size_t len) {
  return zmq_setsockopt(s, id, value, len) == 0 ? 0 : errno;
}

static void expect(const char *type, const char *what, int got, int want) {
  if (got != want) problem(type, "%s: %s, expected %s", what, errno_name(got), errno_name(want));
}

static int get_exact(void *s, int id, void *out, size_t len) {
  size_t n = len;
  if (zmq_getsockopt(s, id, out, &n) != 0) return errno;
  return n == len ? 0 : ERANGE;
}

static void check_int(void *s, const struct option *o, const char *type) {
  int v;
  char what[64];
  expect(type, "a 2-byte value", set(s, o->id, "ab", 2), EINVAL);
  expect(type, "NULL", set(s, o->id, NULL, 0), EINVAL);
  if (o->lo > INT_MIN) {
    v = o->lo - 1;
    snprintf(what, sizeof what, "%d (below the range)", v);
    expect(type, what, set(s, o->id, &v, sizeof v), EINVAL);
  }
  if (o->hi < INT_MAX) {
    v = o->hi + 1;
    snprintf(what, sizeof what, "%d (above the range)", v);
    expect(type, what, set(s, o->id, &v, sizeof v), EINVAL);
  }
  if (o->readable) {
    int got = 0;
    int64_t wide = 0;
    expect(type, "the default", get_exact(s, o->id, &got, sizeof got), 0);
    if (got != o->dflt) problem(type, "default %d, expected %lld", got, o->dflt);
    expect(type, "reading into 8 bytes", get_exact(s, o->id, &wide, sizeof wide), EINVAL);
  }
  // The low end, then the high end, each read back.
  const int ends[2] = {o->lo, o->hi};
  for (int i = 0; i < 2; i++) {
    v = ends[i];
    snprintf(what, sizeof what, "%d", v);
    expect(type, what, set(s, o->id, &v, sizeof v), 0);
    int want = o->id == ZMQ_HEARTBEAT_TTL ? v / 100 * 100 : v;
    int got = 0;
    if (o->readable && get_exact(s, o->id, &got, sizeof got) == 0 && got != want)
      problem(type, "set %d, read %d", v, got);
  }
}

static void check_flag(void *s, const struct option *o, const char *type) {
  int got = -1;
  expect(type, "the default", get_exact(s, o->id, &got, sizeof got), 0);
  if (got != o->dflt) problem(type, "default %d, expected %lld", got, o->dflt);
  const int values[] = {INT_MIN, -1, 0, 7};
  for (int i = 0; i < 4; i++) {
    int v = values[i];
    expect(type, "an int", set(s, o->id, &v, sizeof v), 0);
    get_exact(s, o->id, &got, sizeof got);
    if (got != (v != 0)) problem(type, "set %d, read %d", v, got);
  }
}

static void check_int64(void *s, const struct option *o, const char *type) {
  int64_t v = 0;
  expect(type, "the default", get_exact(s, o->id, &v, sizeof v), 0);
  if (v != o->dflt) problem(type, "default %lld, expected %lld", (long long)v, o->dflt);
  int small = 0;
  expect(type, "reading into 4 bytes", get_exact(s, o->id, &small, sizeof small), EINVAL);
  expect(type, "a 4-byte value", set(s, o->id, &small, sizeof small), EINVAL);
  v = 12345;
  expect(type, "12345", set(s, o->id, &v, sizeof v), 0);
  v = 0;
  get_exact(s, o->id, &v, sizeof v);
  if (v != 12345) problem(type, "read %lld after setting 12345", (long long)v);
}

static void check_id(void *s, const struct option *o, const char *type) {
  char id[256];
  memset(id, 'x', sizeof id);
  expect(type, "0 bytes", set(s, o->id, id, 0), EINVAL);
  expect(type, "256 bytes", set(s, o->id, id, 256), o->hi ? EINVAL : 0);
  expect(type, "NULL", set(s, o->id, NULL, 0), EINVAL);
  if (o->readable) {
    char got[256];
    size_t len = sizeof got;
    if (zmq_getsockopt(s, o->id, got, &len) != 0 || len != 0) problem(type, "the default is not empty");
  }
  expect(type, "255 bytes", set(s, o->id, id, 255), 0);
  expect(type, "\"\\0ab\"", set(s, o->id, "\0ab", 3), 0);
  if (o->readable) {
    char got[256];
    size_t len = 2;
    if (zmq_getsockopt(s, o->id, got, &len) == 0) problem(type, "read 3 bytes into 2");
    len = sizeof got;
    if (zmq_getsockopt(s, o->id, got, &len) != 0 || len != 3 || memcmp(got, "\0ab", 3) != 0)
      problem(type, "did not read back what was set");
  }
}

static void check_string(void *s, const struct option *o, const char *type) {
  char got[300] = "?";
  size_t len = sizeof got;
  if (zmq_getsockopt(s, o->id, got, &len) != 0 || len != 1 || got[0] != 0)
    problem(type, "the default is not \"\" (1 byte with its NUL)");
  len = 0;
  if (zmq_getsockopt(s, o->id, got, &len) == 0) problem(type, "read into 0 bytes");
  expect(type, "NULL", set(s, o->id, NULL, 0), o->kind == STR ? EINVAL : 0);
  expect(type, "\"\" (not NULL)", set(s, o->id, "", 0), o->kind == STR_ANY ? 0 : EINVAL);
  char long_value[256];
  memset(long_value, 'a', sizeof long_value);
  expect(type, "256 bytes", set(s, o->id, long_value, sizeof long_value), o->hi ? EINVAL : 0);
  expect(type, "\"tom\"", set(s, o->id, "tom", 3), 0);
}

static void check_set(void *s, const struct option *o, const char *type) {
  int v = 12345;
  int64_t wide = 1;
  expect(type, "an int", set(s, o->id, &v, sizeof v), 0);
  expect(type, "8 bytes", set(s, o->id, &wide, sizeof wide), EINVAL);
  expect(type, "NULL (empties the set)", set(s, o->id, NULL, 0), 0);
  expect(type, "\"\" (not NULL)", set(s, o->id, "", 0), EINVAL);
}

static void check_cidr(void *s, const struct option *o, const char *type) {
  static const struct {
    const char *text;
    int err;
  } cases[] = {
      {"127.0.0.1", 0},  {"10.0.0.0/8", 0},  {"1.2.3.4/0", 0},       {"::ffff:127.0.0.1", 0},
      {"127.0.0.1/33", EINVAL}, {"127.0.0.1/", EINVAL}, {"127.0.0.1/x", EINVAL},
      {"::1", EINVAL},  // IPv6 needs ZMQ_IPV6
      {"localhost", EINVAL}, {" 127.0.0.1", EINVAL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
    expect(type, cases[i].text, set(s, o->id, cases[i].text, strlen(cases[i].text)), cases[i].err);
  expect(type, "NULL (empties the list)", set(s, o->id, NULL, 0), 0);
  expect(type, "\"\" (not NULL)", set(s, o->id, "", 0), EINVAL);
  set_int(s, ZMQ_IPV6, 1);
  expect(type, "::1 with ZMQ_IPV6", set(s, o->id, "::1", 3), 0);
}

static void check_key(void *s, const struct option *o, const char *type) {
  unsigned char key[32] = {0};
  unsigned char got[41];
  size_t len = 32;
  if (zmq_getsockopt(s, o->id, got, &len) != 0 || len != 32) problem(type, "the default key cannot be read");
  expect(type, "31 bytes", set(s, o->id, key, 31), EINVAL);
  expect(type, "32 bytes", set(s, o->id, key, 32), 0);
  const char *z85 = "rq:rM>}U?@Lns47E1%kR.o@n%FcmmsL/@{H8]yf7";
  expect(type, "40 characters of Z85", set(s, o->id, z85, 40), 0);
}

static void check_state(void *s, const struct option *o, const char *type, int socket_type) {
  int v = 1;
  expect(type, "setting it", set(s, o->id, &v, sizeof v), EINVAL);
  char buf[64];
  size_t len = sizeof buf;
  if (o->id == ZMQ_LAST_ENDPOINT) {
    if (zmq_getsockopt(s, o->id, buf, &len) != 0 || len != 1 || buf[0] != 0)
      problem(type, "not \"\" before a bind or connect");
    return;
  }
  // Options of the socket's state take a buffer of at least an int, those of its
  // option store exactly an int.
  int exact = o->id == ZMQ_TYPE || o->id == ZMQ_MECHANISM;
  if (zmq_getsockopt(s, o->id, buf, &len) == 0) {
    if (exact) problem(type, "read into %zu bytes", sizeof buf);
  } else if (!exact) {
    problem(type, "cannot be read into %zu bytes: %s", sizeof buf, errno_name(errno));
  }
  int want = 0;
  if (o->id == ZMQ_TYPE) want = socket_type;
  if (o->id == ZMQ_EVENTS) want = socket_type == ZMQ_ROUTER ? ZMQ_POLLOUT : 0;
  if (o->id == ZMQ_FD) {
    if (get_int(s, o->id) < 0) problem(type, "no file descriptor");
  } else if (get_int(s, o->id) != want) {
    problem(type, "%d, expected %d", get_int(s, o->id), want);
  }
}

static void check_option(const struct option *o) {
  problems[0] = 0;
  for (int t = 0; t < 3; t++) {
    void *s = zmq_socket(ctx, types[t]);
    const char *type = type_names[t];
    if (!(o->types & type_bits[t])) {
      int v = 1;
      expect(type, "on this socket type", set(s, o->id, &v, sizeof v), EINVAL);
    } else {
      if (!o->readable) {
        char buf[64];
        size_t len = sizeof buf;
        if (zmq_getsockopt(s, o->id, buf, &len) == 0) problem(type, "write only, yet read");
      }
      switch (o->kind) {
        case INT: check_int(s, o, type); break;
        case FLAG: check_flag(s, o, type); break;
        case INT64: check_int64(s, o, type); break;
        case ID: check_id(s, o, type); break;
        case STR:
        case STR_NULL:
        case STR_ANY: check_string(s, o, type); break;
        case SET: check_set(s, o, type); break;
        case CIDR: check_cidr(s, o, type); break;
        case KEY: check_key(s, o, type); break;
        case STATE: check_state(s, o, type, types[t]); break;
      }
    }
    zmq_close(s);
  }
  char name[96];
  snprintf(name, sizeof name, "option %s (%d)", o->name, o->id);
  check(name, problems[0] == 0, "%s", problems);
}

void check_options(void) {
  for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) check_option(&options[i]);
  // Numbers libzmq 4.3 does not take on these socket types.
  static const int unknown[] = {6, 7, 40, 69, 70, 71, 72, 73, 78, 85, 95, 97, 98, 101, 110, 4242};
  problems[0] = 0;
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    void *s = sock(ZMQ_DEALER, 100);
    int v = 1;
    char what[32];
    snprintf(what, sizeof what, "option %d", unknown[i]);
    expect("DEALER", what, set(s, unknown[i], &v, sizeof v), EINVAL);
    zmq_close(s);
  }
  check("options other socket types have (SUBSCRIBE, XPUB_*, STREAM_NOTIFY, VMCI, ...) are EINVAL",
        problems[0] == 0, "%s", problems);
}
