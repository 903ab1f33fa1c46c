#!/usr/bin/env bash
# Issue 23: the worker's children read a launch-bound call slower than plain processes do (simplenet bs 32 eager
# 0.127-0.147 ms against the harness's 0.085-0.092 ms on one H100 host). Where is it lost? One configuration, per-call
# medians on the host clock, in: (1) fresh harness processes; (2) the same with the worker's compile listeners
# attached; (3) worker jobs forked from the preloaded parent, each also timing the harness loop inside its own child
# (COMPILE_LAB_CROSSCHECK=1); (4) the same with --spawn fresh (a new interpreter per job).
#   OUT=... bench/gpu_child_latency.sh
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
OUT=${OUT:-$(mktemp -d)}
MODEL=${MODEL:-simplenet}
BATCH=${BATCH:-32}
for i in 1 2 3; do
  echo "harness $i: $($PY -m bench.harness_reference --model "$MODEL" --batch "$BATCH" --dynamic false | tail -1)"
done
for i in 1 2 3; do
  echo "harness+listeners $i: $($PY -m bench.harness_reference --model "$MODEL" --batch "$BATCH" --dynamic false \
    --instrument | tail -1)"
done
for spawn in fork fresh; do
  db="sqlite:///$OUT/$spawn.db"
  $PY -m runner submit --db "$db" --model "$MODEL" --batch "$BATCH" --dynamic false --device cuda --repeat 3 \
    --process-repeats 1 --reruns 0 --trace false > /dev/null 2>&1
  COMPILE_LAB_CROSSCHECK=1 $PY -m runner work --db "$db" --home "$OUT/home-$spawn" --spawn "$spawn" --drain \
    2> "$OUT/worker-$spawn.log"
  $PY - "$db" "$spawn" <<'PYEOF'
import sys
from sqlalchemy import select
from db.database import get_engine
from db.engine import reading
from db.models import Result
with reading(get_engine(sys.argv[1])) as s:
    for job_id, eager, compiled, detail in s.execute(select(Result.job_id, Result.eager_ms, Result.compiled_ms,
                                                            Result.detail).order_by(Result.job_id)):
        x = (detail or {}).get("crosscheck") or {}
        host = ((detail or {}).get("host_state") or {}).get("before_rounds") or {}
        print(f"worker --spawn {sys.argv[2]} job {job_id}: eager {eager:.4f} ms compiled {compiled:.4f} ms | in-child "
              f"harness eager {x.get('harness_eager_ms', float('nan')):.4f} compiled "
              f"{x.get('harness_compiled_ms', float('nan')):.4f} | cpu {host.get('cpu')} of {host.get('affinity')}, "
              f"torch threads {host.get('torch_threads')}")
PYEOF
done
