"""Mixed precision and the compiler's story on a GPU, through the real worker (one child per job).

Seed 003's claim (ResNet-18 training: compile helps more with AMP) re-measured: resnet18 training float32 vs
amp-bfloat16, eager and compiled in each job; and what the compiler did on CUDA: kernels per call, caches,
CUDA graphs health for reduce-overhead, compile scope blocks vs model on the transformer.

    python -m bench.gpu_amp_and_story [--out DIR] [--device cpu --small]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
from pathlib import Path

from sqlalchemy import select

from bench.drive import ROOT, drain, submit_all
from db.database import get_engine
from db.engine import reading
from db.models import Result
from db.results import export_records

CONFIGS = {  # name: submit flags (GPU sizes; --small shrinks them for a CPU smoke run)
    "resnet18-train-fp32": ["--model", "resnet18", "--batch", "64", "--task", "training"],
    "resnet18-train-amp-bf16": ["--model", "resnet18", "--batch", "64", "--task", "training", "--dtype", "amp-bfloat16"],
    "complexnet-reduce-overhead": ["--model", "complexnet", "--batch", "32", "--mode", "reduce-overhead"],
    "mlp-default": ["--model", "mlp", "--batch", "64"],
    # an input mutation: reduce-overhead's CUDA graphs are skipped, and the record must say why
    "mutates-input-reduce-overhead": ["--model", "mutates_input", "--batch", "32", "--mode", "reduce-overhead",
                                      "--models-dir", "tests/fixture_models"],
    "transformer-scope": ["--model", "transformer", "--batch", "8", "--arg", "layers=6", "--scope", "model",
                          "--scope", "blocks"],
}
SMALL = {"64": "4", "32": "4", "8": "2", "layers=6": "layers=2"}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
    p.add_argument("--device", default="cuda")
    p.add_argument("--small", action="store_true", help="tiny sizes (a CPU smoke run of this script)")
    p.add_argument("--only", action="append")
    p.add_argument("--iters", default="20")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{out / 'bench.db'}"
    chosen = {name: [SMALL.get(f, f) if args.small else f for f in CONFIGS[name]] for name in args.only or CONFIGS}
    ids = submit_all(db, chosen, "--device", args.device, "--iters", args.iters, "--timeout", "900")
    wall = drain(db, out, args.device, "--models-dir", str(ROOT / "tests" / "fixture_models"))
    engine = get_engine(db)
    recs = {r["job_id"]: r for r in export_records(engine)}
    with reading(engine) as s:
        details = dict(s.execute(select(Result.job_id, Result.detail)).all())
    print(f"{'config (job)':<34} {'speedup':>7} {'eager ms':>9} {'comp ms':>9} {'first s':>7} {'kernels e>c':>12} "
          f"{'host ops e>c':>12} {'autocast':>12} {'scope':>6}  cudagraphs / caches")
    for name, job_ids in ids.items():
        for job_id in job_ids:
            r, d = recs[job_id], details.get(job_id) or {}
            label = f"{name} ({job_id})"
            if r["status"] != "succeeded":
                print(f"{label:<34} {r['status']}: {(r['error'] or '')[:160]}")
                continue
            graphs = d.get("cudagraphs") or {}
            caches = d.get("cache_layers") or {}
            print(f"{label:<34} {r['speedup']:>7.3f} {r['eager_ms']:>9.3f} {r['compiled_ms']:>9.3f} "
                  f"{r['compiled_first_call_s']:>7.1f} {_pair(r, 'kernels'):>12} {_pair(r, 'host_ops'):>12} "
                  f"{str((d.get('env') or {}).get('autocast')):>12} {str(r.get('scope')):>6}  "
                  f"{json.dumps(graphs, default=str)[:160] if graphs else ''} "
                  f"{json.dumps({k: v for k, v in caches.items() if isinstance(v, dict)}, default=str)[:120]}")
    first = next(iter(recs.values()), {})
    print(f"\nworker wall time {wall:.0f} s; device: {first.get('device_name')}, torch {first.get('torch_version')}, "
          f"triton {first.get('triton_version')}")
    (out / "records.json").write_text(json.dumps(list(recs.values()), default=str, indent=1))
    return 0


def _pair(r: dict, what: str) -> str:
    e, c = r.get(f"eager_{what}"), r.get(f"compiled_{what}")
    return "-" if e is None and c is None else f"{e}>{c}"


if __name__ == "__main__":
    sys.exit(main())
