#!/usr/bin/env bash
# One-off look at the docs site (not a CI test: CI has no browser).
#
#   benchmarks/docs_check.sh [OUT_DIR]
#
# Builds the site (mkdocs build --strict -f docs/mkdocs.yml) into OUT_DIR/site, serves it with
# `python -m http.server` on a free port, takes headless Chromium screenshots of the home page,
# the config reference and the results page into OUT_DIR (default /tmp/docs_check), and stops
# the server. Look at the PNGs: a page that renders unstyled, blank or with a broken table is
# what this check is for. Chromium comes from Debian: apt-get install -y chromium.
set -euo pipefail

out=${1:-/tmp/docs_check}
root="$(cd "$(dirname "$0")/.." && pwd)"
python="$root/.venv/bin/python"
[[ -x $python ]] || python=$(command -v python3)

browser=$(command -v chromium || command -v chromium-browser || command -v chromium-headless-shell || true)
if [[ -z $browser ]]; then
    echo "error: chromium not found; install it with: apt-get install -y chromium" >&2
    exit 1
fi
"$python" -c 'import mkdocs, material' 2>/dev/null \
    || { echo "error: mkdocs and mkdocs-material are missing: pip install -e '.[dev]'" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
site="$out/site"

NO_MKDOCS_2_WARNING=1 "$python" -m mkdocs build --strict --quiet -f "$root/docs/mkdocs.yml" -d "$site"

port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
"$python" -m http.server "$port" --bind 127.0.0.1 --directory "$site" >"$out/http.log" 2>&1 &
server=$!
profile=$(mktemp -d "${TMPDIR:-/tmp}/docs-check-chromium.XXXXXX")
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; rm -rf "$profile"' EXIT

for _ in $(seq 30); do
    "$python" -c "import urllib.request as u; u.urlopen('$base/index.html', timeout=2)" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || { cat "$out/http.log" >&2; exit 1; }
    sleep 0.5
done

shot() {  # shot NAME PATH [HEIGHT]: one window-sized screenshot after the page's scripts have run
    "$browser" --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
        --disable-background-networking --disable-component-update --disable-sync \
        --user-data-dir="$profile/$1" --hide-scrollbars \
        --screenshot="$out/$1.png" --window-size="1400,${3:-1000}" --virtual-time-budget=5000 \
        "$base/$2" >"$out/$1.chromium.log" 2>&1
    echo "$out/$1.png  <- $base/$2"
}
shot home index.html
shot config reference/config.html 1600
shot results results/index.html 1600
