#!/usr/bin/env bash
# Tests of the libzmq.so.5 shim through a real libzmq client (forward_check.c):
#   mode off in every way the shim can be loaded (preloaded, relinked, preloaded before
#   another libzmq (RTLD_NEXT), beside a libzmq opened with RTLD_LOCAL (the MXNet case));
#   mode on (Zebra's engine carries the same client); refused configurations; and the
#   harness itself (a check fails when any step of it fails, a hung client is stopped).
# Usage: cpp-shim/tests/run.sh [DIST]   (DIST: install prefix of the shim, default ./dist)
#   SHIM_CLIENT_TIMEOUT: seconds each client may run (default 60)
#   SHIM_TEST_CFLAGS: extra flags for compiling and linking the clients (scripts/asan.sh:
#     -fsanitize=address); SHIM_TEST_WORK: their directory (default .build/shim-tests)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dist=$(cd "${1:-$root/dist}" && pwd)
source "$root/tests/lib/report.sh"

shim=$dist/lib/libzmq.so.5
system_libzmq=$(pkg-config --variable=libdir libzmq)/libzmq.so.5
work=${SHIM_TEST_WORK:-$root/.build/shim-tests}
mkdir -p "$work"
cc -O1 -Wall -Werror ${SHIM_TEST_CFLAGS:-} -o "$work/check-system" "$here/forward_check.c" -lzmq -ldl
cc -O1 -Wall -Werror ${SHIM_TEST_CFLAGS:-} -I"$dist/include" -o "$work/check-relinked" "$here/forward_check.c" \
  -L"$dist/lib" -Wl,-rpath,"$dist/lib" -lzmq -ldl

# client [VAR=VALUE | -u VAR]... PROGRAM ARGS...: runs a client (through `env`) with a
# time limit: a client that hangs fails its check instead of stopping the test run.
client_timeout=${SHIM_CLIENT_TIMEOUT:-60}
client() {
  timeout -k 5 "$client_timeout" env "$@"
}

# Runs a forward_check binary as it is (no variable set); checks that it completed.
runs() {
  local out
  out=$(client "$1")
  grep -q '^forward_check: OK$' <<<"$out"
}

# Runs a forward_check binary with the shim; checks that it was in mode off, found the
# real library as expected, and counted exactly the calls the client made of every
# function the client calls. (libzmq's own I/O threads call zmq_errno through the
# exported symbol too; the shim forwards and counts those, the client cannot see them.)
forwards() {
  local binary=$1 found_by=$2
  shift 2
  local stats=$work/stats.$$.$RANDOM
  rm -f "$stats"
  client -u ZEBRA_ENABLE ZEBRA_STATS="$stats" "$@" "$binary" ${EXTRA_ARGS:-} >"$stats.client"
  grep -q '^forward_check: OK$' "$stats.client"
  grep -qx 'mode off' "$stats"
  grep -qx "found_by $found_by" "$stats" || { echo "expected found_by $found_by:"; cat "$stats"; return 1; }
  local missing
  missing=$(grep '^call ' "$stats.client" | sort | comm -23 - <(grep '^call ' "$stats" | sort))
  [ -z "$missing" ] || { echo "client calls not counted by the shim as made:"; echo "$missing"; cat "$stats"; return 1; }
}

refused() {
  local binary=$1 errno_name=$2 message=$3
  shift 3
  local out
  out=$(client "$@" "$binary" --expect-refused "$errno_name" 2>&1)
  grep -q "forward_check: OK refused with $errno_name" <<<"$out"
  grep -q -- "$message" <<<"$out" || { echo "missing message '$message' in:"; echo "$out"; return 1; }
}

check "shim exports the libzmq API (every symbol of the system libzmq)" \
  diff <(nm -D --defined-only "$system_libzmq" | awk '$2=="T"{print $3}' | sort) \
       <(nm -D --defined-only "$shim" | awk '$2=="T"{print $3}' | sort)
check "shim exports nothing else" \
  bash -c "! nm -D --defined-only '$shim' | awk '\$2!=\"A\"{print \$3}' | grep -v '^zmq_'"
