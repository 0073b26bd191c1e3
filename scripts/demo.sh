#!/usr/bin/env bash
# The main demo, as far as Zebra is built today: installs everything, then runs the real
# PS-lite clients (BytePS's PS-lite and MXNet dist_sync) on the real libzmq, through the
# Zebra shim forwarding to it (off), and on Zebra's own ZeroMQ engine (on), and prints
# which library carried each job and what it checked; in mode on+switch each job runs
# beside `zebra switch` and the aggregating tests print the pairs the switch added and the
# hot bytes the servers received with and without it.
# (The MovieLens-100k training demo on the emulated testbed is still to come.)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in -h|--help) sed -n '2,8p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;; esac

echo "==> setting up (first run: a few minutes; later runs: seconds)"
"$root/scripts/setup.sh" --clients >"$root/.build/demo-setup.log" 2>&1 \
  || { tail -n 30 "$root/.build/demo-setup.log"; echo "demo: setup failed (log: .build/demo-setup.log)"; exit 1; }

status=0
for spec in "byteps-pslite libzmq" "byteps-pslite off" "byteps-pslite on" "byteps-pslite on+switch" \
  "mxnet libzmq" "mxnet off" "mxnet on" "mxnet on+switch"; do
  set -- $spec
  printf '\n==> %s on %s\n' "$1" "$2"
  "$root/scripts/suite.sh" "$1" "$2" || status=1
done
printf '\ndemo: %s\n' "$([ $status = 0 ] && echo 'every job passed its checks on the real libzmq and on Zebra' || echo 'SOME JOBS FAILED (see above)')"
exit $status
