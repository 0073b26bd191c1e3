// Mode on (ZEBRA_ENABLE=1): the libzmq API over Zebra's engine (rust/zebra-engine,
// reached through rust/zebra-ffi/src/native.rs).
//
// Handles: a context or socket pointer given to the caller points at a small struct
// with a tag, so a wrong or already closed handle gives EFAULT/ENOTSOCK instead of
// undefined behaviour (as far as a tag can tell).
//
// Socket types the engine does not have (PUB, SUB, REQ, ...) are carried by a private
// copy of the real libzmq, opened in a link namespace of its own so that its calls to
// its own API never reach this shim (real_libzmq.h): such a socket is a `Foreign`
// handle, its context made beside the engine's, its messages copied in and out of the
// shim's `Msg`, and zmq_poll takes both kinds.
//
// Messages: a zmq_msg_t holds a `Msg` (below). Small contents live inside it; larger
// ones are either a shim-owned `Block` (zmq_msg_init_size, zmq_msg_init_data), shared by
// reference count with the engine while it sends them, or a part received from the
// engine, whose bytes stay owned by Rust until the message is closed.
#include "native.h"

#include <poll.h>
#include <sched.h>
#include <sys/uio.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "real_libzmq.h"
#include "zebra-ffi/src/lib.rs.h"
#include "zebra-ffi/src/native.rs.h"

