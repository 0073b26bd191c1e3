#!/usr/bin/env bash
# Builds the shim, the `zebra` switch and BytePS's PS-lite with AddressSanitizer and runs the
# shim's tests and the BytePS PS-lite suite on them (issue 18, part 5; docs/RELIABILITY.md,
# "Under AddressSanitizer"). Idempotent: a second run rebuilds only what changed.
#
#   scripts/asan.sh [--modes "MODE..."] [--no-shim-tests] [--no-suite] [--self-test-only]
#
#   --modes "M..."    suite modes to run (default: "on+switch on off libzmq"; see
#                     scripts/suite.sh: libzmq is the ASan PS-lite on the real libzmq alone,
#                     the baseline for what PS-lite itself does)
#   --no-shim-tests   skip cpp-shim/tests/run.sh
#   --no-suite        skip the BytePS PS-lite suite
#   --self-test-only  only the harness's own test (no build of the shim or PS-lite)
#
# What is instrumented: the shim's C++ (cpp-shim/src, and cxx's bridge code), BytePS's PS-lite
# and our PS-lite apps, the shim tests' client; and the Rust crates (zebra-ffi and all it links,
# the `zebra` switch) when a nightly Rust toolchain is there (-Zsanitizer=address; without it
# the Rust code is not instrumented, but its heap is still ASan's: double and invalid frees
# and leaks are still found; a SKIP line says so). The real libzmq (mode off) is not.
#
# Every process runs with ASAN_OPTIONS that make the first error fatal and write every report
# (errors, and LeakSanitizer's leaks at exit) to a file under REPORTS (log_path), so that a
# report is found even where a test's own verdict would not show it (a negative test, a
# process whose exit code nobody reads); a run is FAIL when any report is there.
# LSAN_OPTIONS name scripts/lsan.supp (leaks at exit in third-party code, each entry says why).
#
# Prints PASS/FAIL/SKIP lines and ends with "asan: N passed, M failed, K skipped"; exits
# non-zero on any failed check or any ASan report. Needs root for apt-get only when a package
# is missing (g++, make, pkg-config, libzmq3-dev, python3).
#   ZEBRA_ASAN_DIR   builds, logs and reports (default .build/asan)
#   ZEBRA_ASAN_RUST  0: do not instrument the Rust crates even if nightly is there
#   ZEBRA_ASAN_SUPP  LeakSanitizer's suppressions (default scripts/lsan.supp; /dev/null: none,
#                    which fails the suite on BytePS PS-lite's own leaks: the harness can fail)
#   PSLITE_SUITE_TIMEOUT  seconds per PS-lite job (default here 300: ASan is slower)
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage() { sed -n '2,34p' "$0" | sed 's/^# \{0,1\}//'; }

modes="on+switch on off libzmq"
shim_tests=1 suite=1 self_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --modes) [ $# -ge 2 ] || { echo "asan.sh: --modes needs a list" >&2; exit 2; }; modes=$2; shift 2 ;;
    --no-shim-tests) shim_tests=0; shift ;;
    --no-suite) suite=0; shift ;;
    --self-test-only) self_only=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "asan.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

asan=${ZEBRA_ASAN_DIR:-$root/.build/asan}
mkdir -p "$asan/logs" "$asan/reports"
asan=$(cd "$asan" && pwd)
supp=${ZEBRA_ASAN_SUPP:-$root/scripts/lsan.supp}
dist=$asan/dist
pslite_bin=$root/.build/byteps-pslite-asan/tests
passed=0 failed=0 skipped=0
pass() { echo "PASS asan $*"; passed=$((passed + 1)); }
fail() { echo "FAIL asan $*"; failed=$((failed + 1)); }
skip() { echo "SKIP asan $*"; skipped=$((skipped + 1)); }
phase_start=$SECONDS
# took WHAT: prints how long the phase since the last call took (for the cost, docs/RELIABILITY.md).
took() { echo "asan.sh: $1 took $((SECONDS - phase_start)) s"; phase_start=$SECONDS; }
finish() {
  echo "asan.sh: $SECONDS s in all"
  echo "asan: $passed passed, $failed failed, $skipped skipped (logs: $asan/logs, reports: $asan/reports)"
  [ "$failed" = 0 ]
  exit
}

