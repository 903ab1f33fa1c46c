"""Does the racing search (runner advise) find what the full sweep finds, for less? For one model per invocation (a
seed model, a small hf: GPT-2, timm:resnet18) it runs the search, then the full sweep of the SAME candidates (the
settings the search raced: inductor; modes default, reduce-overhead, max-autotune-no-cudagraphs, max-autotune;
dynamic false and true; scope model and blocks where the model names its blocks; each in the lab's default 2
processes, re-runs on), through one real worker on one device, and prints side by side:

  - the search's recommendation and its interval, the full sweep's best configuration and its interval;
  - whether the two intervals overlap, and whether they name the same settings;
  - the device-seconds each spent (a job's claim to its stored end), and the search's share (target: <= 40%).

    python -m bench.advise_vs_full --out DIR --model mlp --deadline 530     # on a GPU box: one model a call
    python -m bench.advise_vs_full --out DIR --cpu --model mlp               # on the CPU: tiny sizes, end to end
    python -m bench.advise_vs_full --out DIR --model gpt2 --part search     # where one call cannot hold both: the
    python -m bench.advise_vs_full --out DIR --model gpt2 --part full       # search, then (DIR carried) the full sweep
    python -m bench.advise_vs_full --out DIR --model gpt2 --part full --half 1   # a full sweep too long for one call:
    python -m bench.advise_vs_full --out DIR --model gpt2 --part full --half 2   # half its modes a call, DIR carried

The search runs first, then the full sweep, in one database (DIR/advise_vs_full.db; a later invocation with the
same DIR adds its model's row, and the searches see the spread between processes the earlier sweeps showed on this
device, as a lab's database would). The table (DIR/advise_vs_full.md, .json) is rewritten after each model, so a
run cut by --deadline keeps what it finished (its row says complete False).
"""
from __future__ import annotations

import argparse
import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = {  # name: the flags that pick the workload
    "mlp": ["--model", "mlp", "--batch", "64"],
    "gpt2 (hf, 4 layers)": ["--model", "hf:GPT2LMHeadModel", "--batch", "8", "--arg", "seq_len=128",
                            "--arg", "n_layer=4"],
    "resnet18 (timm)": ["--model", "timm:resnet18", "--batch", "32"],
    # a timm model whose full sweep fits a session's device time: on an H200 max-autotune tuned resnet18's
    # convolutions for 475 s, and its full sweep holds four such compiles
    "vit_tiny (timm)": ["--model", "timm:vit_tiny_patch16_224", "--batch", "32"],
}
SMALL = {
    "mlp": ["--model", "mlp", "--batch", "8", "--arg", "dim=64", "--arg", "hidden=128"],
    "transformer (tiny, blocks)": ["--model", "transformer", "--batch", "2", "--arg", "seq_len=16",
                                   "--arg", "d_model=32", "--arg", "layers=2", "--arg", "heads=2"],
}
# the search fills in every mode, dynamic false and true, and scope blocks where the model names blocks; the full
# sweep is submitted with the lists the search stored (full_flags)
GPU_COMMON = ["--device", "cuda", "--iters", "20"]
SMALL_COMMON = ["--device", "cpu", "--iters", "5"]
TARGET = 0.40


def _cli(*args: str) -> subprocess.CompletedProcess:
    done = subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"runner {' '.join(args[:1])} failed: {done.stderr.strip()[-2000:]}")
    return done


def _wait(ready, what: str, deadline: float) -> bool:
    """Poll until ready() or the deadline: False when the deadline came first."""
    while time.monotonic() < deadline:
        if ready():
            return True
        time.sleep(2)
    print(f"deadline: stopped waiting for {what}", file=sys.stderr)
    return False


def _seconds(engine, sweep_id: int) -> tuple[float, int]:
    """(device-seconds its finished jobs held a worker, jobs still queued or running)."""
    from sqlalchemy import select

    from db.engine import reading
    from db.models import Job

    with reading(engine) as s:
        jobs = s.execute(select(Job.status, Job.claimed_at, Job.finished_at).where(Job.sweep_id == sweep_id)).all()
    spent = sum((f - c).total_seconds() for status, c, f in jobs if c and f and status not in ("queued", "running"))
    return spent, sum(status in ("queued", "running") for status, _, _ in jobs)


