#!/usr/bin/env bash
# One-off browser check of a sweep run folder (not a CI test: CI has no browser).
#
#   benchmarks/browser_check.sh RUN_DIR [OUT_DIR]
#
# Starts `ablate dashboard RUN_DIR` on a free port, takes headless Chromium
# screenshots of the review page `/` (first the first screen, 1280x800, then the
# whole page, 4000 px tall: a headless screenshot is the window, and scrolling to
# an anchor in it draws the sticky bar mid-page), then optuna-dashboard's study
# list, study page, trial list and trial table, writes them to OUT_DIR (default
# /tmp/browser_check) and stops the server. Look at the PNGs: the first screen
# should show the verdicts, the per-variant table, the link to optuna-dashboard
# and the per-seed plot beside the paired differences; the whole page the cost
# table, the validation curves and the heatmap gallery; a page that renders
# blank or an error is what this check is for. Run it on a folder whose sweep is
# still running to see the live page (its bar counts the cells left).
set -euo pipefail

run_dir=${1:?usage: benchmarks/browser_check.sh RUN_DIR [OUT_DIR]}
out=${2:-/tmp/browser_check}
root="$(cd "$(dirname "$0")/.." && pwd)"
python="$root/.venv/bin/python"

browser=$(command -v chromium || command -v chromium-browser || command -v chromium-headless-shell || true)
if [[ -z $browser ]]; then
    echo "error: chromium not found; install it with: apt-get install -y chromium" >&2
    exit 1
fi
[[ -f $run_dir/spec.json ]] || { echo "error: $run_dir is not a sweep run folder (no spec.json)" >&2; exit 2; }
run_dir=$(cd "$run_dir" && pwd)
mkdir -p "$out"

port=$("$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
base="http://127.0.0.1:$port"
(cd "$root" && exec "$python" -m ablate dashboard "$run_dir" --port "$port") >"$out/dashboard.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true' EXIT

for _ in $(seq 60); do
    "$python" -c "import urllib.request as u; u.urlopen('$base/api/meta', timeout=2)" 2>/dev/null && break
    kill -0 "$server" 2>/dev/null || { cat "$out/dashboard.log" >&2; exit 1; }
    sleep 1
done

# The study page's id: the sweep's study in the storage (search studies may sit beside it).
name=$("$python" -c "import json; print(json.load(open('$run_dir/spec.json'))['name'])")
study_id=$("$python" -c "
import json, urllib.request as u
studies = json.load(u.urlopen('$base/api/studies'))['study_summaries']
print(next(s['study_id'] for s in studies if s['study_name'] == '$name'))")

shot() {  # shot NAME URL [HEIGHT [WIDTH]]: one window-sized screenshot after the page's scripts ran
    "$browser" --headless --no-sandbox --disable-gpu --hide-scrollbars \
        --screenshot="$out/$1.png" --window-size="${4:-1400},${3:-1000}" --virtual-time-budget=10000 "$2" \
        >"$out/$1.chromium.log" 2>&1
    echo "$out/$1.png  <- $2"
}
shot review "$base/" 800 1280                                    # the first screen: verdicts, table, link
shot review-full "$base/" 4000                                   # the whole page: cost, curves, gallery
shot dashboard "$base/dashboard/"                                # the study list
shot study "$base/dashboard/studies/$study_id"                   # history, importance, timeline
shot trials "$base/dashboard/studies/$study_id/trials"           # trial 0: params, user attrs, artifacts
shot table "$base/dashboard/studies/$study_id/smartSelection"    # the trial table (0.21 has no trialTable page)
