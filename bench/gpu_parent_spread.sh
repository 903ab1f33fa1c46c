#!/usr/bin/env bash
# Do a worker's forked children share a process effect? Host-bound configurations, each in 3 processes under each of
# PARENTS workers (one preloaded parent each, forked children), then under a worker that starts every child fresh;
# per job its paired speedup, then per configuration the spread within one parent against the spread between parents
# (log scale, standard deviations). Writes into $OUT (default: a temp folder).
#   bench/gpu_parent_spread.sh [PARENTS=3] [CONFIGS="simplenet:32:--dynamic false;mlp:64:"]
set -uo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-$( [ -x .venv/bin/python ] && echo .venv/bin/python || echo python3 )}
OUT=${OUT:-$(mktemp -d)}
PARENTS=${PARENTS:-3}
CONFIGS=${CONFIGS:-"simplenet:32:--dynamic false;mlp:64:"}
GPU=$( [ "$($PY -c 'import torch; print(torch.cuda.is_available())')" = True ] && echo "--gpu 0" || echo "" )
DEVICE=$( [ -n "$GPU" ] && echo cuda || echo cpu )
work=$(mktemp -d)
run_worker() {  # $1: label, $2: spawn
  db="sqlite:///$work/$1.db"
  IFS=';' read -ra cs <<< "$CONFIGS"
  for c in "${cs[@]}"; do
    IFS=':' read -r model batch flags <<< "$c"
    # shellcheck disable=SC2086
    $PY -m runner submit --db "$db" --model "$model" --batch "$batch" $flags --device "$DEVICE" --process-repeats 3 \
      --reruns 0 >/dev/null
  done
  $PY -m runner work --db "$db" --drain --no-calibrate --spawn "$2" --home "$work/home" $GPU >"$OUT/worker-$1.log" 2>&1
}
for i in $(seq 1 "$PARENTS"); do run_worker "parent$i" fork; done
run_worker fresh fresh
$PY - "$work" "$PARENTS" <<'PYEOF' | tee "$OUT/parent_spread.txt"
import math, sqlite3, statistics, sys
from collections import defaultdict
work, parents = sys.argv[1], int(sys.argv[2])
labels = [f"parent{i}" for i in range(1, parents + 1)] + ["fresh"]
by = defaultdict(lambda: defaultdict(list))
for label in labels:
    q = ("select json_extract(j.spec, '$.model'), json_extract(j.spec, '$.batch_size'), r.eager_ms, r.compiled_ms, "
         "r.round_speedup from results r join jobs j on j.id = r.job_id order by j.id")
    for model, batch, e, c, s in sqlite3.connect(f"{work}/{label}.db").execute(q):
        by[f"{model} bs{batch}"][label].append(s)
        print(f"{label:8s} {model} bs{batch}: eager {e:.4f} ms compiled {c:.4f} ms speedup {s:.3f}")
print()
print(f"{'configuration':18s} {'within a parent':>16s} {'between parents':>16s} {'fresh children':>15s}  parents' means")
for cfg, d in by.items():
    logs = {k: [math.log(x) for x in v] for k, v in d.items() if v}
    forked = [k for k in logs if k != "fresh"]
    within = math.sqrt(statistics.fmean(statistics.variance(logs[k]) for k in forked if len(logs[k]) > 1))
    means = [statistics.fmean(logs[k]) for k in forked]
    # between parents: the spread of the parents' means, less what their own within-parent spread explains
    between = math.sqrt(max(0.0, statistics.variance(means) - within ** 2 / 3)) if len(means) > 1 else float("nan")
    fresh = statistics.stdev(logs["fresh"]) if len(logs.get("fresh", [])) > 1 else float("nan")
    print(f"{cfg:18s} {within:16.1%} {between:16.1%} {fresh:15.1%}  " + " ".join(f"{math.exp(m):.3f}" for m in means))
PYEOF
rm -rf "$work"
