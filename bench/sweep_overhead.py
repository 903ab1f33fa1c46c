"""A sweep through the worker against the same configurations as one plain script each (issue: a GPU hour goes to
measurement). One command:

    python -m bench.sweep_overhead --device cuda --iters 10 --also complexnet:32 -o bench/results/h100_sweep_overhead.txt
    python -m bench.sweep_overhead --device cpu --small -o bench/results/cpu_sweep_overhead.txt

The sweep (28 jobs, cold compile cache each): simplenet at batch 8, 32, 128, 512 and mlp at batch 8, 32, 128,
each with mode default and reduce-overhead and dynamic false and true (2x2 per model and batch: 16 + 12).
--small: simplenet and mlp at batch 8, mode default, dynamic false and true (4 jobs). --also MODEL:BATCH adds
a configuration (mode default, dynamic false), e.g. complexnet:32 for the cold first call check.

1. A first `runner work --drain` on the empty database: the worker's first start on this host (its probe and, on
   CUDA, its ceilings measured and stored; the host's facts kept in its home: runner/worker/hostfacts.py), timed apart.
2. The sweep: `runner submit` it, then `runner work --drain` again (preloaded children, the default), timed from
   its launch to its exit; its start to ready from the launch to its "ready" log line (a restart on a host whose
   ceilings and facts are stored: ready before its preloaded parent is, the first job waits for that, and the
   wait is on its timeline and printed). The compile trace is kept (the lab's default), so its cost is in the
   overhead.
3. The plain scripts: `python -m bench.plain_job` per configuration, each a fresh interpreter with a fresh compile
   cache, timed from launch to exit; every other configuration's script runs before the worker, the rest after
   it, so a load that drifts over the run favours neither side.

Prints: the worker's total against the scripts' total and their ratio (target <= 0.5x; also with the first start
counted in); the median per-job
overhead, claim to stored minus the eager first call, compiled first call, warm-up and rounds as the job's
timeline records them (target <= 1.5 s); start to ready with ceilings stored (target <= 5 s); the median of
each overhead phase; and each configuration's compiled first call, the worker's record against its script
(the cold first call as a fresh process pays it). Needs the project's runtime dependencies and torch only.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from db.database import get_engine
from db.results import export_records
from lab.timeline import MEASURED, by_phase, measured_s, total_s
from runner.worker.loop import STARTING

ROOT = Path(__file__).resolve().parent.parent
FULL = [("simplenet", [8, 32, 128, 512]), ("mlp", [8, 32, 128])]
SMALL = [("simplenet", [8]), ("mlp", [8])]
TARGETS = {"ratio": 0.5, "overhead_s": 1.5, "ready_s": 5.0}


def configs(small: bool) -> list[dict]:
    modes = ["default"] if small else ["default", "reduce-overhead"]
    return [{"model": m, "batch": b, "mode": mode, "dynamic": d}
            for m, sizes in (SMALL if small else FULL) for b in sizes for mode in modes for d in ("false", "true")]


def runner(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, check=True, capture_output=True,
                          text=True, **kw)


def submit(db: str, cfgs: list[dict], device: str, iters: int, extra: tuple[str, ...] = ()) -> None:
    """One submit per model (batch x mode x dynamic), so job ids follow configs()'s order. `extra`: more submit
    arguments."""
    for model in dict.fromkeys(c["model"] for c in cfgs):
        mine = [c for c in cfgs if c["model"] == model]
        # no automatic re-runs or process repeats: the sweep is these configurations, one job each, as the scripts
        args = ["submit", "--db", db, "--model", model, "--device", device, "--iters", str(iters), "--cache", "cold",
                "--reruns", "0", "--process-repeats", "1", "--name", f"overhead {model}", *extra]
        for b in dict.fromkeys(c["batch"] for c in mine):
            args += ["--batch", str(b)]
        for m in dict.fromkeys(c["mode"] for c in mine):
            args += ["--mode", m]
        for d in dict.fromkeys(c["dynamic"] for c in mine):
            args += ["--dynamic", d]
        runner(*args)


def run_worker(db: str, home: Path, device: str, log: Path) -> dict:
    """`runner work --drain`: seconds from launch to its ready line and to its exit."""
    args = [sys.executable, "-m", "runner", "work", "--drain", "--db", db, "--home", str(home)]
    if device == "cuda":
        args += ["--gpu", "0"]
    t0 = time.perf_counter()
    ready = None
    with open(log, "w") as out:
        proc = subprocess.Popen(args, cwd=ROOT, stdout=out, stderr=subprocess.PIPE, text=True)
        for line in proc.stderr:
            out.write(line)
            if ready is None and " ready: " in line:
                ready = time.perf_counter() - t0
        rc = proc.wait()
    if rc != 0:
        raise SystemExit(f"the worker exited with {rc}; its log: {log}")
    return {"ready_s": ready, "total_s": time.perf_counter() - t0}


def run_scripts(cfgs: list[dict], device: str, iters: int, tmp: Path, extra: tuple[str, ...] = ()) -> list[dict]:
    out = []
    for i, c in enumerate(cfgs):
        cache = tmp / f"plain-cache-{i}"
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TRITON_CACHE_DIR": str(cache / "triton")}
        if device == "cuda":
            env["CUDA_VISIBLE_DEVICES"] = env.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]
        t0 = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "bench.plain_job", "--model", c["model"], "--batch", str(c["batch"]),
                               "--mode", c["mode"], "--dynamic", c["dynamic"], "--device", device, "--iters", str(iters), *extra],
                              cwd=ROOT, env=env, check=True, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        out.append({**c, **json.loads(done.stdout.strip().splitlines()[-1]), "wall_s": wall})
    return out


def succeeded(db: str) -> list[dict]:
    """Every job's export record; a bench whose job failed stops, naming it and why."""
    found = export_records(get_engine(db))
    bad = [r for r in found if r["status"] != "succeeded"]
    if bad:
        raise SystemExit(f"{len(bad)} job(s) did not succeed: " + "; ".join(f"#{r['job_id']} {r['error']}" for r in bad))
    return found


