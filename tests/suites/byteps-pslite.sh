#!/usr/bin/env bash
# The BytePS PS-lite suite: BytePS's own benchmarks and our apps (tests/pslite-app/), each
# run as a PS-lite job (scheduler + servers + workers) through scripts/pslaunch.py.
set -uo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
TESTS=(test_benchmark test_sparse_benchmark exact_sums exact_sums_wide exact_sums_negative mf_train_smoke trace_replay exact_sums_hot exact_sums_two_stage exact_sums_two_stage_2 mf_train_pull trace_hot trace_online documented_path shapes_own shapes_uneven shapes_async shapes_negative stats_interval metrics_endpoint job_key silent_switch trace_watch)

usage() {
  cat <<EOF
usage: tests/suites/byteps-pslite.sh [--list] [--help] [TEST...]

Runs BytePS's PS-lite tests through scripts/pslaunch.py and prints one line per test,
"PASS name" or "FAIL name (reason)"; exits non-zero if any failed.
Tests (default: all; exact_sums_hot, trace_hot and trace_online only with SUITE_SWITCH): ${TESTS[*]}
  test_benchmark        BytePS tests/test_benchmark, PUSH_PULL mode, 2 servers, 2 workers
  test_sparse_benchmark BytePS tests/test_sparse_benchmark, mode 0 (PUSH_THEN_PULL; the
                        other modes never end), 2 servers, 2 workers
  exact_sums            tests/pslite-app/exact_sums, 2 servers, 3 workers: every pulled
                        value checked against the exact sum
  exact_sums_wide       exact_sums, 3 servers, 2 workers, val_len 9, 64 keys
  exact_sums_negative   exact_sums --inject-wrong-expected must FAIL (the checker is alive)
  exact_sums_hot        exact_sums, 2 servers, 4 workers, val_len 32, 64 keys, 10 rounds:
                        the in-network aggregation workload (with SUITE_SWITCH, 1 % seeded
                        loss on the hot path and tests/lib/hotpath.py check: aggregated,
                        and fewer hot bytes at the servers)
  exact_sums_two_stage  exact_sums_hot with ZEBRA_SYNC=two-stage (docs/OSP.md): a worker's Wait
                        on a push returns once its hot part settled; every pulled value
                        still exact (each pull follows its push at the server), the job
                        aggregated, pushes answered early (the shim's statistics) and no
                        answer differed from the server's. Only with SUITE_SWITCH (else SKIP)
  exact_sums_two_stage_2  the same with ZEBRA_SYNC=two-stage:2: every pulled value still
                        exact, pulls passed held pushes of their worker at the servers
                        (stale_pulls) and none passed more than 2 (stale_most)
  mf_train_pull         mf_train (1 server, 3 workers, 3 epochs, target RMSE 0.96) with the
                        1000 rows it profiles as hot: the pull half answers pulls of hot rows
                        from the updates the switch copies (its first checks, a sample of
                        rows asked of the server, all agree); then the same job with
                        ZEBRA_PULL=server runs as without the pull half (nothing answered
                        locally) and reaches the target too. Only with SUITE_SWITCH
  trace_hot             trace_replay of an OA-like trace (4 workers, 30 rounds, 32 values a
                        key) with the hot keys \`zebra profile\` picks from it (with
                        SUITE_SWITCH: aggregated, and fewer hot bytes at the servers)
  documented_path       the documented path, literally: trace_replay of an OA-like trace
                        recorded with ZEBRA_TRACE (mode on, no switch), \`zebra profile -o
                        hot.keys --servers 2\` with its defaults, \`zebra switch\` with its
                        defaults and that file, the job again with ZEBRA_SWITCH and
                        ZEBRA_HOT_KEYS: exact, aggregated, fewer hot bytes at the servers
  trace_online          trace_hot with ZEBRA_HOT=online:10, from a stale hot set (the profile
                        of a trace whose keys are permuted: none of them hot) and from no
                        hot-keys file (online_capacity): each server re-ranks after 10
                        pushes of every worker and installs new keys, with 1 % seeded loss
                        on the hot path; exact, aggregated, and the decided sets' precision
                        against the full trace's hot set >= 80 %
  mf_train_smoke        tests/pslite-app/mf_train on MovieLens-100k, 1 server, 2 workers,
                        up to 3 epochs, stopping at test RMSE 0.96: the final test RMSE
                        must be below 0.97 and at least 0.1 below the initial one
  trace_replay          tests/pslite-app/trace_replay, 2 servers, 2 workers: replays an
                        OA-like trace from \`zebra trace gen\` (4 trace workers, 20 rounds,
                        2 values a key), every pulled sum checked exactly
  shapes_own            tests/pslite-app/shapes --shape=own, 2 servers, 3 workers: every
                        worker pushes only keys of its own (16 a server, 8 values a key),
                        110 pushes, 2 in flight; the sums checked exactly. With
                        SUITE_SWITCH the shapes tests run with zero configuration
                        (ZEBRA_SWITCH alone, \`zebra switch --listen\` alone)
  shapes_uneven         shapes --shape=uneven: worker i pushes 110*(i+1) times the keys
                        every worker pushes (16 a server) and 1 of its own a server
  shapes_async          shapes --shape=async: 120 pushes of the shared keys, each followed
                        by a seeded random pause of 0..2 ms, no barrier between pushes
  shapes_negative       shapes --inject-wrong-expected must FAIL (the checker is alive)
                        (with SUITE_SWITCH the shapes tests run with no hot-keys file:
                        ZEBRA_HOT=online:5, every server's job sized by online_capacity)
  stats_interval        exact_sums, 1 server, 2 workers, 800 rounds (200 beside a switch, 60
                        on the real libzmq: a few seconds each way) with
                        ZEBRA_STATS_INTERVAL=1: every process with the shim writes at least
                        two periodic JSON lines and a final one, its counters growing
                        (tests/lib/statslines.py; with SUITE_SWITCH the hot counters too);
                        the checker must also fail on the lines cut to one and on them
                        reversed. SKIP when no process has the shim (mode libzmq)
  metrics_endpoint      exact_sums, 1 server, 2 workers, 800 rounds (60 on the real libzmq) with
                        ZEBRA_METRICS=127.0.0.1:0: tests/lib/shimmetrics.py scrapes every
                        node's endpoint twice while the job runs (the calls must grow),
                        and must fail once the job has ended (the endpoints closed).
                        Only with SUITE_PRELOAD, without PSLAUNCH_PRELOAD_NAMES and outside
                        network namespaces (else SKIP)
  job_key               exact_sums as exact_sums_hot (no loss) with ZEBRA_JOB_KEY_FILE (a
                        0600 file) in every node and the switch: the switch must aggregate;
                        then zero configuration with another key at the switch: it must
                        refuse the REGISTERs, both servers must step aside, nothing is
                        added and the sums are exact. Only with SUITE_SWITCH (else SKIP)
  trace_watch           trace_hot's job and hot-keys file with ZEBRA_HOT=watch:5: every server
                        must let 5 pushes of each worker go whole, then install the file's
                        keys (logged), and the job must aggregate (hotpath.py check) and be
                        exact. Only with SUITE_SWITCH (else SKIP)
  silent_switch         shapes --shape=own (1500 pushes) with ZEBRA_SWITCH naming a port where
                        nothing listens (zero configuration, register_wait_ms = 300): both
                        servers must step aside because the switch never answered, install
                        no key, and the sums must be exact. Only with SUITE_SWITCH (else SKIP)

Environment:
  PSLITE_BIN_DIR        directory holding the binaries (default .build/byteps-pslite/tests,
                        built by scripts/build-pslite.sh; the relinked set is in
                        .build/byteps-pslite-relinked/tests after --relink DIST)
  SUITE_PRELOAD   library to LD_PRELOAD into every node (empty: none)
  SUITE_SWITCH    the \`zebra\` binary: run every job beside \`zebra switch\` with ZEBRA_SWITCH,
                  ZEBRA_HOT_KEYS (tests/lib/hotpath.py exact-sums for the job's servers)
                  and ZEBRA_HOT_CONFIG (tests/suites/hot.conf) set (empty: no switch)
  SUITE_LOGDIR    logs go to \$SUITE_LOGDIR/<test>/ (default .build/logs/byteps-pslite)
  PSLITE_SUITE_TIMEOUT  seconds before a test's job is killed (default 90)
  MF_DATA         MovieLens-100k for mf_train_smoke (default .build/data/ml-100k.inter,
                  extracted by scripts/setup.sh --clients)
  SUITE_ZEBRA_CLI the \`zebra\` command for trace_replay's trace (default
                  target/release/zebra, built by scripts/setup.sh)
EOF
}

selected=()
while [ $# -gt 0 ]; do
  case "$1" in
    -h|--help) usage; exit 0 ;;
    --list) printf '%s\n' "${TESTS[@]}"; exit 0 ;;
    -*) echo "byteps-pslite suite: unknown option '$1' (see --help)" >&2; exit 2 ;;
    *)
      known=0
      for t in "${TESTS[@]}"; do [ "$t" = "$1" ] && known=1; done
      [ $known = 1 ] || { echo "byteps-pslite suite: unknown test '$1' (see --list)" >&2; exit 2; }
      selected+=("$1"); shift ;;
  esac
done
# By default the aggregation workloads (exact_sums_hot, trace_hot) run only beside a switch:
# without one they repeat what exact_sums and trace_replay check. By name they run anyway.
if [ ${#selected[@]} -eq 0 ]; then
  for t in "${TESTS[@]}"; do
    case "$t" in
      exact_sums_hot|exact_sums_two_stage|exact_sums_two_stage_2|mf_train_pull|trace_hot|trace_online|documented_path|job_key|silent_switch|trace_watch) [ -n "${SUITE_SWITCH:-}" ] && selected+=("$t") ;;
      *) selected+=("$t") ;;
    esac
  done
fi

BIN_DIR="${PSLITE_BIN_DIR:-$ROOT/.build/byteps-pslite/tests}"
PRELOAD="${SUITE_PRELOAD:-}"
LOGDIR="${SUITE_LOGDIR:-$ROOT/.build/logs/byteps-pslite}"
TIMEOUT="${PSLITE_SUITE_TIMEOUT:-90}"
LAUNCHER="$ROOT/scripts/pslaunch.py"
MF_DATA="${MF_DATA:-$ROOT/.build/data/ml-100k.inter}"
CLI_BIN="${SUITE_ZEBRA_CLI:-$ROOT/target/release/zebra}"


failed=0
pass() { echo "PASS $1"; }
fail() { echo "FAIL $1 ($2)"; failed=1; }

# run NAME SERVERS WORKERS ENV... -- BINARY ARGS...
# Sets JOB_LOGDIR and JOB_REASON (why the launcher failed; empty on success).
run_job() {
  local name="$1" servers="$2" workers="$3"
  shift 3
  local envs=()
  while [ $# -gt 0 ] && [ "$1" != "--" ]; do envs+=(--env "$1"); shift; done
  shift
  local bin="$BIN_DIR/$1"
  shift
  JOB_LOGDIR="$LOGDIR/$name"
  JOB_REASON=""
  mkdir -p "$JOB_LOGDIR"
  local service=()
  if [ -n "${SUITE_SWITCH:-}" ]; then
    rm -rf "$JOB_LOGDIR/stats"
    mkdir -p "$JOB_LOGDIR/stats"
    # HOT_KEYS_FILE=none: no hot-keys file (online hot keys, the jobs sized by the config).
    local keys_flag=""
    if [ "${HOT_KEYS_FILE:-}" != none ]; then
      if [ -n "${HOT_KEYS_FILE:-}" ]; then cp "$HOT_KEYS_FILE" "$JOB_LOGDIR/hot.keys"
      else python3 "$ROOT/tests/lib/hotpath.py" exact-sums --servers "$servers" ${HOT_KEYS_ARGS:-} >"$JOB_LOGDIR/hot.keys"; fi
      envs+=(--env "ZEBRA_HOT_KEYS=$JOB_LOGDIR/hot.keys")
      keys_flag="--hot-keys $JOB_LOGDIR/hot.keys"
    fi
    local conf="${HOT_CONF:-$ROOT/tests/suites/hot.conf}" loss="${HOT_LOSS:-0}"
    envs+=(--env "ZEBRA_SWITCH={ip:switch}:{port:switch}" --env "ZEBRA_STATS=$JOB_LOGDIR/stats/%p")
    if [ "${ZERO_CONFIG:-0}" = 1 ]; then
      # What a user sets: ZEBRA_SWITCH alone, and a switch given only its address.
      service=(--service "switch=${SWITCH_ENV:+env $SWITCH_ENV }$SUITE_SWITCH switch --listen {ip:switch}:{port:switch}")
    elif [ "${DEFAULTS:-0}" = 1 ]; then
      # The documented commands: zebra switch with its defaults and the hot-keys file.
      service=(--service "switch=$SUITE_SWITCH switch --listen {ip:switch}:{port:switch} --workers {workers} --servers {servers} $keys_flag")
    else
      envs+=(--env "ZEBRA_HOT_CONFIG=$conf" --env "ZEBRA_HOT_LOSS=$loss")
      # SWITCH_ENV: VAR=VALUE for the switch alone (over the nodes' --env).
      service=(--service "switch=${SWITCH_ENV:+env $SWITCH_ENV }$SUITE_SWITCH switch --config $conf --listen {ip:switch}:{port:switch} --workers {workers} --servers {servers} $keys_flag --loss $loss")
    fi
  fi
  local out="$JOB_LOGDIR/pslaunch.log"
  if python3 "$LAUNCHER" --servers "$servers" --workers "$workers" --timeout "$TIMEOUT" \
      --logdir "$JOB_LOGDIR" --preload "$PRELOAD" "${envs[@]}" "${service[@]}" -- "$bin" "$@" >"$out" 2>&1; then
    # The dynamic loader only warns when it cannot preload: then the test ran without it.
    local ignored
    ignored="$(grep -l 'cannot be preloaded' "$JOB_LOGDIR"/*.log 2>/dev/null | head -n 1)"
    [ -z "$ignored" ] && return 0
    JOB_REASON="$(basename "$ignored"): $(grep -m 1 'cannot be preloaded' "$ignored")"
    return 1
  fi
  JOB_REASON="$(sed -n 's/^pslaunch: FAIL \(.*\); logs in .*/\1/p' "$out" | head -n 1)"
  [ -n "$JOB_REASON" ] || JOB_REASON="pslaunch failed: $(head -n 1 "$out")"
  return 1
}

# BytePS's benchmarks create their KVServer after PS-lite's start-up barrier and only then
# set its request handle, so a push that comes first aborts the server: "Check failed:
# request_handle_" (about one run in ten here), or, when the server is slow to create its
# KVServer on a loaded machine, "timeout (5 sec) to wait App 0 customer 0 ready at 0". Such a
# run (and only such a run) is retried. pslite-patches/0001 fixes the first in PS-lite itself
# for those who build it (not needed to use Zebra).
STOCK_RACES='Check failed: request_handle_|timeout \(5 sec\) to wait App [0-9]+ customer [0-9]+ ready'
STOCK_ATTEMPTS=5
run_stock_job() {
  local name="$1" attempt
  for ((attempt = 1; attempt <= STOCK_ATTEMPTS; attempt++)); do
    run_job "$@" && return 0
    grep -qsE "$STOCK_RACES" "$LOGDIR/$name"/server-*.log || return 1
    echo "note: $name: BytePS test race (request arrived before the server's handle was set), attempt $attempt of $STOCK_ATTEMPTS" >&2
  done
  JOB_REASON="$JOB_REASON; the BytePS handle race $STOCK_ATTEMPTS times in a row"
  return 1
}

# every_log PREFIX COUNT PATTERN: PREFIX-0.log .. PREFIX-(COUNT-1).log of the job each
# have a line matching the extended regex PATTERN.
every_log() {
  local prefix="$1" count="$2" pattern="$3" i
  for ((i = 0; i < count; i++)); do
    grep -qE -- "$pattern" "$JOB_LOGDIR/$prefix-$i.log" 2>/dev/null || return 1
  done
}

# gen_trace NAME ROUNDS VALUES: an OA-like trace of 4 workers in $TRACE (zebra trace gen).
gen_trace() {
  TRACE="$LOGDIR/$1.trace"
  mkdir -p "$LOGDIR"
  if [ ! -x "$CLI_BIN" ]; then
    fail "$1" "missing $CLI_BIN; run scripts/setup.sh"
    return 1
  fi
  if ! "$CLI_BIN" trace gen --out "$TRACE" --shape oa --keys 200000 --keys-per-push 60 \
      --workers 4 --rounds "$2" --values "$3" >"$LOGDIR/$1.gen.log" 2>&1; then
    fail "$1" "zebra trace gen failed: $(tail -n 1 "$LOGDIR/$1.gen.log")"
    return 1
  fi
}

# replay_ok WORKERS: every trace_replay worker and both servers reported success.
replay_ok() {
  every_log worker "$1" '^trace_replay: OK worker rank [0-9]+ .* [1-9][0-9]* values checked, 0 wrong' \
    && every_log server 2 '^trace_replay: server rank [0-9]+ .* no errors$'
}

# shapes_job NAME ARGS...: runs tests/pslite-app/shapes with ARGS, 2 servers, 3 workers.
# With SUITE_SWITCH: zero configuration, as a user would run it: ZEBRA_SWITCH alone (no
# hot-keys file, no settings file: online hot keys, each server's job admitted by the switch
# with its share of the memory), and `zebra switch --listen` alone.
shapes_job() {
  local name="$1"
  shift
  HOT_KEYS_FILE=none ZERO_CONFIG=1 run_job "$name" 2 3 -- shapes "$@"
}

# shapes_ok NAME SHAPE: every worker and both servers of a shapes job reported success;
# prints each worker's time in push+wait and, beside a switch, what it aggregated
# (tests/lib/hotpath.py check, informational: these shapes need not pay).
shapes_ok() {
  local name="$1" shape="$2"
  if ! every_log worker 3 "^shapes: OK worker rank [0-9]+ shape $shape: [0-9]+ pushes, [1-9][0-9]* values checked, 0 wrong" \
      || ! every_log server 2 '^shapes: server rank [0-9]+ handled [0-9]+ pushes, no errors$'; then
    fail "$name" "a worker or server did not report success; logs in $JOB_LOGDIR"
    return
  fi
  pass "$name"
  echo "  push+wait (s) by worker rank: $(grep -h '^shapes: OK worker rank' "$JOB_LOGDIR"/worker-*.log \
    | sed -n 's/.*worker rank \([0-9]*\) .*; \([0-9.]*\) s in push+wait.*/\1:\2/p' | sort | paste -sd' ' -)"
  if [ -n "${SUITE_SWITCH:-}" ]; then
    python3 "$ROOT/tests/lib/hotpath.py" check "$JOB_LOGDIR" >"$JOB_LOGDIR/hotpath.txt" 2>&1
    sed 's/^/  (informational) /' "$JOB_LOGDIR/hotpath.txt"
    grep -h 'admitted job' "$JOB_LOGDIR/switch.log" | sed 's/.*\] /  (informational) /'
    grep -h 'stepping aside' "$JOB_LOGDIR"/server-*.log | sed 's/.*\] /  (informational) /; s/(after .*//'
  fi
}

# hot_check NAME: with SUITE_SWITCH, the job aggregated in the switch, lost nothing and
# the servers got fewer hot bytes than the whole pushes carried.
hot_check() {
  local name="$1"
  if [ -z "${SUITE_SWITCH:-}" ]; then pass "$name"; return; fi
  if python3 "$ROOT/tests/lib/hotpath.py" check "$JOB_LOGDIR" >"$JOB_LOGDIR/hotpath.txt" 2>&1; then
    pass "$name"; sed 's/^/  /' "$JOB_LOGDIR/hotpath.txt"
  else fail "$name" "$(tail -n 1 "$JOB_LOGDIR/hotpath.txt"); logs in $JOB_LOGDIR"; fi
}

# profiled_keys NAME KEYS: `zebra profile` of $TRACE into KEYS (half the pairs, a 64 KiB
# switch, 2 servers); FAIL NAME if it fails.
profiled_keys() {
  if ! "$CLI_BIN" profile --out "$2" --p 0.5 --switch-mem 64K --servers 2 "$TRACE" \
      >"$LOGDIR/$1.profile.log" 2>&1; then
    fail "$1" "zebra profile failed: $(tail -n 1 "$LOGDIR/$1.profile.log")"
    return 1
  fi
}

# watched_job NAME MODE PATTERN: trace_replay of $TRACE with $keys and ZEBRA_HOT=MODE; every
# node OK, both servers logged PATTERN, the job aggregated (hotpath.py check, in
# JOB_LOGDIR/hotpath.txt); FAIL NAME (with MODE) otherwise.
watched_job() {
  local name="$1" mode="$2" pattern="$3"
  if ! HOT_KEYS_FILE="$keys" run_job "$name" 2 4 "ZEBRA_HOT=$mode" ZEBRA_LOG=info \
      -- trace_replay --trace="$TRACE"; then
    fail "$name" "$mode: $JOB_REASON; logs in $JOB_LOGDIR"
  elif ! replay_ok 4; then fail "$name" "$mode: a node did not report OK; logs in $JOB_LOGDIR"
  elif ! every_log server 2 "$pattern"; then
    fail "$name" "$mode: a server did not log '$pattern'; logs in $JOB_LOGDIR"
  elif ! python3 "$ROOT/tests/lib/hotpath.py" check "$JOB_LOGDIR" >"$JOB_LOGDIR/hotpath.txt" 2>&1; then
    fail "$name" "$mode: $(tail -n 1 "$JOB_LOGDIR/hotpath.txt"); logs in $JOB_LOGDIR"
  else
    return 0
  fi
  return 1
}

# two_stage_job NAME SYNC [CHECK...]: exact_sums_hot's job with ZEBRA_SYNC=SYNC; every node
# OK, pushes answered early, none differing from its server's answer, the command CHECK...
# (if given) succeeds (else its output is the reason), the job aggregated (hot_check); PASS
# or FAIL NAME (SKIP without a switch).
two_stage_job() {
  local name="$1" sync="$2" why
  shift 2
  if [ -z "${SUITE_SWITCH:-}" ] || [ -z "$PRELOAD" ]; then
    echo "SKIP $name (runs in the on+switch modes)"; return
  fi
  local args=(--val-len=32 --keys=64 --rounds=10)
  if HOT_KEYS_ARGS="--keys 64 --val-len 32" HOT_LOSS="drop=0.01,seed=11" run_job "$name" 2 4 \
      "ZEBRA_SYNC=$sync" -- exact_sums "${args[@]}"; then
    if ! every_log worker 4 '^exact_sums: OK checked [1-9][0-9]* values' \
        || ! every_log server 2 '^exact_sums: server rank [0-9]+ .* no errors$'; then
      fail "$name" "a worker or server did not report success; logs in $JOB_LOGDIR"
    elif ! grep -qsE 'two-stage: EarlyAnswerStats \{ early: [1-9]' "$JOB_LOGDIR"/stats/*; then
      fail "$name" "no push answered early (shim statistics); logs in $JOB_LOGDIR"
    elif grep -qsE 'two-stage off|mismatches: [1-9]' "$JOB_LOGDIR"/stats/*; then
      fail "$name" "an early answer differed from the server's; logs in $JOB_LOGDIR"
    elif [ $# -gt 0 ] && ! why=$("$@"); then
      fail "$name" "$why; logs in $JOB_LOGDIR"
    else
      hot_check "$name"
      grep -h 'two-stage: ' "$JOB_LOGDIR"/stats/* | sed 's/^ */  /'
    fi
  else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi
}

# pull_half_counts: over the workers' statistics (JOB_LOGDIR/stats), "LOCAL MISMATCHES OFF":
# pulls answered with rows of the copy (answered + merged), checks that differed, workers
# whose pull half stopped.
pull_half_counts() {
  local stats=("$JOB_LOGDIR"/stats/*)
  local pa
  pa=$(grep -hoE 'PullAgentStats \{ answered: [0-9]+, merged: [0-9]+, verified: [0-9]+, mismatches: [0-9]+' \
    "${stats[@]}" | awk '{a += $4 + $6; m += $10} END {print a + 0, m + 0}')
  echo "$pa $(grep -hc 'pull half off' "${stats[@]}" | awk '{n += $1} END {print n + 0}')"
}

# mf_train_pull_job NAME PULL: mf_train_pull's job with ZEBRA_PULL=PULL; OK when it reached
# its target (else FAIL NAME and false).
mf_train_pull_job() {
  local name="$1" pull="$2"
  if ! HOT_KEYS_FILE="$LOGDIR/$name.hot.keys" run_job "$name-$pull" 1 3 "ZEBRA_PULL=$pull" \
      -- mf_train --data="$MF_DATA" --epochs=3 --target-rmse=0.96 --eval-every=5; then
    fail "$name" "ZEBRA_PULL=$pull: $JOB_REASON; logs in $JOB_LOGDIR"; return 1
  elif ! grep -qhE '^mf: summary .* time_to_target_s=[0-9]' "$JOB_LOGDIR"/worker-*.log; then
    fail "$name" "ZEBRA_PULL=$pull: the job did not reach RMSE 0.96; logs in $JOB_LOGDIR"; return 1
  fi
}

# stale_at_most S: the servers' agents (JOB_LOGDIR/stats) let pulls pass held pushes of
# their worker (stale_pulls), never more than S at once (stale_most); says what failed.
stale_at_most() {
  local passed most
  passed=$(grep -hoE 'stale_pulls: [0-9]+' "$JOB_LOGDIR"/stats/* | awk '{n += $2} END {print n + 0}')
  most=$(grep -hoE 'stale_most: [0-9]+' "$JOB_LOGDIR"/stats/* | awk '$2 > m {m = $2} END {print m + 0}')
  echo "  two-stage: $passed pulls passed held pushes, at most $most at once" >&2
  if [ "$passed" -eq 0 ]; then echo "no pull passed a held push (stale_pulls 0)"; return 1; fi
  if [ "$most" -gt "$1" ]; then echo "a pull passed $most held pushes, more than $1"; return 1; fi
}

run_test() {
  local name="$1"
  case "$name" in
    test_benchmark)
      # argv: value bytes, repeat, mode (1 = PUSH_PULL); progress line every LOG_DURATION.
      if run_stock_job "$name" 2 2 NUM_KEY_PER_SERVER=4 LOG_DURATION=10 -- test_benchmark 4096 20 1; then
        if every_log worker 2 'Application goodput: .* count = 20$'; then pass "$name"
        else fail "$name" "a worker did not report its 20th iteration; logs in $JOB_LOGDIR"; fi
      else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi ;;
    test_sparse_benchmark)
      # argv: push bytes, pull bytes, repeat, mode (0 = PUSH_THEN_PULL; others loop forever).
      if run_stock_job "$name" 2 2 NUM_KEY_PER_SERVER=4 -- test_sparse_benchmark 4096 2048 10 0; then
        if every_log worker 2 'pull 2048 bytes to each server, repeat=10'; then pass "$name"
        else fail "$name" "a worker did not report its pulls; logs in $JOB_LOGDIR"; fi
      else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi ;;
    exact_sums)
      if run_job "$name" 2 3 -- exact_sums; then
        if every_log worker 3 '^exact_sums: OK checked [1-9][0-9]* values' \
            && every_log server 2 '^exact_sums: server rank [0-9]+ .* no errors$'; then pass "$name"
        else fail "$name" "a node did not report OK; logs in $JOB_LOGDIR"; fi
      else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi ;;
    exact_sums_wide)
      if run_job "$name" 3 2 -- exact_sums --val-len=9 --keys=64 --rounds=3; then
        if every_log worker 2 '^exact_sums: OK checked [1-9][0-9]* values' \
            && every_log server 3 '^exact_sums: server rank [0-9]+ .* no errors$'; then pass "$name"
        else fail "$name" "a node did not report OK; logs in $JOB_LOGDIR"; fi
      else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi ;;
    exact_sums_hot)
      local args=(--val-len=32 --keys=64 --rounds=10)
      if HOT_KEYS_ARGS="--keys 64 --val-len 32" HOT_LOSS="drop=0.01,seed=11" run_job "$name" 2 4 -- exact_sums "${args[@]}"; then
        if ! every_log worker 4 '^exact_sums: OK checked [1-9][0-9]* values' \
            || ! every_log server 2 '^exact_sums: server rank [0-9]+ .* no errors$'; then
          fail "$name" "a worker or server did not report success; logs in $JOB_LOGDIR"
        else hot_check "$name"; fi
      else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi ;;
    exact_sums_two_stage) two_stage_job "$name" two-stage ;;
    exact_sums_two_stage_2) two_stage_job "$name" two-stage:2 stale_at_most 2 ;;
    exact_sums_negative)
      if run_job "$name" 1 2 -- exact_sums --inject-wrong-expected --rounds=2; then
        fail "$name" "exact_sums passed with a wrong expected value; logs in $JOB_LOGDIR"
      elif grep -qE '^exact_sums: FAIL .* got .* expected' "$JOB_LOGDIR"/worker-{0,1}.log 2>/dev/null; then
        pass "$name"
      else fail "$name" "no mismatch reported ($JOB_REASON); logs in $JOB_LOGDIR"; fi ;;
    mf_train_pull)
      local counts local_answers mismatches off
      if [ ! -s "$MF_DATA" ]; then
        fail "$name" "missing $MF_DATA; run scripts/setup.sh --clients"
      elif ! "$BIN_DIR/mf_train" --data="$MF_DATA" --write-hot-keys="$LOGDIR/$name.hot.keys" \
          --hot-count=1000 --hot-servers=1 >"$LOGDIR/$name.profile.log" 2>&1; then
        fail "$name" "mf_train --write-hot-keys failed: $(tail -n 1 "$LOGDIR/$name.profile.log")"
      elif mf_train_pull_job "$name" switch; then
        read -r local_answers mismatches off <<<"$(pull_half_counts)"
        if [ "$local_answers" -eq 0 ]; then
          fail "$name" "no pull answered from the copy (pull half statistics); logs in $JOB_LOGDIR"
        elif [ "$mismatches" -ne 0 ] || [ "$off" -ne 0 ]; then
          fail "$name" "a check differed from the server ($mismatches) or the pull half stopped ($off); logs in $JOB_LOGDIR"
        elif mf_train_pull_job "$name" server; then
          counts=$local_answers
          read -r local_answers mismatches off <<<"$(pull_half_counts)"
          if [ "$local_answers" -ne 0 ]; then
            fail "$name" "ZEBRA_PULL=server: $local_answers pulls answered from a copy; logs in $JOB_LOGDIR"
          else
            pass "$name"
            echo "  pull half: $counts pulls answered with rows of the copy; ZEBRA_PULL=server: none"
          fi
        fi
      fi ;;
    mf_train_smoke)
      if [ ! -s "$MF_DATA" ]; then
        fail "$name" "missing $MF_DATA; run scripts/setup.sh --clients"
      elif run_job "$name" 1 2 -- mf_train --data="$MF_DATA" --epochs=3 --target-rmse=0.96 --eval-every=10; then
        local summary
        summary="$(grep -h '^mf: summary ' "$JOB_LOGDIR"/worker-*.log | head -n 1)"
        if [ -z "$summary" ]; then
          fail "$name" "no summary line; logs in $JOB_LOGDIR"
        elif echo "$summary" | awk '{
              for (i = 1; i <= NF; i++) { split($i, kv, "="); v[kv[1]] = kv[2] }
              exit !(v["final_rmse"] < 0.97 && v["final_rmse"] <= v["initial_rmse"] - 0.1) }'; then
          pass "$name"
        else fail "$name" "the test RMSE did not fall enough: ${summary#mf: summary }"; fi
      else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi ;;
    trace_replay)
      if gen_trace "$name" 20 2; then
        if run_job "$name" 2 2 -- trace_replay --trace="$TRACE"; then
          if replay_ok 2; then pass "$name"
          else fail "$name" "a node did not report OK; logs in $JOB_LOGDIR"; fi
        else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi
      fi ;;
    trace_hot)
      # The aggregation workload: an OA-like trace, its hot keys chosen by zebra profile.
      local keys="$LOGDIR/$name.keys"
      if gen_trace "$name" 30 32 && profiled_keys "$name" "$keys"; then
        if HOT_KEYS_FILE="$keys" run_job "$name" 2 4 -- trace_replay --trace="$TRACE"; then
          if ! replay_ok 4; then fail "$name" "a node did not report OK; logs in $JOB_LOGDIR"
          else hot_check "$name"; fi
        else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi
      fi ;;
    trace_watch)
      # A hot-keys file, watched (docs/HOTKEYS.md, "a hot-keys file, watched").
      local keys="$LOGDIR/$name.keys"
      if [ -z "${SUITE_SWITCH:-}" ]; then echo "SKIP $name (needs SUITE_SWITCH)"; return; fi
      if gen_trace "$name" 30 32 && profiled_keys "$name" "$keys"; then
        # With a probe (the first pushes whole, then the file's keys), and without.
        if watched_job "$name" watch:5 "the hot-keys file's [1-9][0-9]* keys from round [0-9]+ after [0-9]+ whole pushes" \
            && watched_job "$name-0" watch:0 "online hot keys: kept the [1-9][0-9]* current keys"; then
          pass "$name"
          echo "  watch:5: $(cat "$LOGDIR/$name/hotpath.txt")"
          grep -h "the hot-keys file's\|stepping aside" "$LOGDIR/$name"/server-*.log | sed 's/.*\] /  (informational) /'
          echo "  watch:0: $(cat "$LOGDIR/$name-0/hotpath.txt")"
        fi
      fi ;;
    documented_path)
      # The documented path, literally (docs/HOTKEYS.md, docs/HOTPATH.md): record the job's
      # pushes with ZEBRA_TRACE, \`zebra profile\` them with its defaults, start \`zebra switch\`
      # with its defaults and that file, run the job with ZEBRA_SWITCH and ZEBRA_HOT_KEYS.
      local rec="$LOGDIR/$name-record" keys="$LOGDIR/$name.keys"
      if gen_trace "$name" 30 32; then
        rm -rf "$rec"
        mkdir -p "$rec"
        if ! python3 "$LAUNCHER" --servers 2 --workers 4 --timeout "$TIMEOUT" --logdir "$rec" \
            --preload "$PRELOAD" --env "ZEBRA_TRACE=$rec/push.%r" -- "$BIN_DIR/trace_replay" \
            --trace="$TRACE" >"$rec/pslaunch.log" 2>&1; then
          fail "$name" "the recording run failed; logs in $rec"
        elif ! "$CLI_BIN" profile -o "$keys" --servers 2 "$rec"/push.* >"$LOGDIR/$name.profile.log" 2>&1; then
          fail "$name" "zebra profile failed: $(tail -n 1 "$LOGDIR/$name.profile.log")"
        elif HOT_KEYS_FILE="$keys" DEFAULTS=1 run_job "$name" 2 4 -- trace_replay --trace="$TRACE"; then
          if ! replay_ok 4; then fail "$name" "a node did not report OK; logs in $JOB_LOGDIR"
          else hot_check "$name"; fi
        else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi
      fi ;;
    trace_online)
      # Online hot keys from a stale start (the hot set of the same model with other keys),
      # and from no hot-keys file at all (each server's job sized by online_capacity).
      local stale="$LOGDIR/$name.stale" full="$LOGDIR/$name.full.keys" start problems=""
      if gen_trace "$name" 30 32; then
        if ! "$CLI_BIN" trace gen --out "$stale.trace" --shape oa --keys 200000 --keys-per-push 60 \
              --workers 4 --rounds 30 --values 32 --key-seed 2 >"$LOGDIR/$name.stale.log" 2>&1 \
            || ! "$CLI_BIN" profile --out "$stale.keys" --p 0.5 --switch-mem 64K --servers 2 "$stale.trace" \
              >>"$LOGDIR/$name.stale.log" 2>&1 \
            || ! "$CLI_BIN" profile --out "$full" --p 1 --switch-mem 1M --servers 2 "$TRACE" \
              >"$LOGDIR/$name.profile.log" 2>&1; then
          fail "$name" "zebra trace gen or profile failed: see $LOGDIR/$name.*.log"
        else
          for start in stale none; do
            local job="$name-$start" conf="$LOGDIR/$name-$start.conf" keys="$stale.keys"
            { cat "$ROOT/tests/suites/hot.conf"; echo "online_out = \"$LOGDIR/$job/online-%r.keys\""; } >"$conf"
            if [ $start = none ]; then keys=none; echo "online_capacity = 640" >>"$conf"; fi
            rm -f "$LOGDIR/$job"/online-*.keys
            if ! HOT_KEYS_FILE="$keys" HOT_CONF="$conf" HOT_LOSS="drop=0.01,seed=12" \
                run_job "$job" 2 4 ZEBRA_HOT=online:10 -- trace_replay --trace="$TRACE"; then
              problems+="from $start: $JOB_REASON; "
            elif ! replay_ok 4; then problems+="from $start: a node did not report OK; "
            elif ! python3 "$ROOT/tests/lib/hotpath.py" precision --full "$full" --servers 2 \
                "$JOB_LOGDIR/online-0.keys" "$JOB_LOGDIR/online-1.keys" >"$JOB_LOGDIR/online.txt" 2>&1; then
              problems+="from $start: $(tail -n 1 "$JOB_LOGDIR/online.txt"); "
            elif [ -n "${SUITE_SWITCH:-}" ] \
                && ! python3 "$ROOT/tests/lib/hotpath.py" check "$JOB_LOGDIR" >"$JOB_LOGDIR/hotpath.txt" 2>&1; then
              problems+="from $start: $(tail -n 1 "$JOB_LOGDIR/hotpath.txt"); "
            fi
          done
          if [ -n "$problems" ]; then fail "$name" "${problems%; }; logs in $LOGDIR/$name-*"
          else
            pass "$name"
            for start in stale none; do
              echo "  from $start: $(cat "$LOGDIR/$name-$start/hotpath.txt")"
              sed 's/^/    /' "$LOGDIR/$name-$start/online.txt"
            done
          fi
        fi
      fi ;;
    shapes_own|shapes_uneven|shapes_async)
      # Many more pushes than the 10 a server counts before it decides (online_rounds).
      local shape="${name#shapes_}" args=(--keys=16 --val-len=8)
      case "$shape" in
        own) args+=(--rounds=110 --pipeline=2) ;;
        uneven) args+=(--rounds=110) ;;
        async) args+=(--rounds=120 --pause-ms=2) ;;
      esac
      if shapes_job "$name" --shape="$shape" "${args[@]}"; then shapes_ok "$name" "$shape"
      else fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"; fi ;;
    shapes_negative)
      if shapes_job "$name" --shape=uneven --rounds=2 --keys=8 --val-len=4 --inject-wrong-expected; then
        fail "$name" "shapes passed with a wrong expected value; logs in $JOB_LOGDIR"
      elif grep -qE '^shapes: FAIL worker rank [0-9]+ .* got .* expected' "$JOB_LOGDIR"/worker-{0,1,2}.log 2>/dev/null; then
        pass "$name"
      else fail "$name" "no mismatch reported ($JOB_REASON); logs in $JOB_LOGDIR"; fi ;;
    stats_interval)
      # ZEBRA_STATS_INTERVAL (docs/METRICS.md, "Watching a process"): JSON Lines while the
      # job runs. The processes with the shim: every node, or PSLAUNCH_PRELOAD_NAMES's.
      local stats="$LOGDIR/$name/stats" nodes=4 hot=() names="${PSLAUNCH_PRELOAD_NAMES:-}"
      [ -n "$names" ] && [ -n "$PRELOAD" ] && nodes=$(tr ',' '\n' <<<"$names" | grep -c .)
      if [ -z "$PRELOAD" ]; then
        echo "SKIP $name (no process has the shim: SUITE_PRELOAD is empty and the binaries use the real libzmq)"; return
      fi
      # A few seconds of job: a round on Zebra's engine takes about 5 ms, beside the
      # switch more, on the real libzmq (the shim forwarding) about 100 ms.
      local rounds=800
      [ -n "${SUITE_SWITCH:-}" ] && hot=(--hot) rounds=200
      [ "${ZEBRA_ENABLE:-0}" = 1 ] || rounds=60
      rm -rf "$stats"
      mkdir -p "$stats"
      if ! run_job "$name" 1 2 "ZEBRA_STATS=$stats/%p" ZEBRA_STATS_INTERVAL=1 -- exact_sums --rounds="$rounds"; then
        fail "$name" "$JOB_REASON; logs in $JOB_LOGDIR"
      elif ! every_log worker 2 '^exact_sums: OK checked [1-9][0-9]* values'; then
        fail "$name" "a worker did not report OK; logs in $JOB_LOGDIR"
      elif ! python3 "$ROOT/tests/lib/statslines.py" check "$stats" --processes "$nodes" "${hot[@]}" \
          >"$JOB_LOGDIR/statslines.txt" 2>&1; then
        fail "$name" "$(head -n 1 "$JOB_LOGDIR/statslines.txt"); logs in $JOB_LOGDIR"
      else
        # The checker is alive: one process's lines cut to its first and last, then reversed.
        local bad="$JOB_LOGDIR/stats-bad" one
        one="$(ls "$stats" | head -n 1)"
        rm -rf "$bad" && mkdir -p "$bad/cut" "$bad/reversed"
        sed -n '1p;$p' "$stats/$one" >"$bad/cut/$one"
        tac "$stats/$one" >"$bad/reversed/$one"
        if python3 "$ROOT/tests/lib/statslines.py" check "$bad/cut" --processes 1 >/dev/null 2>&1; then
          fail "$name" "statslines.py passed a file with one periodic line: $bad/cut/$one"
        elif python3 "$ROOT/tests/lib/statslines.py" check "$bad/reversed" --processes 1 >/dev/null 2>&1; then
          fail "$name" "statslines.py passed a file in reverse order: $bad/reversed/$one"
        else pass "$name"; sed 's/^/  /' "$JOB_LOGDIR/statslines.txt"; fi
      fi ;;
    job_key)
      # ZEBRA_JOB_KEY_FILE (docs/SECURITY.md): members show the token their key derives.
      if [ -z "${SUITE_SWITCH:-}" ]; then
        echo "SKIP $name (needs SUITE_SWITCH: the key is shared by the members and the switch)"; return
      fi
      local ours="$LOGDIR/$name.key" other="$LOGDIR/$name.other.key" args=(--val-len=32 --keys=64 --rounds=4)
      mkdir -p "$LOGDIR"
      (umask 077 && echo "ours $RANDOM$RANDOM" >"$ours" && echo "not ours" >"$other")
      if ! HOT_KEYS_ARGS="--keys 64 --val-len 32" run_job "$name" 2 4 "ZEBRA_JOB_KEY_FILE=$ours" \
          -- exact_sums "${args[@]}"; then
        fail "$name" "with the key everywhere: $JOB_REASON; logs in $JOB_LOGDIR"
      elif ! every_log worker 4 '^exact_sums: OK checked [1-9][0-9]* values'; then
        fail "$name" "with the key everywhere, a worker did not report OK; logs in $JOB_LOGDIR"
      elif ! python3 "$ROOT/tests/lib/hotpath.py" check "$JOB_LOGDIR" >"$JOB_LOGDIR/hotpath.txt" 2>&1; then
        fail "$name" "with the key everywhere: $(tail -n 1 "$JOB_LOGDIR/hotpath.txt"); logs in $JOB_LOGDIR"
      elif ! HOT_KEYS_FILE=none ZERO_CONFIG=1 SWITCH_ENV="ZEBRA_JOB_KEY_FILE=$other" \
          run_job "$name-other" 2 4 "ZEBRA_JOB_KEY_FILE=$ours" -- exact_sums "${args[@]}"; then
        fail "$name" "another key at the switch: $JOB_REASON; logs in $JOB_LOGDIR"
      elif ! every_log worker 4 '^exact_sums: OK checked [1-9][0-9]* values'; then
        fail "$name" "another key at the switch: a worker did not report OK; logs in $JOB_LOGDIR"
      elif ! grep -q "without the token of the jobs' key; refused" "$JOB_LOGDIR/switch.log" \
          || ! every_log server 2 "stepping aside: .*did not admit this server's job"; then
        fail "$name" "another key at the switch: no refusal for the token, or a server did not step aside; logs in $JOB_LOGDIR"
      elif ! grep -qE '^  added +0 packets, 0 pairs' "$JOB_LOGDIR/switch.log"; then
        fail "$name" "another key at the switch, yet it added pairs; logs in $JOB_LOGDIR"
      else
        pass "$name"
        echo "  same key: $(cat "$LOGDIR/$name/hotpath.txt")"
        echo "  another key at the switch (zero configuration): refused at admission, both servers stepped aside, 0 pairs added, sums exact"
      fi ;;
    silent_switch)
      # A switch that never answers (docs/HOTPATH.md, register_wait_ms): stepped around.
      if [ -z "${SUITE_SWITCH:-}" ] || [ -z "$PRELOAD" ]; then
        echo "SKIP $name (runs in the on+switch modes)"; return
      fi
      JOB_LOGDIR="$LOGDIR/$name"
      rm -rf "$JOB_LOGDIR" && mkdir -p "$JOB_LOGDIR"
      echo "register_wait_ms = 300" >"$JOB_LOGDIR/wait.conf"
      if ! python3 "$LAUNCHER" --servers 2 --workers 3 --timeout "$TIMEOUT" --logdir "$JOB_LOGDIR" \
          --preload "$PRELOAD" --env "ZEBRA_SWITCH=127.0.0.1:{port:nobody}" \
          --env "ZEBRA_HOT_CONFIG=$JOB_LOGDIR/wait.conf" -- "$BIN_DIR/shapes" --shape=own \
          --rounds=1500 --keys=16 --val-len=8 >"$JOB_LOGDIR/pslaunch.log" 2>&1; then
        fail "$name" "the job failed: $(tail -n 1 "$JOB_LOGDIR/pslaunch.log")"
      elif ! every_log worker 3 '^shapes: OK worker rank [0-9]+ shape own: [0-9]+ pushes, [1-9][0-9]* values checked, 0 wrong'; then
        fail "$name" "a worker did not report OK; logs in $JOB_LOGDIR"
      elif ! every_log server 2 "stepping aside: .*has not answered this server's REGISTER"; then
        fail "$name" "a server did not step aside for the silent switch; logs in $JOB_LOGDIR"
      elif grep -q 'online hot keys: [0-9]* new keys' "$JOB_LOGDIR"/server-*.log; then
        fail "$name" "a server installed keys with a silent switch; logs in $JOB_LOGDIR"
      else pass "$name"; fi ;;
    metrics_endpoint)
      # ZEBRA_METRICS (docs/METRICS.md, "A process's endpoint"), scraped while the job runs.
      if [ -z "$PRELOAD" ] || [ -n "${PSLAUNCH_PRELOAD_NAMES:-}" ]; then
        echo "SKIP $name (needs the shim preloaded into every node)"; return
      fi
      if [ "${PSLAUNCH_NET:-}" = netns ]; then
        echo "SKIP $name (the nodes run in network namespaces of their own: an endpoint on their loopback is not reachable from here)"; return
      fi
      # A job of some seconds: on the real libzmq (the shim forwarding) a round takes ~100 ms.
      local rounds=800
      [ "${ZEBRA_ENABLE:-0}" = 1 ] || rounds=60
      JOB_LOGDIR="$LOGDIR/$name"
      rm -rf "$JOB_LOGDIR" && mkdir -p "$JOB_LOGDIR"
      python3 "$LAUNCHER" --servers 1 --workers 2 --timeout "$TIMEOUT" --logdir "$JOB_LOGDIR" \
        --preload "$PRELOAD" --env ZEBRA_METRICS=127.0.0.1:0 --env ZEBRA_LOG=info \
        -- "$BIN_DIR/exact_sums" --rounds="$rounds" >"$JOB_LOGDIR/pslaunch.log" 2>&1 &
      local job=$! scraped=0
      python3 "$ROOT/tests/lib/shimmetrics.py" check "$JOB_LOGDIR" --processes 4 \
        >"$JOB_LOGDIR/shimmetrics.txt" 2>&1 && scraped=1
      if ! wait "$job"; then fail "$name" "the job failed: $(tail -n 1 "$JOB_LOGDIR/pslaunch.log")"
      elif [ $scraped = 0 ]; then fail "$name" "$(head -n 1 "$JOB_LOGDIR/shimmetrics.txt"); logs in $JOB_LOGDIR"
      elif python3 "$ROOT/tests/lib/shimmetrics.py" check "$JOB_LOGDIR" --processes 4 --wait 1 >/dev/null 2>&1; then
        fail "$name" "shimmetrics.py passed after the job ended (endpoints still open?)"
      else pass "$name"; sed 's/^/  /' "$JOB_LOGDIR/shimmetrics.txt"; fi ;;
  esac
}

binary_of() {
  case "$1" in
    exact_sums*|stats_interval|metrics_endpoint|job_key) echo exact_sums ;;
    mf_train*) echo mf_train ;;
    trace_*|documented_path) echo trace_replay ;;
    shapes_*|silent_switch) echo shapes ;;
    *) echo "$1" ;;
  esac
}

for name in "${selected[@]}"; do
  bin="$BIN_DIR/$(binary_of "$name")"
  if [ ! -f "$LAUNCHER" ]; then
    fail "$name" "missing $LAUNCHER"
  elif [ ! -x "$bin" ]; then
    fail "$name" "missing $bin; run scripts/build-pslite.sh"
  elif [ -n "$PRELOAD" ] && [ ! -e "$PRELOAD" ]; then
    fail "$name" "SUITE_PRELOAD=$PRELOAD does not exist"
  else
    run_test "$name"
  fi
done
exit $failed
