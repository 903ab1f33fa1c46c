#!/usr/bin/env bash
# On a GPU host: a real CUDA out-of-memory, recorded, with the worker and the GPU fine afterwards; and a
# bf16 training step's MFU against the ceilings the worker calibrates when it starts. Prints one table.
#
#   bench/gpu_oom_mfu.sh
#
# Jobs (one worker, in this order): mlp training bf16 bs 8192 (MFU), mlp inference hidden=262144 bs 100000
# (its eager first call needs ~100 GiB of activations: more than an H100 or H200 holds), then simplenet
# bs 32 (runs after the OOM on the same worker: the failure cost nothing but its own job).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
tmp=$(mktemp -d)
DB=${DB:-sqlite:///$tmp/oom_mfu.db}
submit() { "$PY" -m runner submit --db "$DB" --device cuda "$@" >/dev/null; }
submit --model mlp --task training --dtype bfloat16 --batch 8192 --iters 30 --name "mfu: mlp training bf16"
submit --model mlp --arg hidden=262144 --batch 100000 --iters 5 --name "oom: mlp hidden=262144 bs 100000"
submit --model simplenet --batch 32 --iters 30 --name "after the OOM"
start=$(date +%s)
"$PY" -m runner work --db "$DB" --home "$tmp/home" --drain 2>"$tmp/worker.log" \
    || { echo "worker failed; log:"; tail -n 40 "$tmp/worker.log"; exit 1; }
echo "worker done in $(( $(date +%s) - start )) s"
"$PY" - "$DB" <<'PY'
import sys
from db.database import get_engine
from db.results import export_records
from db.device_ceilings import newest_ceilings

eng = get_engine(sys.argv[1])
recs = export_records(eng)
for c in newest_ceilings(eng, {r["device_name"] for r in recs if r.get("device_name")}):
    print(f"ceiling {c['device_name']} {c['dtype']}: matmul {c['matmul_tflops']:.1f} TFLOP/s, copy {c['copy_gbps']:.0f} GB/s")
print(f"{'job':>3} {'sweep':34} {'status':9} {'eager ms':>9} {'comp ms':>9} {'speedup':>7} {'TFLOP/s':>8} "
      f"{'roof %':>6} {'MFU':>6} {'peak MiB e/c':>13}  error")
f = lambda v, fmt: "-" if v is None else format(v, fmt)
for r in recs:
    print(f"{r['job_id']:>3} {r['sweep'][:34]:34} {r['status']:9} {f(r['eager_ms'], '.4f'):>9} {f(r['compiled_ms'], '.4f'):>9} "
          f"{f(r['speedup'], '.3f'):>7} {f(r['achieved_tflops'], '.1f'):>8} {f(r['roofline_pct'], '.1f'):>6} "
          f"{f(r['mfu'], '.1%'):>6} {f(r['peak_mem_eager_mb'], '.0f'):>6}/{f(r['peak_mem_compiled_mb'], '.0f'):<6}  "
          f"{(r['error'] or '')[:150]}")
PY
echo "CUDA processes left: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)"
