#!/usr/bin/env bash
# Run an m-party job with every party (and the dealer) as a separate process on this host.
#   bash launch/local.sh [mpcdp aggregate options]     e.g. --parties 5 --dim 10000
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/launch/install.sh"
exec "$root/.venv/bin/mpcdp" aggregate "$@"