namespace zebra::native {
namespace {

namespace bridge = zebra::native_ffi;

constexpr uint32_t kContextTag = 0x5a434f4e;  // "ZCON"
constexpr uint32_t kSocketTag = 0x5a534f43;   // "ZSOC"
constexpr uint32_t kClosedTag = 0x5a444541;   // "ZDEA"
constexpr uint32_t kForeignTag = 0x5a464f52;  // "ZFOR"

struct Context {
  explicit Context(rust::Box<bridge::ContextHandle> h) : tag(kContextTag), handle(std::move(h)) {}
  uint32_t tag;
  rust::Box<bridge::ContextHandle> handle;
  // The private libzmq's context for foreign sockets, made on first use; the
  // zmq_ctx_set calls made on this context, replayed on it.
  std::mutex foreign_mutex;
  void *foreign = nullptr;
  std::vector<std::pair<int, int>> options;
};

struct Socket {
  uint32_t tag;
  rust::Box<bridge::SocketHandle> handle;
};

// A socket of a type the engine does not have, carried by the private libzmq.
struct Foreign {
  uint32_t tag;
  void *socket;
};

Foreign *as_foreign(void *p) {
  auto *f = static_cast<Foreign *>(p);
  return f != nullptr && f->tag == kForeignTag ? f : nullptr;
}

// The private libzmq; only called for foreign sockets, which exist only once it opened.
const RealLibzmq &lib() { return *private_libzmq(); }

// A foreign call's result: on failure, errno is the private libzmq's (its own libc's,
// in its own namespace).
int fwd(int rc) {
  if (rc < 0) errno = lib().zmq_errno();
  return rc;
}

void *foreign_context(Context *c) {
  std::lock_guard<std::mutex> lock(c->foreign_mutex);
  if (c->foreign == nullptr) {
    c->foreign = lib().zmq_ctx_new();
    if (c->foreign != nullptr) {
      for (auto [option, value] : c->options) lib().zmq_ctx_set(c->foreign, option, value);
    }
  }
  return c->foreign;
}

Context *as_context(void *p) {
  auto *c = static_cast<Context *>(p);
  if (c == nullptr || c->tag != kContextTag) {
    errno = EFAULT;
    return nullptr;
  }
  return c;
}

Socket *as_socket(void *p) {
  auto *s = static_cast<Socket *>(p);
  if (s == nullptr || s->tag != kSocketTag) {
    errno = ENOTSOCK;
    return nullptr;
  }
  return s;
}

int fail(int code) {
  errno = code;
  return -1;
}

// Bytes owned by the shim: zmq_msg_init_size allocates `Block` and data together;
// zmq_msg_init_data wraps the caller's buffer and calls its free function once.
struct Block {
  std::atomic<int> refs;
  void *data;
  zmq_free_fn *ffn;
  void *hint;
};

void release_block(Block *b) {
  if (b->refs.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    if (b->ffn != nullptr) b->ffn(b->data, b->hint);
    std::free(b);
  }
}

extern "C" void release_hook(size_t token) { release_block(reinterpret_cast<Block *>(token)); }

enum class Kind : uint8_t { kEmpty, kInline, kBlock, kPart };

// Contents of up to 33 bytes live inside the zmq_msg_t, as libzmq keeps them (its
// max_vsm_size on 64-bit): copies of those are never shared.
constexpr size_t kInline = 33;

struct Msg {
  unsigned char *data;  // kBlock and kPart
  size_t size;
  void *owner;  // Block* or bridge::RecvPart*
  Kind kind;
  uint8_t more;  // kept by close: dmlc PS-lite reads zmq_msg_more after zmq_msg_close
  // zmq_msg_get(ZMQ_SHARED), as libzmq reports it: set for constant data
  // (zmq_msg_init_data without a free function) and on both sides of a copy of
  // contents that are not inline, and kept from then on (moves included).
  uint8_t shared;
  unsigned char inline_data[kInline];
};
static_assert(sizeof(Msg) <= sizeof(zmq_msg_t), "Msg must fit in zmq_msg_t");
static_assert(alignof(Msg) <= alignof(zmq_msg_t), "Msg alignment");

Msg &as_msg(zmq_msg_t *m) { return *reinterpret_cast<Msg *>(m); }
const Msg &as_msg(const zmq_msg_t *m) { return *reinterpret_cast<const Msg *>(m); }

unsigned char *bytes_of(Msg &m) { return m.kind == Kind::kBlock || m.kind == Kind::kPart ? m.data : m.inline_data; }

void reset(Msg &m) {
  m.data = nullptr;
  m.size = 0;
  m.owner = nullptr;
  m.kind = Kind::kEmpty;
  m.shared = 0;
}

void release(Msg &m) {
  if (m.kind == Kind::kBlock) {
    release_block(static_cast<Block *>(m.owner));
  } else if (m.kind == Kind::kPart) {
    rust::Box<bridge::RecvPart>::from_raw(static_cast<bridge::RecvPart *>(m.owner));
  }
  reset(m);
}

int init_block(Msg &m, size_t size, void *data, zmq_free_fn *ffn, void *hint) {
  auto *b = static_cast<Block *>(std::malloc(sizeof(Block) + (data == nullptr ? size : 0)));
  if (b == nullptr) return fail(ENOMEM);
  new (&b->refs) std::atomic<int>(1);
  b->data = data != nullptr ? data : static_cast<void *>(b + 1);
  b->ffn = ffn;
  b->hint = hint;
  m.kind = Kind::kBlock;
  m.owner = b;
  m.data = static_cast<unsigned char *>(b->data);
  m.size = size;
  m.more = 0;
  return 0;
}

rust::Slice<const uint8_t> as_slice(const void *p, size_t n) {
  static const uint8_t empty = 0;
  return {n == 0 ? &empty : static_cast<const uint8_t *>(p), n};
}

int send(Msg &m, Socket *s, int flags) {
  const bool more = (flags & ZMQ_SNDMORE) != 0;
  const bool dontwait = (flags & ZMQ_DONTWAIT) != 0;
  int rc;
  switch (m.kind) {
    case Kind::kBlock: {
      auto *b = static_cast<Block *>(m.owner);
      b->refs.fetch_add(1, std::memory_order_relaxed);  // the engine's reference
      rc = bridge::socket_send_foreign(*s->handle, m.data, m.size, reinterpret_cast<size_t>(b), more,
                                       dontwait);
      break;
    }
    case Kind::kPart:
      rc = bridge::socket_send_part(*s->handle, *static_cast<bridge::RecvPart *>(m.owner), more, dontwait);
      break;
    default:
      rc = bridge::socket_send_copy(*s->handle, as_slice(m.inline_data, m.size), more, dontwait);
  }
  if (rc != 0) return fail(rc);
  size_t n = m.size;
  release(m);
  m.more = 0;
  return n > INT32_MAX ? INT32_MAX : static_cast<int>(n);
}

// BytePS's van polls zmq_msg_recv(ZMQ_DONTWAIT) in a loop on several threads per
// process, holding the van's mutex, which its sending thread needs too. Our empty check
// is one atomic load, so such a loop would spin at full speed and starve the threads
// that move the data (a job has more busy threads than this machine has cores). Every
// kSpinsBeforeRest empty polls the thread rests: it yields its core; and if those polls
// came within kTightLoop (a spin loop, not polls between other work) and nothing has
// arrived for kIdleBeforeSleep, it sleeps until something arrives in the process, at
// most kSleepUs. Sleeping at once would hold the app's mutex against its own sender in
// a ping-pong; after a millisecond of silence the cost is bounded by kSleepUs, and the
// idle threads of a job waiting for a round stop taking the CPU from those doing the
// work.
constexpr int kSpinsBeforeRest = 32;
constexpr std::chrono::microseconds kTightLoop{200};
constexpr std::chrono::microseconds kIdleBeforeSleep{1000};
constexpr uint32_t kSleepUs = 100;
thread_local int empty_polls = 0;
thread_local bool idle = false;
thread_local std::chrono::steady_clock::time_point idle_since;
thread_local std::chrono::steady_clock::time_point rest_window;

// rest_window: when the thread came back from its last rest, so that the window of the
// next kSpinsBeforeRest polls does not count the rest itself.
void rest(Socket *s) {
  const auto now = std::chrono::steady_clock::now();
  if (!idle) {
    idle = true;
    idle_since = now;
    sched_yield();
  } else if (now - rest_window <= kTightLoop && now - idle_since >= kIdleBeforeSleep) {
    bridge::socket_wait_in(*s->handle, kSleepUs);
  } else {
    sched_yield();
  }
  rest_window = std::chrono::steady_clock::now();
}

int recv(Msg &m, Socket *s, int flags) {
  const bool dontwait = (flags & ZMQ_DONTWAIT) != 0;
  // The spin-polling fast path: nothing queued means EAGAIN without allocating.
  if (dontwait && (bridge::socket_events(*s->handle) & ZMQ_POLLIN) == 0) {
    if (++empty_polls >= kSpinsBeforeRest) {
      empty_polls = 0;
      rest(s);
    }
    return fail(EAGAIN);
  }
  idle = false;
  empty_polls = 0;
  int err = 0;
  rust::Box<bridge::RecvPart> part = bridge::socket_recv(*s->handle, dontwait, err);
  if (err != 0) return fail(err);
  release(m);
  rust::Slice<const uint8_t> bytes = bridge::part_data(*part);
  m.size = bytes.size();
  m.more = bridge::part_more(*part) ? 1 : 0;
  // libzmq's decoder keeps a received part inside the message only below 33 bytes
  // (one byte fewer than zmq_msg_init_size): a copy of a 33-byte part is shared.
  if (m.size < kInline) {
    if (m.size != 0) std::memcpy(m.inline_data, bytes.data(), m.size);
    m.kind = Kind::kInline;
  } else {
    // The engine never touches a received part again; the caller may write to it.
    m.data = const_cast<unsigned char *>(bytes.data());
    m.owner = part.into_raw();
    m.kind = Kind::kPart;
  }
  return m.size > INT32_MAX ? INT32_MAX : static_cast<int>(m.size);
}

// A message sent on a foreign socket: copied into one of the private libzmq's.
int foreign_send(Msg &m, Foreign *f, int flags) {
  zmq_msg_t out;
  if (lib().zmq_msg_init_size(&out, m.size) != 0) return fwd(-1);
  if (m.size != 0) std::memcpy(lib().zmq_msg_data(&out), bytes_of(m), m.size);
  int rc = lib().zmq_msg_send(&out, f->socket, flags);
  if (rc < 0) {
    int e = lib().zmq_errno();
    lib().zmq_msg_close(&out);
    errno = e;
    return -1;
  }
  release(m);
  m.more = 0;
  return rc;
}

// A message received on a foreign socket: copied out of the private libzmq's.
int foreign_recv(Msg &m, Foreign *f, int flags) {
  zmq_msg_t in;
  lib().zmq_msg_init(&in);
  int n = lib().zmq_msg_recv(&in, f->socket, flags);
  if (n < 0) {
    int e = lib().zmq_errno();
    lib().zmq_msg_close(&in);
    errno = e;
    return -1;
  }
  const size_t size = lib().zmq_msg_size(&in);
  release(m);
  int rc = 0;
  if (size < kInline) {
    m.kind = Kind::kInline;
    m.size = size;
  } else {
    rc = init_block(m, size, nullptr, nullptr, nullptr);
  }
  if (rc == 0 && size != 0) std::memcpy(bytes_of(m), lib().zmq_msg_data(&in), size);
  m.more = lib().zmq_msg_more(&in) ? 1 : 0;
  lib().zmq_msg_close(&in);
  return rc == 0 ? n : -1;
}

void log_unsupported(const char *what) {
  ffi::log_line(2, std::string(what) + " is not supported by Zebra's engine (ZEBRA_ENABLE=1); returning ENOTSUP");
}

}  // namespace

void *zmq_ctx_new() {
  static const bool hooked = [] {
    bridge::set_release_hook(reinterpret_cast<size_t>(&release_hook));
    return true;
  }();
  (void)hooked;
  return new Context(bridge::ctx_new());
}

void *zmq_init(int io_threads) {
  void *ctx = native::zmq_ctx_new();
  if (native::zmq_ctx_set(ctx, ZMQ_IO_THREADS, io_threads) != 0) {
    int saved = errno;
    native::zmq_ctx_term(ctx);
    errno = saved;
    return nullptr;
  }
  return ctx;
}

int zmq_ctx_term(void *ctx) {
  Context *c = as_context(ctx);
  if (c == nullptr) return -1;
  if (c->foreign != nullptr) {
    if (fwd(lib().zmq_ctx_term(c->foreign)) != 0) return -1;
    c->foreign = nullptr;
  }
  if (int rc = bridge::ctx_term(*c->handle); rc != 0) return fail(rc);
  c->tag = kClosedTag;
  delete c;
  return 0;
}

int zmq_ctx_destroy(void *ctx) { return native::zmq_ctx_term(ctx); }
int zmq_term(void *ctx) { return native::zmq_ctx_term(ctx); }

int zmq_ctx_shutdown(void *ctx) {
  Context *c = as_context(ctx);
  if (c == nullptr) return -1;
  {
    std::lock_guard<std::mutex> lock(c->foreign_mutex);
    if (c->foreign != nullptr) lib().zmq_ctx_shutdown(c->foreign);
  }
  bridge::ctx_shutdown(*c->handle);
  return 0;
}

int zmq_ctx_set(void *ctx, int option, int optval) {
  Context *c = as_context(ctx);
  if (c == nullptr) return -1;
  int rc = bridge::ctx_set(*c->handle, option, optval);
  if (rc != 0) return fail(rc);
  std::lock_guard<std::mutex> lock(c->foreign_mutex);
  c->options.emplace_back(option, optval);
  if (c->foreign != nullptr) lib().zmq_ctx_set(c->foreign, option, optval);
  return 0;
}

int zmq_ctx_get(void *ctx, int option) {
  Context *c = as_context(ctx);
  if (c == nullptr) return -1;
  int value = 0;
  int rc = bridge::ctx_get(*c->handle, option, value);
  return rc == 0 ? value : fail(rc);
}

int zmq_msg_init(zmq_msg_t *msg) {
  Msg &m = as_msg(msg);
  reset(m);
  m.more = 0;
  return 0;
}

int zmq_msg_init_size(zmq_msg_t *msg, size_t size) {
  Msg &m = as_msg(msg);
  reset(m);
  m.more = 0;
  if (size <= kInline) {
    m.kind = Kind::kInline;
    m.size = size;
    return 0;
  }
  return init_block(m, size, nullptr, nullptr, nullptr);
}

int zmq_msg_init_data(zmq_msg_t *msg, void *data, size_t size, zmq_free_fn *ffn, void *hint) {
  Msg &m = as_msg(msg);
  reset(m);
  if (data == nullptr && size != 0) return fail(EINVAL);
  if (int rc = init_block(m, size, data, ffn, hint); rc != 0) return rc;
  m.shared = ffn == nullptr ? 1 : 0;
  return 0;
}

int zmq_msg_send(zmq_msg_t *msg, void *s, int flags) {
  if (Foreign *f = as_foreign(s)) return foreign_send(as_msg(msg), f, flags);
  Socket *sock = as_socket(s);
  if (sock == nullptr) return -1;
  return send(as_msg(msg), sock, flags);
}

int zmq_msg_recv(zmq_msg_t *msg, void *s, int flags) {
  if (Foreign *f = as_foreign(s)) return foreign_recv(as_msg(msg), f, flags);
  Socket *sock = as_socket(s);
  if (sock == nullptr) return -1;
  return recv(as_msg(msg), sock, flags);
}

int zmq_sendmsg(void *s, zmq_msg_t *msg, int flags) { return native::zmq_msg_send(msg, s, flags); }
int zmq_recvmsg(void *s, zmq_msg_t *msg, int flags) { return native::zmq_msg_recv(msg, s, flags); }

int zmq_msg_close(zmq_msg_t *msg) {
  release(as_msg(msg));
  return 0;
}

int zmq_msg_move(zmq_msg_t *dest, zmq_msg_t *src) {
  Msg &d = as_msg(dest);
  Msg &s = as_msg(src);
  release(d);
  std::memcpy(static_cast<void *>(&d), &s, sizeof(Msg));
  reset(s);
  s.more = 0;
  return 0;
}

int zmq_msg_copy(zmq_msg_t *dest, zmq_msg_t *src) {
  Msg &d = as_msg(dest);
  Msg &s = as_msg(src);
  if (&d == &s) return 0;
  release(d);
  std::memcpy(static_cast<void *>(&d), &s, sizeof(Msg));
  if (s.kind == Kind::kBlock) {
    static_cast<Block *>(s.owner)->refs.fetch_add(1, std::memory_order_relaxed);
  } else if (s.kind == Kind::kPart) {
    d.owner = bridge::part_clone(*static_cast<bridge::RecvPart *>(s.owner)).into_raw();
  }
  if (s.kind == Kind::kBlock || s.kind == Kind::kPart) s.shared = d.shared = 1;
  return 0;
}

void *zmq_msg_data(zmq_msg_t *msg) { return bytes_of(as_msg(msg)); }
size_t zmq_msg_size(const zmq_msg_t *msg) { return as_msg(msg).size; }
int zmq_msg_more(const zmq_msg_t *msg) { return as_msg(msg).more; }

int zmq_msg_get(const zmq_msg_t *msg, int property) {
  const Msg &m = as_msg(msg);
  switch (property) {
    case ZMQ_MORE:
      return m.more;
    case ZMQ_SRCFD:
      return -1;
    case ZMQ_SHARED:
      return m.shared;
    default:
      return fail(EINVAL);
  }
}

int zmq_msg_set(zmq_msg_t *, int, int) { return fail(EINVAL); }

const char *zmq_msg_gets(const zmq_msg_t *, const char *) {
  errno = EINVAL;
  return nullptr;
}

void *zmq_socket(void *ctx, int type) {
  Context *c = as_context(ctx);
  if (c == nullptr) return nullptr;
  if (!bridge::engine_socket_type(type) && private_libzmq() != nullptr) {
    void *fc = foreign_context(c);
    void *s = fc != nullptr ? lib().zmq_socket(fc, type) : nullptr;
    if (s == nullptr) {
      errno = lib().zmq_errno();
      return nullptr;
    }
    return new Foreign{kForeignTag, s};
  }
  rust::Box<bridge::SocketHandle> handle = bridge::socket_new(*c->handle, type);
  if (int e = bridge::socket_error(*handle); e != 0) {
    errno = e;
    return nullptr;
  }
  return new Socket{kSocketTag, std::move(handle)};
}

int zmq_close(void *s) {
  if (Foreign *f = as_foreign(s)) {
    if (fwd(lib().zmq_close(f->socket)) != 0) return -1;
    f->tag = kClosedTag;
    delete f;
    return 0;
  }
  Socket *sock = as_socket(s);
  if (sock == nullptr) return -1;
  bridge::socket_close(*sock->handle);
  sock->tag = kClosedTag;
  delete sock;
  return 0;
}

int zmq_setsockopt(void *s, int option, const void *optval, size_t optvallen) {
  if (Foreign *f = as_foreign(s)) return fwd(lib().zmq_setsockopt(f->socket, option, optval, optvallen));
  Socket *sock = as_socket(s);
  if (sock == nullptr) return -1;
  if (optval == nullptr && optvallen != 0) return fail(EFAULT);
  int rc = bridge::socket_set(*sock->handle, option, as_slice(optval, optvallen), optval == nullptr);
  return rc == 0 ? 0 : fail(rc);
}

int zmq_getsockopt(void *s, int option, void *optval, size_t *optvallen) {
  if (Foreign *f = as_foreign(s)) return fwd(lib().zmq_getsockopt(f->socket, option, optval, optvallen));
  Socket *sock = as_socket(s);
  if (sock == nullptr) return -1;
  if (optval == nullptr || optvallen == nullptr) return fail(EFAULT);
  rust::Vec<uint8_t> value;
  if (int rc = bridge::socket_get(*sock->handle, option, *optvallen, value); rc != 0) return fail(rc);
  std::memcpy(optval, value.data(), value.size());
  *optvallen = value.size();
  return 0;
}

namespace {
template <typename Op, typename Real>
int endpoint_call(void *s, const char *addr, Op op, Real real) {
  if (Foreign *f = as_foreign(s)) return fwd((lib().*real)(f->socket, addr));
  Socket *sock = as_socket(s);
  if (sock == nullptr) return -1;
  if (addr == nullptr) return fail(EINVAL);
  int rc = op(*sock->handle, as_slice(addr, std::strlen(addr)));
  return rc == 0 ? 0 : fail(rc);
}
}  // namespace

int zmq_bind(void *s, const char *addr) { return endpoint_call(s, addr, bridge::socket_bind, &RealLibzmq::zmq_bind); }
int zmq_connect(void *s, const char *addr) {
  return endpoint_call(s, addr, bridge::socket_connect, &RealLibzmq::zmq_connect);
}
int zmq_unbind(void *s, const char *addr) {
  return endpoint_call(s, addr, bridge::socket_unbind, &RealLibzmq::zmq_unbind);
}
int zmq_disconnect(void *s, const char *addr) {
  return endpoint_call(s, addr, bridge::socket_disconnect, &RealLibzmq::zmq_disconnect);
}

int zmq_socket_monitor(void *s, const char *addr, int events) {
  if (Foreign *f = as_foreign(s)) return fwd(lib().zmq_socket_monitor(f->socket, addr, events));
  Socket *sock = as_socket(s);
  if (sock == nullptr) return -1;
  int rc = bridge::socket_monitor(*sock->handle, as_slice(addr, addr == nullptr ? 0 : std::strlen(addr)), events);
  return rc == 0 ? 0 : fail(rc);
}

int zmq_send(void *s, const void *buf, size_t len, int flags) {
  if (Foreign *f = as_foreign(s)) return fwd(lib().zmq_send(f->socket, buf, len, flags));
  Socket *sock = as_socket(s);
  if (sock == nullptr) return -1;
  if (buf == nullptr && len != 0) return fail(EFAULT);
  int rc = bridge::socket_send_copy(*sock->handle, as_slice(buf, len), (flags & ZMQ_SNDMORE) != 0,
                                    (flags & ZMQ_DONTWAIT) != 0);
  if (rc != 0) return fail(rc);
  return len > INT32_MAX ? INT32_MAX : static_cast<int>(len);
}

int zmq_send_const(void *s, const void *buf, size_t len, int flags) { return native::zmq_send(s, buf, len, flags); }

int zmq_recv(void *s, void *buf, size_t len, int flags) {
  if (Foreign *f = as_foreign(s)) return fwd(lib().zmq_recv(f->socket, buf, len, flags));
  Socket *sock = as_socket(s);
  if (sock == nullptr) return -1;
  if (buf == nullptr && len != 0) return fail(EFAULT);
  zmq_msg_t msg;
  native::zmq_msg_init(&msg);
  int n = recv(as_msg(&msg), sock, flags);
  if (n >= 0) {
    size_t size = as_msg(&msg).size;
    std::memcpy(buf, bytes_of(as_msg(&msg)), size < len ? size : len);
  }
  int saved = errno;
  native::zmq_msg_close(&msg);
  errno = saved;
  return n;
}

int zmq_sendiov(void *s, struct iovec *iov, size_t count, int flags) {
  if (as_foreign(s) == nullptr && as_socket(s) == nullptr) return -1;
  if (count == 0 || iov == nullptr) return fail(EINVAL);
  int rc = 0;
  for (size_t i = 0; i < count; ++i) {
    int part_flags = i + 1 < count ? (flags | ZMQ_SNDMORE) : flags;
    rc = native::zmq_send(s, iov[i].iov_base, iov[i].iov_len, part_flags);
    if (rc < 0) return rc;
  }
  return rc;
}

// The parts' buffers are allocated here (the caller frees them), also for a foreign
// socket: the private libzmq's allocator is another libc's.
int zmq_recviov(void *s, struct iovec *iov, size_t *count, int flags) {
  if (as_foreign(s) == nullptr && as_socket(s) == nullptr) return -1;
  if (iov == nullptr || count == nullptr || *count == 0) return fail(EINVAL);
  size_t parts = 0;
  int total = 0;
  bool more = true;
  while (more && parts < *count) {
    zmq_msg_t msg;
    native::zmq_msg_init(&msg);
    int n = native::zmq_msg_recv(&msg, s, flags);
    if (n < 0) return -1;
    Msg &m = as_msg(&msg);
    iov[parts].iov_base = std::malloc(m.size == 0 ? 1 : m.size);
    if (iov[parts].iov_base == nullptr) {
      native::zmq_msg_close(&msg);
      return fail(ENOMEM);
    }
    std::memcpy(iov[parts].iov_base, bytes_of(m), m.size);
    iov[parts].iov_len = m.size;
    more = m.more != 0;
    total += n;
    ++parts;
    native::zmq_msg_close(&msg);
  }
  *count = parts;
  return total;
}

// Only foreign sockets (and descriptors): the private libzmq's zmq_poll, which sleeps
// until something happens.
int foreign_poll(zmq_pollitem_t *items, int nitems, long timeout) {
  std::vector<zmq_pollitem_t> theirs(items, items + nitems);
  for (zmq_pollitem_t &item : theirs) {
    if (Foreign *f = as_foreign(item.socket)) item.socket = f->socket;
  }
  int rc = fwd(lib().zmq_poll(theirs.data(), nitems, timeout));
  for (int i = 0; i < nitems; ++i) items[i].revents = theirs[i].revents;
  return rc;
}

int zmq_poll(zmq_pollitem_t *items, int nitems, long timeout) {
  if (nitems < 0 || (items == nullptr && nitems > 0)) return fail(EINVAL);
  bool any_foreign = false, any_engine = false;
  for (int i = 0; i < nitems; ++i) {
    any_foreign |= as_foreign(items[i].socket) != nullptr;
    any_engine |= items[i].socket != nullptr && as_foreign(items[i].socket) == nullptr;
  }
  if (any_foreign && !any_engine) return foreign_poll(items, nitems, timeout);
  using Clock = std::chrono::steady_clock;
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout < 0 ? 0 : timeout);
  auto nap = std::chrono::microseconds(50);
  while (true) {
    int ready = 0;
    for (int i = 0; i < nitems; ++i) {
      zmq_pollitem_t &item = items[i];
      item.revents = 0;
      if (Foreign *f = as_foreign(item.socket)) {
        int events = 0;
        size_t len = sizeof events;
        if (fwd(lib().zmq_getsockopt(f->socket, ZMQ_EVENTS, &events, &len)) != 0) return -1;
        item.revents = static_cast<short>(events & item.events);
      } else if (item.socket != nullptr) {
        Socket *sock = as_socket(item.socket);
        if (sock == nullptr) return -1;
        item.revents = static_cast<short>(bridge::socket_events(*sock->handle) & item.events);
      } else {
        pollfd pfd{item.fd, static_cast<short>(((item.events & ZMQ_POLLIN) ? POLLIN : 0) |
                                               ((item.events & ZMQ_POLLOUT) ? POLLOUT : 0)),
                   0};
        if (::poll(&pfd, 1, 0) > 0) {
          item.revents = static_cast<short>(((pfd.revents & POLLIN) ? ZMQ_POLLIN : 0) |
                                            ((pfd.revents & POLLOUT) ? ZMQ_POLLOUT : 0) |
                                            ((pfd.revents & (POLLERR | POLLHUP)) ? ZMQ_POLLERR : 0));
        }
      }
      if (item.revents != 0) ++ready;
    }
    if (ready > 0 || timeout == 0 || (timeout > 0 && Clock::now() >= deadline)) return ready;
    std::this_thread::sleep_for(nap);
    if (nap < std::chrono::milliseconds(1)) nap *= 2;
  }
}

