#!/usr/bin/env bash
# On a GPU host: seed 004's "modes on ComplexModel" at a small image size, max-autotune included: what
# the first call costs per mode (and where it goes: dynamo, AOT, inductor, kernel compile, autotuning),
# the steady state it buys, and the recompiles. Cold compile caches, one worker.
#
#   bench/gpu_max_autotune.sh [IMAGE_SIZE=96] [TIMEOUT_S=420]
#   MODES="max-autotune" bench/gpu_max_autotune.sh 32 560    # one mode only (each mode is one job)
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
SIZE=${1:-96}
TIMEOUT=${2:-420}
MODES=${MODES:-default reduce-overhead max-autotune}
mode_flags=$(for m in $MODES; do printf -- '--mode %s ' "$m"; done)
tmp=$(mktemp -d)
DB=${DB:-sqlite:///$tmp/modes.db}
"$PY" -m runner submit --db "$DB" --device cuda --model complexnet --arg image_size="$SIZE" --batch 32 \
    $mode_flags --cache cold --iters 30 --timeout "$TIMEOUT" \
    --name "complexnet ${SIZE}px modes" >/dev/null
start=$(date +%s)
"$PY" -m runner work --db "$DB" --home "$tmp/home" --drain --no-calibrate 2>"$tmp/worker.log" \
    || { echo "worker failed; log:"; tail -n 40 "$tmp/worker.log"; exit 1; }
echo "worker done in $(( $(date +%s) - start )) s"
"$PY" - "$DB" <<'PY'
import json, sys
from db.engine import get_engine
from db.results import export_records

f = lambda v, fmt: "-" if v is None else format(v, fmt)
print(f"{'mode':16} {'status':9} {'eager 1st s':>11} {'comp 1st s':>10} {'comp 2nd s':>10} {'eager ms':>9} {'comp ms':>9} "
      f"{'speedup':>7} {'break-even':>10} {'recompiles':>10}  first-call breakdown (s)")
for r in export_records(get_engine(sys.argv[1])):
    parts = json.loads(r["compile_breakdown_s"]) if isinstance(r["compile_breakdown_s"], str) else (r["compile_breakdown_s"] or {})
    split = ", ".join(f"{k} {v:.1f}" for k, v in parts.items() if v is not None and v >= 0.05)
    print(f"{r['mode']:16} {r['status']:9} {f(r['eager_first_call_s'], '.2f'):>11} {f(r['compiled_first_call_s'], '.1f'):>10} "
          f"{f(r['compiled_second_call_s'], '.4f'):>10} {f(r['eager_ms'], '.4f'):>9} {f(r['compiled_ms'], '.4f'):>9} "
          f"{f(r['speedup'], '.3f'):>7} {f(r['break_even_calls'], ',.0f'):>10} {f(r['recompiles'], 'd'):>10}  {split}"
          + (f"  ERROR {r['error'][:200]}" if r["error"] else ""))
PY
echo "CUDA processes left: $(nvidia-smi --query-compute-apps=pid --format=csv,noheader | wc -l)"
