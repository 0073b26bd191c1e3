// The known differences of Zebra's engine from libzmq 4.3, each with its reason:
// the checks named here SKIP on the engine while they differ and FAIL once they
// do not. docs/ZMQ.md lists them (run.sh holds the page to this list).
#include <stdio.h>
#include <string.h>

#include "conformance.h"

#define SECURITY "security mechanisms (PLAIN, CURVE, GSSAPI, ZAP) are not implemented: taken while off, EINVAL otherwise"
#define SOCKS "SOCKS proxies are not implemented: taken while off, EINVAL otherwise"
#define METADATA "a received message does not keep its connection's metadata"

static const struct {
  const char *check;
  const char *reason;
} differences[] = {
    {"option ZMQ_ROUTER_RAW (41)", "raw TCP on a ROUTER is not implemented: taken while 0, EINVAL otherwise"},
    {"option ZMQ_PLAIN_SERVER (44)", SECURITY},
    {"option ZMQ_PLAIN_USERNAME (45)", SECURITY},
    {"option ZMQ_PLAIN_PASSWORD (46)", SECURITY},
    {"option ZMQ_CURVE_SERVER (47)", SECURITY},
    {"option ZMQ_CURVE_PUBLICKEY (48)", SECURITY},
    {"option ZMQ_CURVE_SECRETKEY (49)", SECURITY},
    {"option ZMQ_CURVE_SERVERKEY (50)", SECURITY},
    {"option ZMQ_CONFLATE (54)", "not implemented: taken while 0, EINVAL otherwise"},
    {"option ZMQ_ZAP_DOMAIN (55)", SECURITY},
    {"option ZMQ_GSSAPI_SERVER (62)", SECURITY},
    {"option ZMQ_GSSAPI_PRINCIPAL (63)", SECURITY},
    {"option ZMQ_GSSAPI_SERVICE_PRINCIPAL (64)", SECURITY},
    {"option ZMQ_GSSAPI_PLAINTEXT (65)", SECURITY},
    {"option ZMQ_SOCKS_PROXY (68)", SOCKS},
    {"option ZMQ_USE_FD (89)", "listeners made by the application are not implemented: taken while -1, EINVAL otherwise"},
    {"option ZMQ_SOCKS_USERNAME (99)", SOCKS},
    {"option ZMQ_SOCKS_PASSWORD (100)", SOCKS},
    {"option ZMQ_RECONNECT_STOP (109)",
     "a draft option (ZMQ_BUILD_DRAFT_API) this libzmq build takes; not implemented: taken while 0"},
    {"endpoint ws://127.0.0.1:*: WebSocket (a draft transport this libzmq has)",
     "ws:// and wss:// (draft transports in libzmq 4.3) are not implemented: EPROTONOSUPPORT"},
    {"message: zmq_msg_gets(\"Socket-Type\") of a received message is the peer's type", METADATA},
    {"message: zmq_msg_gets(\"Peer-Address\") of a received message is the peer's address", METADATA},
    {"message: ZMQ_SRCFD of a received message is its connection's descriptor", METADATA " (ZMQ_SRCFD is -1)"},
    {NULL, NULL},
};

const char *known_difference(const char *name) {
  for (size_t i = 0; differences[i].check != NULL; i++)
    if (strcmp(differences[i].check, name) == 0) return differences[i].reason;
  return NULL;
}

void print_differences(void) {
  for (size_t i = 0; differences[i].check != NULL; i++)
    printf("- `%s`: %s\n", differences[i].check, differences[i].reason);
}
