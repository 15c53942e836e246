# Sourced by ./ablate and ./run-tests: create or reuse .venv and install the
# project into it, at the versions constraints.txt pins. Idempotent: a stamp
# keyed by pyproject.toml, constraints.txt, TORCH_SPEC and the package's file
# names skips pip when none of them changed, so later calls start in well
# under a second.
# Torch goes in first and alone: a bare "torch" requirement with no torch
# installed would pull a multi-GB CUDA build. GPU users: set TORCH_SPEC
# (e.g. TORCH_SPEC="torch==2.6.0+cu124 --index-url https://download.pytorch.org/whl/cu124";
# a spec that the installed torch already satisfies installs nothing, so name
# the build). Once installed, torch is the one package the pins never move
# (a CUDA build stays); a torch other than the pinned one keeps the versions
# of the packages it requires.
# ABLATE_VENV: another environment; ABLATE_CONSTRAINTS=FILE: other pins, and
# ABLATE_CONSTRAINTS= (empty): none, the newest versions pyproject.toml allows.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="${ABLATE_VENV:-$root/.venv}"
python="${PYTHON:-python3}"
constraints="${ABLATE_CONSTRAINTS-$root/constraints.txt}"
torch_spec="${TORCH_SPEC:-torch==2.13.0}"
if [ ! -x "$venv/bin/python" ]; then
    "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
        || { echo "error: Python 3.11+ is needed (found $("$python" --version 2>&1)); set PYTHON=..." >&2; exit 2; }
    echo "creating virtual environment $venv" >&2
    "$python" -m venv "$venv"
fi
# The install is editable in setuptools' strict mode: the package is a tree of links to exactly
# the files it ships (so tests/, docs/, runs/ are not importable as ablate.tests, ...), and a new
# or removed module needs a reinstall, which the stamp's list of package files triggers.
package_files() {
    (cd "$root" && find . \( -path ./.venv -o -path ./build -o -path ./.git -o -path ./tests -o -path ./docs \
        -o -path ./examples -o -path ./results -o -path ./runs -o -path ./wandb \) -prune \
        -o \( -name '*.py' -o -name '*.yaml' \) -print | LC_ALL=C sort)
}
key="$({ cat "$root/pyproject.toml" ${constraints:+"$constraints"}; echo "TORCH_SPEC=${TORCH_SPEC:-}"; package_files; } \
    | cksum | cut -d' ' -f1)"
stamp="$venv/.ablate-installed-$key"
# (The link tree lives in build/: a removed build/ reinstalls too.)
if [ ! -f "$stamp" ] || ! compgen -G "$root/build/__editable__.*" >/dev/null; then
    echo "installing dependencies into $venv (once)" >&2
    pin=()
    if [ -n "$constraints" ]; then pin=(-c "$constraints"); fi
    "$venv/bin/python" -m pip install -q --upgrade pip >&2
    if [ -n "${TORCH_SPEC:-}" ]; then
        "$venv/bin/python" -m pip install -q $TORCH_SPEC >&2
    elif ! "$venv/bin/python" -c 'import torch' 2>/dev/null; then
        "$venv/bin/python" -m pip install -q ${pin[@]+"${pin[@]}"} "$torch_spec" >&2
    fi
    if [ -n "$constraints" ]; then
        # A torch other than the pinned one (TORCH_SPEC's, or one installed by hand) keeps its own
        # requirements: the pins go on less torch and the packages it requires.
        "$venv/bin/python" - "$constraints" >"$venv/.ablate-constraints.txt" <<'PY'
import re, sys
from importlib.metadata import requires, version
norm = lambda name: re.sub(r"[-_.]+", "-", name).lower()
lines = open(sys.argv[1]).readlines()
if f"torch=={version('torch').split('+')[0]}\n" in lines:
    torch_own = set()
else:
    torch_own = {"torch"} | {norm(re.match(r"[\w.-]+", r)[0]) for r in requires("torch") or []}
for line in lines:
    name = re.match(r"[\w.-]*", line)[0]
    if not name or norm(name) not in torch_own:
        sys.stdout.write(line)
PY
        pin=(-c "$venv/.ablate-constraints.txt")
    fi
    "$venv/bin/python" -m pip install -q ${pin[@]+"${pin[@]}"} --config-settings editable_mode=strict \
        -e "$root[dev]" >&2
    rm -f "$venv"/.ablate-installed-*
    touch "$stamp"
fi
export PATH="$venv/bin:$PATH"
# W&B never blocks on a login prompt: offline unless the user configured it.
if [ -z "${WANDB_API_KEY:-}" ] && [ -z "${WANDB_MODE:-}" ] && [ ! -f "$HOME/.netrc" ]; then
    export WANDB_MODE=offline
fi