def _lost_cache_s(engine, sweep_ids: list[int]) -> float:
    """Device-seconds of the full sweep's process repeats that compiled cold: a repeat compiles from its first run's
    cache, so a cold one mostly means that cache was gone (a call cut between them on a machine started afresh; on the
    H200 max-autotune with dynamic=True also compiled cold on a warm machine). They are left out of the full sweep's
    cost for the share, which is then a bound: the share is at most what it says."""
    from sqlalchemy import select

    from db.engine import reading
    from db.models import Job, Result

    with reading(engine) as s:
        jobs = s.execute(select(Job.claimed_at, Job.finished_at).join(Result, Result.job_id == Job.id)
                         .where(Job.sweep_id.in_(sweep_ids), Job.follow_up_of.is_not(None),
                                Result.first_call_cache == "cold")).all()
    return sum((f - c).total_seconds() for c, f in jobs if c and f)


def _settings(engine, job_ids: str) -> dict:
    from sqlalchemy import select

    from db.engine import reading
    from db.models import Job
    from lab.advise import SETTINGS

    with reading(engine) as s:
        spec = s.scalar(select(Job.spec).where(Job.id == int(job_ids.split()[0])))
    return {k: spec.get(k) for k in SETTINGS}


def _sweep_named(engine, name: str) -> int | None:
    """The newest sweep of this name in the database (the search a --part search call started), or None."""
    from sqlalchemy import select

    from db.engine import reading
    from db.models import Sweep

    with reading(engine) as s:
        return s.scalar(select(Sweep.id).where(Sweep.name == name).order_by(Sweep.id.desc()).limit(1))


def full_flags(engine, search_id: int, half: int | None = None) -> list[str]:
    """The full sweep's settings flags: exactly the lists the search raced (its stored request); with `half` (1 or 2),
    every other of its modes, from the first or the second (the full sweep in two sweeps, where one call cannot hold
    it; the modes default, reduce-overhead, max-autotune-no-cudagraphs, max-autotune split so that each half holds one
    autotuning mode)."""
    from sqlalchemy import select

    from db.engine import reading
    from db.models import Sweep
    from lab.axes import BY_FIELD
    from lab.checks import dynamic_name

    with reading(engine) as s:
        request = s.scalar(select(Sweep.request).where(Sweep.id == search_id))
    out = []
    for field in ("backend", "mode", "dynamic", "scope"):
        values = list(request.get(BY_FIELD[field].plural) or ())
        if field == "mode" and half:  # every other mode: each half holds one autotuning mode (the long compiles)
            values = values[half - 1::2]
        for value in values:
            out += [BY_FIELD[field].flag, dynamic_name(value) if field == "dynamic" else str(value)]
    return out


def _full_sweeps(engine, name: str) -> list[int]:
    """The full sweep of this model: one sweep, or its two halves (each the newest of its name)."""
    whole = _sweep_named(engine, f"full {name}")
    if whole is not None:
        return [whole]
    return [i for h in (1, 2) if (i := _sweep_named(engine, f"full {name} ({h}/2)")) is not None]


def compare(engine, name: str, search_id: int, full_ids: list[int]) -> dict:
    """One model's row: the search's answer beside the full sweep's best (over its halves, where it ran in two)."""
    from db import advice, reports
    from lab.advise import payoff, settings_words

    st = advice.load(engine, search_id)
    last = st.last
    lead = st.measured.get(last.leader) if last and last.leader else None
    rows = [r for r in reports.report(engine, sweep_ids=full_ids) if r.speedup is not None] if full_ids else []
    best = max(rows, key=lambda r: r.speedup) if rows else None
    spent = [_seconds(engine, i) for i in full_ids]
    full_s, unrun = sum(s for s, _ in spent), sum(n for _, n in spent)
    lost_s = _lost_cache_s(engine, full_ids) if full_ids else 0.0
    counted = full_s - lost_s
    row = {"model": name, "search_sweep": search_id, "full_sweep": full_ids[0] if len(full_ids) == 1 else full_ids,
           "outcome": last.outcome.value if last else "unfinished", "search_s": st.spent_s, "full_s": full_s,
           "lost_cache_s": lost_s, "full_unrun": unrun, "share": st.spent_s / counted if counted > 0 else None,
           "candidates": len(st.measured),
           "search_jobs": sum(m.processes for m in st.measured.values()),
           "not_run": sum(not m.started for m in st.measured.values()), "search_why": last.why if last else ""}
    if lead is not None:
        p = payoff(lead)
        row |= {"search_says": settings_words(lead.settings), "search_x": p[0], "search_low": p[1], "search_high": p[2]}
    if best is not None:
        row |= {"full_best": settings_words(_settings(engine, best.job_ids)), "full_x": best.speedup,
                "full_low": best.speedup_ci_low, "full_high": best.speedup_ci_high}
    if lead is not None and best is not None:
        row["overlap"] = row["search_low"] <= row["full_high"] and row["full_low"] <= row["search_high"]
        row["same"] = row["search_says"] == row["full_best"]
    elif best is not None and row["outcome"] == "dont_compile":  # agrees where the full sweep's best holds 1 or less
        row["overlap"] = best.speedup_ci_low <= 1
    return row


