#!/usr/bin/env bash
# Issue 26's open H100 questions in one call: (1) timm resnet50 bs 32 inference, where the worker read 1.71x and one
# harness process 1.507x, both sides' latencies 27-36% apart: the harness loop in fresh processes warmed for 0 s
# (the first calls only, as before) and for 3 s after its compile, the GPU's SM clock sampled meanwhile; (2) the
# worker on resnet50 inference and on the 4-layer Llama training step (seq 512), not measured on the fixed code.
#   OUT=... bench/gpu_real_followup.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-$(mktemp -d)}
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,utilization.gpu,clocks_throttle_reasons.active \
  --format=csv,noheader -lms 250 > "$OUT/clocks.csv" 2>/dev/null &
smi=$!
cache=$(mktemp -d)
for w in 0 3; do
  for i in 0 1 2; do
    echo "harness warmup ${w}s process $i: $(date +%T) $(TORCHINDUCTOR_CACHE_DIR=$cache/inductor TRITON_CACHE_DIR=$cache/triton \
      $PY -m bench.harness_reference --model timm:resnet50 --batch 32 --arg image_size=224 --warmup-s $w | tail -1)"
  done
done | tee "$OUT/harness.txt"
$PY -m bench.honest_answers sweep --set real --out "$OUT" --label B \
  --only "resnet50 bs32 inference" --only "llama 4 layers bs8 seq512 training"
kill $smi
tail -n 12 "$OUT/worker-B.log"
$PY - "$OUT/sweep-B.db" <<'PYEOF'
import sys
from db.database import get_engine
from db.results import export_records
engine = get_engine(f"sqlite:///{sys.argv[1]}")
for r in export_records(engine):
    env = (r.get("detail") or {}).get("environment") or {} if isinstance(r.get("detail"), dict) else {}
    print(f"job {r['job_id']} {r['model']}: eager {r['eager_ms']} compiled {r['compiled_ms']} "
          f"cudnn_benchmark {env.get('cudnn_benchmark')}")
PYEOF
$PY -m runner report --db "sqlite:///$OUT/sweep-B.db"
