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
//   cc -shared -fPIC -O2 -fno-builtin -fno-tree-loop-distribute-patterns
//      -o alloccount.so tests/lib/alloccount.c -ldl
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stddef.h>
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

void *memcpy(void *dst, const void *src, size_t n) {
  ADD(n_copies, 1);
  ADD(n_copy_bytes, n);
  copy_fn f = __atomic_load_n(&real_memcpy, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    resolve();
    f = __atomic_load_n(&real_memcpy, __ATOMIC_ACQUIRE);
    if (f == NULL) return byte_move(dst, src, n);
  }
  return f(dst, src, n);
}

void *memmove(void *dst, const void *src, size_t n) {
  ADD(n_copies, 1);
  ADD(n_copy_bytes, n);
  copy_fn f = __atomic_load_n(&real_memmove, __ATOMIC_ACQUIRE);
  if (f == NULL) {
    resolve();
    f = __atomic_load_n(&real_memmove, __ATOMIC_ACQUIRE);
    if (f == NULL) return byte_move(dst, src, n);
  }
  return f(dst, src, n);
}

// With _FORTIFY_SOURCE, C and C++ code calls the checked forms.
void *__memcpy_chk(void *dst, const void *src, size_t n, size_t dstlen) {
  (void)dstlen;
  return memcpy(dst, src, n);
}

void *__memmove_chk(void *dst, const void *src, size_t n, size_t dstlen) {
  (void)dstlen;
  return memmove(dst, src, n);
}

__attribute__((destructor)) static void alloccount_report(void) {
  const char *dir = getenv("ALLOCCOUNT_DIR");
  if (dir == NULL || *dir == '\0') return;
  const char *role = getenv("DMLC_ROLE");
  char path[4096], line[256];
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
}
