#!/usr/bin/env bash
# Emulate separate hosts on one Linux machine with network namespaces (needs root and iproute2).
#
#   bash launch/netns.sh up TAG N     create N hosts TAG-h0..TAG-h{N-1}, each with one veth interface
#                                     (TAG-h<i> has address 10.213.0.<i+1>/24 on interface `eth-mpcdp`),
#                                     all joined by a bridge in namespace TAG-sw; prints the addresses
#   bash launch/netns.sh down TAG     delete every namespace of TAG (their interfaces go with them)
#
# Then run a party in host i with:  ip netns exec TAG-h<i> env RANK=i ... bash launch/host.sh ...
# The hosts reach each other only through the bridge. TAG: at most 8 letters/digits.
set -euo pipefail
cmd="${1:?usage: netns.sh up TAG N | down TAG}"
tag="${2:?TAG missing}"
[[ "$tag" =~ ^[a-z0-9]{1,8}$ ]] || { echo "TAG must be 1-8 lowercase letters/digits, got '$tag'" >&2; exit 2; }
subnet="10.213.0"
case "$cmd" in
  up)
    n="${3:?N missing}"
    ip netns add "$tag-sw"
    ip -n "$tag-sw" link add br0 type bridge
    ip -n "$tag-sw" link set br0 up
    ip -n "$tag-sw" link set lo up
    for ((i = 0; i < n; i++)); do
      host="$tag-h$i"
      ip netns add "$host"
      ip link add "$tag-a$i" type veth peer name "$tag-b$i"
      ip link set "$tag-a$i" netns "$host"
      ip link set "$tag-b$i" netns "$tag-sw"
      ip -n "$host" link set "$tag-a$i" name eth-mpcdp
      ip -n "$host" addr add "$subnet.$((i + 1))/24" dev eth-mpcdp
      ip -n "$host" link set eth-mpcdp up
      ip -n "$host" link set lo up
      ip -n "$tag-sw" link set "$tag-b$i" master br0
      ip -n "$tag-sw" link set "$tag-b$i" up
      echo "$host $subnet.$((i + 1))"
    done
    ;;
  down)
    for ns in $(ip netns list | awk '{print $1}' | grep -E "^$tag-(sw|h[0-9]+)$" || true); do
      ip netns del "$ns"
    done
    ;;
  *) echo "unknown command '$cmd'" >&2; exit 2 ;;
esac
