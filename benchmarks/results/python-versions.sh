#!/usr/bin/env bash
# Re-records one row group of python-versions.md: the README's main job and its own-data example on one Python,
# in a fresh virtual environment.
#
#   bash benchmarks/results/python-versions.sh /path/to/python3.X     (run it in a fresh clone)
#
# Installs .venv/ with that interpreter (MPCDP_PYTHON), runs `bash launch/local.sh` (the main job), then
# launch/own_data_example.py as three parties plus the dealer on this host over TLS (RANK/WORLD_SIZE/
# MASTER_ADDR/MASTER_PORT, MPCDP_CREDENTIALS), each party with its own CSV of 2,000 a9a training rows and its
# own held-out CSV of 1,000 rows. Prints each step's wall time and last output line.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export MPCDP_PYTHON="${1:?usage: python-versions.sh /path/to/python3.X}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
step() {  # step NAME COMMAND...: run it, print its wall time and its last line of output
    local name="$1" start end
    shift
    start=$(date +%s.%N)
    "$@" >"$work/$name.out" 2>"$work/$name.err" || { tail -n 30 "$work/$name.err" >&2; exit 1; }
    end=$(date +%s.%N)
    printf '%s: %.0f s: %s\n' "$name" "$(echo "$end - $start" | bc)" "$(tail -n 1 "$work/$name.out")"
}
step install bash launch/install.sh
.venv/bin/python -c 'import sys, torch; print("python", sys.version.split()[0], "torch", torch.__version__)'
step main-job bash launch/local.sh
step own-data-files .venv/bin/python - "$work" <<'PY'
import sys
import numpy as np
from mpcdp.data.registry import load

data = load("a9a")
header = ",".join([*(f"a{i}" for i in range(data.x_train.shape[1])), "income_over_50k"])
for j in range(3):
    for kind, x, y, n in (("train", data.x_train, data.y_train, 2000), ("test", data.x_test, data.y_test, 1000)):
        rows = np.column_stack([x[j * n:(j + 1) * n], y[j * n:(j + 1) * n] > 0]).astype(int)
        np.savetxt(f"{sys.argv[1]}/party{j}-{kind}.csv", rows, fmt="%d", delimiter=",", header=header, comments="")
print("3 parties' CSVs written")
PY
.venv/bin/mpcdp credentials --parties 3 --out "$work/keys" >/dev/null
own_data() {
    local pids=() rank port
    port="$(.venv/bin/python -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    for rank in 0 1 2 3; do
        RANK=$rank WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port MPCDP_CREDENTIALS="$work/keys" \
            .venv/bin/python launch/own_data_example.py "$work/party$rank-train.csv" \
            --test "$work/party$rank-test.csv" >"$work/rank$rank.json" 2>"$work/rank$rank.err" &
        pids+=($!)
    done
    for rank in 0 1 2 3; do
        wait "${pids[$rank]}" || { echo "rank $rank failed:" >&2; tail -n 20 "$work/rank$rank.err" >&2; return 1; }
    done
    tail -n 1 "$work/rank1.json"
}
step own-data-example own_data
