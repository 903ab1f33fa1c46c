#!/usr/bin/env bash
# The compile's window on a real GPU (runner.child.disturbance.Around with runner.child.gpu_watch), one device call
# of about 3 minutes, from the repo root with the wheels carried (carry: .whl):
#   bash bench/gpu_compile_watch.sh
# Two CUDA jobs through a real worker, one process each: the first on a quiet GPU (nothing may be named), the second
# with a process beside it multiplying matrices on the same GPU from before its compile (it must be named, for the
# compile and for the rounds). Prints each job's first_call_disturbed, the words, and NVML's namespace as the child
# saw it. Output under $OUT/watch.
set -uo pipefail
. bench/device_wheels.sh
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT/watch"
db="sqlite:///$OUT/watch/lab.db"
home=$(mktemp -d)
sub() { python3 -m runner submit --db "$db" --model "$1" --batch "$2" --device cuda --reruns 0 --process-repeats 1; }
sub simplenet 32 > /dev/null
timeout 110 python3 -m runner work --db "$db" --home "$home" --drain > "$OUT/watch/worker-quiet.log" 2>&1
sub mlp 64 > /dev/null
python3 -c "
import torch, time
x = torch.randn(8192, 8192, device='cuda')
end = time.time() + 120
while time.time() < end:
    x @ x
    torch.cuda.synchronize()
" > /dev/null 2>&1 &
burner=$!
timeout 110 python3 -m runner work --db "$db" --home "$home" --drain > "$OUT/watch/worker-busy.log" 2>&1
kill $burner 2>/dev/null
python3 - "$OUT/watch/lab.db" <<'PYEOF' | tee "$OUT/watch/table.txt"
import json, sys
from sqlalchemy import select
from db.database import get_engine
from db.engine import reading
from db.models import Job, Result
engine = get_engine(f"sqlite:///{sys.argv[1]}")
with reading(engine) as s:
    rows = s.execute(select(Job.id, Job.status, Job.spec, Result.first_call_disturbed, Result.disturbed,
                            Result.compiled_first_call_s, Result.detail).outerjoin(Result, Result.job_id == Job.id)).all()
for job_id, status, spec, fcd, dist, first_s, detail in rows:
    d = detail if isinstance(detail, dict) else {}
    said = d.get("first_call_disturbance") or {}
    print(f"job {job_id} {spec['model']} {status}: first_call_disturbed={fcd} compiled_first_call_s={first_s} "
          f"rounds_disturbed={dist}")
    print("  compile causes:", json.dumps(said.get("causes")), "others_cpu_s:", said.get("others_cpu_s"),
          "window_s:", said.get("window_s"))
    print("  compile gpu:", json.dumps(said.get("gpu")), "not_measured:", said.get("not_measured"))
    print("  rounds:", json.dumps((d.get("disturbance") or {}).get("gpu")))
PYEOF
nvidia-smi --query-gpu=name,driver_version --format=csv > "$OUT/gpu.txt" 2>/dev/null
exit 0
