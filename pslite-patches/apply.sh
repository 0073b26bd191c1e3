#!/usr/bin/env bash
# Applies patches of pslite-patches/ to a PS-lite source tree (see README.md there).
set -euo pipefail

usage() {
  cat <<'EOF'
usage: pslite-patches/apply.sh SRC_DIR [PATCH...]

Applies PATCHes (default: every pslite-patches/*.patch, in order) to the PS-lite source
tree SRC_DIR: the directory that holds include/ps/ and tests/, e.g. BytePS's PS-lite
from the sdist byteps==0.2.5.post15 (scripts/build-pslite.sh extracts it to
.build/byteps-pslite/; patch a copy of it, not that tree, which the suites use).

Every patch is checked before any is applied: one that is already applied is reported
and skipped; one that neither applies cleanly nor is applied stops the script with an
error, and then nothing is changed. Running it again is harmless.

Rebuild afterwards: the patches change headers and scripts, not libps.a's sources, so
rebuild the programs that include ps/kv_app.h (make tests/test_benchmark ...).

Needs git (git apply; SRC_DIR need not be a git repository).
Exit codes: 0 applied or already applied, 1 a patch does not fit SRC_DIR, 2 bad arguments.
EOF
}

# die MESSAGE [CODE]: the message on stderr, exit CODE (default 1).
die() { echo "apply.sh: error: $1" >&2; exit "${2:-1}"; }

case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  "") usage >&2; exit 2 ;;
  -*) echo "apply.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
esac
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
[ -d "$1" ] || die "SRC_DIR '$1' is not a directory" 2
src="$(cd "$1" && pwd)"
shift
[ -f "$src/include/ps/kv_app.h" ] \
  || die "$src does not look like a PS-lite tree (no include/ps/kv_app.h)" 2
command -v git >/dev/null 2>&1 || die "git is not installed (apt package git)"

patches=()
if [ $# -eq 0 ]; then
  for p in "$here"/*.patch; do [ -f "$p" ] && patches+=("$p"); done
  [ ${#patches[@]} -gt 0 ] || die "no patches in $here"
else
  for p in "$@"; do
    [ -f "$p" ] || [ ! -f "$here/$p" ] || p="$here/$p"
    [ -f "$p" ] || die "no such patch: $p" 2
    patches+=("$(cd "$(dirname "$p")" && pwd)/$(basename "$p")")
  done
fi

# git apply on plain files, relative to SRC_DIR: a throwaway repository keeps git from
# using one around or inside SRC_DIR (the sdist's ps-lite holds a dangling .git link).
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
git init --quiet --bare "$scratch/repo.git"
gitapply() {
  (cd "$src" && GIT_DIR="$scratch/repo.git" GIT_WORK_TREE="$src" git apply "$@")
}

todo=()
for p in "${patches[@]}"; do
  name="$(basename "$p")"
  if gitapply --check "$p" 2>"$scratch/err"; then
    todo+=("$p")
  elif gitapply --check --reverse "$p" 2>/dev/null; then
    echo "apply.sh: $name: already applied to $src; skipped"
  else
    sed 's/^/  /' "$scratch/err" >&2
    die "$name does not apply cleanly to $src (is it the PS-lite of byteps==0.2.5.post15, unmodified?); nothing was changed"
  fi
done
for p in "${todo[@]}"; do
  gitapply "$p" || die "$(basename "$p") failed to apply to $src after its check passed"
  echo "apply.sh: $(basename "$p"): applied to $src"
done
