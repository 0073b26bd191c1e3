// Finding the real libzmq that the shim forwards to when Zebra is off.
#pragma once

#include <zmq.h>

#include <string>

namespace zebra {

// Entry points of one real libzmq; a function the real library lacks stays null.
struct RealLibzmq {
#define ZEBRA_API(ret, name, params, args) ret(*name) params = nullptr;
#include "api.def"
#undef ZEBRA_API
  void *(*zmq_ctx_new)(void) = nullptr;
  void *(*zmq_init)(int io_threads) = nullptr;

  std::string origin;    // file of the object forwarded to
  std::string found_by;  // which rule found it (see find_real_libzmq)
};

// Looks for the real zmq API in this order, never accepting the shim itself:
//  1. "rtld-next": the next definition after the shim (the LD_PRELOAD case);
//  2. "loaded-object": an already loaded object that defines it, found by walking the
//     loaded objects; needed when the definition sits in an object opened with
//     RTLD_LOCAL (MXNet's libmxnet.so, loaded by Python's ctypes), where RTLD_NEXT
//     finds nothing;
//  3. "path": `configured_path` (ZEBRA_REAL_LIBZMQ) or else the system libzmq the
//     shim was built against, opened by absolute path (the relinked case; opening
//     "libzmq.so.5" by name could return the shim itself).
// Returns false and sets `error` when none works.
bool find_real_libzmq(const std::string &configured_path, RealLibzmq &out, std::string &error);

// Opens a private copy of the real libzmq (`configured_path`, else the system one) in a
// link namespace of its own (dlmopen(LM_ID_NEWLM)): its calls to its own API resolve
// inside that namespace, never to the shim, so that it can carry sockets beside
// Zebra's engine in mode on. Returns false and sets `error` when it cannot.
bool open_private_libzmq(const std::string &configured_path, RealLibzmq &out, std::string &error);

// The private libzmq of mode on (opened on first use), or null if it cannot be opened
// (logged once): it carries the socket types Zebra's engine does not have.
const RealLibzmq *private_libzmq();

}  // namespace zebra
