#!/usr/bin/env bash
# The main demo: a real sparse training job (tests/pslite-app/mf_train, matrix factorisation
# on MovieLens-100k over BytePS's unmodified PS-lite) on an emulated cluster of network
# namespaces (scheduler, server, 4 workers, the software switch; the server's link shaped so
# that it is the bottleneck), once on the real libzmq and once with Zebra preloaded and
# `zebra switch` summing the hot rows. Prints what changed (time to the target test RMSE,
# speed-up against the bound N/(N(1-h)+h), server ingress per step, what the switch summed)
# and where the table and the RMSE-against-time plot are. About 5 minutes after setup.
#
#   scripts/demo.sh [--workers N] [--shape ingress|both] [--rate RATE] [--repeats K]
#
#   --workers N   workers (default 4)
#   --shape S     both (default): each direction of the server's link, as a real
#                 full-duplex link is (the pushes Zebra sums, the pulls its pull half
#                 answers from the switch's copies: docs/PULL.md); ingress: only what the
#                 server receives (the favourable case: pulls free)
#   --rate RATE   the server link's rate, tc units (default 4mbit)
#   --repeats K   runs of each configuration, alternating (default 1)
#
# Needs root for the namespaces; without it pslaunch runs the job on loopback, unshaped,
# and says so. Everything is installed by scripts/setup.sh --clients first (idempotent).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
workers=4 shape=both rate=4mbit repeats=1
while [ $# -gt 0 ]; do
  case $1 in
    --workers) workers=$2; shift 2 ;;
    --shape) shape=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "demo.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

mkdir -p "$root/.build"
echo "==> setting up (first run: several minutes; later runs: seconds)"
"$root/scripts/setup.sh" --clients >"$root/.build/demo-setup.log" 2>&1 \
  || { tail -n 30 "$root/.build/demo-setup.log"; echo "demo: setup failed (log: .build/demo-setup.log)"; exit 1; }

out=$root/results/demo/$(date +%Y%m%d-%H%M%S)
echo "==> mf_train on MovieLens-100k, $workers workers, server link $rate ($shape): libzmq, then Zebra + zebra switch"
python3 "$root/scripts/bench-train.py" --workers "$workers" --configs libzmq,on+switch --repeats "$repeats" \
  --shape "$shape" --server-rate "$rate" --out "$out"
echo
echo "demo: table $out/table.md, plot $out/rmse_N$workers.png, every process's log under $out/logs"