check "shim soname is libzmq.so.5" bash -c "readelf -d '$shim' | grep -q 'SONAME.*\\[libzmq.so.5\\]'"
check "system client runs on the real libzmq without the shim" runs "$work/check-system"
check "off, preloaded: every call forwarded once (real library by path)" \
  forwards "$work/check-system" path LD_PRELOAD="$shim"
check "off, relinked: every call forwarded once (real library by path)" \
  forwards "$work/check-relinked" path
check "off, preloaded before another libzmq: found by RTLD_NEXT" \
  forwards "$work/check-relinked" rtld-next LD_PRELOAD="$shim $system_libzmq"
EXTRA_ARGS="--dlopen-local $system_libzmq" check \
  "off, real libzmq opened with RTLD_LOCAL (MXNet case): found by walking loaded objects" \
  forwards "$work/check-relinked" loaded-object
check "off, ZEBRA_REAL_LIBZMQ is honoured" \
  forwards "$work/check-relinked" path ZEBRA_REAL_LIBZMQ="$system_libzmq"
# Mode on: the same client, every message carried by Zebra's engine.
on_mode() {
  local binary=$1
  shift
  local stats=$work/stats.on.$$.$RANDOM
  client ZEBRA_ENABLE=1 ZEBRA_STATS="$stats" "$@" "$binary" >"$stats.client"
  grep -q '^forward_check: OK$' "$stats.client"
  grep -qx 'mode on' "$stats" || { cat "$stats"; return 1; }
}
check "on, preloaded: the client runs over Zebra's engine (inproc and tcp, ROUTER/DEALER)" \
  on_mode "$work/check-system" LD_PRELOAD="$shim"
check "on, relinked: the client runs over Zebra's engine" on_mode "$work/check-relinked"
check "bad configuration: zmq_ctx_new fails with EINVAL naming each bad value" \
  refused "$work/check-relinked" EINVAL 'ZEBRA_ENABLE="maybe": expected 0 or 1' \
  ZEBRA_ENABLE=maybe ZEBRA_NOPE=1
check "bad configuration: an unknown ZEBRA_ variable is named" \
  refused "$work/check-relinked" EINVAL "ZEBRA_NOPE is not a Zebra setting" ZEBRA_NOPE=1
check "ZEBRA_REAL_LIBZMQ pointing nowhere: zmq_ctx_new fails and the log says why" \
  refused "$work/check-relinked" ENOTSUP "cannot be opened" ZEBRA_REAL_LIBZMQ=/nonexistent/libzmq.so.5

# The harness: every check above must fail when any step of it fails, not only its last
# one. Each helper runs a client that does all its work and then exits 1 (its output and
# statistics are those of a passing run): its check must FAIL; the same client exiting 0
# passes. A client that never ends is stopped by its timeout and fails its check.
exits_with() {
  local wrapper=$work/check-then-exit-$1
  printf '#!/bin/sh\n"%s" "$@"\nexit %s\n' "$work/check-relinked" "$1" >"$wrapper"
  chmod +x "$wrapper"
  echo "$wrapper"
}
# fails_as_check HELPER ARGS...: `check` reports HELPER ARGS... as failed.
fails_as_check() {
  local out
  out=$(check inner "$@")
  grep -q '^FAIL inner$' <<<"$out" || { echo "the check passed:"; echo "$out"; return 1; }
}
# harness HELPER ARGS...: HELPER (whose first argument is the client) with both clients.
harness() {
  local helper=$1
  shift
  check "harness: $helper passes with a client that exits 0 after its work" \
    "$helper" "$(exits_with 0)" "$@"
  check "harness: $helper fails with a client that exits 1 after its work" \
    fails_as_check "$helper" "$(exits_with 1)" "$@"
}
harness runs
harness forwards path
harness on_mode
harness refused EINVAL "ZEBRA_NOPE is not a Zebra setting" ZEBRA_NOPE=1
hangs=$work/check-hangs
printf '#!/bin/sh\nexec sleep 600\n' >"$hangs"
chmod +x "$hangs"
# within SECONDS HELPER ARGS...: HELPER with clients limited to SECONDS.
within() {
  client_timeout=$1
  shift
  "$@"
}
check "harness: a client that hangs is stopped by its timeout and fails its check" \
  fails_as_check within 1 on_mode "$hangs"
finish