# The options of every run. halt_on_error: the first error ends the process (exit 1) with its
# report; detect_leaks: LeakSanitizer at exit (exit 1 too, when it found a leak that is not
# suppressed); log_path: every report to REPORTS/asan.EXE.PID instead of standard error;
# verify_asan_link_order=0: the PS-lite binaries and the shim test's client are instrumented
# (ASan's runtime is theirs), the ASan shim is preloaded before it, which ASan's check would
# refuse although the shim defines no function that ASan intercepts.
# asan_env RUN: exports ASAN_OPTIONS and LSAN_OPTIONS for a run whose reports go to
# $asan/reports/RUN (emptied first).
asan_env() {
  local dir=$asan/reports/$1
  rm -rf "$dir"
  mkdir -p "$dir"
  export ASAN_OPTIONS="log_path=$dir/asan:log_exe_name=1:halt_on_error=1:abort_on_error=0:detect_leaks=1:verify_asan_link_order=0:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1:strict_string_checks=1:detect_invalid_pointer_pairs=0:symbolize=1"
  export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0"
}
# reports RUN: PASS when the run left no ASan report, else one FAIL line and each report's
# first lines.
reports() {
  local run=$1 dir=$asan/reports/$1
  unset ASAN_OPTIONS LSAN_OPTIONS
  shopt -s nullglob
  local files=("$dir"/asan.*)
  shopt -u nullglob
  if [ ${#files[@]} -eq 0 ]; then
    pass "$run: no AddressSanitizer or LeakSanitizer report"
    return 0
  fi
  local kinds
  kinds=$(grep -hoE '(AddressSanitizer|LeakSanitizer): [a-zA-Z-]+( on| in|)' "${files[@]}" | sort | uniq -c | awk '{$1=$1; print}' | paste -sd';' -)
  fail "$run: ${#files[@]} report(s): ${kinds:-unrecognised}; in $dir"
  # Each report's verdict, and for each error or leak its first frames past the allocator.
  local f shown=0
  for f in "${files[@]}"; do
    shown=$((shown + 1))
    [ $shown -le 6 ] || { echo "    ... and $((${#files[@]} - 6)) more reports in $dir"; break; }
    echo "    == $(basename "$f")"
    awk '/ERROR:|^SUMMARY|^(Direct|Indirect) leak|^(READ|WRITE) of size/ { print; n = 0; next }
         /^    #[0-9]/ && n < 3 && !/sanitizer|alloc\/src|raw_vec|boxed\.rs|libc_start/ { print; n++ }' "$f" \
      | head -n 30 | cut -c1-220 | sed 's/^/    | /'
  done
  return 1
}

have_pkg() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }
install_packages() {
  local missing=() p
  for p in g++ make pkg-config libzmq3-dev python3 binutils; do have_pkg "$p" || missing+=("$p"); done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "asan.sh: installing Debian packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    { apt-get update -qq && apt-get install -y -qq --no-install-recommends "${missing[@]}"; } >"$asan/logs/apt.log" 2>&1 \
      || { fail "install: apt-get install ${missing[*]} failed (log: $asan/logs/apt.log)"; finish; }
  fi
  # gcc's ASan runtime (libasan, a dependency of g++'s libgcc-N-dev).
  if ! echo 'int main(void){return 0;}' | gcc -fsanitize=address -x c - -o "$asan/logs/probe" 2>"$asan/logs/probe.log"; then
    fail "install: gcc -fsanitize=address does not link (no libasan?): $(head -n 1 "$asan/logs/probe.log")"
    finish
  fi
}

# The harness's own test: a program with a heap overflow, another with a leak, and one leak
# that scripts/lsan.supp suppresses, run with the same options and read by the same
# `reports` as every real run. Each must give the verdict expected, else the harness is blind.
self_test() {
  local dir=$asan/selftest
  mkdir -p "$dir"
  cat >"$dir/bad.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
#include <zmq.h>
/* A client of the ASan shim that then does one bad thing, chosen by argv[1]. */
void *zebra_asan_selftest_suppressed_leak(void) { return malloc(64); }
int main(int argc, char **argv) {
  void *ctx = zmq_ctx_new();
  zmq_ctx_term(ctx);
  if (argc < 2) return 0;
  if (!strcmp(argv[1], "overflow")) { volatile size_t n = 17; char *p = malloc(16); memset(p, 1, n); free(p); }
  if (!strcmp(argv[1], "leak")) { static void *volatile p; p = malloc(100); p = 0; }
  if (!strcmp(argv[1], "suppressed")) { static void *volatile p; p = zebra_asan_selftest_suppressed_leak(); p = 0; }
  return 0;
}
EOF
  gcc -O0 -g -fsanitize=address -fno-omit-frame-pointer -I"$dist/include" -o "$dir/bad" "$dir/bad.c" \
    -L"$dist/lib" -Wl,-rpath,"$dist/lib" -lzmq || { fail "self-test: compiling the test program failed"; return; }
  local what expect out
  for what in clean overflow leak suppressed; do
    case $what in
      clean|suppressed) expect=PASS ;;
      overflow|leak) expect=FAIL ;;
    esac
    asan_env "selftest-$what"
    "$dir/bad" "$what" >/dev/null 2>&1
    out=$(reports "selftest-$what")
    if [ "${out%% *}" = "$expect" ]; then
      pass "self-test: a test program ($what) through the harness gives $expect"
    else
      fail "self-test: a test program ($what) through the harness did not give $expect:"
      echo "$out" | sed 's/^/    > /'
    fi
  done
  unset ASAN_OPTIONS LSAN_OPTIONS
  # The overflow's report is the one a real finding would give.
  grep -q 'heap-buffer-overflow' "$asan/reports/selftest-overflow"/asan.* 2>/dev/null \
    || fail "self-test: the overflow's report does not name a heap-buffer-overflow"
}

