// Endpoint forms (zmq_bind(3), zmq_connect(3), zmq_tcp(7), zmq_ipc(7),
// zmq_inproc(7)): which are taken, the errno of those that are not, what
// ZMQ_LAST_ENDPOINT shows, and that a bound endpoint carries a message.
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "conformance.h"

// The result of zmq_bind or zmq_connect: 0 or the errno.
static int bind_errno(void *s, const char *endpoint) { return zmq_bind(s, endpoint) == 0 ? 0 : errno; }
static int connect_errno(void *s, const char *endpoint) { return zmq_connect(s, endpoint) == 0 ? 0 : errno; }

// Binds and connects `endpoint` on fresh PAIR sockets and compares with the errno
// values libzmq documents; `last` (if not NULL) is the start of ZMQ_LAST_ENDPOINT.
static void form_ipv6(const char *what, const char *endpoint, int bind_want, int connect_want, const char *last,
                      int ipv6) {
  void *b = sock(ZMQ_PAIR, 100);
  void *c = sock(ZMQ_PAIR, 100);
  set_int(b, ZMQ_IPV6, ipv6);
  int got_bind = bind_errno(b, endpoint);
  char shown[256];
  snprintf(shown, sizeof shown, "%s", last_endpoint(b));
  int got_connect = connect_errno(c, endpoint);
  char name[160];
  snprintf(name, sizeof name, "endpoint %s: %s", endpoint, what);
  int last_ok = last == NULL || strncmp(shown, last, strlen(last)) == 0;
  check(name, got_bind == bind_want && got_connect == connect_want && last_ok,
        "bind %s (expected %s), connect %s (expected %s), ZMQ_LAST_ENDPOINT \"%s\"", errno_name(got_bind),
        errno_name(bind_want), errno_name(got_connect), errno_name(connect_want), shown);
  zmq_close(b);
  zmq_close(c);
}

static void form(const char *what, const char *endpoint, int bind_want, int connect_want, const char *last) {
  form_ipv6(what, endpoint, bind_want, connect_want, last, 0);
}

// A message from a PAIR connected to `connect_to` reaches a PAIR bound to `bind_to`.
static void carries(const char *what, const char *bind_to, const char *connect_to) {
  void *b = sock(ZMQ_PAIR, 2000);
  void *c = sock(ZMQ_PAIR, 2000);
  char got[8] = "";
  int rc = zmq_bind(b, bind_to);
  const char *to = connect_to != NULL ? connect_to : last_endpoint(b);
  if (rc == 0) rc = zmq_connect(c, to);
  if (rc == 0) rc = zmq_send(c, "hi", 2, 0) == 2 ? 0 : -1;
  if (rc == 0) rc = zmq_recv(b, got, sizeof got, 0) == 2 ? 0 : -1;
  char name[160];
  snprintf(name, sizeof name, "endpoint %s: %s", bind_to, what);
  check(name, rc == 0 && memcmp(got, "hi", 2) == 0, "%s", zmq_strerror(errno));
  zmq_close(b);
  zmq_close(c);
}

