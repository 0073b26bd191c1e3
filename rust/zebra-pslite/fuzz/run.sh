#!/usr/bin/env bash
# Runs the zebra-pslite fuzz targets for a bounded time.
#
#   rust/zebra-pslite/fuzz/run.sh SECONDS [TARGET...]
#
# SECONDS is per target; TARGETs default to all (message).
# cargo-fuzz needs nightly features; on a stable toolchain RUSTC_BOOTSTRAP=1
# unlocks them. The committed seeds in seeds/<target>/ are read-only; new
# inputs go to corpus/<target>/ and crashes to artifacts/<target>/ (both
# ignored by git). Exits non-zero if a target finds a crash.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
seconds="${1:?usage: run.sh SECONDS [TARGET...]}"
shift
targets=("$@")
if [ "${#targets[@]}" -eq 0 ]; then
    targets=(message)
fi

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "cargo-fuzz is missing: cargo install cargo-fuzz" >&2
    exit 2
fi

cd "$here"
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    echo "== fuzzing $t for ${seconds}s"
    cargo fuzz run "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$seconds" \
        -max_len=65536 \
        -rss_limit_mb=2048 \
        -artifact_prefix="artifacts/$t/" \
        -print_final_stats=1
done
