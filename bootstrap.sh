# Sourced by ./ablate and ./run-tests: create or reuse .venv and install the
# project into it. Idempotent: a stamp keyed by pyproject.toml skips pip when
# nothing changed, so later calls start in well under a second.
# Torch goes in first and alone: a bare "torch" requirement with no torch
# installed would pull a multi-GB CUDA build. GPU users: set TORCH_SPEC
# (e.g. TORCH_SPEC="torch --index-url https://download.pytorch.org/whl/cu124").
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${ABLATE_VENV:-$root/.venv}"
python="${PYTHON:-python3}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || { echo "error: Python 3.11+ is needed (found $("$python" --version 2>&1)); set PYTHON=..." >&2; exit 2; }
    echo "creating virtual environment $venv" >&2
    "$python" -m venv "$venv"
fi
stamp="$venv/.ablate-installed-$(cat "$root/pyproject.toml" | cksum | cut -d' ' -f1)"
if [ ! -f "$stamp" ]; then
    echo "installing dependencies into $venv (once)" >&2
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    "$venv/bin/python" -c 'import torch' 2>/dev/null \
        || "$venv/bin/python" -m pip install -q ${TORCH_SPEC:-torch==2.13.0} >&2
    "$venv/bin/python" -m pip install -q -e "$root[dev]" >&2
    rm -f "$venv"/.ablate-installed-*
    touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
# W&B never blocks on a login prompt: offline unless the user configured it.
if [ -z "${WANDB_API_KEY:-}" ] && [ -z "${WANDB_MODE:-}" ] && [ ! -f "$HOME/.netrc" ]; then
    export WANDB_MODE=offline
fi
