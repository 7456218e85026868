#!/usr/bin/env bash
# Run one process of an m-party job on this host; the others run on other hosts.
#
# Environment (torch.distributed / CrypTen conventions):
#   RANK         0..m-1 for a data party, m for the dealer
#   WORLD_SIZE   m, the number of data parties
#   MASTER_ADDR, MASTER_PORT   where rank 0 listens (or RENDEZVOUS=tcp://HOST:PORT)
#   MPCDP_IFACE  optional: the network interface to listen on (default: the one that routes to MASTER_ADDR)
#   MPCDP_CREDENTIALS  the deployment's TLS credentials (`mpcdp credentials`; or --credentials DIR): required,
#                on one host too, unless --insecure-links (plain TCP, readable and alterable by anyone who
#                reaches the links)
# Extra arguments go to `mpcdp party` (e.g. --dim 123 --timeout 120). Every process must get the same ones;
# the parties compare configurations before any data moves.
#
#   example, 3 parties + dealer on hosts A (10.0.0.1), B, C, D:
#     A$ RANK=0 WORLD_SIZE=3 MASTER_ADDR=10.0.0.1 MASTER_PORT=29500 bash launch/host.sh --dim 123
#     B$ RANK=1 ...   C$ RANK=2 ...   D$ RANK=3 ... (the dealer)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/launch/install.sh"
iface=()
[ -n "${MPCDP_IFACE:-}" ] && iface=(--iface "$MPCDP_IFACE")
: "${RANK:?set RANK}" "${WORLD_SIZE:?set WORLD_SIZE}"
# rank WORLD_SIZE runs the dealer (it ignores the job arguments)
exec "$root/.venv/bin/mpcdp" party "${iface[@]}" "$@"
