#!/usr/bin/env bash
# Runs every test: setup (idempotent), the Rust unit tests, the shim tests, and the real
# PS-lite suites in each mode this build supports. Ends with "N passed, M failed, K skipped".
#
#   scripts/test.sh [--quick]     --quick: Rust and shim tests only, no PS-lite suites
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
quick=0
case ${1:-} in
  --quick) quick=1 ;;
  -h|--help) sed -n '2,5p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") ;;
  *) echo "test.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
esac
logs=$root/.build/test-logs
source "$root/tests/lib/cargo-lines.sh"
mkdir -p "$logs"
passed=0 failed=0 skipped=0
started=$(date +%s)

# run_part NAME COMMAND...: runs a part that prints PASS/FAIL/SKIP lines and counts them.
# A part that fails without printing a FAIL line counts as one failure.
run_part() {
  local name=$1
  shift
  local out=$logs/$name.log
  printf '\n=== %s\n' "$name"
  "$@" 2>&1 | tee "$out"
  local code=${PIPESTATUS[0]}
  local p f s
  p=$(grep -c '^PASS ' "$out") f=$(grep -c '^FAIL ' "$out") s=$(grep -c '^SKIP ' "$out")
  if [ "$code" != 0 ] && [ "$f" = 0 ]; then
    echo "FAIL $name (exited with $code; log: $out)"
    f=1
  fi
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
}

# cargo's own summary lines: "test result: ok. 12 passed; 0 failed; 1 ignored; ..."
rust_tests() {
  local out=$logs/cargo-test.log
  cargo test --release --workspace --no-fail-fast --manifest-path "$root/Cargo.toml" 2>&1 | tee "$out"
  local code=${PIPESTATUS[0]}
  local p f i
  p=$(grep -o '[0-9]* passed' "$out" | awk '{n += $1} END {print n + 0}')
  f=$(grep -o '[0-9]* failed' "$out" | awk '{n += $1} END {print n + 0}')
  i=$(grep -o '[0-9]* ignored' "$out" | awk '{n += $1} END {print n + 0}')
  [ "$code" != 0 ] && [ "$f" = 0 ] && f=1
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + i))
}

