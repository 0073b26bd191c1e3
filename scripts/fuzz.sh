#!/usr/bin/env bash
# Runs a crate's cargo-fuzz targets for a bounded time, from its committed seeds.
#
#   scripts/fuzz.sh CRATE SECONDS [TARGET...]
#
#   CRATE    a crate under rust/ with a fuzz/ directory (zebra-zmtp, zebra-pslite,
#            zebra-proto, zebra-agent)
#   SECONDS  per target; TARGETs default to every fuzz/fuzz_targets/*.rs
#
# cargo-fuzz needs nightly features; on the stable toolchain RUSTC_BOOTSTRAP=1 unlocks
# them. The seeds in fuzz/seeds/<target>/ are read-only; new inputs go to
# fuzz/corpus/<target>/ and crashes to fuzz/artifacts/<target>/ (both ignored by git).
# Exits non-zero if a target finds a crash.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2; exit 2; }
dir=$root/rust/$1/fuzz
seconds=$2
shift 2
[ -d "$dir/fuzz_targets" ] || { echo "fuzz.sh: $dir/fuzz_targets not found" >&2; exit 2; }
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  for f in "$dir"/fuzz_targets/*.rs; do targets+=("$(basename "$f" .rs)"); done
fi
cargo fuzz --version >/dev/null 2>&1 || { echo "fuzz.sh: cargo-fuzz is missing: cargo install cargo-fuzz" >&2; exit 2; }

cd "$dir"
export RUSTC_BOOTSTRAP=1
for t in "${targets[@]}"; do
  mkdir -p "corpus/$t" "artifacts/$t"
  echo "== fuzzing $t for ${seconds}s"
  cargo fuzz run "$t" "corpus/$t" "seeds/$t" -- \
    -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 \
    -artifact_prefix="artifacts/$t/" -print_final_stats=1
done
