"""Are a worker's processes of one configuration independent samples of a fresh process? Children forked from one
preloaded parent share its memory layout (where the interpreter's and torch's objects lie); fresh interpreters each
get their own. Here every process loads the same compiled code (one warm compile cache, made first by a fresh
process), so the compile is not what differs: only how the process came to be. `--parents` parents (each a fresh
interpreter that preloads as the worker's does, runner.child.zygote._preload) fork `--children` children each, one
after another, with the child's heap made its own as the worker's are (runner.child.prewarm.own_heap); beside them,
as many fresh interpreters as there are children in all. Parents and fresh processes alternate.

    python -m bench.parent_effect [--device cuda] [--model simplenet:32] [--parents 3] [--children 3] [-o FILE]

Prints each process's steady-state speedup (eager ms / compiled ms, bench/plain_job.py's medians) grouped by
parent, and the spread of their logs: between parents, within a parent, and between fresh processes. If the
between-parent spread is the fresh processes' and the within-parent spread is much smaller, a sweep's forked
processes of one worker do not show the spread a fresh process's user sees.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.fork_vs_fresh import forked, fresh, job_argv
from bench.sweep_overhead import emit

ROOT = Path(__file__).resolve().parent.parent


def speedup(row: dict) -> float:
    return row["eager_ms"] / row["compiled_ms"]


def sd(xs: list[float]) -> float:
    return statistics.stdev(xs) if len(xs) > 1 else 0.0


def parent(argv: list[str], cache: Path, children: int) -> int:
    """The parent's role (a fresh interpreter): preload as the worker's parent does, fork `children` children one
    after another into the warm `cache`, one JSON line each."""
    from runner.child.zygote import _preload

    _preload()
    for i in range(children):
        work = cache.parent / f"child-{os.getpid()}-{i}"
        work.mkdir(parents=True, exist_ok=True)
        row = forked(argv, work, freeze=False, own=True, shared_cache=cache)
        print(json.dumps(row), flush=True)
    return 0


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--model", default="simplenet:32", metavar="MODEL:BATCH[:MODE]")
    p.add_argument("--parents", type=int, default=3)
    p.add_argument("--children", type=int, default=3)
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--as-parent", metavar="CACHE", help=argparse.SUPPRESS)
    p.add_argument("-o", "--output")
    args = p.parse_args()
    name, _, rest = args.model.partition(":")
    batch, _, mode = rest.partition(":")
    argv = job_argv(name, int(batch or 32), args.device, mode or "default", args.iters)
    if args.as_parent:
        return parent(argv, Path(args.as_parent), args.children)
    with tempfile.TemporaryDirectory() as tmp:
        cache = Path(tmp) / "warm"
        fresh(argv, cache)  # the one compile every process below loads
        groups: dict[str, list[float]] = {}
        for n in range(args.parents):
            done = subprocess.run([sys.executable, "-m", "bench.parent_effect", "--as-parent", str(cache),
                                   "--children", str(args.children), "--device", args.device, "--model", args.model,
                                   "--iters", str(args.iters)], cwd=ROOT, check=True, capture_output=True, text=True)
            groups[f"parent {n + 1}"] = [speedup(json.loads(line)) for line in done.stdout.splitlines()
                                         if line.startswith("{")]
            groups.setdefault("fresh", []).extend(speedup(fresh(argv, cache)) for _ in range(args.children))
            print(f"parent {n + 1} of {args.parents} done", file=sys.stderr, flush=True)
    logs = {k: [math.log(x) for x in v] for k, v in groups.items()}
    parents = [k for k in logs if k != "fresh"]
    within = [x - sum(v) / len(v) for k in parents for v in [logs[k]] for x in v]
    pooled_within = math.sqrt(sum(d * d for d in within) / max(1, len(within) - len(parents)))
    means = [sum(logs[k]) / len(logs[k]) for k in parents]
    lines = [f"parent_effect: {args.device}, {args.model}, {args.parents} parents x {args.children} forked children, "
             f"{len(groups['fresh'])} fresh processes, one warm compile cache for all",
             "steady-state speedup (eager ms / compiled ms) per process:"]
    lines += [f"  {k:<10} " + ", ".join(f"{x:.3f}" for x in v) for k, v in groups.items()]
    lines += ["spread of log speedups (one standard deviation):",
              f"  within a parent (pooled)        {pooled_within:.1%}",
              f"  between the parents' means      {sd(means):.1%}",
              f"  between fresh processes         {sd(logs['fresh']):.1%}"]
    emit("\n".join(lines), args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