# The fuzz targets of every parser of network bytes (ZMTP, PS-lite meta, hot-path
# UDP datagrams, Zebra frames), bounded
# (FUZZ_SECONDS per target, default 30), from the committed seeds. cargo-fuzz is
# installed on first use.
fuzz() {
  local seconds=${FUZZ_SECONDS:-30}
  if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "installing cargo-fuzz (first run only)"
    cargo install --locked --quiet cargo-fuzz || { echo "FAIL fuzz (cargo install cargo-fuzz failed)"; return 1; }
  fi
  local crate f target log
  for crate in zebra-zmtp zebra-pslite zebra-proto zebra-agent; do
    for f in "$root/rust/$crate/fuzz/fuzz_targets"/*.rs; do
      target=$(basename "$f" .rs)
      log=$logs/fuzz-$crate-$target.log
      if "$root/scripts/fuzz.sh" "$crate" "$seconds" "$target" >"$log" 2>&1; then
        echo "PASS fuzz $crate $target for ${seconds}s: $(grep -o 'stat::number_of_executed_units: *[0-9]*' "$log" | awk '{print $2}') runs, no crash"
      else
        tail -n 20 "$log"
        echo "FAIL fuzz $crate $target (log: $log)"
      fi
    done
  done
}

# Formatting and clippy over the whole workspace, warnings as errors.
lint() {
  if cargo fmt --all --check --manifest-path "$root/Cargo.toml" >"$logs/fmt.log" 2>&1; then
    echo "PASS cargo fmt --check"
  else
    head -n 20 "$logs/fmt.log"
    echo "FAIL cargo fmt --check (log: $logs/fmt.log)"
  fi
  if cargo clippy --release --workspace --all-targets --manifest-path "$root/Cargo.toml" -- -D warnings \
    >"$logs/clippy.log" 2>&1; then
    echo "PASS cargo clippy -D warnings"
  else
    grep -E '^(error|warning)' -A 6 "$logs/clippy.log" | head -n 40
    echo "FAIL cargo clippy -D warnings (log: $logs/clippy.log)"
  fi
}

# The DPDK zebra-dpdk-sys builds against (MIN_VERSION in its build.rs): with an older one,
# or none, it builds empty, and the DPDK tests and suites are skipped.
dpdk_min=22.11
have_dpdk() {
  pkg-config --atleast-version=$dpdk_min libdpdk
}

# The user-level stack (zebra-net) against the kernel across a veth pair between two
# network namespaces, over a raw socket and over DPDK's af_packet PMD: ARP, UDP echo, a
# 64 MiB TCP transfer each way (every byte checked), a refused connect, clean start-up
# errors, no mbuf in use and no EAL run directory left at shutdown; then the engine over
# the stack against libzmq, and the hot path over the stack (to a kernel switch, and to a
# switch on the same stack through its self-loop). Needs root; the DPDK tests need
# libdpdk-dev.
netns_stack() {
  if [ "$(id -u)" != 0 ]; then
    echo "SKIP zebra-net netns tests (need root for network namespaces and packet sockets)"
    return 0
  fi
  local spec crate t features log
  # CRATE TEST [FEATURES]: the engine's test runs over the raw socket, then over DPDK.
  for spec in "zebra-net netns_raw" "zebra-net netns_dpdk" "zebra-net dpdk_errors" "zebra-net netns_blast" \
    "zebra-engine netns_stack" "zebra-engine netns_stack dpdk" \
    "zebra-hotpath netns_stack" "zebra-hotpath netns_stack dpdk"; do
    set -- $spec
    crate=$1 t=$2 features=${3:-}
    if { [ $t = netns_dpdk ] || [ $t = dpdk_errors ] || [ $t = netns_blast ] || [ -n "$features" ]; } && ! have_dpdk; then
      echo "SKIP $crate $t${features:+ ($features)} (no DPDK: libdpdk-dev >= $dpdk_min is not installed)"
      continue
    fi
    log=$logs/$crate-$t${features:+-$features}.log
    cargo test --release --manifest-path "$root/Cargo.toml" -p $crate ${features:+--features $features} --test $t \
      -- --ignored --nocapture >"$log" 2>&1
    local code=$?
    cargo_test_lines "$crate" "${features:+ ($features)}" "$log"
    grep -E '^(udp|tcp|engine|libzmq)' "$log" | sed 's/^/  /'
    [ $code = 0 ] || grep -q '^test .* FAILED$' "$log" || echo "FAIL $crate $t (exited with $code; log: $log)"
  done
}

summary() {
  printf '\ntest.sh: finished in %ss; logs in %s\n' "$(($(date +%s) - started))" "$logs"
  echo "$passed passed, $failed failed, $skipped skipped"
  [ "$failed" = 0 ]
}

setup_args=()
[ $quick = 1 ] || setup_args+=(--clients)
printf '=== setup\n'
if ! "$root/scripts/setup.sh" "${setup_args[@]}" >"$logs/setup.log" 2>&1; then
  tail -n 30 "$logs/setup.log"
  echo "FAIL setup (log: $logs/setup.log)"
  failed=$((failed + 1))
  summary
  exit 1
fi
echo "setup ok (log: $logs/setup.log)"

printf '\n=== rust unit tests\n'
rust_tests
run_part lint lint
run_part test-lib "$root/tests/lib/selftest.sh"
run_part shim "$root/cpp-shim/tests/run.sh" "$root/dist"
# PAIR/DEALER/ROUTER as libzmq 4.3 documents them, on the real libzmq and on the engine.
run_part zmq-conformance "$root/tests/zmq-conformance/run.sh" "$root/dist"
run_part fuzz fuzz
run_part p4-control-plane "$root/p4/run_tests.sh"
# The P4 program against Tofino 1's limits (an estimate from the sources: p4/resources.py).
run_part p4-resources python3 "$root/p4/fit/tests/run.py"
run_part netns-stack netns_stack
# The emulated testbed of scripts/pslaunch.py (--net netns); skipped, with the reason,
# without root.
run_part testbed python3 "$root/tests/testbed/test_pslaunch.py"
# The training benchmark of scripts/demo.sh (two workers, one epoch), the aggregation-
# throughput benchmark (two workers, a small trace), each skipped, with the reason,
# without root or without the clients; and the online hot-key benchmark (loopback),
# skipped without the clients.
[ $quick = 1 ] || run_part bench-train-smoke python3 "$root/tests/testbed/test_bench_train.py"
[ $quick = 1 ] || run_part bench-agg-smoke python3 "$root/tests/testbed/test_bench_agg.py"
[ $quick = 1 ] || run_part bench-online-smoke python3 "$root/tests/testbed/test_bench_online.py"
# The documented launchers (docs/LAUNCH.md), each in a network namespace (root): MXNet's
# `mxnet.tools.launch --launcher local` under `zebra run`, the same with `--launcher ssh`
# (a private sshd; `zebra run` in the command each host runs), PS-lite's tests/local.sh after
# `zebra env`, and the README's newcomer block word for word (the wheel built, pip-installed
# into a fresh venv with no index, an MXNet job beside the switch); about 2 minutes.
[ $quick = 1 ] || run_part launchers "$root/tests/launch/run.sh"
# Patches for those who build PS-lite themselves (pslite-patches/README.md): each shown to
# fix its defect on the pinned BytePS PS-lite, and the defect shown without it.
[ $quick = 1 ] || run_part pslite-patches "$root/pslite-patches/test.sh"
# The chaos suite (issue 18, docs/RELIABILITY.md): faults injected into real BytePS PS-lite
# and MXNet jobs on the netns testbed while they run (the switch killed, stopped; hot-path
# loss, duplication, reordering; a server's link cut; a worker killed), every result checked
# exactly; scenarios of known issues are SKIP lines naming them. Its checks' own tests on
# made-up logs run without root; the suite is skipped, with the reason, without root.
run_part chaos-checks python3 "$root/tests/testbed/test_chaos_checks.py"
[ $quick = 1 ] || run_part chaos python3 "$root/scripts/chaos.py"
# Several jobs on one switch (issue 20, docs/HOTPATH.md): an MXNet dist_sync job and a BytePS
# exact_sums job at once through one `zebra switch --listen` on the netns testbed, both exact
# and aggregating (the switch's per-job metrics), each job's id derived from its scheduler's
# address; a third job that does not fit its memory refused at admission and exact on its
# server; a fourth refused too, then admitted once the first two ended; then two exact_sums
# jobs through one switch whose link is shaped, the workers' congestion window on and off
# (worker_window), both progressing, exact. About 160 s; skipped, with the reason, without root. Its checks' own tests on made-up jobs
# and scrapes run without root.
run_part shared-switch-checks python3 "$root/tests/testbed/test_shared_switch_checks.py"
[ $quick = 1 ] || run_part shared-switch python3 "$root/scripts/shared-switch.py"
# The soak's checks (issue 18, docs/RELIABILITY.md, "Memory and resources over a long
# run") on made-up samples, then a short soak of 8 workers, 2 servers and the switch against
# the real libzmq that must pass, and fail with every process leaking on purpose (about 2
# minutes; skipped, with the reason, without root or the clients).
run_part soak-checks python3 "$root/tests/testbed/test_soak.py" Checks
[ $quick = 1 ] || run_part soak python3 "$root/tests/testbed/test_soak.py" ShortSoak

if [ $quick = 0 ]; then
  for spec in "byteps-pslite libzmq" "byteps-pslite off" "byteps-pslite relinked" "byteps-pslite on" "byteps-pslite mixed" "byteps-pslite on+switch" \
    "mxnet libzmq" "mxnet off" "mxnet on" "mxnet mixed" "mxnet on+switch"; do
    set -- $spec
    run_part "suite-$1-$2" "$root/scripts/suite.sh" "$1" "$2"
  done
  # The same clients with every process (nodes and switch) over Zebra's user-level stack
  # on DPDK's af_packet PMD, one network namespace per process (root and libdpdk-dev).
  for spec in "byteps-pslite on" "byteps-pslite on+switch" "mxnet on" "mxnet on+switch"; do
    set -- $spec
    if [ "$(id -u)" != 0 ]; then
      echo "SKIP suite $1 $2 with ZEBRA_NET=dpdk (needs root: network namespaces, packet sockets)"
      skipped=$((skipped + 1))
    elif ! have_dpdk; then
      echo "SKIP suite $1 $2 with ZEBRA_NET=dpdk (no DPDK: libdpdk-dev >= $dpdk_min is not installed)"
      skipped=$((skipped + 1))
    else
      run_part "suite-$1-$2-dpdk" env ZEBRA_NET=dpdk "$root/scripts/suite.sh" "$1" "$2"
    fi
  done
else
  echo "SKIP PS-lite suites (--quick)"
  skipped=$((skipped + 1))
fi
summary
