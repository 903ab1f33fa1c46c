"""Reproducibility and roofline on one device (issue 5): each config run --repeat N times, each repeat
in its own fresh child; prints every repeat's medians, the spread across repeats, each job's own
round spread and noisy flag, where the compiled call sits on the device's measured roofline, and
whether eager / default / reduce-overhead of one model are separable beyond their spread.

    python -m bench.repeats [--device cuda] [--repeat 3] [--calibrate]
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from sqlalchemy import select

from db.database import get_engine
from db.engine import reading
from db.models import Result
from db.results import export_records

ROOT = Path(__file__).resolve().parent.parent

CONFIGS = {
    "cuda": {
        "complexnet-default": ["--model", "complexnet", "--batch", "32"],
        "sincos-default": ["--model", "sincos", "--batch", "10000"],
        "complexnet-reduce-overhead": ["--model", "complexnet", "--batch", "32", "--mode", "reduce-overhead"],
        "simplenet-default": ["--model", "simplenet", "--batch", "32"],
        "simplenet-reduce-overhead": ["--model", "simplenet", "--batch", "32", "--mode", "reduce-overhead"],
    },
    "cpu": {
        "sincos-default": ["--model", "sincos", "--batch", "64", "--arg", "width=4096", "--iters", "10"],
        "simplenet-default": ["--model", "simplenet", "--batch", "32", "--iters", "10"],
        "simplenet-aot_eager": ["--model", "simplenet", "--batch", "32", "--backend", "aot_eager", "--iters", "10"],
    },
}


def rel_spread(values: list[float]) -> float:
    """(max - min) / median across repeats."""
    xs = sorted(values)
    return (xs[-1] - xs[0]) / xs[len(xs) // 2]


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda", choices=("cpu", "cuda"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--calibrate", action="store_true", help="measure the device's ceilings first")
    p.add_argument("--db")
    p.add_argument("--spawn", default="fork")
    p.add_argument("--only", action="append", help="run only these configs")
    args = p.parse_args()
    tmp = Path(tempfile.mkdtemp())
    db = args.db or f"sqlite:///{tmp / 'repeats.db'}"
    gpu = ["--gpu", "0"] if args.device == "cuda" else []
    if args.calibrate:
        subprocess.run([sys.executable, "-m", "runner", "calibrate", "--device", args.device, "--db", db, *gpu],
                       cwd=ROOT, check=True)
    names = {}
    for name, flags in CONFIGS[args.device].items():
        if args.only and name not in args.only:
            continue
        out = subprocess.run([sys.executable, "-m", "runner", "submit", "--db", db, "--device", args.device,
                              "--repeat", str(args.repeat), "--reruns", "0", "--process-repeats", "1",
                              "--name", name, *flags],  # the repeats asked for, no follow-ups
                             cwd=ROOT, check=True, capture_output=True, text=True)
        for job_id in out.stdout.split():
            names[int(job_id)] = name
    subprocess.run([sys.executable, "-m", "runner", "work", "--drain", "--db", db, "--home", str(tmp / "home"),
                    "--spawn", args.spawn, *gpu], cwd=ROOT, check=True, env=os.environ)
    groups = defaultdict(list)
    engine = get_engine(db)
    with reading(engine) as s:
        details = dict(s.execute(select(Result.job_id, Result.detail)).all())
    for r in export_records(engine):
        if r["job_id"] in names:
            r["detail"] = details.get(r["job_id"]) or {}
            groups[names[r["job_id"]]].append(r)

    print(f"\n{'config':<26} {'eager ms per repeat':<28} {'compiled ms per repeat':<28} {'spread e/c':>11} "
          f"{'round spread c':>14} {'noisy':>5} {'GB/s':>7} {'TFLOP/s':>7} {'roofline':>8} {'bound':>6}")
    for recs in groups.values():
        ok = [r for r in recs if r["status"] == "succeeded"]
        if len(ok) < len(recs):
            print(f"{name:<26} {len(recs) - len(ok)} job(s) did not succeed: " +
                  "; ".join(str(r["error"])[:80] for r in recs if r["status"] != "succeeded"))
        if not ok:
            continue
        e = [r["eager_ms"] for r in ok]
        c = [r["compiled_ms"] for r in ok]
        rs = max(r["compiled_spread"] or 0 for r in ok)
        last = ok[-1]
        pct = f"{last['roofline_pct']:.0f}%" if last["roofline_pct"] is not None else "-"
        print(f"{name:<26} {' '.join(f'{x:.4f}' for x in e):<28} {' '.join(f'{x:.4f}' for x in c):<28} "
              f"{rel_spread(e) * 100:>4.1f}/{rel_spread(c) * 100:<4.1f}% {rs * 100:>13.1f}% "
              f"{str(any(r['noisy'] for r in ok)):>5} {last['achieved_gbps'] or 0:>7.0f} "
              f"{last['achieved_tflops'] or 0:>7.2f} {pct:>8} {last['roofline_bound'] or '-':>6}")
    print("\ntiming methods: " + "; ".join(sorted({r["timing_method"] for rs in groups.values() for r in rs
                                                  if r["timing_method"]})))
    separability(groups)
    return 0


def separability(groups: dict) -> None:
    """Per model: eager (every job's baseline), and each compiled mode; ranges across repeats."""
    by_model = defaultdict(dict)
    for recs in groups.values():
        ok = [r for r in recs if r["status"] == "succeeded"]
        if not ok:
            continue
        model = ok[0]["model"]
        by_model[model].setdefault("eager", []).extend(r["eager_ms"] for r in ok)
        by_model[model][f"{ok[0]['backend']}/{ok[0]['mode']}"] = [r["compiled_ms"] for r in ok]
    for model, sides in by_model.items():
        if len(sides) < 3:
            continue
        ranges = {k: (min(v), max(v)) for k, v in sides.items()}
        order = sorted(ranges, key=lambda k: ranges[k][0])
        print(f"\n{model}: ranges across repeats (ms): " +
              ", ".join(f"{k} {lo:.4f}-{hi:.4f}" for k, (lo, hi) in ((k, ranges[k]) for k in order)))
        for a, b in zip(order, order[1:]):
            verdict = "separated" if ranges[a][1] < ranges[b][0] else "NOT separable (ranges overlap)"
            print(f"  {a} < {b}: {verdict}")


if __name__ == "__main__":
    sys.exit(main())
