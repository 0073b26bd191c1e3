#!/usr/bin/env bash
# Tests of the shared test helpers in tests/lib (the shim's tests check report.sh's
# `check` with real clients): cargo_test_lines counts a test that printed why it skipped
# as a SKIP, not as the pass the test harness reports.
# Usage: tests/lib/selftest.sh
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/report.sh"
source "$here/cargo-lines.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# A cargo test log as scripts/test.sh writes it (-- --ignored --nocapture): two tests that
# skipped (as netns_raw prints without root), one that passed, one that failed.
log=$work/cargo.log
cat >"$log" <<'LOG'

running 4 tests
skipped raw_socket_on_a_missing_interface_is_a_clean_error: needs root (network namespaces, packet sockets)
skipped dpdk_stack_talks_to_the_kernel_and_leaks_no_mbuf: zebra-net was built without DPDK (zebra-dpdk-sys found no system DPDK it can use: its build warning says why)
stack: StackStats { rx_frames: 3 }
test raw_socket_on_a_missing_interface_is_a_clean_error ... ok
test dpdk_stack_talks_to_the_kernel_and_leaks_no_mbuf ... ok
test raw_socket_stack_talks_to_the_kernel ... ok
test hot_path_over_the_user_level_stack ... FAILED

failures:

---- hot_path_over_the_user_level_stack stdout ----
test result: FAILED. 3 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 9.12s
LOG

# lines_are EXPECTED: cargo_test_lines over the log prints exactly EXPECTED.
lines_are() {
  local got
  got=$(cargo_test_lines zebra-net " (dpdk)" "$log")
  [ "$got" = "$1" ] || { printf 'expected:\n%s\ngot:\n%s\n' "$1" "$got"; return 1; }
}
check "cargo_test_lines: a test that printed why it skipped is a SKIP, the others PASS or FAIL" \
  lines_are "SKIP zebra-net raw_socket_on_a_missing_interface_is_a_clean_error (dpdk) (needs root (network namespaces, packet sockets))
SKIP zebra-net dpdk_stack_talks_to_the_kernel_and_leaks_no_mbuf (dpdk) (zebra-net was built without DPDK (zebra-dpdk-sys found no system DPDK it can use: its build warning says why))
PASS zebra-net raw_socket_stack_talks_to_the_kernel (dpdk)
FAIL zebra-net hot_path_over_the_user_level_stack (log: $log)"
finish