def emit(text: str, output: str | None) -> None:
    """The report on stdout, and into `output` when given."""
    print(text)
    if output:
        Path(output).parent.mkdir(parents=True, exist_ok=True)
        Path(output).write_text(text + "\n")


def median(xs: list[float]) -> float | None:
    xs = sorted(x for x in xs if x is not None)
    if not xs:
        return None
    n = len(xs)
    return xs[n // 2] if n % 2 else (xs[n // 2 - 1] + xs[n // 2]) / 2


def report(cfgs, recs, worker, first, scripts, device, iters) -> str:
    lines = []
    say = lines.append
    tls = [r["timeline"] for r in recs]
    overheads = [total_s(t) - measured_s(t) for t in tls if t]
    script_total = sum(s["wall_s"] for s in scripts)
    ratio = worker["total_s"] / script_total
    med_overhead = median(overheads)
    say(f"sweep_overhead: {len(cfgs)} jobs on {device}, iters {iters}, cold cache, python {platform.python_version()}, "
        f"host {platform.node()}")
    say(f"{'':<44}{'value':>10}  target  holds")
    waited = [e["seconds"] for t in tls if t for e in t if e["phase"] == STARTING]
    rows = [("first start on this host (empty queue), s", first["total_s"], None),
            ("worker total, restarted (launch to exit), s", worker["total_s"], None),
            ("plain scripts total (fresh process each), s", script_total, None),
            ("worker / scripts", ratio, TARGETS["ratio"]),
            ("worker / scripts, the first start counted in", (worker["total_s"] + first["total_s"]) / script_total,
             TARGETS["ratio"]),
            ("median overhead per job, s", med_overhead, TARGETS["overhead_s"]),
            ("worker start to ready (first start), s", first["ready_s"], None),
            ("worker start to ready, ceilings stored, s", worker["ready_s"], TARGETS["ready_s"]),
            ("first job's wait for the worker's start, s", sum(waited), None)]
    for name, value, target in rows:
        holds = "" if target is None or value is None else ("yes" if value <= target else "NO")
        say(f"{name:<44}{value if value is not None else float('nan'):>10.3f}  "
            f"{'<= ' + format(target, 'g') if target is not None else '':<6}  {holds}")
    if tls and all(tls):
        say("")
        say("median seconds per phase over the jobs (overhead phases; measurement phases marked *):")
        phases: dict[str, list[float]] = {}
        for t in tls:
            for p, s in by_phase(t).items():
                phases.setdefault(p, []).append(s)
        ordered = sorted(phases.items(), key=lambda kv: -median(kv[1] + [0.0] * (len(tls) - len(kv[1]))))
        for p, xs in ordered:
            xs = xs + [0.0] * (len(tls) - len(xs))
            say(f"  {'*' if p in MEASURED else ' '} {p:<34}{median(xs):>9.3f}{max(xs):>9.3f} max")
    say("")
    say(f"{'configuration':<40}{'job':>5}{'claim->stored':>14}{'overhead':>9}{'script':>8}"
        f"{'1st compiled: worker':>22}{'script':>8}{'diff':>7}")
    diffs = []
    for c, r, s in zip(cfgs, recs, scripts):
        name = f"{c['model']} bs{c['batch']} {c['mode']} dynamic={c['dynamic']}"
        tl = r["timeline"]
        w_first, s_first = r["compiled_first_call_s"], s["compiled_first_call_s"]
        diff = (w_first / s_first - 1) if w_first and s_first else None
        diffs.append(diff)
        say(f"{name:<40}{r['job_id']:>5}{total_s(tl) or float('nan'):>14.2f}"
            f"{(total_s(tl) - measured_s(tl)) if tl else float('nan'):>9.3f}{s['wall_s']:>8.2f}"
            f"{w_first or float('nan'):>22.3f}{s_first:>8.3f}{(diff or 0) * 100:>6.1f}%")
    say(f"compiled first call, worker vs its plain script: median {median(diffs) * 100:+.1f}%, "
        f"range {min(diffs) * 100:+.1f}% .. {max(diffs) * 100:+.1f}% (the worker's includes the named preloaded "
        "imports and the trace capture; see docs/measurement.md)")
    return "\n".join(lines)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu", choices=("cpu", "cuda"))
    p.add_argument("--iters", type=int, default=10)
    p.add_argument("--small", action="store_true", help="4 jobs (simplenet and mlp at batch 8, mode default)")
    p.add_argument("--also", action="append", default=[], metavar="MODEL:BATCH",
                   help="one more configuration (mode default, dynamic false), e.g. complexnet:32 for the cold first "
                        "call check on a larger model")
    p.add_argument("-o", "--output", help="also write the report to this file")
    p.add_argument("--keep", help="keep the database, job folders and logs in this folder")
    args = p.parse_args()
    cfgs = configs(args.small)
    for extra in args.also:
        model, _, batch = extra.partition(":")
        cfgs.append({"model": model, "batch": int(batch or 32), "mode": "default", "dynamic": "false"})
    with tempfile.TemporaryDirectory() as scratch:
        tmp = Path(args.keep or scratch)
        tmp.mkdir(parents=True, exist_ok=True)
        db = f"sqlite:///{tmp / 'sweep.db'}"
        first = run_worker(db, tmp / "home", args.device, tmp / "worker-first.log")
        submit(db, cfgs, args.device, args.iters)
        print(f"{len(cfgs)} jobs submitted; half the plain scripts, the worker, the other half", file=sys.stderr)
        # half the scripts before the worker and half after it (ABBA over the sweep), so a host whose load drifts
        # over the run (a shared box) does not favour whichever side ran in its quieter stretch
        before = run_scripts(cfgs[0::2], args.device, args.iters, tmp / "before")
        worker = run_worker(db, tmp / "home", args.device, tmp / "worker.log")
        found = succeeded(db)
        by_key = {(r["model"], r["batch_size"], r["mode"], json.dumps(r["dynamic"])): r for r in found}
        recs = [by_key[(c["model"], c["batch"], c["mode"], c["dynamic"])] for c in cfgs]
        after = run_scripts(cfgs[1::2], args.device, args.iters, tmp / "after")
        scripts = [None] * len(cfgs)
        scripts[0::2], scripts[1::2] = before, after
        text = report(cfgs, recs, worker, first, scripts, args.device, args.iters)
    emit(text, args.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
