#!/usr/bin/env bash
# Installs what Zebra needs on a fresh Debian machine and builds it into a prefix.
# Idempotent: a second run only checks, and rebuilds what changed.
#
#   scripts/setup.sh [--prefix DIR] [--clients]
#
#   --prefix DIR  install prefix (default ./dist): DIR/lib/libzmq.so.5 (+ libzmq.so,
#                 pkgconfig/libzmq.pc), DIR/include/zmq.h, DIR/bin/zebra
#   --clients     also build the real PS-lite clients the tests use: BytePS's PS-lite
#                 (from the PyPI sdist; also relinked against DIR) and MXNet 1.9.1 (venv)
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
fi

printf '\nZebra %s installed in %s\n' "$("$prefix/bin/zebra" --version | cut -d' ' -f2)" "$prefix"
printf '  preload: LD_PRELOAD=%s/lib/libzmq.so.5\n  relink:  -L%s/lib -lzmq (pkg-config: PKG_CONFIG_PATH=%s/lib/pkgconfig)\n' \
  "$prefix" "$prefix" "$prefix"
