#!/usr/bin/env bash
# Builds the Python wheel zebra_pslite: the shim libzmq.so.5, the zebra binary and the console
# scripts `zebra` and `zebra-mxnet-launch` (sources in scripts/wheel/), offline, with Debian's
# setuptools and wheel (python3-setuptools, python3-wheel; installed when missing).
#
#   scripts/build-wheel.sh [--prefix DIR] [--out DIR] [--no-build]
#
#   --prefix DIR  where scripts/setup.sh installs the shim and the binary (default ./dist)
#   --out DIR     where the wheel goes (default DIR/wheels of the prefix)
#   --no-build    take DIR/lib/libzmq.so.5 and DIR/bin/zebra as they are (default: run
#                 scripts/setup.sh --prefix DIR first, which rebuilds what changed)
#
# Prints the wheel's path as the last line. Install it with
#   pip install dist/wheels/zebra_pslite-*.whl
# into the Python environment of the job (it depends on nothing from PyPI). The wheel is for
# the platform it is built on: the binaries link this machine's glibc and DPDK libraries.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$root/dist
out=""
build=1
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) [ $# -ge 2 ] || { echo "build-wheel.sh: --prefix needs a directory" >&2; exit 2; }; prefix=$2; shift 2 ;;
    --out) [ $# -ge 2 ] || { echo "build-wheel.sh: --out needs a directory" >&2; exit 2; }; out=$2; shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-wheel.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
log() { echo "build-wheel: $*" >&2; }

if [ $build = 1 ]; then
  log "scripts/setup.sh --prefix $prefix"
  "$root/scripts/setup.sh" --prefix "$prefix" >&2
fi
prefix=$(cd "$prefix" && pwd)
out=${out:-$prefix/wheels}
for f in "$prefix/lib/libzmq.so.5" "$prefix/bin/zebra"; do
  [ -f "$f" ] || { log "$f is missing: run scripts/setup.sh --prefix $prefix (or leave out --no-build)"; exit 2; }
done

# The build tools: Debian's, so that nothing is fetched (pip wheel --no-build-isolation).
py=/usr/bin/python3
if ! "$py" -c 'import setuptools, wheel, pip' 2>/dev/null; then
  log "installing python3-setuptools python3-wheel python3-pip"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq --no-install-recommends python3-setuptools python3-wheel python3-pip >&2 \
    || { apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-setuptools python3-wheel python3-pip >&2; }
fi

version=$("$prefix/bin/zebra" --version | cut -d' ' -f2)
stage=$root/.build/wheel-src
rm -rf "$stage"
mkdir -p "$stage"
cp -r "$root/scripts/wheel/." "$stage/"
find "$stage" -name __pycache__ -prune -exec rm -rf {} +
pkg=$stage/zebra_pslite
mkdir -p "$pkg/bin" "$pkg/lib" "$pkg/launcher_compat"
install -m 0755 "$prefix/bin/zebra" "$pkg/bin/zebra"
install -m 0755 "$prefix/lib/libzmq.so.5" "$pkg/lib/libzmq.so.5"
# Without their debug information (the release profile keeps it): a quarter of the size.
strip --strip-debug "$pkg/bin/zebra" "$pkg/lib/libzmq.so.5"
install -m 0644 "$root/scripts/launcher-compat/sitecustomize.py" "$pkg/launcher_compat/sitecustomize.py"
touch "$pkg/bin/__init__.py" "$pkg/lib/__init__.py" "$pkg/launcher_compat/__init__.py"
sed -i "s/^__version__ = .*/__version__ = \"$version\"/" "$pkg/__init__.py"

mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -f "$out"/zebra_pslite-"$version"-*.whl
log "building zebra_pslite $version"
(cd "$stage" && PIP_NO_INDEX=1 "$py" -m pip wheel --quiet --no-build-isolation --no-deps \
  --disable-pip-version-check -w "$out" . >&2)
rm -rf "$stage/build" "$stage"/*.egg-info
wheel=$(ls "$out"/zebra_pslite-"$version"-*.whl)
# The executables must stay executable once installed.
"$py" - "$wheel" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z:
    for name in ("zebra_pslite/bin/zebra", "zebra_pslite/lib/libzmq.so.5"):
        mode = z.getinfo(name).external_attr >> 16
        if not mode & 0o100:
            sys.exit(f"build-wheel: {name} is not executable in the wheel (mode {mode:o})")
PY
log "$(du -h "$wheel" | cut -f1) $wheel"
echo "$wheel"
