#!/usr/bin/env bash
# Runs one suite of real PS-lite clients in one mode and says which library carried it.
#
#   scripts/suite.sh SUITE MODE
#
#   SUITE  byteps-pslite  BytePS's PS-lite: test_benchmark, test_sparse_benchmark (mode 0),
#                         and tests/pslite-app/exact_sums (exact sums over Push/Pull/PushPull)
#          mxnet          MXNet 1.9.1 dist_sync kvstore, dense and row_sparse (tests/mxnet/)
#   MODE   libzmq    no shim: the clients on the real libzmq
#          off       shim preloaded, ZEBRA_ENABLE=0: every call forwarded to the real libzmq
#          relinked  (byteps-pslite only) binaries linked against dist/lib/libzmq.so.5, no
#                    preload, ZEBRA_ENABLE=0
#          on        shim preloaded, ZEBRA_ENABLE=1: Zebra's own engine
#          mixed     the scheduler, server 0 and worker 0 on Zebra's engine, every other
#                    node on the real libzmq: the two interoperate in one job
#          on+switch Zebra's engine with in-network aggregation: each job runs beside a
#                    `zebra switch` with a hot-keys file on which the workers overlap;
#                    the aggregating tests also check the switch added pairs and the
#                    servers received fewer bytes than the whole pushes (tests/lib/hotpath.py)
#
# With ZEBRA_NET=dpdk (or raw) in the environment, modes on and on+switch run every job on
# the netns testbed (root) with every process — nodes and the switch — over Zebra's
# user-level stack (smoltcp on DPDK's af_packet PMD, or a raw socket) on its veth; each
# process's stack must close cleanly (no mbuf in use) at exit.
#
# Needs `scripts/setup.sh --clients` first. Logs: .build/logs/SUITE-MODE/.
# Other builds (scripts/asan.sh): SUITE_DIST, the shim's install prefix (default dist/);
# SUITE_ZEBRA, the `zebra` binary of the switch (default target/release/zebra); SUITE_LOGS,
# the logs' directory (default .build/logs); PSLITE_BIN_DIR, the PS-lite binaries.
# Exit 0 when every test passed; the last line is a summary naming suite, mode and library.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -eq 2 ] || { usage >&2; exit 2; }
suite=$1 mode=$2
case $suite in byteps-pslite|mxnet) ;; -h|--help) usage; exit 0 ;; *) echo "suite.sh: unknown suite '$suite'" >&2; usage >&2; exit 2 ;; esac

shim=${SUITE_DIST:-$root/dist}/lib/libzmq.so.5
user_net=${ZEBRA_NET:-kernel}
case $user_net in
  kernel) ;;
  dpdk|raw) ;;
  raw:*) user_net=raw ;;
  *) echo "suite.sh: ZEBRA_NET=$user_net: expected kernel, dpdk or raw" >&2; exit 2 ;;
esac
if [ "$user_net" != kernel ]; then
  case $mode in on|on+switch) ;; *) echo "suite.sh: ZEBRA_NET=$user_net runs modes on and on+switch only (the user-level stack is Zebra's engine)" >&2; exit 2 ;; esac
  [ "$(id -u)" = 0 ] || { echo "suite.sh: ZEBRA_NET=$user_net needs root (network namespaces, packet sockets)" >&2; exit 2; }
  export PSLAUNCH_NET=netns PSLAUNCH_USER_STACK=$user_net
  mode_dir=$mode-$user_net net_shown=" (ZEBRA_NET=$user_net)"
else
  mode_dir=$mode net_shown=""
fi
logdir=${SUITE_LOGS:-$root/.build/logs}/$suite-$mode_dir
rm -rf "$logdir"
mkdir -p "$logdir/stats"
for v in $(env | grep -o '^ZEBRA_[A-Z_]*' || true); do unset "$v"; done
export SUITE_LOGDIR=$logdir SUITE_PRELOAD=""
case $mode in
  libzmq) ;;
  off|on|mixed|on+switch)
    export SUITE_PRELOAD=$shim ZEBRA_STATS=$logdir/stats/%p
    [ "$mode" = off ] && export ZEBRA_ENABLE=0 || export ZEBRA_ENABLE=1
    [ "$mode" = on+switch ] && export SUITE_SWITCH=${SUITE_ZEBRA:-$root/target/release/zebra}
    [ "$mode" = mixed ] && export PSLAUNCH_PRELOAD_NAMES=scheduler,server-0,worker-0 ;;
  relinked)
    [ "$suite" = byteps-pslite ] || { echo "suite.sh: mode relinked is for byteps-pslite only" >&2; exit 2; }
    export PSLITE_BIN_DIR=$root/.build/byteps-pslite-relinked/tests ZEBRA_STATS=$logdir/stats/%p ZEBRA_ENABLE=0 ;;
  *) echo "suite.sh: unknown mode '$mode'" >&2; usage >&2; exit 2 ;;