# Rust: instrumented with a nightly toolchain (-Zsanitizer=address), else not.
triple=$(rustc -vV 2>/dev/null | sed -n 's/^host: //p')
cargo_cmd=(cargo)
rustflags=""
rust_asan=0
probe_nightly() {
  [ "${ZEBRA_ASAN_RUST:-1}" != 0 ] || { echo "ZEBRA_ASAN_RUST=0"; return 1; }
  rustup run nightly rustc -V >/dev/null 2>&1 || { echo "no nightly Rust toolchain (rustup run nightly)"; return 1; }
  local d=$asan/logs/rust-probe
  mkdir -p "$d"
  echo 'fn main() { let v = vec![1u8; 4]; std::process::exit(v[3] as i32 - 1); }' >"$d/p.rs"
  rustup run nightly rustc -Zsanitizer=address --target "$triple" -o "$d/p" "$d/p.rs" >"$d/log" 2>&1 && "$d/p" \
    || { echo "nightly rustc -Zsanitizer=address does not build a program: $(head -n 1 "$d/log")"; return 1; }
}

# instrumented FILE: FILE loads gcc's ASan runtime (grep reads all: no SIGPIPE under pipefail).
instrumented() { readelf -d "$1" | grep -c 'NEEDED.*libasan' >/dev/null; }