def _lost(r: dict) -> str:
    lost = r.get("lost_cache_s") or 0.0
    return f" (share over {r['full_s'] - lost:.0f}: {lost:.0f} s of repeats that compiled cold left out)" \
        if lost else ""


def table(rows: list[dict]) -> str:
    def x(r, side):
        if f"{side}_x" not in r:
            return "–"
        return f"{r[f'{side}_x']:.2f}x [{r[f'{side}_low']:.2f}, {r[f'{side}_high']:.2f}]"

    lines = ["| model | settings (not run) | search says | its interval | full sweep's best | its interval | overlap | "
             "same settings | search s | full s | search/full |", "|" + "---|" * 11]
    for r in rows:
        share = f"{r['share']:.0%}" + (" ✓" if r["share"] <= TARGET else " ✗") if r.get("share") is not None else "–"
        cut = r.get("full_unrun") or 0
        if cut and r.get("share") is not None:  # the unrun jobs only add seconds: the share is a bound, the best not yet
            share = f"at most {r['share']:.0%}" + (" ✓" if r["share"] <= TARGET else "")
        says = r.get("search_says", "–") if r["outcome"] != "dont_compile" else "don't compile"
        lines.append(f"| {r['model']} | {r['candidates']} ({r.get('not_run', 0)}) | {says} ({r['outcome']}) | "
                     f"{x(r, 'search')} | {r.get('full_best', '–')} | "
                     f"{x(r, 'full')} | {r.get('overlap', '–')}{' so far' if cut else ''} | {r.get('same', '–')} | "
                     f"{r['search_s']:.0f} | {r['full_s']:.0f}{_lost(r)}{f' ({cut} jobs not run yet)' if cut else ''} | "
                     f"{share} |")
    lines += [f"\n{r['model']}: {r['search_why']}" for r in rows if r.get("search_why")]
    return "\n".join(lines) + "\n"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--cpu", "--small", dest="cpu", action="store_true",
                    help="on the CPU: tiny sizes, inductor (its modes fold into default and max-autotune)")
    ap.add_argument("--model", default="mlp", help="the model of this invocation (the first word of a table name: "
                                                   "mlp, gpt2, resnet18; with --cpu: mlp, transformer)")
    ap.add_argument("--modes", help="only these inductor modes (comma separated; default: every mode)")
    ap.add_argument("--home", type=Path,
                    help="the worker's home (default OUT/home): outside a folder carried between calls, so that a "
                         "process repeat run in a later call on the same machine finds its first run's cache")
    ap.add_argument("--deadline", type=float, default=540, help="seconds for the whole run (default 540)")
    ap.add_argument("--part", choices=("both", "search", "full"), default="both",
                    help="search: only the search (its row without the full sweep); full: the full sweep of the "
                         "search this --out's database holds for the model (a search cut short runs on first): the "
                         "two in two calls where one does not fit, the same --out carried between them")
    ap.add_argument("--half", type=int, choices=(1, 2),
                    help="with --part full: the first or second half of the search's modes, one sweep each (the full "
                         "sweep in two calls where one cannot hold it; the row compares over both once both ran)")
    args = ap.parse_args()
    if args.half and args.part != "full":
        raise SystemExit("--half: only with --part full")
    start = time.monotonic()
    deadline = start + args.deadline
    args.out.mkdir(parents=True, exist_ok=True)
    db = f"sqlite:///{(args.out / 'advise_vs_full.db').resolve()}"
    models = {k: v for k, v in (SMALL if args.cpu else MODELS).items() if k.split()[0] == args.model}
    if not models:
        raise SystemExit(f"--model: one of {', '.join(k.split()[0] for k in (SMALL if args.cpu else MODELS))}")
    common = SMALL_COMMON if args.cpu else GPU_COMMON
    candidates = ["--backend", "inductor", *(f for m in (args.modes or "").split(",") if m.strip()
                                             for f in ("--mode", m.strip()))]

    from db.database import get_engine

    engine = get_engine(db)
    log = open(args.out / "worker.log", "w")
    worker = subprocess.Popen([sys.executable, "-m", "runner", "work", "--db", db, "--home", str(args.home or
                                                                                              args.out / "home"),
                               "--no-calibrate"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
    kept = args.out / "advise_vs_full.json"
    rows: list[dict] = [r for r in (json.loads(kept.read_text()) if kept.exists() else [])
                        if r.get("model") not in models]  # the other models' rows, from earlier invocations
    try:
        # one small job first: the worker's first child pays for starting (CUDA, the forked parent's warm-up), which
        # would otherwise be charged to the first search
        done = _cli("submit", "--db", db, "--model", "simplenet", "--batch", "8", "--backend", "eager", "--iters", "3",
                    "--process-repeats", "1", "--reruns", "0", "--device", "cpu" if args.cpu else "cuda",
                    "--name", "warm-up")
        warm_id = int(re.search(r"sweep ([0-9]+):", done.stderr).group(1))
        _wait(lambda: _seconds(engine, warm_id)[1] == 0, "the warm-up job", deadline)
        for name, flags in models.items():
            from db import advice

            search_id = _sweep_named(engine, f"advise {name}")
            if search_id is not None and args.part != "full" and advice.load(engine, search_id).finished:
                search_id = None  # a finished search: this call starts a new one (else it resumes a cut one)
            if search_id is None:
                done = _cli("advise", "--db", db, "--no-wait", *flags, *common, *candidates, "--name",
                            f"advise {name}")
                search_id = int(re.search(r"search: sweep ([0-9]+)", done.stderr).group(1))
            finished = _wait(lambda i=search_id: advice.load(engine, i).finished, f"the search of {name}", deadline)
            print(f"{name}: search done at {time.monotonic() - start:.0f} s", file=sys.stderr)
            full_ids: list[int] = []
            if args.part != "search":
                label = f"full {name}" + (f" ({args.half}/2)" if args.half else "")
                full_id = _sweep_named(engine, label)
                if full_id is None or full_id < search_id:  # else a call cut short left it: its queue goes on
                    done = _cli("submit", "--db", db, *flags, *common, *full_flags(engine, search_id, args.half),
                                "--name", label)
                    full_id = int(re.search(r"sweep ([0-9]+):", done.stderr).group(1))
                finished = _wait(lambda i=full_id: _seconds(engine, i)[1] == 0, f"the full sweep of {name}",
                                 deadline) and finished
                full_ids = _full_sweeps(engine, name)
                finished = finished and (not args.half or len(full_ids) == 2) and \
                    all(_seconds(engine, i)[1] == 0 for i in full_ids)
            rows.append(compare(engine, name, search_id, full_ids) | {"complete": finished})
            (args.out / "advise_vs_full.json").write_text(json.dumps(rows, indent=1))
            (args.out / "advise_vs_full.md").write_text(table(rows))
            print(f"{name}: done at {time.monotonic() - start:.0f} s", file=sys.stderr)
            if not finished:
                break
    finally:
        # at the deadline a running job is stopped at once (a second signal ends its grace) and re-queued: the next
        # call with this --out runs it again
        for grace in (5, 60):
            worker.send_signal(signal.SIGTERM)
            try:
                worker.wait(grace)
                break
            except subprocess.TimeoutExpired:
                continue
        else:
            worker.kill()
        log.close()
    sys.stdout.write(table(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
