#!/usr/bin/env bash
# For pslite-patches/test.sh: `exit_as.sh PROGRAM [ARG...]` runs a PS-lite program the way
# tests/local.sh starts it, except that a worker (DMLC_ROLE=worker) ends with exit code 1:
#   FAIL_AT=start  before the program runs (the others then wait for it forever)
#   FAIL_AT=end    after the program ended well (the job itself complete)
#   FAIL_AT=none   never: the program's own exit code
# Other roles become the program (exec), so that local.sh's signals reach it.
set -u
if [ "${DMLC_ROLE:-}" != worker ] || [ "${FAIL_AT:-none}" = none ]; then
  exec "$@"
fi
if [ "${FAIL_AT:-none}" = start ]; then
  echo "exit_as.sh: worker exits 1 before starting $1" >&2
  exit 1
fi
"$@" &
child=$!
trap 'kill -TERM $child 2>/dev/null' TERM
wait $child
rc=$?
[ $rc = 0 ] || exit $rc
echo "exit_as.sh: worker finished $1 and exits 1" >&2
exit 1
