#!/usr/bin/env bash
# Where a host-bound configuration's answer and the compiler harness part (simplenet bs 32 dynamic=true by default):
# the harness loop in fresh processes plain and with the child's compile listeners attached (interleaved), then the
# job's own loop in a bare fresh process (bench.plain_job: runner.child.rounds, no worker), then the worker's children
# forked from its preloaded parent and started fresh, 3 processes each; per job its latencies and what disturbed its
# rounds. Writes into $OUT (default: a temp folder).
#   bench/gpu_runner_vs_harness.sh [MODEL=simplenet BATCH=32 FLAGS="--dynamic true"]   (FLAGS="" : the defaults)
# With COMPILE_LAB_CROSSCHECK=1 each worker job and each of our loop's processes also times the harness loop in its own
# process, between its rounds. PROCESSES=3 a way; HARNESS="plain instrumented" and SPAWNS="fork fresh" pick the ways.
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
OUT=${OUT:-$(mktemp -d)}
MODEL=${MODEL:-simplenet}; BATCH=${BATCH:-32}; FLAGS=${FLAGS---dynamic true}
GPU=$( [ "$($PY -c 'import torch; print(torch.cuda.is_available())')" = True ] && echo "--gpu 0" || echo "" )
DEVICE=$( [ -n "$GPU" ] && echo cuda || echo cpu )
work=$(mktemp -d)
for i in $(seq 0 $((${PROCESSES:-3} - 1))); do
  for v in ${HARNESS:-plain instrumented}; do
    extra=$( [ $v = instrumented ] && echo --instrument )
    TORCHINDUCTOR_CACHE_DIR=$work/$v/inductor TRITON_CACHE_DIR=$work/$v/triton \
      $PY -m bench.harness_reference --model "$MODEL" --batch "$BATCH" $FLAGS --device "$DEVICE" $extra \
      | sed "s/^/harness $v process $i: /" | tee -a "$OUT/runner_vs_harness.txt"
  done
  TORCHINDUCTOR_CACHE_DIR=$work/ours/inductor TRITON_CACHE_DIR=$work/ours/triton \
    $PY -m bench.plain_job --model "$MODEL" --batch "$BATCH" --dynamic none $FLAGS --device "$DEVICE" --iters 30 \
      $( [ "${COMPILE_LAB_CROSSCHECK:-}" = 1 ] && echo --crosscheck ) \
    | $PY -c 'import json,sys; d=json.loads(sys.stdin.read()); print(json.dumps({k: d[k] for k in ("eager_ms","compiled_ms",
"compiled_first_call_s")} | {"speedup": d["eager_ms"] / d["compiled_ms"]} | {k: v for k, v in d.get("crosscheck", {}).items()
if k.startswith("harness")}))' \
    | sed "s/^/our loop process $i: /" | tee -a "$OUT/runner_vs_harness.txt"
done
for spawn in ${SPAWNS:-fork fresh}; do
  db="sqlite:///$work/$spawn.db"
  $PY -m runner submit --db "$db" --model "$MODEL" --batch "$BATCH" $FLAGS --device "$DEVICE" --process-repeats ${PROCESSES:-3} \
    --reruns 0 >/dev/null
  $PY -m runner work --db "$db" --drain --no-calibrate --spawn $spawn --home "$work/home-$spawn" $GPU \
    >"$OUT/worker-$spawn.log" 2>&1
  $PY - "$db" "$spawn" <<'PYEOF' | tee -a "$OUT/runner_vs_harness.txt"
import json, sys
from db.reports import report
from db.database import get_engine
from db.results import export_records
engine = get_engine(sys.argv[1])
for r in export_records(engine, include_raw=True):
    d = (r.get("detail") or {}).get("disturbance") if isinstance(r.get("detail"), dict) else None
    print(f"worker {sys.argv[2]} job {r['job_id']}: eager {r['eager_ms']:.4f} ms compiled {r['compiled_ms']:.4f} ms "
          f"round speedup {r['round_speedup']:.3f} first call {r['first_call_cache']} {r['compiled_first_call_s']:.2f} s")
for row in report(engine):
    print(f"worker {sys.argv[2]} answer: {row['verdict']}")
PYEOF
  $PY - "sqlite:///$work/$spawn.db" <<'PYEOF' | tee -a "$OUT/runner_vs_harness.txt"
import json, sys
from sqlalchemy import select
from db.database import get_engine
from db.engine import reading
from db.models import Result
with reading(get_engine(sys.argv[1])) as s:  # the detail is stored packed (lab.packing): read through the model
    for jid, d in s.execute(select(Result.job_id, Result.detail)).all():
        x = d.get("crosscheck")
        print(f"  job {jid} disturbance: {d.get('disturbance')}"
              + (f"\n  job {jid} in-process harness (COMPILE_LAB_CROSSCHECK=1): {json.dumps(x)}" if x else ""))
PYEOF
  cp "$work/$spawn.db" "$OUT/" 2>/dev/null
done
rm -rf "$work"
