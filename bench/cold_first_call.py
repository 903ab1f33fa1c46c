"""Is a worker's cold first call what a user's fresh script pays? The same configuration, cold cache, run N times
as a worker's job and N times as a plain script in a fresh interpreter (bench/plain_job.py), alternating.

    python -m bench.cold_first_call [--device cuda] [--repeat 3] [--model simplenet:32 --model complexnet:32]
                                    [--trace false|both] [-o FILE]

The worker's figure is its reported compiled first call: what the child timed plus the named part preloading
took from it (runner/child/preload.py). The target: the medians within ±15%. Both sides' first calls are cut into
the same parts (runner.child.capture.introspect.compile_breakdown) and printed side by side, so a difference shows where it
lies. One `runner work --drain` per repeat (each its own preloaded parent, as a worker started afresh); the
scripts and the worker alternate repeat by repeat, so a drifting host load favours neither.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench.sweep_overhead import emit, median, run_scripts, run_worker, submit, succeeded

TARGET = 0.15
DEFAULT_MODELS = ["simplenet:32", "complexnet:32"]


def spread(xs: list[float]) -> str:
    return f"{median(xs):.3f} [{min(xs):.3f}, {max(xs):.3f}]"


def report(models, workers: dict, scripts: dict, device: str, repeat: int, instrumented: dict) -> str:
    """`workers`: per trace setting ("true", "false"), each model's worker records."""
    lines = [f"cold_first_call: {device}, {repeat} repeat(s) a side, mode default, dynamic=false, cold cache, "
             f"the worker's jobs with trace={' and '.join(workers)}",
             f"{'configuration':<18}{'worker median [min, max] s':>30}{'script median [min, max] s':>30}"
             f"{'diff':>8}  holds (±{TARGET:.0%})"]
    for trace, worker in workers.items():
        for m in models:
            w = [r["compiled_first_call_s"] for r in worker[m]]
            s = [r["compiled_first_call_s"] for r in scripts[m]]
            diff = median(w) / median(s) - 1
            name = m if len(workers) == 1 else f"{m} trace={trace}"
            lines.append(f"{name:<18}{spread(w):>30}{spread(s):>30}{diff:>+8.1%}  "
                         f"{'yes' if abs(diff) <= TARGET else 'NO'}")
    for m in models:
        if instrumented[m]:
            x = [r["compiled_first_call_s"] for r in instrumented[m]]
            s = [r["compiled_first_call_s"] for r in scripts[m]]
            lines.append(f"{m:<18}{'script + listeners':>30}{spread(x):>30}{median(x) / median(s) - 1:>+8.1%}  "
                         "(the plain script with the worker's compile listeners, against the plain script)")
    sides = [("worker" if len(workers) == 1 else f"worker trace={t}", w) for t, w in workers.items()]
    sides += [("script", scripts)] + ([("script + listeners", instrumented)] if any(instrumented.values()) else [])
    lines.append("")
    lines.append("the first call's parts, medians (s): " + " | ".join(name for name, _ in sides))
    for m in models:
        parts = list(dict.fromkeys(k for _, side in sides for r in side[m] for k in (r.get("compile_breakdown_s") or {})))
        lines.append(f"  {m}")
        for part in parts:
            vals = [median([(r.get("compile_breakdown_s") or {}).get(part, 0.0) for r in side[m]]) for _, side in sides]
            lines.append(f"    {part:<52}" + " | ".join(f"{v:8.3f}" for v in vals))
    lines += ["", "each repeat's compiled first calls, s, the worker's in the order it ran them (#: its place in that "
              "worker) | the scripts'"]
    for trace, worker in workers.items():
        for i in range(repeat):
            ran = sorted((w[i]["job_id"], m, w[i]["compiled_first_call_s"]) for m, w in worker.items() if len(w) > i)
            said = "  ".join(f"#{n + 1} {m} {s:.3f}" for n, (_, m, s) in enumerate(ran))
            plain = "  ".join(f"{m} {scripts[m][i]['compiled_first_call_s']:.3f}" for m in models if len(scripts[m]) > i)
            lines.append(f"  repeat {i + 1}{f' trace={trace}' if len(workers) > 1 else ''}: {said} | {plain}")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--model", action="append", metavar="MODEL:BATCH", help=f"default: {' '.join(DEFAULT_MODELS)}")
    p.add_argument("--trace", choices=("true", "false", "both"), default="true",
                   help="the worker's jobs keep their compile trace (the lab's default) or not; both: a worker of "
                        "each per repeat, one after the other")
    p.add_argument("--instrumented", action="store_true",
                   help="also a third side: the plain script with the worker's compile listeners attached")
    p.add_argument("-o", "--output", help="also write the report to this file")
    p.add_argument("--keep", help="keep the databases, job folders and logs in this folder")
    args = p.parse_args()
    models = args.model or DEFAULT_MODELS
    cfgs = [{"model": m.partition(":")[0], "batch": int(m.partition(":")[2] or 32), "mode": "default",
             "dynamic": "false"} for m in models]
    traces = ("true", "false") if args.trace == "both" else (args.trace,)
    workers: dict = {t: {m: [] for m in models} for t in traces}
    scripts: dict = {m: [] for m in models}
    instrumented: dict = {m: [] for m in models}
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(args.keep or scratch)
        for i in range(args.repeat):
            for m, row in zip(models, run_scripts(cfgs, args.device, args.iters, tmp / f"scripts-{i}")):
                scripts[m].append(row)
            if args.instrumented:
                for m, row in zip(models, run_scripts(cfgs, args.device, args.iters, tmp / f"instrumented-{i}",
                                                      ("--instrument",))):
                    instrumented[m].append(row)
            for trace in traces if i % 2 == 0 else traces[::-1]:  # alternating which goes first
                db = f"sqlite:///{tmp / f'worker-{i}-{trace}.db'}"
                submit(db, cfgs, args.device, args.iters, ("--trace", trace))
                run_worker(db, tmp / f"home-{i}-{trace}", args.device, tmp / f"worker-{i}-{trace}.log")
                by_model = {f"{r['model']}:{r['batch_size']}": r for r in succeeded(db)}
                for m in models:
                    workers[trace][m].append(by_model[m])
            print(f"repeat {i + 1} of {args.repeat} done", file=sys.stderr)
    text = report(models, workers, scripts, args.device, args.repeat, instrumented)
    emit(text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
