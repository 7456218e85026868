#!/usr/bin/env bash
# Run a job with every party (and the dealer) as a separate process on this host.
#   bash launch/local.sh                       the main job: secure DDP-SRM on a9a, 3 parties
#   bash launch/local.sh PROTOCOL.toml [opts]  another training protocol (mpcdp train options)
#   bash launch/local.sh aggregate [opts]      secure aggregation only (mpcdp aggregate options)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/launch/install.sh"
cd "$root"
if [ "${1:-}" = "aggregate" ]; then
  shift
  exec "$root/.venv/bin/mpcdp" aggregate "$@"
fi
protocol="${1:-protocols/quickstart-a9a.toml}"
[ $# -gt 0 ] && shift
exec "$root/.venv/bin/mpcdp" train "$protocol" "$@"