esac
if [ "$mode" != libzmq ] && [ ! -e "$shim" ]; then
  echo "suite.sh: $shim is missing: run scripts/setup.sh --clients" >&2
  exit 2
fi

status=0
"$root/tests/suites/$suite.sh" || status=$?

# Which library carried the job: the shim's own at-exit reports, one per process that
# made zmq calls. Without the shim there must be none.
shopt -s nullglob
reports=()
for report in "$logdir"/stats/* "$logdir"/*/stats/*; do
  # JSON Lines (ZEBRA_STATS_INTERVAL) are the stats_interval test's, checked there
  # (tests/lib/statslines.py); the checks below read the at-exit text reports.
  [ "$(head -c 1 "$report")" = "{" ] || reports+=("$report")
done
shopt -u nullglob
if [ "$mode" = libzmq ]; then
  if [ ${#reports[@]} -eq 0 ]; then
    if [ "$suite" = mxnet ]; then
      library="the real libzmq (the copy built into MXNet's libmxnet.so, no shim)"
    else
      library="the real libzmq ($(pkg-config --variable=libdir libzmq)/libzmq.so.5, no shim)"
    fi
  else
    echo "FAIL $suite $mode: the shim reported from ${#reports[@]} processes although it was not loaded"
    status=1
    library="unexpectedly the shim"
  fi
else
  if [ ${#reports[@]} -eq 0 ]; then
    echo "FAIL $suite $mode: no process reported through the shim"
    status=1
    library="not the shim"
  else
    modes=$(grep -h '^mode ' "${reports[@]}" | sort | uniq -c | awk '{$1=$1; print}' | paste -sd, -)
    targets=$(grep -h '^real_libzmq ' "${reports[@]}" | cut -d' ' -f2 | sort -u | paste -sd, -)
    found=$(grep -h '^found_by ' "${reports[@]}" | cut -d' ' -f2 | sort -u | paste -sd, -)
    calls=$(grep -h '^call ' "${reports[@]}" | awk '{n += $3} END {print n + 0}')
    if [ "$mode" = mixed ]; then
      library="Zebra's engine in ${#reports[@]} processes ($PSLAUNCH_PRELOAD_NAMES of each job), the real libzmq in the others; $calls zmq calls through Zebra"
    elif [ "$mode" = on ] || [ "$mode" = on+switch ]; then
      library="Zebra's engine in the shim $shim, in ${#reports[@]} processes (mode: $modes; $calls zmq calls; only utility calls such as zmq_strerror forwarded to $targets)"
    else
      library="the shim $shim in ${#reports[@]} processes (mode: $modes; forwarding to $targets, found by $found; $calls zmq calls)"
    fi
    expected_mode=$([ "$mode" = off ] || [ "$mode" = relinked ] && echo off || echo on)
    stray=$(grep -L "^mode $expected_mode\$" "${reports[@]}" || true)
    if [ -n "$stray" ]; then
      echo "FAIL $suite $mode: some processes were not in mode $expected_mode:"
      for report in $stray; do
        echo "  $report ($(wc -c <"$report") bytes): $(head -n 2 "$report" | paste -sd' ' -)"
      done
      status=1
    else
      echo "PASS $suite $mode: every process went through the shim in mode $expected_mode"
    fi
    if [ "$user_net" != kernel ]; then
      # Every process ran on its own user-level stack, which closed cleanly at exit
      # (zebra-ffi's shutdown_network: the `net ok` line, mbufs counted back).
      unclean=$(grep -L '^net ok ' "${reports[@]}" | wc -l)
      if [ "$unclean" -ne 0 ]; then
        echo "FAIL $suite $mode: $unclean of ${#reports[@]} processes did not close their user-level stack cleanly:"
        grep -h '^net ' "${reports[@]}" | grep -v '^net ok ' | sort | uniq -c | head -n 5
        status=1
      else
        frames=$(grep -h '^net ok ' "${reports[@]}" | grep -o 'tx_frames [0-9]*' | awk '{n += $2} END {print n + 0}')
        echo "PASS $suite $mode: all ${#reports[@]} processes on the user-level stack ($user_net), $frames frames sent, every stack closed with no mbuf in use"
      fi
      library="$library; network: Zebra's user-level stack over $user_net"
    fi
  fi
fi
verdict=$([ $status = 0 ] && echo passed || echo FAILED)
echo "suite $suite, mode $mode$net_shown: $verdict; library: $library; logs: $logdir"
exit $status
