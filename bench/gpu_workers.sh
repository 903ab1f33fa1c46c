#!/usr/bin/env bash
# Proof of `work --gpus` on real GPUs: queue JOBS small CUDA jobs in a fresh SQLite database (or the
# database in $DB), start one worker per GPU with `work --gpus GPUS --drain`, and print who ran what:
# job, worker (its id names the GPU), the CUDA_VISIBLE_DEVICES the job's child saw, the device torch
# named (and its GPU uuid, once runner/child/measure.py records one), and when it ran; then which physical
# GPUs nvidia-smi saw a compute process on, and whether jobs ran at the same time on different GPUs.
#
#   bench/gpu_workers.sh [GPUS=all] [JOBS=8]        e.g. bench/gpu_workers.sh all 8   or   bench/gpu_workers.sh 0 2
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
GPUS=${1:-all}
JOBS=${2:-8}
tmp=$(mktemp -d)
DB=${DB:-sqlite:///$tmp/gpu_proof.db}

echo "GPUs on this host:"
nvidia-smi --query-gpu=index,uuid,name,pci.bus_id --format=csv,noheader
"$PY" -m runner submit --db "$DB" --model simplenet --batch 256 --device cuda --iters 10 --repeat "$JOBS" \
    --name gpu-proof >/dev/null 2>"$tmp/submit.log" || { cat "$tmp/submit.log"; exit 1; }

# every second, the processes that hold a CUDA context, and on which GPU
( while true; do nvidia-smi --query-compute-apps=pid,gpu_uuid --format=csv,noheader 2>/dev/null || true; sleep 1; done ) \
    >"$tmp/apps.csv" &
sampler=$!
trap 'kill $sampler 2>/dev/null || true' EXIT
start=$(date +%s)
"$PY" -m runner work --db "$DB" --home "$tmp/home" --gpus "$GPUS" --drain 2>"$tmp/workers.log" \
    || { echo "workers failed; log:"; tail -n 50 "$tmp/workers.log"; exit 1; }
echo "workers done in $(( $(date +%s) - start )) s (log: $tmp/workers.log)"
kill $sampler 2>/dev/null || true

"$PY" - "$DB" "$tmp/apps.csv" <<'PYEOF'
import sys
from sqlalchemy import select
from db.database import get_engine
from db.engine import reading
from db.models import Job, Result, Worker

engine = get_engine(sys.argv[1])
with reading(engine) as s:
    gpu_of = {w.id: w.gpu for w in s.scalars(select(Worker))}
    rows = s.execute(select(Job, Result).outerjoin(Result, Result.job_id == Job.id).order_by(Job.id)).all()
print(f"\n{'job':>4}  {'status':<9} {'worker':<44} {'gpu':>3}  {'child CUDA_VISIBLE_DEVICES':<26} {'device':<28} "
      f"{'child GPU uuid':<16} ran (s from first claim)")
t0 = min(j.claimed_at for j, _ in rows if j.claimed_at)
spans = []
for job, res in rows:
    env = (res.detail or {}).get("env", {}) if res else {}
    start, end = (job.claimed_at - t0).total_seconds(), (job.finished_at - t0).total_seconds()
    spans.append((start, end, gpu_of.get(job.worker_id)))
    print(f"{job.id:>4}  {job.status:<9} {job.worker_id or '-':<44} {gpu_of.get(job.worker_id) or '-':>3}  "
          f"{str(env.get('cuda_visible_devices')):<26} {(res.device_name if res else job.error or '')[:28]:<28} "
          f"{str(env.get('gpu_uuid', '-'))[:16]:<16} {start:6.1f} .. {end:6.1f}")
overlap = any(a[2] != b[2] and a[0] < b[1] and b[0] < a[1] for a in spans for b in spans)
print(f"\nworkers: {len(gpu_of)} ({', '.join(sorted(f'gpu {g}' for g in gpu_of.values()))}); "
      f"jobs on different GPUs at the same time: {'yes' if overlap else 'no'}")
apps = {}
for line in open(sys.argv[2]):
    parts = [p.strip() for p in line.split(",")]
    if len(parts) == 2 and parts[0].isdigit():
        apps.setdefault(parts[1], set()).add(int(parts[0]))
print("physical GPUs with a compute process during the run (nvidia-smi):")
for uuid, pids in sorted(apps.items()):
    print(f"  {uuid}: pids {sorted(pids)}")
PYEOF
