#!/usr/bin/env bash
# The ZeroMQ conformance suite (PAIR, DEALER, ROUTER as libzmq 4.3 documents and does
# them): one program, built once against <zmq.h>, run on the system's libzmq and on
# Zebra's engine (the shim preloaded, ZEBRA_ENABLE=1). One PASS/FAIL/SKIP line per
# check and library; a known difference of the engine (differences.c) is a SKIP with
# its reason. Also holds docs/ZMQ.md to the list of differences.
# Usage: tests/zmq-conformance/run.sh [DIST] [GROUP...]   (DIST: the shim's install
# prefix, default ./dist; GROUP: options, endpoints, messages, behaviour)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
dist=$(cd "${1:-$root/dist}" && pwd)
shift || true
source "$root/tests/lib/report.sh"

work=$root/.build/zmq-conformance
mkdir -p "$work"
program=$work/conformance
cc -O1 -Wall -Wextra -Werror -o "$program" "$here"/*.c -lzmq

# Runs the program on one library, in a directory of its own (libzmq's ipc://* makes a
# directory in the current one). Exit status 1 means checks failed, and said so; any
# other failure (a crash, the timeout) is reported here. Some behaviour checks wait for
# the network (reconnects, refused connects): a run with failed checks is made once more,
# the first run's failures printed as a note, and the second run's lines count (a real
# difference fails both).
run() {
  local library=$1
  shift
  mkdir -p "$work/$library"
  local status=0 attempt
  for attempt in 1 2; do
    status=0
    (cd "$work/$library" && timeout 600 env "$@" "$program" --library "$library" "${groups[@]}" \
      >"$work/$library.out" 2>"$work/$library.log") || status=$?
    [ "$status" = 1 ] && [ "$attempt" = 1 ] || break
    grep '^FAIL' "$work/$library.out" | sed 's/^FAIL/note: failed in a first run, made again:/'
  done
  cat "$work/$library.out"
  if [ "$status" != 0 ] && [ "$status" != 1 ]; then
    echo "FAIL $library: the conformance program ended with status $status (log: $work/$library.log)"
  fi
  [ "$status" = 0 ] || runs_failed=1
}

groups=("$@")
runs_failed=0
run libzmq -u LD_PRELOAD -u ZEBRA_ENABLE
run zebra LD_PRELOAD="$dist/lib/libzmq.so.5" ZEBRA_ENABLE=1 ZEBRA_LOG=error

differences_documented() {
  local missing
  missing=$("$program" --differences | grep -vxF -f <(cat "$root/docs/ZMQ.md") || true)
  [ -z "$missing" ] || { echo "docs/ZMQ.md lacks these lines of 'conformance --differences':"; echo "$missing"; return 1; }
}
check "docs/ZMQ.md lists every known difference of the engine (conformance --differences)" differences_documented
finish && [ "$runs_failed" = 0 ]