void check_endpoints(void) {
  // tcp://: bind takes an interface name, an address or *, and * or 0 for any port;
  // connect takes a host name or address and a real port (a connect succeeds at once:
  // the connection is made in the background).
  form("bound to an ephemeral port", "tcp://127.0.0.1:*", 0, EINVAL, "tcp://127.0.0.1:");
  form("port 0 binds an ephemeral port", "tcp://127.0.0.1:0", 0, 0, "tcp://127.0.0.1:");
  form("every interface", "tcp://*:*", 0, EINVAL, "tcp://0.0.0.0:");
  form("an interface by name", "tcp://lo:*", 0, EINVAL, "tcp://127.0.0.1:");
  form("a host name is not bound", "tcp://localhost:*", ENODEV, EINVAL, NULL);
  form("an unknown name", "tcp://nosuchhost.invalid:5555", ENODEV, 0, NULL);
  form("no host", "tcp://:5555", ENODEV, 0, NULL);
  form("an address of no interface here", "tcp://192.0.2.1:*", EADDRNOTAVAIL, EINVAL, NULL);
  form("no port", "tcp://127.0.0.1", EINVAL, EINVAL, NULL);
  form("an empty port", "tcp://127.0.0.1:", EINVAL, EINVAL, NULL);
  form("a port that is not a number", "tcp://127.0.0.1:abc", EINVAL, EINVAL, NULL);
  form("a port past 65535 is taken modulo 65536, and 0 that way is EINVAL", "tcp://127.0.0.1:65536", EINVAL, 0, NULL);
  form("IPv6 without ZMQ_IPV6", "tcp://[::1]:*", ENODEV, EINVAL, NULL);
  form_ipv6("IPv6 with ZMQ_IPV6", "tcp://[::1]:*", 0, EINVAL, "tcp://[::1]:", 1);
  form("a source address before ';'", "tcp://127.0.0.1:0;127.0.0.1:0", 0, 0, "tcp://127.0.0.1:");
  carries("a message over tcp", "tcp://127.0.0.1:*", NULL);

  // ipc://: a path (relative or absolute), * for a fresh one, @name for Linux's abstract
  // namespace; the path must fit a sockaddr_un and its directory must exist.
  char path[128];
  snprintf(path, sizeof path, "ipc:///tmp/zmq-conformance-%d.ipc", (int)getpid());
  form("an absolute path", path, 0, 0, path);
  form("a fresh path", "ipc://*", 0, 0, "ipc://");
  form("an abstract name", "ipc://@zmq-conformance", 0, 0, "ipc://@zmq-conformance");
  form("an empty abstract name", "ipc://@", EINVAL, EINVAL, NULL);
  form("an empty path", "ipc://", EINVAL, EINVAL, NULL);
  form("a directory that does not exist", "ipc:///nonexistent-dir/x.ipc", ENOENT, 0, NULL);
  char too_long[160];
  snprintf(too_long, sizeof too_long, "ipc:///tmp/%0120d", 7);
  form("a path longer than a sockaddr_un holds", too_long, ENAMETOOLONG, ENAMETOOLONG, NULL);
  carries("a message over ipc", path, NULL);
  carries("a message over an abstract name", "ipc://@zmq-conformance-carry", NULL);
  unlink(path + strlen("ipc://"));

  // inproc://: any non-empty name, bound once per context; connect before bind works.
  form("a name", "inproc://conformance", 0, 0, "inproc://conformance");
  form("an empty name", "inproc://", EINVAL, EINVAL, NULL);
  {
    void *a = sock(ZMQ_PAIR, 100), *b = sock(ZMQ_PAIR, 100);
    zmq_bind(a, "inproc://twice");
    int e = bind_errno(b, "inproc://twice");
    check("endpoint inproc://twice: a second bind is EADDRINUSE", e == EADDRINUSE, "%s", errno_name(e));
    zmq_close(a);
    zmq_close(b);
  }
  carries("a message over inproc", "inproc://carry", "inproc://carry");

  // Transports: unknown ones, and those that need other socket types.
  form("an unknown transport", "bogus://x", EPROTONOSUPPORT, EPROTONOSUPPORT, NULL);
  form("multicast needs PUB/SUB", "pgm://127.0.0.1;239.192.1.1:5555", ENOCOMPATPROTO, ENOCOMPATPROTO, NULL);
  form("multicast needs PUB/SUB", "epgm://127.0.0.1;239.192.1.1:5555", ENOCOMPATPROTO, ENOCOMPATPROTO, NULL);
  form("udp needs RADIO/DISH", "udp://127.0.0.1:5555", ENOCOMPATPROTO, ENOCOMPATPROTO, NULL);
  form("WebSocket (a draft transport this libzmq has)", "ws://127.0.0.1:*", 0, EINVAL, "ws://127.0.0.1:");
  form("no ://", "tcp:/x", EINVAL, EINVAL, NULL);
  form("no transport", "noproto", EINVAL, EINVAL, NULL);
  form("empty", "", EINVAL, EINVAL, NULL);
}
