#!/usr/bin/env bash
# MXNet dist_sync kvstore suite: tests/mxnet/dist_sync_kvstore.py run as whole PS-lite jobs
# (scheduler + servers + workers) through scripts/pslaunch.py, with MXNet 1.9.1 from the
# venv that scripts/mxnet-env.sh sets up.
#
#   SUITE_PRELOAD   library to LD_PRELOAD into every node (empty: MXNet's own libzmq)
#   SUITE_LOGDIR    logs go to $SUITE_LOGDIR/<test-name>/ (default: a temp dir)
#   SUITE_SWITCH    the `zebra` binary: trace each job once (ZEBRA_TRACE), `zebra profile` the
#                   trace into a hot-keys file, then run the job beside `zebra switch` and check
#                   it aggregated (tests/lib/hotpath.py; empty: no switch). Adds the test
#                   mxnet-dist-sync-2w-2s-online: the same job with ZEBRA_HOT=online:8 (each
#                   server decides after 8 pushes of each worker; MXNet's workers never read
#                   their DEALERs, so the decision is read before each push), exact
#   MXNET_SUITE_TIMEOUT   seconds before one job is killed (default 120)
#
# Prints "PASS name" or "FAIL name (reason)" per test; exits non-zero if any failed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
PRELOAD=${SUITE_PRELOAD:-}
LOGROOT=${SUITE_LOGDIR:-}
[ -n "$LOGROOT" ] || LOGROOT=$(mktemp -d "${TMPDIR:-/tmp}/zebra-mxnet.XXXXXX")
TIMEOUT=${MXNET_SUITE_TIMEOUT:-120}
TEST=$ROOT/tests/mxnet/dist_sync_kvstore.py

# name servers workers [test args...]
TESTS=(
    "mxnet-dist-sync-2w-1s 1 2"
    "mxnet-dist-sync-2w-2s 2 2"
    "mxnet-dist-sync-3w-2s-small-bound 2 3 --bigarray-bound 100 --rounds 6"
)
[ -n "${SUITE_SWITCH:-}" ] && TESTS+=("mxnet-dist-sync-2w-2s-online 2 2")

failed=0
fail() {
    echo "FAIL $1 ($2)"
    failed=$((failed + 1))
}

if ! PY=$("$ROOT/scripts/mxnet-env.sh" | tail -n 1) || [ ! -x "$PY" ]; then
    for spec in "${TESTS[@]}"; do
        fail "${spec%% *}" "scripts/mxnet-env.sh could not set up the MXNet venv"
    done
    exit 1
fi

preload_problem=""
if [ -n "$PRELOAD" ] && [ ! -r "$PRELOAD" ]; then
    preload_problem="preload library $PRELOAD not found"
fi

# The second line of defence: whatever the exit codes say, no process may have logged a
# Python traceback, an exception swallowed by a ctypes callback, a FAIL line of the test,
# or a preload that the dynamic loader ignored.
BAD_LOG_LINES='Traceback \(most recent call last\)|Exception ignored|cannot be preloaded|dist_sync.*: FAIL'
scan_logs() {
    local dir=$1
    local hit
    hit=$(grep -l -E "$BAD_LOG_LINES" "$dir"/scheduler.log "$dir"/server-*.log "$dir"/worker-*.log \
        2>/dev/null | head -n 1)
    [ -z "$hit" ] && return 0
    echo "$(basename "$hit"): $(grep -m 1 -E "$BAD_LOG_LINES" "$hit")"
    return 1
}

count_lines() {
    local pattern=$1
    shift
    cat "$@" 2>/dev/null | grep -c -F "$pattern"
}

