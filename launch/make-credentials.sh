#!/usr/bin/env bash
# Key a deployment once: a CA and a TLS certificate for each rank (0..m-1 the parties, m the dealer).
#   bash launch/make-credentials.sh --parties 3 --out keys/
# Then give each host keys/ca.pem and its own keys/party-<rank>.pem and keys/party-<rank>-key.pem, and start it
# with MPCDP_CREDENTIALS=<that folder> (or `mpcdp party --credentials <folder>`). Keep keys/ca-key.pem on no
# party's host: whoever holds it can mint a certificate for any rank.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/launch/install.sh"
exec "$root/.venv/bin/mpcdp" credentials "$@"
