#!/usr/bin/env bash
# Two network namespaces joined by a veth pair, for the user-level stack's tests: in
# NAME-u the interface NAME-u0 has no address (the user-level stack on top of it owns its
# own IP); in NAME-k the kernel's NAME-k0 has KERNEL_CIDR and tx checksum offload off (a
# veth otherwise hands partial checksums to packet sockets). Needs root.
#
#   scripts/netns-pair.sh up NAME KERNEL_CIDR [MTU]   create (replacing a stale pair)
#   scripts/netns-pair.sh down NAME                   remove
#
# NAME is at most 12 characters (interface names are at most 15).
set -euo pipefail
usage() { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; }
[ $# -ge 2 ] || { usage >&2; exit 2; }
cmd=$1 name=$2
case $name in
  *[!A-Za-z0-9_-]* | "") echo "netns-pair.sh: bad NAME $name" >&2; exit 2 ;;
esac
[ ${#name} -le 12 ] || { echo "netns-pair.sh: NAME $name is longer than 12 characters" >&2; exit 2; }
nsu=$name-u nsk=$name-k ifu=$name-u0 ifk=$name-k0

down() {
  ip netns del "$nsu" 2>/dev/null || true
  ip netns del "$nsk" 2>/dev/null || true
}

case $cmd in
  up)
    [ $# -ge 3 ] || { usage >&2; exit 2; }
    cidr=$3 mtu=${4:-1500}
    command -v ethtool >/dev/null || { echo "netns-pair.sh: ethtool is missing (apt-get install ethtool)" >&2; exit 1; }
    down
    ip netns add "$nsu"
    ip netns add "$nsk"
    ip link add "$ifu" mtu "$mtu" netns "$nsu" type veth peer name "$ifk" mtu "$mtu" netns "$nsk"
    ip netns exec "$nsu" sysctl -qw "net.ipv6.conf.$ifu.disable_ipv6=1"
    ip netns exec "$nsk" sysctl -qw "net.ipv6.conf.$ifk.disable_ipv6=1"
    ip -n "$nsu" link set lo up
    ip -n "$nsk" link set lo up
    ip -n "$nsk" addr add "$cidr" dev "$ifk"
    ip netns exec "$nsk" ethtool -K "$ifk" tx off >/dev/null
    ip netns exec "$nsu" ethtool -K "$ifu" tx off >/dev/null
    ip -n "$nsu" link set "$ifu" up
    ip -n "$nsk" link set "$ifk" up
    ;;
  down) down ;;
  *) usage >&2; exit 2 ;;
esac
