"""What the instrument costs around its measurement, on one GPU, in one command: per seed configuration (the lab's
defaults, bench/honest_answers.CONFIGS), the worker's cold first call against a user's fresh script's (the same
model and step, bench/harness_reference.py --first-calls-only, PROCESSES fresh interpreters, each with a fresh
compile cache as the worker's cold job has); the worker's per-job overhead (claim to stored minus the measurement
and the worker's own start: lab.timeline); and the worker's start to ready, first start and restart, with the hf:
and timm: listing offered.

    python -m bench.gpu_instrument_costs [--cpu --quick] [--processes 3] [--budget-s 510] [-o FILE]

Order: one discarded script (a fresh machine's first compile loads the compiler's binaries and libraries from
disk: named apart, paid by neither side), scripts round 1, then the worker (one `work --drain` from an empty home: a
worker's first jobs), then script rounds 2.. (the order alternates, so a drifting host favours neither side). A run
past --budget-s launches
nothing more and prints what it has. The worker's first call is its record's compiled_first_call_s (the trace
capture torch measures left out, preloaded imports added back); beside it its parts (timed in the child, trace
capture, preloaded imports, the garbage collector's pauses) and the scripts' collector pauses, so a difference
shows where it lies. Targets: every configuration within 10%, overhead p90 <= 1.0 s, ready <= 5 s.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.honest_answers import CONFIGS, SMALL  # noqa: E402
from bench.honest_answers import _pct as pct  # noqa: E402

QUICK = {"simplenet bs32 dynamic=false": ["--model", "simplenet", "--batch", "8", "--dynamic", "false"],
         "mlp bs64 default": ["--model", "mlp", "--batch", "8"]}
TARGETS = {"within": 0.10, "overhead_p90_s": 1.0, "ready_s": 5.0}


def say(*a) -> None:
    print(f"[{time.strftime('%H:%M:%S')}]", *a, flush=True)


def _flag(flags: list[str], name: str, default: str) -> str:
    return flags[flags.index(name) + 1] if name in flags else default


def script(flags: list[str], device: str, cache: Path) -> dict:
    """One fresh interpreter of the reference script, first calls only, in its own fresh compile cache."""
    env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(cache / "inductor"), "TRITON_CACHE_DIR": str(cache / "triton")}
    cmd = [sys.executable, "-m", "bench.harness_reference", "--first-calls-only", "--device", device,
           "--model", flags[1], "--batch", _flag(flags, "--batch", "1"), "--mode", _flag(flags, "--mode", "default"),
           "--dynamic", _flag(flags, "--dynamic", "none"), "--task", _flag(flags, "--task", "inference")]
    cmd += [x for i, x in enumerate(flags) if flags[i - 1] == "--arg" or x == "--arg"]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or ["no output"])[-1][:300]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def worker(db: str, home: Path, device: str, log: Path, extra: tuple[str, ...] = ()) -> dict:
    """`runner work --drain`: seconds from launch to its ready line, to its hf:/timm: listing offered, to its exit."""
    cmd = [sys.executable, "-m", "runner", "work", "--drain", "--no-calibrate", "--db", db, "--home", str(home),
           *(["--gpu", "0"] if device == "cuda" else []), *extra]
    t0 = time.perf_counter()
    marks: dict = {"ready_s": None, "listing_s": None, "listed_s": None}
    with open(log, "w") as out:
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=subprocess.PIPE, text=True)
        for line in proc.stderr:
            out.write(line)
            now = time.perf_counter() - t0
            if marks["ready_s"] is None and " ready: " in line:
                marks["ready_s"] = now
            if marks["listing_s"] is None and ("now offering" in line or "offering the listing kept" in line
                                               or "read from the families' sources" in line):
                marks["listing_s"] = now  # offered: kept, published, read from the sources, or listed
            if marks["listed_s"] is None and "now offering" in line:
                marks["listed_s"] = now  # the listing child's own, where it listed
        rc = proc.wait()
    marks["total_s"], marks["rc"] = time.perf_counter() - t0, rc
    return marks


def submit(db: str, configs: dict, device: str, iters: int) -> None:
    for name, flags in configs.items():
        done = subprocess.run([sys.executable, "-m", "runner", "submit", "--db", db, "--device", device, "--name", name,
                               "--cache", "cold", "--reruns", "0", "--process-repeats", "1", "--iters", str(iters),
                               *flags], cwd=ROOT, capture_output=True, text=True)
        if done.returncode != 0:
            raise SystemExit(f"submit {name}: {done.stderr.strip()}")


def worker_jobs(db: str) -> dict:
    """{configuration: its job's record, detail and overhead} from the worker's database."""
    from sqlalchemy import select

    from db.database import get_engine
    from db.engine import reading
    from db.models import Job, Result, Sweep
    from lab import timeline

    out = {}
    with reading(get_engine(db)) as s:
        rows = s.execute(select(Sweep.name, Job.status, Job.error, Result.compiled_first_call_s, Result.detail)
                         .join(Job, Job.sweep_id == Sweep.id).outerjoin(Result, Result.job_id == Job.id)).all()
    for name, status, error, first_s, detail in rows:
        tl = (detail or {}).get("timeline") if isinstance(detail, dict) else None
        start = sum(e["seconds"] for e in tl or [] if e["phase"] == "worker start")
        phases = timeline.by_phase(tl) if tl else {}
        measured = set(timeline.MEASURED)
        out[name] = {"status": status, "error": error, "first_s": first_s,
                     "parts": (detail or {}).get("first_call_parts") or {},
                     "breakdown": (detail or {}).get("compile_breakdown_s") or {},
                     "overhead_s": timeline.overhead_s(tl) - start if tl else None, "worker_start_s": start,
                     "top": sorted(((p, v) for p, v in phases.items() if p not in measured and p != "worker start"),
                                   key=lambda x: -x[1])[:3]}
    return out


def table(configs: dict, scripts: dict, jobs: dict, starts: dict, device: str) -> str:
    lines = [f"gpu_instrument_costs: {device}, host {os.uname().nodename}, {time.strftime('%Y-%m-%d %H:%M')}",
             f"{'configuration':<34}{'worker s':>9}{'scripts median [min, max] s':>30}{'diff':>8}  ok   "
             f"{'child':>6}{'trace':>6}{'pre':>6}{'gc w':>6}{'gc s':>6}{'overhead s':>11}"]
    within, overheads = [], []
    for name in configs:
        j, s = jobs.get(name) or {}, [r for r in scripts.get(name, []) if "compiled_first_call_s" in r]
        firsts = [r["compiled_first_call_s"] for r in s]
        med = statistics.median(firsts) if firsts else None
        w = j.get("first_s")
        diff = w / med - 1 if w and med else None
        if diff is not None:
            within.append(abs(diff) <= TARGETS["within"])
        overheads.append(j.get("overhead_s"))
        parts = j.get("parts") or {}
        gc_s = statistics.median([r["gc"]["seconds"] for r in s]) if s else None
        cells = [f"{name:<34}", f"{w:>9.2f}" if w else f"{j.get('status', '-'):>9}",
                 f"{med:.2f} [{min(firsts):.2f}, {max(firsts):.2f}] ({len(firsts)})".rjust(30) if firsts else
                 f"{'-':>30}", f"{diff:>+8.1%}" if diff is not None else f"{'-':>8}",
                 "  " + ("yes" if diff is not None and abs(diff) <= TARGETS["within"] else "NO ") + "  "]
        for v in (parts.get("timed_in_child_s"), parts.get("trace_capture_s"), parts.get("preloaded_imports_s"),
                  parts.get("gc_pause_s"), gc_s, j.get("overhead_s")):
            cells.append(f"{v:>6.2f}" if v is not None else f"{'-':>6}")
        lines.append("".join(cells[:-1]) + f"{cells[-1]:>11}")
        if j.get("error"):
            lines.append(f"    worker job failed: {j['error'][:200]}")
        errors = [r["error"] for r in scripts.get(name, []) if "error" in r]
        if errors:
            lines.append(f"    script failed: {errors[0]}")
    p50, p90 = pct(0.5, overheads), pct(0.9, overheads)
    lines += ["", "columns: worker = its record's compiled first call; scripts = fresh interpreters of the reference "
              "script; child = timed in the child; trace = trace capture left out; pre = preloaded imports added "
              "back; gc w / gc s = the collector's pauses in the first call, worker / scripts (median)", "",
              f"cold first call within {TARGETS['within']:.0%} of the scripts' median: {sum(within)} of {len(within)}",
              f"per-job overhead (claim to stored minus measurement and worker start): median "
              f"{p50 if p50 is None else round(p50, 2)} s, p90 {p90 if p90 is None else round(p90, 2)} s "
              f"(target <= {TARGETS['overhead_p90_s']} s)"]
    for what, m in starts.items():
        lines.append(f"worker {what}: ready {_s(m.get('ready_s'))}, hf:/timm: listing offered {_s(m.get('listing_s'))}"
                     f" (target <= {TARGETS['ready_s']} s), the listing child's {_s(m.get('listed_s'))}")
    lines += ["", "the first call's parts, s: worker | scripts' median"]
    for name in configs:
        worker_parts = (jobs.get(name) or {}).get("breakdown") or {}
        runs = [r.get("compile_breakdown_s") or {} for r in scripts.get(name, []) if "compiled_first_call_s" in r]
        names = list(dict.fromkeys([*worker_parts, *(k for r in runs for k in r)]))
        lines.append(f"  {name}: " + "; ".join(
            f"{k} {worker_parts.get(k, 0.0):.2f} | {statistics.median([r.get(k, 0.0) for r in runs]) if runs else 0:.2f}"
            for k in names))
    lines.append("largest overhead phases per job: " + "; ".join(
        f"{n.split(' ')[0]} " + ", ".join(f"{p} {v:.2f}" for p, v in (jobs.get(n) or {}).get("top", []))
        for n in configs))
    return "\n".join(lines)


def _s(v) -> str:
    return f"{v:.1f} s" if v is not None else "not seen"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cpu", action="store_true", help="on the CPU (a check that it runs; the figures are the GPU's)")
    p.add_argument("--quick", action="store_true", help="two small configurations, one script process each")
    p.add_argument("--processes", type=int, default=None, help="fresh script processes per configuration (3)")
    p.add_argument("--iters", type=int, default=None, help="the worker's rounds per job (default: the lab's)")
    p.add_argument("--budget-s", type=float, default=510.0, help="launch nothing more past this many seconds")
    p.add_argument("--only", action="append", default=[], help="configurations whose name holds this text")
    p.add_argument("--no-machine-warmup", action="store_true",
                   help="no discarded script first (a fresh machine's first compile pays loading the compiler from disk)")
    p.add_argument("-o", "--output", help="also write the table to this file")
    p.add_argument("--worker-first", action="store_true",
                   help="the worker's jobs before any script (a short budget then spends itself on scripts)")
    p.add_argument("--scripts-only", action="store_true",
                   help="the fresh scripts alone (beside a sweep's worker on the same machine: bench/gpu_honest.sh)")
    p.add_argument("--worker-arg", action="append", default=[],
                   help="passed to `runner work` (e.g. --worker-arg=--spawn --worker-arg=fresh: children not forked)")
    args = p.parse_args()
    device = "cpu" if args.cpu else "cuda"
    configs = QUICK if args.quick else {n: f + (SMALL.get(f[1], []) if args.cpu else []) for n, f in CONFIGS.items()}
    configs = {n: f for n, f in configs.items() if not args.only or any(o in n for o in args.only)}
    processes = args.processes or (1 if args.quick else 3)
    iters = args.iters or (2 if args.quick else 10)
    began = time.perf_counter()
    left = lambda: args.budget_s - (time.perf_counter() - began)  # noqa: E731
    scripts: dict = {n: [] for n in configs}
    starts: dict = {}
    with tempfile.TemporaryDirectory(prefix="instrument-costs-") as tmp_name:
        tmp = Path(tmp_name)

        def script_round(i: int) -> None:
            for n, flags in configs.items():
                if left() <= 0:
                    say(f"budget spent: script round {i + 1} stops before {n}")
                    return
                r = script(flags, device, tmp / f"script-{i}-{len(scripts[n])}-{abs(hash(n))}")
                scripts[n].append(r)
                say(f"script {i + 1}/{processes} {n}: " + (f"{r['compiled_first_call_s']:.2f} s" if "error" not in r
                                                          else f"failed: {r['error']}"))

        if not args.no_machine_warmup:  # a fresh machine's first compile also loads the compiler's binaries and
            # libraries from disk (ptxas, libcuda's JIT, the page cache): whoever runs first would pay it alone
            first = next(iter(configs))
            r = script(configs[first], device, tmp / "machine-warmup")
            say(f"machine warm-up (discarded): {first}: " + (f"{r['compiled_first_call_s']:.2f} s" if "error" not in r
                                                            else f"failed: {r['error']}"))
        if not args.worker_first:
            script_round(0)
        if args.scripts_only:
            for i in range(1, processes):
                script_round(i)
            print(json.dumps({"scripts": scripts}), flush=True)
            return 0
        db = f"sqlite:///{tmp / 'lab.db'}"
        submit(db, configs, device, iters)
        say(f"the worker drains {len(configs)} job(s) from an empty home (its first start)")
        starts["first start"] = worker(db, tmp / "home", device, tmp / "worker-1.log", tuple(args.worker_arg))
        jobs = worker_jobs(db)
        for n, j in jobs.items():
            say(f"worker {n}: {j['status']}, first call {j['first_s']}, overhead {j['overhead_s']}")
        say("the worker again on an empty queue, same home (a restart: host facts and listing kept)")
        starts["restart"] = worker(f"sqlite:///{tmp / 'empty.db'}", tmp / "home", device, tmp / "worker-2.log")
        for i in range(0 if args.worker_first else 1, processes):
            script_round(i)
        if starts["first start"]["rc"] != 0:
            say("the worker failed; its log:\n" + (tmp / "worker-1.log").read_text()[-3000:])
    text = table(configs, scripts, jobs, starts, device)
    print(text, flush=True)
    if args.output:
        Path(args.output).write_text(text + "\n")
    say(f"done in {time.perf_counter() - began:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
