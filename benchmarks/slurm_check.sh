#!/usr/bin/env bash
# A real SLURM check of `ablate sweep --launcher slurm`: a one-node cluster on this machine
# (slurmctld + slurmd on localhost, munge for authentication) and a tiny sweep submitted to it as
# a job array on a journal study; Ctrl-C after its first cell (the jobs are cancelled), then the
# same command again (it resumes). Checked: every cell complete exactly once, and run by the tasks
# of the two arrays (submitit's job logs). The daemons are stopped on exit.
#
# Not a CI test: it needs root (it installs Debian's slurm-wlm and munge when missing) and takes
# a few minutes. Usage, from the repository root:
#
#     sudo benchmarks/slurm_check.sh            # output also in benchmarks/results/slurm_check.txt
#
# The cluster's files (slurm.conf, spool, logs) and the sweep live in .slurm-check/ (removed
# first; not under /tmp, which --launcher slurm refuses as node-local).
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
work="$repo/.slurm-check"
out="$repo/benchmarks/results/slurm_check.txt"
mkdir -p "$(dirname "$out")"
exec > >(tee "$out") 2>&1

[ "$(id -u)" = 0 ] || { echo "error: run as root (it installs and starts slurm daemons)" >&2; exit 2; }
if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    echo "installing slurm-wlm and munge"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null
fi

rm -rf "$work"
mkdir -p "$work/spool/ctld" "$work/spool/d" "$work/log"
host="$(hostname -s)"
cpus="$(nproc)"
mem_mb=$(( $(awk '/MemTotal/ {print int($2 / 1024)}' /proc/meminfo) * 3 / 4 ))
export SLURM_CONF="$work/slurm.conf"
cat > "$SLURM_CONF" <<EOF
ClusterName=ablate-check
SlurmctldHost=$host
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
StateSaveLocation=$work/spool/ctld
SlurmdSpoolDir=$work/spool/d
SlurmctldPidFile=$work/slurmctld.pid
SlurmdPidFile=$work/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
NodeName=$host CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=check Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF

started_munge=0
stop() {
    for pid in "$work/slurmd.pid" "$work/slurmctld.pid"; do
        [ -f "$pid" ] && kill "$(cat "$pid")" 2>/dev/null || true
    done
    [ "$started_munge" = 1 ] && pkill -x munged || true
    echo "daemons stopped"
}
trap stop EXIT

if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
    mkdir -p /run/munge && chown munge:munge /run/munge
    [ -f /etc/munge/munge.key ] || mungekey --create
    runuser -u munge -- /usr/sbin/munged 2>/dev/null || /usr/sbin/munged --force
    started_munge=1
fi
slurmctld -f "$SLURM_CONF"
slurmd -f "$SLURM_CONF"
for _ in $(seq 30); do sinfo -h -o %T 2>/dev/null | grep -q idle && break; sleep 1; done
sinfo

# The sweep: order task, baseline vs no PE, 3 seeds, 300 steps; 2 workers as a SLURM job array.
cat > "$work/slurm-check.yaml" <<EOF
name: slurm-check
description: The SLURM check's tiny sweep (benchmarks/slurm_check.sh).
base: $repo/experiments/order.yaml
variants: {baseline: {}, no_pe: {model.pe: none}}
seeds: 3
heatmap_seeds: [0]
metric: test/acc
EOF
source "$repo/bootstrap.sh"
cd "$work"
sweep() {
    ablate sweep slurm-check.yaml trainer.max_steps=300 trainer.val_every=100 --no-wandb --workers 2 \
        --launcher slurm --slurm partition=check,timeout_min=20,cpus_per_task=1,array_parallelism=2 \
        --storage "journal:$work/study.journal" --runs "$work/runs" "$@"
}
# 1. Ctrl-C once the first cell is done: the jobs are cancelled, finished cells are kept.
started=$(date +%s)
set -m  # the background sweep gets Ctrl-C (SIGINT) like a terminal's foreground job
sweep &
driver=$!
until grep -qs ": done" runs/slurm-check/jobs/*_log.err; do sleep 1; done
kill -INT -- "-$driver"  # its process group, as a terminal sends Ctrl-C
rc=0; wait "$driver" || rc=$?
set +m
echo "interrupted sweep: rc $rc after $(( $(date +%s) - started )) s; the array as SLURM saw it:"
squeue --states=all
# 2. The same command again: resumes (the finished cells are not rerun).
started=$(date +%s)
sweep
echo "resumed sweep: rc 0 in $(( $(date +%s) - started )) s"

python - "$work" <<'EOF'
import collections, pathlib, re, sys
import optuna
from optuna.storages import JournalStorage
from optuna.storages.journal import JournalFileBackend

work = pathlib.Path(sys.argv[1])
study = optuna.load_study(study_name="slurm-check", storage=JournalStorage(JournalFileBackend(str(work / "study.journal"))))
states = collections.Counter((t.user_attrs["cell"], t.state.name) for t in study.trials if "cell" in t.user_attrs)
complete = collections.Counter(cell for (cell, state), n in states.items() for _ in range(n) if state == "COMPLETE")
print("trials per (cell, state):", dict(sorted(states.items())))
assert sorted(complete) == sorted(f"{v}/s{s}" for v in ("baseline", "no_pe") for s in range(3)), complete
assert set(complete.values()) == {1}, f"a cell completed more than once: {complete}"
# Which SLURM array task ran which cells: submitit's log names the task, the worker's the cells.
ran = {}
for out in sorted((work / "runs" / "slurm-check" / "jobs").glob("*_log.out")):
    task = re.search(r"JobEnvironment\(job_id=(\w+)", out.read_text()).group(1)
    err = out.with_name(out.name.replace("_log.out", "_log.err")).read_text()
    ran[task] = re.findall(r"cells (\S+): done", err)
    print(f"SLURM task {task} completed {', '.join(ran[task]) or 'no cell'}")
arrays = {task.split("_")[0] for task in ran}
assert len(arrays) == 2 and len(ran) == 4, f"want 2 job arrays of 2 tasks: {sorted(ran)}"
assert sorted(c for cells in ran.values() for c in cells) == sorted(complete), ran
print("OK: 6 cells, each complete exactly once, over an interrupted and a resumed SLURM job array")
EOF
squeue --states=all  # both arrays, as SLURM saw them (this cluster keeps no accounting for sacct)
