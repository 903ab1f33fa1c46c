"""Runner timing vs triton.testing.do_bench, on a CUDA machine (issue 2's GPU check).

Submits the configs below to a fresh SQLite database, runs the real worker (one child per job) with
COMPILE_LAB_CROSSCHECK=1, so that each child, after its own interleaved measurement, also times the very
same eager and compiled callables with triton.testing.do_bench (median). Prints one row per config.

    python bench/gpu_runner_vs_do_bench.py [--out DIR] [--only NAME ...]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sqlalchemy import select  # noqa: E402

from db.engine import get_engine, reading  # noqa: E402
from db.models import Result  # noqa: E402
from db.results import export_records  # noqa: E402

CONFIGS = {  # name: submit flags (all on cuda)
    "simplenet-default": ["--model", "simplenet", "--batch", "32"],
    "simplenet-reduce-overhead": ["--model", "simplenet", "--batch", "32", "--mode", "reduce-overhead"],
    "sincos-default": ["--model", "sincos", "--batch", "10000"],
    "complexnet-default": ["--model", "complexnet", "--batch", "32"],
    "complexnet-reduce-overhead": ["--model", "complexnet", "--batch", "32", "--mode", "reduce-overhead"],
    # beyond the must-show: max-autotune on a small model, a bf16 training step, static vs dynamic schedule
    "simplenet-max-autotune": ["--model", "simplenet", "--batch", "32", "--mode", "max-autotune"],
    "mlp-train-bf16": ["--model", "mlp", "--batch", "64", "--task", "training", "--dtype", "bfloat16"],
    "simplenet-static-schedule": ["--model", "simplenet", "--batch", "32", "--dynamic", "false",
                                  "--schedule", "32,64"],
}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
    p.add_argument("--only", action="append")
    p.add_argument("--timeout", default="420")
    p.add_argument("--device", default="cuda", help="cpu: a smoke run of this script without a GPU")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{out / 'gpu.db'}"
    names = args.only or list(CONFIGS)
    ids = {}
    for name in names:
        done = subprocess.run([sys.executable, "-m", "runner", "submit", "--db", db, "--device", args.device,
                               "--timeout", args.timeout, "--name", name, *CONFIGS[name]],
                              cwd=ROOT, capture_output=True, text=True, check=True)
        ids[name] = int(done.stdout.split()[0])
    t0 = time.time()
    env = {**os.environ, "COMPILE_LAB_CROSSCHECK": "1"}
    with open(out / "worker.log", "w") as log:
        subprocess.run([sys.executable, "-m", "runner", "work", "--drain", *(["--gpu", "0"] if args.device == "cuda" else []), "--db", db,
                        "--home", str(out / "home")], cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
    wall = time.time() - t0
    engine = get_engine(db)
    recs = {r["job_id"]: r for r in export_records(engine, include_raw=True)}
    with reading(engine) as s:
        details = dict(s.execute(select(Result.job_id, Result.detail)).all())
    rows = []
    for name in names:
        r = recs[ids[name]]
        r["do_bench_ms"] = (details.get(r["job_id"]) or {}).get("do_bench_ms")
        rows.append((name, r))
    (out / "records.json").write_text(json.dumps([r for _, r in rows], default=str, indent=1))
    print_table(rows)
    print(f"\nworker wall time {wall:.0f} s; device: {rows[0][1].get('device_name')}, "
          f"torch {rows[0][1].get('torch_version')}, triton {rows[0][1].get('triton_version')}")
    return 0


def print_table(rows) -> None:
    head = (f"{'config':<28} {'status':<9} {'eager ms':>9} {'do_bench':>9} {'diff':>6} {'comp ms':>9} "
            f"{'do_bench':>9} {'diff':>6} {'speedup':>7} {'1st call s':>10} {'wall e/c ms':>13} "
            f"{'mem e/c MB':>13} {'acc':>5}")
    print(head)
    print("-" * len(head))
    for name, r in rows:
        if r["status"] != "succeeded":
            print(f"{name:<28} {r['status']:<9} {(r['error'] or '')[:150]}")
            continue
        xb = r.get("do_bench_ms") or {}
        de = _pct(r["eager_ms"], xb.get("eager"))
        dc = _pct(r["compiled_ms"], xb.get("compiled"))
        wall = (f"{r['eager_wall_ms']:.3f}/{r['compiled_wall_ms']:.3f}" if r["eager_wall_ms"] is not None else "-")
        mem = (f"{r['peak_mem_eager_mb']:.0f}/{r['peak_mem_compiled_mb']:.0f}"
               if r["peak_mem_eager_mb"] is not None else "-")
        print(f"{name:<28} {r['status']:<9} {r['eager_ms']:>9.4f} {_f(xb.get('eager')):>9} {de:>6} "
              f"{r['compiled_ms']:>9.4f} {_f(xb.get('compiled')):>9} {dc:>6} {r['speedup']:>7.3f} "
              f"{r['compiled_first_call_s']:>10.2f} {wall:>13} {mem:>13} {str(r['accuracy_ok']):>5}")
    sched = [(n, r) for n, r in rows if r.get("schedule_calls")]
    for name, r in sched:
        calls = ", ".join(f"{c['size']}:{'recompile' if c['recompiled'] else 'reuse'} {c['compiled_s']:.3f}s"
                          for c in r["schedule_calls"] if c.get("compiled_s") is not None)
        print(f"schedule {name}: {calls}")


def _f(x) -> str:
    return "-" if x is None else f"{x:.4f}"


def _pct(ours, theirs) -> str:
    if ours is None or theirs is None:
        return "-"
    return f"{(ours - theirs) / theirs * 100:+.1f}%"


if __name__ == "__main__":
    sys.exit(main())
