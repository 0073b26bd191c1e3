/*
 * LD_PRELOAD shim for pslite-patches/test.sh: makes a PS-lite server set its KVServer's
 * request handle late, so that the start-up race of patch 0001 happens every time.
 *
 * With PSLITE_LATE_HANDLE_MS=N set, once the main thread has returned from its first
 * pthread_cond_wait (PS-lite's start-up barrier in Start()), the next thread it creates
 * (the receiving thread that `new KVServer` starts) is followed by an N ms pause of the
 * main thread, before it can call set_request_handle(). Workers push meanwhile.
 * Without the variable, or after that one pause, every call is passed through unchanged.
 * Prints one line to stderr when it pauses.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static int barrier_passed; /* main thread only */
static int paused;         /* main thread only */

static int is_main_thread(void) { return syscall(SYS_gettid) == getpid(); }

static long pause_ms(void) {
  const char *v = getenv("PSLITE_LATE_HANDLE_MS");
  return v ? strtol(v, NULL, 10) : 0;
}

int pthread_cond_wait(pthread_cond_t *cond, pthread_mutex_t *mutex) {
  static int (*real)(pthread_cond_t *, pthread_mutex_t *);
  if (!real) real = dlvsym(RTLD_NEXT, "pthread_cond_wait", "GLIBC_2.3.2");
  if (!real) real = dlsym(RTLD_NEXT, "pthread_cond_wait");
  int rc = real(cond, mutex);
  if (is_main_thread()) barrier_passed = 1;
  return rc;
}

int pthread_create(pthread_t *thread, const pthread_attr_t *attr, void *(*start)(void *),
                   void *arg) {
  static int (*real)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
  if (!real) real = dlsym(RTLD_NEXT, "pthread_create");
  int rc = real(thread, attr, start, arg);
  long ms = pause_ms();
  if (rc == 0 && ms > 0 && barrier_passed && !paused && is_main_thread()) {
    paused = 1;
    fprintf(stderr, "late_handle: main thread paused %ld ms after starting a thread past the start-up barrier\n", ms);
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&t, &t) != 0) {
    }
  }
  return rc;
}
