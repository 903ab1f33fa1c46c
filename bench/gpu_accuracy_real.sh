#!/usr/bin/env bash
# Real models by name on a GPU through the real worker (one process each), beside the harness reference (2 fresh
# processes each): the answer against the reference and the accuracy check's verdict, what it compared and the worst
# tensor. Run on the device machine from the repo root, with the database wheels carried (bench/README.md):
#   bash bench/gpu_accuracy_real.sh OUTDIR
set -uo pipefail
out=${1:?out dir}
O=(--set real --only "gpt2 bs8 seq512 inference" --only "bert-mlm bs32 seq512 training" --only "resnet50 bs32 inference")
python3 -m bench.honest_answers sweep --out "$out" --label A "${O[@]}"
python3 -m bench.honest_answers reference --out "$out" "${O[@]}" --ref-processes 2
python3 -m bench.honest_answers table --out "$out" "${O[@]}" --write "$out/table.txt"
python3 - "$out" <<'PY'
import json, sys
from db.database import get_engine
from db.results import export_records
for r in export_records(get_engine(f"sqlite:///{sys.argv[1]}/sweep-A.db")):
    check = r.get("accuracy_check") or {}
    worst = check.get("worst") or {}
    print(f"job {r['job_id']} {r['model']} {r['task']}: {r['status']} speedup {r['speedup']} accuracy_ok "
          f"{r['accuracy_ok']} compared {check.get('compared')} reference {check.get('reference')} failing "
          f"{check.get('failing')} worst {json.dumps(worst)}")
PY
