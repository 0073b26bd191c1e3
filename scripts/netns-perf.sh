#!/usr/bin/env bash
# The perf pair of the user-level stack, in one run: ZMTP throughput (engine DEALER ->
# libzmq ROUTER) and UDP packets/s (192-byte datagrams, the hot path's transport) across a
# veth pair between two network namespaces, over the kernel, smoltcp on a raw socket, and
# smoltcp on DPDK's af_packet PMD (when libdpdk-dev is installed). Needs root.
#
#   scripts/netns-perf.sh [MESSAGES SIZE DATAGRAMS]   (default 2000 65536 200000)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" = 0 ] || { echo "netns-perf.sh: needs root" >&2; exit 1; }
messages=${1:-2000} size=${2:-65536} datagrams=${3:-200000}
features=()
modes=(kernel raw)
if pkg-config --exists libdpdk; then
  features=(--features dpdk)
  modes+=(dpdk)
fi
cargo build --release --quiet --manifest-path "$root/Cargo.toml" -p zebra-engine "${features[@]}" --example netns_perf
bin=${CARGO_TARGET_DIR:-$root/target}/release/examples/netns_perf
echo "commit $(git -C "$root" rev-parse --short HEAD), $(nproc) cores, $(date -u +%FT%TZ)"
for mode in "${modes[@]}"; do
  "$bin" "$mode" "$messages" "$size" "$datagrams"
done
