// The ZeroMQ conformance suite: PAIR, DEALER and ROUTER as libzmq 4.3 documents
// them (zmq_setsockopt(3), zmq_getsockopt(3), zmq_bind(3), zmq_connect(3), zmq_tcp(7),
// zmq_ipc(7), zmq_msg_get(3), ...) and as the system's libzmq 4.3.4 behaves. One
// program, run on the real libzmq and on Zebra's engine (run.sh); every check prints
// one PASS/FAIL/SKIP line. A check listed in differences.c is a known difference of
// Zebra's engine: SKIP with its reason while it differs, FAIL once it no longer does.
#ifndef ZMQ_CONFORMANCE_H
#define ZMQ_CONFORMANCE_H

#include <stddef.h>
#include <zmq.h>

// Which library runs the checks: "libzmq" or "zebra" (run.sh passes it).
extern const char *library;

// Reports one check: `ok`, or what went wrong (printf-style).
void check(const char *name, int ok, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

// The reason `name` is a known difference of Zebra's engine, or NULL.
const char *known_difference(const char *name);
// Prints the known differences as a Markdown list (docs/ZMQ.md holds it).
void print_differences(void);

// A context shared by the checks.
extern void *ctx;

// A socket with ZMQ_LINGER 0 and ZMQ_RCVTIMEO/ZMQ_SNDTIMEO `timeout_ms`.
void *sock(int type, int timeout_ms);
// zmq_setsockopt of an int.
int set_int(void *s, int option, int value);
// zmq_getsockopt of an int into a 4-byte buffer; -999 if it fails.
int get_int(void *s, int option);
// The socket's ZMQ_LAST_ENDPOINT (static buffer).
const char *last_endpoint(void *s);
// errno's name (EINVAL, ...) for messages.
const char *errno_name(int e);
// Sleeps `ms` milliseconds.
void pause_ms(int ms);

// The groups of checks.
void check_options(void);
void check_endpoints(void);
void check_messages(void);
void check_behaviour(void);

#endif
