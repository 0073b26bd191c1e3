// The suite's runner: `conformance --library libzmq|zebra [GROUP...]` runs the
// groups (options, endpoints, messages, behaviour; all by default);
// `conformance --differences` prints the known differences for docs/ZMQ.md.
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "conformance.h"

const char *library = "libzmq";
void *ctx;

static int failures;

void check(const char *name, int ok, const char *fmt, ...) {
  char detail[512] = "";
  if (!ok) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(detail, sizeof detail, fmt, ap);
    va_end(ap);
  }
  const char *why = strcmp(library, "zebra") == 0 ? known_difference(name) : NULL;
  if (why == NULL) {
    if (ok) {
      printf("PASS %s %s\n", library, name);
    } else {
      printf("FAIL %s %s: %s\n", library, name, detail);
      failures++;
    }
  } else if (ok) {
    printf("FAIL %s %s: listed as a difference (%s) but behaves as libzmq now: take it off the list\n",
           library, name, why);
    failures++;
  } else {
    printf("SKIP %s %s: known difference: %s (here: %s)\n", library, name, why, detail);
  }
  fflush(stdout);
}

void *sock(int type, int timeout_ms) {
  void *s = zmq_socket(ctx, type);
  if (s == NULL) return NULL;
  set_int(s, ZMQ_LINGER, 0);
  set_int(s, ZMQ_RCVTIMEO, timeout_ms);
  set_int(s, ZMQ_SNDTIMEO, timeout_ms);
  return s;
}

int set_int(void *s, int option, int value) { return zmq_setsockopt(s, option, &value, sizeof value); }

int get_int(void *s, int option) {
  int v = 0;
  size_t len = sizeof v;
  return zmq_getsockopt(s, option, &v, &len) == 0 ? v : -999;
}

const char *last_endpoint(void *s) {
  static char buf[256];
  size_t len = sizeof buf;
  if (zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, buf, &len) != 0) buf[0] = 0;
  return buf;
}

const char *errno_name(int e) {
  static char other[32];
  switch (e) {
    case 0: return "no error";
    case EINVAL: return "EINVAL";
    case EAGAIN: return "EAGAIN";
    case ENODEV: return "ENODEV";
    case ENOENT: return "ENOENT";
    case EADDRINUSE: return "EADDRINUSE";
    case EADDRNOTAVAIL: return "EADDRNOTAVAIL";
    case EPROTONOSUPPORT: return "EPROTONOSUPPORT";
    case ENOCOMPATPROTO: return "ENOCOMPATPROTO";
    case EHOSTUNREACH: return "EHOSTUNREACH";
    case ENAMETOOLONG: return "ENAMETOOLONG";
    case ENOTSUP: return "ENOTSUP";
    case EFAULT: return "EFAULT";
    default: snprintf(other, sizeof other, "errno %d", e); return other;
  }
}

void pause_ms(int ms) {
  struct timespec t = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

static const struct {
  const char *name;
  void (*run)(void);
} groups[] = {
    {"options", check_options},
    {"endpoints", check_endpoints},
    {"messages", check_messages},
    {"behaviour", check_behaviour},
};

int main(int argc, char **argv) {
  int first_group = argc;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--differences") == 0) {
      print_differences();
      return 0;
    }
    if (strcmp(argv[i], "--library") == 0 && i + 1 < argc) {
      library = argv[++i];
    } else {
      first_group = i;
      break;
    }
  }
  ctx = zmq_ctx_new();
  if (ctx == NULL) {
    printf("FAIL %s zmq_ctx_new: %s\n", library, zmq_strerror(errno));
    return 1;
  }
  for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
    int wanted = first_group == argc;
    for (int i = first_group; i < argc; i++) wanted |= strcmp(argv[i], groups[g].name) == 0;
    if (wanted) groups[g].run();
  }
  zmq_ctx_term(ctx);
  return failures == 0 ? 0 : 1;
}
