// alloccount: a library preloaded into a process to count its heap allocations and the
// bytes it copies with memcpy/memmove (scripts/bench-allocs.sh, docs/BENCHMARKS.md: the
// allocations and copies per push of the hot path, issue 19). It defines malloc, calloc,
// realloc, posix_memalign, aligned_alloc, memalign, valloc, free, memcpy and memmove, counts
// each call (and the bytes asked for or copied) in process-wide atomic counters, and hands
// the call on to glibc. Every caller in the process is counted: the client, libstdc++, the
// real libzmq or the shim, and Rust's global allocator (which calls malloc, realloc,
// posix_memalign and free).
//
// At exit it writes one line to $ALLOCCOUNT_DIR/<DMLC_ROLE or "process">.<pid>:
//
//   allocs <n> alloc_bytes <n> frees <n> reallocs <n> copies <n> copy_bytes <n>
//
// allocs counts every call that returns a new block (malloc, calloc, the memalign family,
// realloc of a null pointer) and every realloc that had to move or grow a block (realloc
// counts once as an allocation of its new size); alloc_bytes adds the sizes asked for.
// copies/copy_bytes count calls of memcpy and memmove (and their _chk forms) that reach this
// library through the dynamic linker: copies a compiler inlined (small fixed sizes, element
// loops) and copies inside glibc itself are not seen.
//
// Each memcpy/memmove is also counted by its call site (the return address): at exit the
// sites that copied at least ALLOCCOUNT_SITE_BYTES bytes (default 65536) go to
// <file>.sites, one a line, "<bytes> <calls>" and then "<object file> <offset in it>" for
// each return address of the site's stack, innermost first, for `addr2line -e <object
// file> <offset>` to name (scripts/bench-allocs.py does).
//
//   cc -shared -fPIC -O2 -fno-builtin -fno-tree-loop-distribute-patterns
//      -o alloccount.so tests/lib/alloccount.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <execinfo.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

// glibc's own entry points: calling them does not go back through the dynamic linker, so
// they need no dlsym (which itself allocates) to be found.
extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static unsigned long n_allocs, n_alloc_bytes, n_frees, n_reallocs, n_copies, n_copy_bytes;

#define ADD(counter, v) __atomic_fetch_add(&(counter), (unsigned long)(v), __ATOMIC_RELAXED)

static void counted_alloc(size_t size) {
  ADD(n_allocs, 1);
  ADD(n_alloc_bytes, size);
}

void *malloc(size_t size) {
  counted_alloc(size);
  return __libc_malloc(size);
}

void *calloc(size_t n, size_t size) {
  counted_alloc(n * size);
  return __libc_calloc(n, size);
}

void *realloc(void *p, size_t size) {
  ADD(n_reallocs, 1);
  if (p == NULL) {
    counted_alloc(size);
    return __libc_realloc(p, size);
  }
  void *q = __libc_realloc(p, size);
  // A block that moved is a new allocation (and glibc copied the old contents).
  if (q != NULL && q != p) counted_alloc(size);
  return q;
}

int posix_memalign(void **out, size_t align, size_t size) {
  counted_alloc(size);
  void *p = __libc_memalign(align, size);
  if (p == NULL) return 12;  // ENOMEM
  *out = p;
  return 0;
}

void *aligned_alloc(size_t align, size_t size) {
  counted_alloc(size);
  return __libc_memalign(align, size);
}

void *memalign(size_t align, size_t size) {
  counted_alloc(size);
  return __libc_memalign(align, size);
}

void *valloc(size_t size) {
  counted_alloc(size);
  return __libc_memalign((size_t)sysconf(_SC_PAGESIZE), size);
}

void free(void *p) {
  if (p != NULL) ADD(n_frees, 1);
  __libc_free(p);
}

// Call sites of memcpy/memmove: an open-addressing table keyed by a hash of the call
// stack, filled without locks (a slot is claimed by compare-and-swap and never freed). A
// copy of COPY_STACK_BYTES or more is keyed by up to DEPTH return addresses (glibc's
// backtrace, so that a copy inside a generic function such as Vec::clone is told apart by
// its callers), a smaller one by its caller alone. A site that finds the table full is
// counted under key 1.
#define SITES 8192
#define DEPTH 8
#define COPY_STACK_BYTES 64
static struct site {
  uintptr_t key;
  uintptr_t pc[DEPTH];
  unsigned long bytes, calls;
} sites[SITES];
static __thread int in_backtrace;

