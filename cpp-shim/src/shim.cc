// The exported libzmq C API. Every call first asks `state()`, decided once per process
// from Rust (configuration, logging, mode), then forwards to the real libzmq (mode off,
// and always for the utility functions), goes to Zebra's engine (mode on, native.cc),
// or refuses to create a context when the configuration cannot be honoured.
#include <zmq.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <unistd.h>

#include "native.h"
#include "real_libzmq.h"
#include "zebra-ffi/src/lib.rs.h"

namespace zebra {
namespace {

using ffi::Mode;

enum class Fn : int {
#define ZEBRA_API(ret, name, params, args) name,
#include "api.def"
#undef ZEBRA_API
  zmq_ctx_new,
  zmq_init,
  count,
};

constexpr const char *kFnNames[] = {
#define ZEBRA_API(ret, name, params, args) #name,
#include "api.def"
#undef ZEBRA_API
    "zmq_ctx_new",
    "zmq_init",
};
static_assert(sizeof(kFnNames) / sizeof(kFnNames[0]) == static_cast<size_t>(Fn::count));
static_assert(static_cast<size_t>(Fn::count) <= 128, "zebra-ffi's stats.rs counts 128 functions");

enum Level : uint8_t { kError = 1, kWarn = 2, kInfo = 3 };

void log(Level level, const std::string &message) { ffi::log_line(level, message); }

struct State {
  Mode mode = Mode::Off;
  std::string refuse_reason;
  bool count_calls = false;
  bool have_real = false;
  std::string real_error;
  RealLibzmq real;
  std::string real_path;  // ZEBRA_REAL_LIBZMQ, if set
};

State *the_state = nullptr;

// The counters and the report live in Rust (zebra-ffi's stats.rs), so that the
// `zebra-stats` thread can write them while the process runs (ZEBRA_STATS_INTERVAL).
void report_at_exit() { ffi::stats_at_exit(); }

void begin_stats(const State &s) {
  std::string names;
  for (size_t i = 0; i < static_cast<size_t>(Fn::count); ++i) {
    if (i != 0) names += ' ';
    names += kFnNames[i];
  }
  ffi::stats_begin(s.have_real ? s.real.origin : std::string("none"),
                   s.have_real ? s.real.found_by : std::string("none"), names);
}

State *make_state() {
  auto *s = new State();  // never freed: zmq calls may come from other atexit handlers
  ffi::Startup startup = ffi::startup();
  s->mode = startup.mode;
  s->refuse_reason = std::string(startup.reason);
  s->count_calls = startup.count_calls;
  s->real_path = std::string(startup.real_libzmq);
  s->have_real = find_real_libzmq(std::string(startup.real_libzmq), s->real, s->real_error);
  if (s->have_real) {
    log(kInfo, "forwarding zmq calls to " + s->real.origin + " (found by " + s->real.found_by + ")");
  } else if (s->mode == Mode::Off) {
    log(kError, "cannot forward to the real libzmq: " + s->real_error);
  }
  the_state = s;
  if (s->count_calls) {
    begin_stats(*s);
    std::atexit(report_at_exit);
  }
  // Registered after the report so that it runs before it (atexit is last in, first out):
  // the report then carries the stack's final counters.
  std::atexit(ffi::shutdown_network);
  return s;
}

inline State &state() {
  static State *s = make_state();
  return *s;
}

// Calls the real libzmq makes to its own exported API reach the shim too (the shim comes
// first in the symbol search order). They are forwarded like any call, but only the
// outermost call of a thread is counted, so the counts are exactly the client's calls.
thread_local int forward_depth = 0;

class CountScope {
 public:
  CountScope(State &s, Fn fn) : active_(s.count_calls) {
    if (active_ && forward_depth++ == 0) {
      ffi::count_call(static_cast<uint16_t>(fn));
    }
  }
  ~CountScope() {
    if (active_) --forward_depth;
  }
  CountScope(const CountScope &) = delete;
  CountScope &operator=(const CountScope &) = delete;

 private:
  bool active_;
};

[[noreturn]] void missing(const State &s, const char *name) {
  std::string why = s.have_real ? s.real.origin + " does not define it" : s.real_error;
  std::fprintf(stderr, "zebra: %s was called but cannot be forwarded: %s\n", name, why.c_str());
  std::abort();
}

// zmq_ctx_new and zmq_init: where the mode is applied, and where a refused
// configuration surfaces to the caller.
template <typename Real, typename Native, typename... Args>
void *create_context(Fn fn, Real real, Native native, Args... args) {
  State &s = state();
  CountScope scope(s, fn);
  switch (s.mode) {
    case Mode::Off:
      if (real == nullptr) {
        errno = ENOTSUP;
        return nullptr;
      }
      return real(args...);
    case Mode::On:
      return native(args...);
    case Mode::BadConfig:
      log(kError, std::string(kFnNames[static_cast<size_t>(fn)]) + " refused: " + s.refuse_reason);
      errno = EINVAL;
      return nullptr;
  }
  errno = ENOTSUP;
  return nullptr;
}

}  // namespace

const RealLibzmq *private_libzmq() {
  static const RealLibzmq *const lib = []() -> const RealLibzmq * {
    auto *r = new RealLibzmq();  // never freed, as the state
    std::string error;
    if (!open_private_libzmq(state().real_path, *r, error)) {
      log(kWarn, "socket types other than PAIR, DEALER and ROUTER are not available with ZEBRA_ENABLE=1: " + error);
      delete r;
      return nullptr;
    }
    log(kInfo, "socket types other than PAIR, DEALER and ROUTER go to a private copy of " + r->origin);
    return r;
  }();
  return lib;
}

}  // namespace zebra

extern "C" {

void *zmq_ctx_new(void) {
  return zebra::create_context(zebra::Fn::zmq_ctx_new, zebra::state().real.zmq_ctx_new,
                               zebra::native::zmq_ctx_new);
}

void *zmq_init(int io_threads) {
  return zebra::create_context(zebra::Fn::zmq_init, zebra::state().real.zmq_init,
                               zebra::native::zmq_init, io_threads);
}

// Parameter names come from api.def, so the locals here have names no parameter uses.
#define ZEBRA_FORWARD(name, args)                                                 \
  if (zebra_state.real.name == nullptr) zebra::missing(zebra_state, #name); \
  return zebra_state.real.name args;

#define ZEBRA_UTILITY_API(ret, name, params, args)               \
  ret name params {                                              \
    zebra::State &zebra_state = zebra::state();                  \
    zebra::CountScope zebra_scope(zebra_state, zebra::Fn::name); \
    ZEBRA_FORWARD(name, args)                                    \
  }

#define ZEBRA_ENGINE_API(ret, name, params, args)                                           \
  ret name params {                                                                        \
    zebra::State &zebra_state = zebra::state();                                            \
    zebra::CountScope zebra_scope(zebra_state, zebra::Fn::name);                           \
    if (zebra_state.mode == zebra::ffi::Mode::On) return zebra::native::name args;         \
    ZEBRA_FORWARD(name, args)                                                              \
  }
#include "api.def"
#undef ZEBRA_ENGINE_API
#undef ZEBRA_UTILITY_API
#undef ZEBRA_FORWARD

}  // extern "C"
