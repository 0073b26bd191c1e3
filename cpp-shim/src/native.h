// The libzmq API carried by Zebra's own engine (ZEBRA_ENABLE=1): one function per
// ENGINE entry of api.def, plus context creation. shim.cc dispatches here in mode on.
#pragma once

#include <zmq.h>

namespace zebra::native {

void *zmq_ctx_new();
void *zmq_init(int io_threads);

#define ZEBRA_ENGINE_API(ret, name, params, args) ret name params;
#define ZEBRA_UTILITY_API(ret, name, params, args)
#include "api.def"
#undef ZEBRA_ENGINE_API
#undef ZEBRA_UTILITY_API

}  // namespace zebra::native