static void site_add(uintptr_t ret, size_t n) {
  uintptr_t pc[DEPTH] = {ret};
  if (n >= COPY_STACK_BYTES && !in_backtrace) {
    // backtrace() loads libgcc_s on its first call, which copies and allocates too.
    in_backtrace = 1;
    void *frames[DEPTH + 4];
    int got = backtrace(frames, DEPTH + 4), at = 0;
    in_backtrace = 0;
    while (at < got && (uintptr_t)frames[at] != ret) at++;
    for (int i = 0; at < got && i < DEPTH; i++, at++) pc[i] = (uintptr_t)frames[at];
  }
  uintptr_t key = 1469598103934665603u;
  for (int i = 0; i < DEPTH; i++) key = (key ^ pc[i]) * 1099511628211u;
  if (key <= 1) key += 2;
  size_t h = (size_t)(key % SITES);
  for (size_t i = 0; i < SITES; i++) {
    struct site *s = &sites[(h + i) % SITES];
    uintptr_t cur = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
    if (cur == 0) {
      uintptr_t expected = 0;
      if (__atomic_compare_exchange_n(&s->key, &expected, key, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        for (int j = 0; j < DEPTH; j++) s->pc[j] = pc[j];
        cur = key;
      } else {
        cur = expected;
      }
    }
    if (cur == key) {
      ADD(s->bytes, n);
      ADD(s->calls, 1);
      return;
    }
  }
}

// The real memcpy/memmove, found once with dlsym; until then (the dynamic linker's own
// start-up, dlsym's own copies) a plain byte loop does the work. -fno-builtin and
// -fno-tree-loop-distribute-patterns keep the compiler from turning the loops back into
// calls of memcpy, which would be this function.
typedef void *(*copy_fn)(void *, const void *, size_t);
static copy_fn real_memcpy, real_memmove;
static int resolving;

static void resolve(void) {
  if (resolving) return;
  resolving = 1;
  copy_fn c = (copy_fn)dlsym(RTLD_NEXT, "memcpy");
  copy_fn m = (copy_fn)dlsym(RTLD_NEXT, "memmove");
  __atomic_store_n(&real_memmove, m, __ATOMIC_RELEASE);
  __atomic_store_n(&real_memcpy, c, __ATOMIC_RELEASE);
}

static void *byte_move(void *dst, const void *src, size_t n) {
  volatile unsigned char *d = dst;
  const volatile unsigned char *s = src;
  if (d < s) {
    for (size_t i = 0; i < n; i++) d[i] = s[i];
  } else {
    for (size_t i = n; i > 0; i--) d[i - 1] = s[i - 1];
  }
  return dst;
}

// One copy counted at `caller`, then done by the real function in `*real` (looked up on
// first use; byte by byte while it is being looked up).
static void *counted_copy(copy_fn *real, void *dst, const void *src, size_t n, uintptr_t caller) {
  ADD(n_copies, 1);
  ADD(n_copy_bytes, n);
  site_add(caller, n);
  copy_fn f = __atomic_load_n(real, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    resolve();
    f = __atomic_load_n(real, __ATOMIC_ACQUIRE);
  }
  return f ? f(dst, src, n) : byte_move(dst, src, n);
}

void *memcpy(void *dst, const void *src, size_t n) {
  return counted_copy(&real_memcpy, dst, src, n, (uintptr_t)__builtin_return_address(0));
}

void *memmove(void *dst, const void *src, size_t n) {
  return counted_copy(&real_memmove, dst, src, n, (uintptr_t)__builtin_return_address(0));
}

// With _FORTIFY_SOURCE, C and C++ code calls the checked forms.
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen) {
  (void)dstlen;
  return counted_copy(&real_memcpy, dst, src, n, (uintptr_t)__builtin_return_address(0));
}

void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen) {
  (void)dstlen;
  return counted_copy(&real_memmove, dst, src, n, (uintptr_t)__builtin_return_address(0));
}

__attribute__((destructor)) static void alloccount_report(void) {
  const char *dir = getenv("ALLOCCOUNT_DIR");
  if (dir == NULL || *dir == '\0') return;
  const char *role = getenv("DMLC_ROLE");
  char path[4096], line[16384];
  snprintf(path, sizeof path, "%s/%s.%d", dir, role && *role ? role : "process", (int)getpid());
  int n = snprintf(line, sizeof line,
                   "allocs %lu alloc_bytes %lu frees %lu reallocs %lu copies %lu copy_bytes %lu\n",
                   __atomic_load_n(&n_allocs, __ATOMIC_RELAXED), __atomic_load_n(&n_alloc_bytes, __ATOMIC_RELAXED),
                   __atomic_load_n(&n_frees, __ATOMIC_RELAXED), __atomic_load_n(&n_reallocs, __ATOMIC_RELAXED),
                   __atomic_load_n(&n_copies, __ATOMIC_RELAXED), __atomic_load_n(&n_copy_bytes, __ATOMIC_RELAXED));
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0 || n <= 0) return;
  (void)!write(fd, line, (size_t)n);
  close(fd);
  const char *min_env = getenv("ALLOCCOUNT_SITE_BYTES");
  unsigned long min = min_env ? strtoul(min_env, NULL, 10) : 65536;
  strncat(path, ".sites", sizeof path - strlen(path) - 1);
  fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  char exe[4096];
  for (size_t i = 0; i < SITES; i++) {
    struct site *st = &sites[i];
    unsigned long bytes = __atomic_load_n(&st->bytes, __ATOMIC_RELAXED);
    if (__atomic_load_n(&st->key, __ATOMIC_ACQUIRE) == 0 || bytes < min) continue;
    int len = snprintf(line, sizeof line, "%lu %lu", bytes, __atomic_load_n(&st->calls, __ATOMIC_RELAXED));
    for (int j = 0; j < DEPTH && st->pc[j] != 0 && len > 0 && (size_t)len < sizeof line; j++) {
      uintptr_t pc = st->pc[j];
      Dl_info info;
      const char *file = "?";
      uintptr_t offset = pc;
      // The return address less one: the call instruction itself, for addr2line.
      if (dladdr((void *)(pc - 1), &info) != 0 && info.dli_fname != NULL) {
        file = info.dli_fname;
        offset = pc - 1 - (uintptr_t)info.dli_fbase;
        // The main program is named as it was started; its path is /proc/self/exe.
        if (strchr(file, '/') == NULL) {
          ssize_t n_exe = readlink("/proc/self/exe", exe, sizeof exe - 1);
          if (n_exe > 0) {
            exe[n_exe] = '\0';
            file = exe;
          }
        }
      }
      len += snprintf(line + len, sizeof line - (size_t)len, " %s 0x%lx", file, (unsigned long)offset);
    }
    if (len > 0 && (size_t)len < sizeof line - 1) {
      line[len++] = '\n';
      (void)!write(fd, line, (size_t)len);
    }
  }
  close(fd);
}