namespace {
// The private libzmq's socket behind a foreign handle; null stays null (an optional
// capture or control socket); anything else makes `all_foreign` false.
void *theirs(void *s, bool &all_foreign) {
  if (s == nullptr) return nullptr;
  Foreign *f = as_foreign(s);
  all_foreign &= f != nullptr;
  return f != nullptr ? f->socket : nullptr;
}
}  // namespace

// A proxy between foreign sockets runs in the private libzmq; one with an engine
// socket is not supported.
int zmq_proxy_steerable(void *frontend, void *backend, void *capture, void *control) {
  bool all_foreign = frontend != nullptr && backend != nullptr;
  void *f = theirs(frontend, all_foreign), *b = theirs(backend, all_foreign);
  void *cap = theirs(capture, all_foreign), *ctl = theirs(control, all_foreign);
  if (!all_foreign) {
    log_unsupported("zmq_proxy with a PAIR, DEALER or ROUTER socket");
    return fail(ENOTSUP);
  }
  return fwd(control != nullptr ? lib().zmq_proxy_steerable(f, b, cap, ctl) : lib().zmq_proxy(f, b, cap));
}

int zmq_proxy(void *frontend, void *backend, void *capture) {
  return native::zmq_proxy_steerable(frontend, backend, capture, nullptr);
}

int zmq_device(int, void *frontend, void *backend) { return native::zmq_proxy(frontend, backend, nullptr); }

}  // namespace zebra::native
