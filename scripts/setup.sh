#!/usr/bin/env bash
# Installs what Zebra needs on a fresh Debian machine and builds it into a prefix.
# Idempotent: a second run only checks, and rebuilds what changed.
#
#   scripts/setup.sh [--prefix DIR] [--clients]
#
#   --prefix DIR  install prefix (default ./dist): DIR/lib/libzmq.so.5 (+ libzmq.so,
#                 pkgconfig/libzmq.pc), DIR/include/zmq.h, DIR/bin/zebra
#   --clients     also build the real PS-lite clients the tests use: BytePS's PS-lite
#                 (from the PyPI sdist; also relinked against DIR), MXNet 1.9.1 (venv),
#                 MovieLens-100k (the recbole 1.2.1 wheel) for mf_train, matplotlib
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
prefix=$root/dist
clients=0
while [ $# -gt 0 ]; do
  case $1 in
    --prefix) prefix=$2; shift 2 ;;
    --clients) clients=1; shift ;;
    -h|--help) sed -n '2,11p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "setup.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
mkdir -p "$prefix"
prefix=$(cd "$prefix" && pwd)

step() { printf '\n==> %s\n' "$*"; }

# MovieLens-100k for tests/pslite-app/mf_train: only the wheel (no dependencies) into
# .build/cache, and its one data file extracted to .build/data/ml-100k.inter.
recbole_spec=recbole==1.2.1
recbole_wheel=recbole-1.2.1-py3-none-any.whl
recbole_sha256=9c9948202011f37eb0a7c6768129313f00d6403ad221ec940d5e2d5d5f33a407
recbole_member=recbole/dataset_example/ml-100k/ml-100k.inter
fetch_ml100k() {
  local cache=$root/.build/cache data=$root/.build/data
  local wheel=$cache/$recbole_wheel out=$data/ml-100k.inter
  mkdir -p "$cache" "$data"
  if ! echo "$recbole_sha256  $wheel" | sha256sum --check --status 2>/dev/null; then
    rm -f "$wheel"
    local links=()
    for d in /opt/wheels ${PIP_FIND_LINKS:-}; do [ -d "$d" ] && links+=(--find-links "$d"); done
    python3 -m pip download --quiet --disable-pip-version-check --no-deps --only-binary :all: \
      "${links[@]}" "$recbole_spec" -d "$cache"
    echo "$recbole_sha256  $wheel" | sha256sum --check --status \
      || { echo "setup.sh: $wheel does not have the sha256 $recbole_sha256" >&2; exit 1; }
  fi
  if [ ! -s "$out" ] || [ "$wheel" -nt "$out" ]; then
    python3 - "$wheel" "$recbole_member" "$out" <<'PY'
import sys, zipfile
wheel, member, out = sys.argv[1:]
with zipfile.ZipFile(wheel) as z, open(out + ".tmp", "wb") as f:
    f.write(z.read(member))
PY
    mv "$out.tmp" "$out"
  fi
  echo "MovieLens-100k: $out ($(($(wc -l <"$out") - 1)) ratings)"
}

# matplotlib for the benchmark plots: pip, or Debian's package when this python3 is
# externally managed.
ensure_matplotlib() {
  python3 -c 'import matplotlib' 2>/dev/null && return 0
  if ! python3 -m pip install --quiet --disable-pip-version-check matplotlib; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq --no-install-recommends python3-matplotlib >/dev/null
  fi
  python3 -c 'import matplotlib' || { echo "setup.sh: matplotlib is still missing" >&2; exit 1; }
}

apt_packages=(libzmq3-dev pkg-config g++ make binutils iproute2 procps libdpdk-dev libclang-dev ethtool)
missing=()
for p in "${apt_packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  step "installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
command -v cargo >/dev/null || { echo "setup.sh: cargo not found (this machine kind ships Rust via rustup)" >&2; exit 1; }

step "building the Rust crates (release)"
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p zebra-ffi -p zebra-cli

step "building the libzmq.so.5 shim into $prefix"
make -s -C "$root/cpp-shim" install PREFIX="$prefix" >/dev/null
install -d "$prefix/bin"
install -m 0755 "$root/target/release/zebra" "$prefix/bin/zebra"

if [ $clients = 1 ]; then
  step "building BytePS PS-lite (system libzmq, and relinked against $prefix)"
  "$root/scripts/build-pslite.sh" --relink "$prefix"
  step "setting up MXNet 1.9.1"
  "$root/scripts/mxnet-env.sh"
  step "fetching MovieLens-100k (the recbole 1.2.1 wheel) for mf_train"
  fetch_ml100k
  step "checking matplotlib (plots of scripts/bench-train.py)"
  ensure_matplotlib
fi

printf '\nZebra %s installed in %s\n' "$("$prefix/bin/zebra" --version | cut -d' ' -f2)" "$prefix"
printf '  preload: LD_PRELOAD=%s/lib/libzmq.so.5\n  relink:  -L%s/lib -lzmq (pkg-config: PKG_CONFIG_PATH=%s/lib/pkgconfig)\n' \
  "$prefix" "$prefix" "$prefix"
