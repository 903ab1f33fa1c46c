"""The runner's three speedups beside references a reader trusts, measured in the same child process.

Submits the configs below to a fresh SQLite database and drains them with the real worker (one child per
job) under COMPILE_LAB_CROSSCHECK=1: after its own interleaved rounds, each child times the very same eager
and compiled callables again with
  harness:  PyTorch's compiler benchmark loop (benchmarks/dynamo common.py `timed()`: per repeat, eager
            then compiled, each one call between a sync and a perf_counter read; medians), the reference
            for `speedup` (latency as the caller sees it);
  do_bench: triton.testing.do_bench's median (kernel time from a flushed L2), the reference for
            `gpu_speedup` where the GPU dominates (no side idles the GPU half of its call).
Prints one row per job, then the spread of `speedup` over the repeated configurations.

    python -m bench.runner_vs_references [--out DIR] [--only NAME ...] [--device cpu]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
from pathlib import Path

from sqlalchemy import select

from bench.drive import drain, submit_all
from db.database import get_engine
from db.engine import reading
from db.models import Result
from db.results import export_records

CONFIGS = {  # name: submit flags
    "simplenet-static": ["--model", "simplenet", "--batch", "32", "--dynamic", "false"],
    "simplenet-dynamic": ["--model", "simplenet", "--batch", "32", "--dynamic", "true"],
    "simplenet-reduce-overhead": ["--model", "simplenet", "--batch", "32", "--mode", "reduce-overhead"],
    "mlp-reduce-overhead": ["--model", "mlp", "--batch", "64", "--mode", "reduce-overhead"],
    "sincos": ["--model", "sincos", "--batch", "10000"],
    "complexnet-default": ["--model", "complexnet", "--batch", "32"],
    "complexnet-reduce-overhead": ["--model", "complexnet", "--batch", "32", "--mode", "reduce-overhead"],
    "convnetmix": ["--model", "convnetmix", "--batch", "32"],
    "resnet18-train": ["--model", "resnet18", "--batch", "16", "--task", "training"],
    # three repeats each, in separate child processes: how far `speedup` moves from run to run
    "simplenet-default-x3": ["--model", "simplenet", "--batch", "32", "--repeat", "3"],
    "mlp-default-x3": ["--model", "mlp", "--batch", "64", "--repeat", "3"],
}
HOST_BOUND = 0.5  # runner.child.stats.HOST_BOUND


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--out", default=os.environ.get("OUT") or tempfile.mkdtemp())
    p.add_argument("--only", action="append")
    p.add_argument("--timeout", default="600")
    p.add_argument("--iters", default="30")
    p.add_argument("--device", default="cuda", help="cpu: a smoke run of this script without a GPU")
    p.add_argument("--home", help="the worker's job folders and caches (default: under --out)")
    args = p.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{out / 'bench.db'}"
    names = args.only or list(CONFIGS)
    ids = submit_all(db, {name: CONFIGS[name] for name in names}, "--device", args.device, "--timeout",
                     args.timeout, "--iters", args.iters)
    wall = drain(db, out, args.device, home=args.home, env={**os.environ, "COMPILE_LAB_CROSSCHECK": "1"})
    engine = get_engine(db)
    recs = {r["job_id"]: r for r in export_records(engine)}
    with reading(engine) as s:
        details = dict(s.execute(select(Result.job_id, Result.detail)).all())
    rows = []
    for name, job_ids in ids.items():
        for job_id in job_ids:
            r = recs[job_id]
            r["crosscheck"] = (details.get(job_id) or {}).get("crosscheck") or {}
            rows.append((name, r))
    (out / "records.json").write_text(json.dumps([r for _, r in rows], default=str, indent=1))
    print_table(rows)
    print_repeats(rows)
    first = rows[0][1] if rows else {}
    print(f"\nworker wall time {wall:.0f} s; device: {first.get('device_name')}, torch {first.get('torch_version')}, "
          f"triton {first.get('triton_version')}")
    return 0


def print_table(rows) -> None:
    head = (f"{'config (job)':<31} {'speedup':>7} {'harness':>7} {'diff':>6} | {'thru':>5} | {'gpu':>5} "
            f"{'do_bench':>8} {'diff':>6} | {'eager ms':>8} {'comp ms':>8} {'idle e/c':>9} {'noisy':>5}  host")
    print(head)
    print("-" * len(head))
    for name, r in rows:
        label = f"{name} ({r['job_id']})"
        if r["status"] != "succeeded":
            print(f"{label:<31} {r['status']}: {(r['error'] or '')[:150]}")
            continue
        x = r["crosscheck"]
        gpu_bound = all(v is not None and v < HOST_BOUND for v in (r["eager_host_overhead"], r["compiled_host_overhead"]))
        idle = ("-" if r["eager_host_overhead"] is None else
                f"{r['eager_host_overhead']:.0%}/{r['compiled_host_overhead']:.0%}")
        print(f"{label:<31} {r['speedup']:>7.3f} {_f(x.get('harness_speedup'))} {_pct(r['speedup'], x.get('harness_speedup'))} | "
              f"{_f(r['throughput_speedup'], 5)} | {_f(r['gpu_speedup'], 5)} {_f(x.get('do_bench_speedup'), 8)} "
              f"{_pct(r['gpu_speedup'], x.get('do_bench_speedup')) + ('*' if gpu_bound else ' ')}| "
              f"{r['eager_ms']:>8.4f} {r['compiled_ms']:>8.4f} {idle:>9} {str(r['noisy']):>5}  "
              f"{'host-bound' if r['host_bound'] else ''}")
    print("harness: benchmarks/dynamo timed() loop, interleaved repeats for 2 s in slices between the rounds "
          "(at least 50), medians (the reference for speedup). "
          "do_bench: triton.testing.do_bench median (the reference for gpu_speedup; * = the GPU dominates: no side "
          "idles it half of its call). idle: 1 - GPU time / latency.")


def print_repeats(rows) -> None:
    groups: dict[str, list] = {}
    for name, r in rows:
        if r["status"] == "succeeded":
            groups.setdefault(name, []).append(r)
    for name, rs in groups.items():
        if len(rs) < 2:
            continue
        s = [r["speedup"] for r in rs]
        spread = (max(s) - min(s)) / statistics.median(s)
        noisy = [r["job_id"] for r in rs if r["noisy"]]
        print(f"repeats {name}: speedup {' '.join(f'{v:.3f}' for v in s)}; spread (max-min)/median {spread:.1%}"
              + (f"; noisy jobs {noisy}" if noisy else "; none noisy"))


def _f(x, width: int = 7) -> str:
    return f"{'-':>{width}}" if x is None else f"{x:>{width}.3f}"


def _pct(ours, theirs) -> str:
    if ours is None or theirs is None:
        return f"{'-':>6}"
    return f"{(ours - theirs) / theirs * 100:>+5.1f}%"


if __name__ == "__main__":
    sys.exit(main())