build() {
  [ -n "$triple" ] || { fail "build: rustc not found (the machine's Rust toolchain)"; finish; }
  local why
  if why=$(probe_nightly); then
    rust_asan=1 cargo_cmd=(cargo +nightly) rustflags="-Zsanitizer=address"
    pass "rust instrumented: $(rustup run nightly rustc -V) with -Zsanitizer=address"
  else
    skip "rust instrumented ($why: the Rust crates run uninstrumented; their heap is still ASan's)"
  fi
  # CFLAGS_<triple>/CXXFLAGS_<triple>: C and C++ that crates build with the cc crate (cxx's
  # bridge, zebra-dpdk-sys's wrapper) for the target, not seen by make or build scripts.
  local t=${triple//-/_} log=$asan/logs/build.log
  local env=(CARGO_TARGET_DIR="$asan/target" RUSTFLAGS="$rustflags"
    "CFLAGS_$t=-O2 -g -fsanitize=address -fno-omit-frame-pointer"
    "CXXFLAGS_$t=-O2 -g -fsanitize=address -fno-omit-frame-pointer")
  echo "asan.sh: building the Rust crates and the shim into $asan (log: $log)"
  if ! env "${env[@]}" "${cargo_cmd[@]}" build --release --target "$triple" --manifest-path "$root/Cargo.toml" \
      -p zebra-ffi -p zebra-cli >"$log" 2>&1; then
    tail -n 20 "$log"; fail "build: cargo build (log: $log)"; finish
  fi
  if ! env "${env[@]}" make -s -C "$root/cpp-shim" install PREFIX="$dist" BUILD_DIR="$asan/shim-build" \
      SANITIZE=address TARGET_DIR="$asan/target" CARGO="${cargo_cmd[*]}" CARGO_TARGET="$triple" >>"$log" 2>&1; then
    tail -n 20 "$log"; fail "build: the shim (log: $log)"; finish
  fi
  install -d "$dist/bin" && install -m 0755 "$asan/target/$triple/release/zebra" "$dist/bin/zebra"
  if instrumented "$dist/lib/libzmq.so.5"; then
    pass "build: the shim with AddressSanitizer: $dist/lib/libzmq.so.5"
  else
    fail "build: $dist/lib/libzmq.so.5 is not instrumented"; finish
  fi
  echo "asan.sh: building BytePS PS-lite with AddressSanitizer (scripts/build-pslite.sh --asan)"
  if ! "$root/scripts/build-pslite.sh" --asan >"$asan/logs/build-pslite.log" 2>&1; then
    tail -n 20 "$asan/logs/build-pslite.log"; fail "build: PS-lite (log: $asan/logs/build-pslite.log)"; finish
  fi
  if instrumented "$pslite_bin/exact_sums"; then
    pass "build: BytePS PS-lite and our apps with AddressSanitizer: $pslite_bin"
  else
    fail "build: $pslite_bin/exact_sums is not instrumented"; finish
  fi
}

# prefixed NAME COMMAND...: runs COMMAND, its PASS/FAIL/SKIP lines counted as "asan NAME: ...".
prefixed() {
  local name=$1 log=$asan/logs/$1.log
  shift
  "$@" >"$log" 2>&1
  local code=$? p f s
  sed -E "s/^(PASS|FAIL|SKIP) /\1 asan $name: /" "$log"
  p=$(grep -c '^PASS ' "$log") f=$(grep -c '^FAIL ' "$log") s=$(grep -c '^SKIP ' "$log")
  passed=$((passed + p)) failed=$((failed + f)) skipped=$((skipped + s))
  if [ "$code" != 0 ] && [ "$f" = 0 ]; then fail "$name (exited with $code; log: $log)"; fi
}

install_packages
if [ "$self_only" = 1 ]; then
  [ -e "$dist/lib/libzmq.so.5" ] || { fail "self-test: $dist/lib/libzmq.so.5 is missing: run scripts/asan.sh once"; finish; }
  self_test
  finish
fi
build
took "building"
self_test

if [ "$shim_tests" = 1 ]; then
  asan_env shim
  SHIM_TEST_CFLAGS="-g -fsanitize=address -fno-omit-frame-pointer" SHIM_TEST_WORK="$asan/shim-tests" \
    prefixed shim "$root/cpp-shim/tests/run.sh" "$dist"
  reports shim
  took "the shim tests"
fi

if [ "$suite" = 1 ]; then
  # mf_train_smoke's MovieLens-100k comes with the clients' set-up.
  if [ ! -s "$root/.build/data/ml-100k.inter" ]; then
    echo "asan.sh: MovieLens-100k missing: scripts/setup.sh --clients (log: $asan/logs/setup.log)"
    "$root/scripts/setup.sh" --clients >"$asan/logs/setup.log" 2>&1 || fail "setup.sh --clients (log: $asan/logs/setup.log)"
  fi
  for mode in $modes; do
    asan_env "suite-$mode"
    SUITE_DIST=$dist SUITE_ZEBRA=$dist/bin/zebra SUITE_ZEBRA_CLI=$dist/bin/zebra SUITE_LOGS=$asan/logs \
      PSLITE_BIN_DIR=$pslite_bin PSLITE_SUITE_TIMEOUT=${PSLITE_SUITE_TIMEOUT:-300} \
      prefixed "suite-$mode" "$root/scripts/suite.sh" byteps-pslite "$mode"
    reports "suite-$mode"
    took "the suite in mode $mode"
  done
fi
finish
