// heapstat: a library preloaded into a process to show the bytes its malloc heap holds
// (scripts/soak.py). Twice a second a thread of its own writes one line to
// $HEAPSTAT_DIR/heap.<pid>, overwritten in place:
//
//   <bytes in use> <bytes mapped by malloc>
//
// from glibc's mallinfo2 (uordblks + hblkhd: every live allocation of the process, in
// every arena, made by anyone: the client, libzmq or the shim, Rust's allocations
// included, which go to malloc), and the arena's bytes from the system (arena + hblkhd).
//
// For the soak's own test only, it leaks on purpose: HEAPSTAT_LEAK_KB kilobytes
// (allocated and touched) and HEAPSTAT_LEAK_FDS sockets (file descriptors of Unix datagram
// sockets) at every line, so that a check meant to see a leak can be shown to see one.
//
//   cc -shared -fPIC -O2 -pthread -o heapstat.so tests/lib/heapstat.c
#define _GNU_SOURCE
#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static int out_fd = -1;
static long leak_kb, leak_fds;

static void *heapstat_loop(void *arg) {
  (void)arg;
  for (;;) {
    for (long i = 0; i < leak_fds; i++) socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (leak_kb > 0) {
      char *p = malloc((size_t)leak_kb * 1024);
      if (p != NULL) memset(p, 1, (size_t)leak_kb * 1024);
    }
    struct mallinfo2 m = mallinfo2();
    char line[64];
    // Fixed width, so that a shorter line never leaves the end of a longer one.
    int n = snprintf(line, sizeof line, "%20zu %20zu\n", m.uordblks + m.hblkhd, m.arena + m.hblkhd);
    if (n > 0) (void)!pwrite(out_fd, line, (size_t)n, 0);
    usleep(500 * 1000);
  }
  return NULL;
}

__attribute__((constructor)) static void heapstat_start(void) {
  const char *dir = getenv("HEAPSTAT_DIR");
  if (dir == NULL || *dir == '\0') return;
  char path[4096];
  snprintf(path, sizeof path, "%s/heap.%d", dir, (int)getpid());
  // O_CLOEXEC: a wrapper (`ip netns exec`, `env`) that runs the real program by exec
  // keeps its pid; the program's own copy of this library opens the file again.
  out_fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (out_fd < 0) return;
  const char *kb = getenv("HEAPSTAT_LEAK_KB"), *fds = getenv("HEAPSTAT_LEAK_FDS");
  leak_kb = kb ? atol(kb) : 0;
  leak_fds = fds ? atol(fds) : 0;
  pthread_attr_t attr;
  pthread_t thread;
  pthread_attr_init(&attr);
  pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
  pthread_create(&thread, &attr, heapstat_loop, NULL);
  pthread_attr_destroy(&attr);
}