run_test() {
    local name=$1 servers=$2 workers=$3
    shift 3
    local dir=$LOGROOT/$name
    rm -rf "$dir"
    mkdir -p "$dir"
    if [ -n "$preload_problem" ]; then
        fail "$name" "$preload_problem"
        return
    fi
    local start end rc reason hot=()
    if [ -n "${SUITE_SWITCH:-}" ]; then
        # The hot keys come from the job itself: a traced run (no switch), then zebra
        # profile, as a user would do it; the switch's memory is that of hot.conf.
        mkdir -p "$dir/trace" "$dir/stats"
        if ! "$PY" "$ROOT/scripts/pslaunch.py" --servers "$servers" --workers "$workers" \
            --timeout "$TIMEOUT" --logdir "$dir/trace" --preload "$PRELOAD" \
            --env "ZEBRA_TRACE=$dir/trace/push.%r" -- "$PY" "$TEST" "$@" >"$dir/trace/pslaunch.log" 2>&1; then
            fail "$name" "the traced run failed; logs in $dir/trace"
            return
        fi
        if ! "$SUITE_SWITCH" profile --out "$dir/hot.keys" --p 0.99 --switch-mem 64K \
            --servers "$servers" "$dir"/trace/push.* >"$dir/profile.log" 2>&1; then
            fail "$name" "zebra profile failed: $(tail -n 1 "$dir/profile.log")"
            return
        fi
        local conf=$ROOT/tests/suites/hot.conf
        if [[ $name == *-online ]]; then
            # This test is about the change-over on a real client: no rule to step aside
            # (the profiled set is a tiny share of this small job's values, so by default
            # the servers would rightly step aside; the shapes tests show that).
            conf=$dir/online.conf
            { cat "$ROOT/tests/suites/hot.conf"
              printf 'online_min_saving = 0\nonline_max_drift = inf\nonline_min_pace = 0\n'; } >"$conf"
        fi
        hot=(--env "ZEBRA_SWITCH={ip:switch}:{port:switch}" --env "ZEBRA_HOT_KEYS=$dir/hot.keys"
            --env "ZEBRA_HOT_CONFIG=$conf" --env "ZEBRA_STATS=$dir/stats/%p"
            --service "switch=$SUITE_SWITCH switch --config $conf --listen {ip:switch}:{port:switch} --workers {workers} --servers {servers} --hot-keys $dir/hot.keys")
        case $name in *-online) hot+=(--env "ZEBRA_HOT=online:8") ;; esac
    fi
    start=$(date +%s.%N)
    "$PY" "$ROOT/scripts/pslaunch.py" --servers "$servers" --workers "$workers" \
        --timeout "$TIMEOUT" --logdir "$dir" --preload "$PRELOAD" "${hot[@]}" \
        -- "$PY" "$TEST" "$@" >"$dir/pslaunch.log" 2>&1
    rc=$?
    end=$(date +%s.%N)
    if [ "$rc" -ne 0 ]; then
        reason=$(grep -m 1 "^pslaunch: FAIL" "$dir/pslaunch.log" || true)
        fail "$name" "${reason:-pslaunch exited with $rc; logs in $dir}"
        return
    fi
    local worker_ok server_ok
    worker_ok=$(count_lines "mxnet dist_sync: OK checked" "$dir"/worker-*.log)
    server_ok=$(count_lines "mxnet dist_sync server: OK" "$dir"/server-*.log)
    if [ "$worker_ok" -ne "$workers" ]; then
        fail "$name" "$worker_ok of $workers workers printed their OK line; logs in $dir"
        return
    fi
    if [ "$server_ok" -ne "$servers" ]; then
        fail "$name" "$server_ok of $servers servers printed their OK line; logs in $dir"
        return
    fi
    if ! reason=$(scan_logs "$dir"); then
        fail "$name" "$reason; logs in $dir"
        return
    fi
    if [ -n "${SUITE_SWITCH:-}" ]; then
        # The servers must receive fewer hot bytes than the whole pushes carried: worker
        # 0 alone pushes the initial values (kv.init), and the round numbers start again
        # after the barrier that follows, so the 2-3 workers' pushes of a training round
        # meet in one aggregate (zebra-agent's worker.rs, "Round numbers").
        if ! "$PY" "$ROOT/tests/lib/hotpath.py" check "$dir" >"$dir/hotpath.txt" 2>&1; then
            fail "$name" "$(tail -n 1 "$dir/hotpath.txt"); logs in $dir"
            return
        fi
        sed 's/^/  /' "$dir/hotpath.txt"
        case $name in
            *-online)
                # Every server that owns hot keys (and so counted pushes) decided once:
                # changed its keys or kept them (or stepped aside at its decision).
                local online
                online=$(grep -h -o 'online_counted: [0-9]*, online_changed: [0-9]*, online_kept: [0-9]*, online_aside: [0-9]*' \
                    "$dir"/stats/* | tr -d ',')
                # (A server may step aside later, its rounds timing out: one more.)
                if ! echo "$online" | awk '$2 > 0 { n++; if ($4 + $6 != 1 && !($4 + $6 == 0 && $8 == 1)) bad = 1 }
                        END { exit !(n > 0 && !bad) }'; then
                    fail "$name" "not every server with hot keys took one online decision ($online); logs in $dir"
                    return
                fi
                echo "  online: $(echo "$online" | paste -sd';')" ;;
        esac
    fi
    echo "PASS $name"
    printf '  %s: %ss; %s; logs in %s\n' "$name" "$(awk "BEGIN { printf \"%.1f\", $end - $start }")" \
        "$(grep -h -m 1 -o "OK checked [0-9]* values" "$dir"/worker-0.log)" "$dir"
}

for spec in "${TESTS[@]}"; do
    read -r -a args <<<"$spec"
    run_test "${args[@]}"
done

[ "$failed" -eq 0 ]
