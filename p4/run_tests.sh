#!/usr/bin/env bash
# Tests of the P4 program's control plane and tables, run here without a switch:
# the controller (settings parser, table entries, CPU part) against a FakeBackend,
# the P4 names and constants it uses, and the LNS tables. Prints one PASS/FAIL/SKIP
# line per test and exits non-zero if any failed.
#
#   p4/run_tests.sh [-v]
#
# The P4 sources themselves are checked against zebra-proto by
# `cargo test -p zebra-proto --test p4_conformance`. Nothing here compiles P4.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cd "$here/controller" && exec python3 -B tests/run.py "$@"
