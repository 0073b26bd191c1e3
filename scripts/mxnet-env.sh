#!/usr/bin/env bash
# Create or update the MXNet venv for the dist_sync kvstore suite: .build/venv-mxnet with
# mxnet==1.9.1 and numpy==1.23.5 (MXNet 1.9.1 breaks on numpy >= 1.24, which its metadata
# allows). Idempotent: when everything is in place it only checks and prints.
# Prints the venv's python as the last line of stdout; everything else goes to stderr.
#
#   MXNET_VENV    venv directory (default: <repo>/.build/venv-mxnet)
#   MXNET_PYTHON  interpreter to build the venv from (default: first Python 3.8-3.11 found;
#                 numpy 1.23.5 has no wheels for 3.12+)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
VENV=${MXNET_VENV:-$ROOT/.build/venv-mxnet}
MXNET_VERSION=1.9.1
NUMPY_VERSION=1.23.5
# libmxnet.so links libgomp and libquadmath from the system (it bundles libgfortran and
# libopenblas); python3-venv only matters when the interpreter is Debian's own.
APT_RUNTIME=(libgomp1 libquadmath0)

log() { echo "mxnet-env: $*" >&2; }

APT_UPDATED=0
apt_install() {
    local missing=()
    local pkg
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    if ! command -v apt-get >/dev/null; then
        log "missing system packages ${missing[*]} and no apt-get to install them"
        return 1
    fi
    if [ "$APT_UPDATED" = 0 ]; then
        log "apt-get update"
        DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2
        APT_UPDATED=1
    fi
    log "apt-get install ${missing[*]}"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

# Strip job variables: importing mxnet with DMLC_ROLE=server would start a server.
clean_env=(env -u DMLC_ROLE -u LD_PRELOAD)

venv_ready() {
    [ -x "$VENV/bin/python" ] || return 1
    "${clean_env[@]}" "$VENV/bin/python" - "$MXNET_VERSION" "$NUMPY_VERSION" >/dev/null 2>&1 <<'EOF'
import sys
import numpy
import mxnet
assert mxnet.__version__ == sys.argv[1], mxnet.__version__
assert numpy.__version__ == sys.argv[2], numpy.__version__
EOF
}

python_ok() {
    "$1" -c 'import sys, venv; sys.exit(0 if (3, 8) <= sys.version_info[:2] <= (3, 11) else 1)' >/dev/null 2>&1
}

pick_python() {
    local cand
    if [ -n "${MXNET_PYTHON:-}" ]; then
        python_ok "$MXNET_PYTHON" || { log "MXNET_PYTHON=$MXNET_PYTHON is not a Python 3.8-3.11 with venv"; return 1; }
        echo "$MXNET_PYTHON"
        return 0
    fi
    local cands=(python3 python3.11 python3.10 python3.9 python3.8)
    if command -v pyenv >/dev/null; then
        local root
        root=$(pyenv root 2>/dev/null || true)
        for cand in "$root"/versions/3.1[01].*/bin/python3 "$root"/versions/3.[89].*/bin/python3; do
            [ -x "$cand" ] && cands+=("$cand")
        done
    fi
    cands+=(/usr/bin/python3)
    for cand in "${cands[@]}"; do
        if python_ok "$cand"; then
            command -v "$cand"
            return 0
        fi
    done
    return 1
}

apt_install "${APT_RUNTIME[@]}"

if venv_ready; then
    echo "$VENV/bin/python"
    exit 0
fi

mkdir -p "$(dirname "$VENV")"
exec 9>"$VENV.lock"
flock 9
if ! venv_ready; then
    if [ ! -x "$VENV/bin/python" ] || ! python_ok "$VENV/bin/python"; then
        PY=$(pick_python) || {
            log "no Python 3.8-3.11 with venv found; installing Debian's python3"
            apt_install python3 python3-venv
            PY=$(pick_python) || { log "still no usable Python 3.8-3.11"; exit 1; }
        }
        log "creating $VENV with $PY ($("$PY" --version 2>&1))"
        rm -rf "$VENV"
        "$PY" -m venv "$VENV" >&2
    fi
    log "pip install mxnet==$MXNET_VERSION numpy==$NUMPY_VERSION"
    "${clean_env[@]}" "$VENV/bin/python" -m pip install --disable-pip-version-check -q \
        "mxnet==$MXNET_VERSION" "numpy==$NUMPY_VERSION" >&2
    if ! venv_ready; then
        log "mxnet does not import in $VENV:"
        "${clean_env[@]}" "$VENV/bin/python" -c 'import mxnet' >&2 || true
        exit 1
    fi
fi
echo "$VENV/bin/python"
