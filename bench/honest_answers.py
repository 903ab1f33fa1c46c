"""Is the answer honest? The seed configurations submitted with the lab's defaults (each configuration in 3 fresh
processes, re-runs on for disturbed runs), twice, through the real worker; beside them a reference: the compiler
harness's timed() loop in 3 fresh processes per configuration (bench/harness_reference.py). Printed side by side
with the checks the answer must pass:

  - every configuration answered;
  - each answer within 10% of the reference's median, and within 5% in >= 90%;
  - the 95% interval covers the reference's median in >= 90% of configurations;
  - each sweep's answer inside the other sweep's interval in >= 90%, and inside its re-run interval (where a re-run
    should read, lab.interval) in >= 90%;
  - each configuration's cold first call within 10% of the reference's fresh processes' (reference --cold: each
    process its own empty cache);
  - <= 10% of jobs disturbed (each with its cause);
  - the follow-up jobs' GPU time (claim to stored) <= 0.5x the first runs';
  - the per-job overhead (claim to stored, less the measurement) p90 <= 1.0 s (issue 41's target on a GPU).

    python -m bench.honest_answers sweep --out DIR --label A     # one sweep of every configuration, drained
    python -m bench.honest_answers reference --out DIR           # 3 harness processes per configuration
    python -m bench.honest_answers paired --out DIR --cold        # A's jobs, the reference, B's jobs, a configuration
                                                                  # at a time: the machine's drift on all three alike
    python -m bench.honest_answers merge --out DIR --label A --from D1 --from D2  # one sweep from several steps
    python -m bench.honest_answers table --out DIR [--out DIR2 ...]  # the table, from what the steps left

Each step writes into DIR as it goes (sweep-A.db, reference.jsonl), so a step cut short leaves what it finished.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGS = {  # name: submit flags (the seed notes' configurations: 001-004)
    "simplenet bs32 dynamic=false": ["--model", "simplenet", "--batch", "32", "--dynamic", "false"],
    "simplenet bs32 dynamic=true": ["--model", "simplenet", "--batch", "32", "--dynamic", "true"],
    "simplenet bs32 reduce-overhead": ["--model", "simplenet", "--batch", "32", "--mode", "reduce-overhead"],
    "mlp bs64 default": ["--model", "mlp", "--batch", "64"],
    "mlp bs64 reduce-overhead": ["--model", "mlp", "--batch", "64", "--mode", "reduce-overhead"],
    "sincos bs10000": ["--model", "sincos", "--batch", "10000"],
    "complexnet bs32 default": ["--model", "complexnet", "--batch", "32"],
    "complexnet bs32 reduce-overhead": ["--model", "complexnet", "--batch", "32", "--mode", "reduce-overhead"],
    "convnetmix bs32": ["--model", "convnetmix", "--batch", "32"],
    "resnet18 bs16 training": ["--model", "resnet18", "--batch", "16", "--task", "training"],
}
# issue 26: real models by name (transformers and timm on the worker), one process each (a cold compile of a real
# model is minutes: its repeats would double the device time); the reference in one fresh harness process each
REAL = {
    "gpt2 bs8 seq512 inference": ["--model", "hf:GPT2LMHeadModel", "--batch", "8", "--arg", "seq_len=512"],
    "gpt2 bs8 seq512 training": ["--model", "hf:GPT2LMHeadModel", "--batch", "8", "--arg", "seq_len=512",
                                 "--task", "training"],
    "bert-mlm bs32 seq512 inference": ["--model", "hf:BertForMaskedLM", "--batch", "32", "--arg", "seq_len=512"],
    "bert-mlm bs32 seq512 training": ["--model", "hf:BertForMaskedLM", "--batch", "32", "--arg", "seq_len=512",
                                      "--task", "training"],
    "llama 4 layers bs8 seq512 inference": ["--model", "hf:LlamaForCausalLM", "--batch", "8", "--arg", "seq_len=512",
                                            "--arg", "num_hidden_layers=4"],
    "llama 4 layers bs8 seq512 training": ["--model", "hf:LlamaForCausalLM", "--batch", "8", "--arg", "seq_len=512",
                                           "--arg", "num_hidden_layers=4", "--task", "training"],
    "resnet50 bs32 inference": ["--model", "timm:resnet50", "--batch", "32", "--arg", "image_size=224"],
    "resnet50 bs32 training": ["--model", "timm:resnet50", "--batch", "32", "--arg", "image_size=224", "--task",
                               "training"],
    "vit_base bs32 inference": ["--model", "timm:vit_base_patch16_224", "--batch", "32", "--arg", "image_size=224"],
    "vit_base bs32 training": ["--model", "timm:vit_base_patch16_224", "--batch", "32", "--arg", "image_size=224",
                               "--task", "training"],
}
SETS = {"seeds": CONFIGS, "real": REAL}
SMALL = {"complexnet": ["--arg", "image_size=96"], "sincos": ["--arg", "width=1000"]}  # --small: a CPU smoke run
REF_PROCESSES = 3


def _flag(flags: list[str], name: str, default: str) -> str:
    return flags[flags.index(name) + 1] if name in flags else default


def _run(cmd: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, *cmd], cwd=ROOT, capture_output=True, text=True, **kw)


def chosen(args) -> dict[str, list[str]]:
    out = {n: f for n, f in SETS[args.set].items() if not args.only or any(o in n for o in args.only)}
    if args.small:
        out = {n: f + SMALL.get(f[1], []) for n, f in out.items()}
    return out


def sweep(args) -> None:
    """Submit every configuration with the defaults, as its own sweep named after it, and drain them."""
    out = Path(args.out)
    work = Path(tempfile.mkdtemp(prefix="honest-"))  # the database: never under OUT until it is whole
    home = Path(args.home or work / "home")  # the worker's: its host facts and kept caches serve a second sweep
    if args.continue_db:  # the earlier sweep's database, as a lab's holds it: its processes are this one's history
        shutil.copyfile(args.continue_db, work / "lab.db")
    db = f"sqlite:///{work / 'lab.db'}"
    worker_cmd = [sys.executable, "-m", "runner", "work", "--no-calibrate", "--db", db, "--home", str(home),
                  *(["--gpu", "0"] if args.device == "cuda" else [])]
    started = time.time()
    with open(out / f"worker-{args.label}.log", "w") as log:
        if args.set == "seeds":  # the zoo's files: submitted first, then drained
            _submit_all(args, db)
            subprocess.run(worker_cmd + ["--drain"], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
        else:  # families are offered once the worker has listed them: submit then, wait for the queue to empty
            worker = subprocess.Popen(worker_cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT)
            _wait(lambda: {f[1] for f in chosen(args).values()} <= set(_published(db)), "the worker's listing")
            _submit_all(args, db, "--process-repeats", "1")
            _wait(lambda: not _open_jobs(db), "the jobs to finish", limit_s=6 * 3600)
            worker.terminate()
            worker.wait(timeout=120)
    print(f"{args.label}: drained in {time.time() - started:.0f} s", flush=True)
    _keep(work / "lab.db", out / f"sweep-{args.label}.db")
    shutil.rmtree(work, ignore_errors=True)


def _settled(proc: subprocess.Popen, quiet_cpu_s: float = 0.05, every_s: float = 1.0, limit_s: float = 600) -> float:
    """Wait until `proc` and its descendants (a worker: its preloaded parent, its probe, its model listing) burn under
    `quiet_cpu_s` of CPU in `every_s`, read from /proc: its start is over. The seconds that took."""
    from runner.child.reaper import descendants, proc_stats

    def cpu_s() -> float:
        stats = proc_stats()
        ticks = sum(sum(map(int, stats[p][1][11:15])) for p in [proc.pid, *descendants(proc.pid)]
                    if p in stats)  # its own and its reaped children's: an ended probe's CPU still counts
        return ticks / os.sysconf("SC_CLK_TCK")

    began, last = time.time(), cpu_s()
    while time.time() - began < limit_s and proc.poll() is None:
        time.sleep(every_s)
        now = cpu_s()
        if now - last < quiet_cpu_s:
            return time.time() - began
        last = now
    raise SystemExit(f"the worker did not settle within {limit_s:.0f} s (exit code {proc.poll()})")


def merge(args) -> None:
    """One sweep's databases from several steps (paired calls, each of some configurations) as one sweep-LABEL.db in
    OUT, as one worker's would hold them, and their reference.jsonl lines after OUT's."""
    out = Path(args.out)
    _one_database([Path(f) / f"sweep-{args.label}.db" for f in args.sources], out / f"sweep-{args.label}.db",
                  compact=True)
    for f in args.sources:
        if (Path(f) / "reference.jsonl").exists():
            with open(out / "reference.jsonl", "a") as into:
                into.write((Path(f) / "reference.jsonl").read_text())


def _keep(db_file: Path, into: Path) -> None:
    """A sweep's database copied out as one file, whole (the WAL folded in), over an earlier copy."""
    src = sqlite3.connect(db_file)
    with sqlite3.connect(into) as dst:
        src.backup(dst)
    src.close()


def _submit_all(args, db: str, *extra: str) -> None:
    for name, flags in chosen(args).items():
        _submit(args, db, args.label, name, flags, *extra)


def _submit(args, db: str, label: str, name: str, flags: list[str], *extra: str) -> None:
    done = _run(["-m", "runner", "submit", "--db", db, "--device", args.device, "--name", f"{label}: {name}",
                 *flags, *extra])
    print(f"{label}: {name}: {done.stdout.strip() or done.stderr.strip()}", flush=True)


def _published(db: str) -> dict:
    from db import queue
    from db.database import get_engine

    try:
        return queue.published_catalog(get_engine(db))
    except Exception:  # noqa: BLE001 - the worker is still creating the database
        return {}


def _open_jobs(db: str) -> int:
    from db import queue
    from db.database import get_engine

    counts = queue.status_counts(get_engine(db))
    return counts.get("queued", 0) + counts.get("running", 0)


def _wait(done, what: str, limit_s: float = 600) -> None:
    deadline = time.time() + limit_s
    while not done():
        if time.time() > deadline:
            raise SystemExit(f"timed out waiting for {what}")
        time.sleep(2)


def reference(args) -> None:
    """Per configuration, REF_PROCESSES fresh harness processes (one compile cache per configuration: the first
    compiles, the others find it), one JSON line each appended to reference.jsonl."""
    for name, flags in chosen(args).items():
        _reference_of(args, name, flags)


def _reference_of(args, name: str, flags: list[str]) -> None:
    """One configuration's reference processes, appended to reference.jsonl as each ends."""
    out = Path(args.out)
    cache = Path(args.ref_cache) if args.ref_cache else Path(tempfile.mkdtemp(prefix="ref-cache-"))
    cmd = ["-m", "bench.harness_reference", "--model", flags[1], "--batch", _flag(flags, "--batch", "1"),
           "--mode", _flag(flags, "--mode", "default"), "--dynamic", _flag(flags, "--dynamic", "none"),
           "--task", _flag(flags, "--task", "inference"), "--device", args.device]
    cmd += [x for i, x in enumerate(flags) if flags[i - 1] == "--arg" or x == "--arg"]
    done_before = [json.loads(x) for x in (out / "reference.jsonl").read_text().splitlines()] \
        if (out / "reference.jsonl").exists() else []
    done_n = sum(r.get("config") == name and "speedup" in r for r in done_before)
    for i in range(done_n, args.ref_processes):  # a step cut short and run again goes on where it stopped
        # --cold: each process its own empty cache (its first call is a user's fresh script's on a new machine);
        # else one cache for the configuration's processes here, whose first compiles it
        where = cache / f"p{i}" if args.cold else cache
        env = {**os.environ, "TORCHINDUCTOR_CACHE_DIR": str(where / "inductor"),
               "TRITON_CACHE_DIR": str(where / "triton")}
        done = _run(cmd, env=env, timeout=900)
        line = {"config": name, "process": i, "cold": bool(args.cold or i == done_n) and not args.ref_cache}
        try:
            line |= json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            line["error"] = (done.stderr.strip().splitlines() or ["no output"])[-1][:300]
        with open(out / "reference.jsonl", "a") as f:
            f.write(json.dumps(line) + "\n")
        print(json.dumps(line), flush=True)
    if not args.ref_cache:
        shutil.rmtree(cache, ignore_errors=True)


def paired(args) -> None:
    """Sweeps A and B and the cold reference, configuration by configuration: A's jobs (its first run and the follow-ups
    it calls for), then the reference's fresh processes, then B's jobs. Each sweep has its own worker, started once
    and left waiting between its turns (a child warmed ahead is kept 3 s, so no idle CUDA context sits beside another
    side's run). Run one after the other, a sweep and the reference are minutes apart: on two H200 leases the fresh
    scripts' cold first calls, run after the sweeps, differed 10-30% while the worker's large models' under 3%. Whatever
    the machine's speed does over minutes, this order puts on all three sides alike. Each sweep's database is written
    out after every configuration, so a step cut short keeps what it finished. Per-job overhead is a plain sweep's to
    judge: here a configuration's first run finds no child warmed ahead (the reference ran since). `--sides A`: one
    sweep beside the reference (a plain `sweep` of B then gives the per-job overhead; `merge` joins steps' databases)."""
    if args.set != "seeds":
        raise SystemExit("paired: the seed configurations only (a family's jobs wait for the worker's listing)")
    out, work = Path(args.out), Path(tempfile.mkdtemp(prefix="honest-paired-"))
    env = {**os.environ, "COMPILE_LAB_WARM_KEEP_S": "3"}
    workers = {}
    try:
        for label in args.sides:  # one after the other, each left to finish its start: none takes a core from the other
            db = f"sqlite:///{work / f'{label}.db'}"
            cmd = [sys.executable, "-m", "runner", "work", "--no-calibrate", "--db", db, "--home", str(work / label),
                   *(["--gpu", "0"] if args.device == "cuda" else [])]
            with open(out / f"worker-{label}.log", "a") as log:
                workers[label] = (db, subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT))
            print(f"{label}: worker settled after {_settled(workers[label][1]):.0f} s", flush=True)
        for name, flags in chosen(args).items():
            for side in [args.sides[0], "reference", *args.sides[1:]]:
                started = time.time()
                if side == "reference":
                    _reference_of(args, name, flags)
                    continue
                db, worker = workers[side]
                _submit(args, db, side, name, flags)
                _wait(lambda db=db, worker=worker: not _open_jobs(db) or worker.poll() is not None, f"{side}: {name}",
                      limit_s=3600)
                if worker.poll() is not None:
                    raise SystemExit(f"worker {side} exited ({worker.returncode}); its log: {out}/worker-{side}.log")
                _keep(work / f"{side}.db", out / f"sweep-{side}.db")
                print(f"{side}: {name}: done in {time.time() - started:.0f} s", flush=True)
    finally:
        for _db, worker in workers.values():
            worker.terminate()
            worker.wait(timeout=120)
    shutil.rmtree(work, ignore_errors=True)


def _cold_scripts(files: list[str]) -> tuple[dict[str, list[float]], dict[str, list[tuple]]]:
    """{configuration: compiled first calls, s} from bench.gpu_instrument_costs --scripts-only outputs (their last
    line): a cold first call is judged against fresh scripts on the same machine, not on another one of its kind.
    And {configuration: [(the host's pace just before the compile (_before), or None; the first call)]}."""
    out: dict[str, list[float]] = {}
    paced: dict[str, list[tuple]] = {}
    for f in files:
        text = Path(f).read_text().strip()
        try:
            runs = json.loads(text.splitlines()[-1])["scripts"]
            said = {n: [(_before(r.get("first_call_pace_us")), r["compiled_first_call_s"])
                        for r in rs if "compiled_first_call_s" in r] for n, rs in runs.items()}
        except (ValueError, KeyError, IndexError):  # stopped before its last line: its progress lines say as much
            said = {}
            for name, secs in re.findall(r"script \d+/\d+ (.+): ([0-9.]+) s$", text, re.M):
                said.setdefault(name, []).append((None, float(secs)))
        for name, firsts in said.items():
            out.setdefault(name, []).extend(s for _, s in firsts)
            paced.setdefault(name, []).extend(firsts)
    return {k: v for k, v in out.items() if v}, paced


def _before(probes) -> float | None:
    """The host's pace just before a compile (lab.host_pace.around: [before, after]), or None. Not the one just after:
    that probe can meet the compile's own aftermath (a CPU reference process read 30 us after against 17 us before),
    which would file the longer compiles under a slower pace."""
    return probes[0] if isinstance(probes, list) and len(probes) == 2 and all(
        isinstance(p, (int, float)) and p > 0 for p in probes) else None


def _one_database(db_files: list[Path], into: Path, compact: bool = False) -> Path:
    """The sweeps' databases as one, as a lab's would hold them (each sweep's jobs, results and sweep rows, ids moved
    past the ones before): the answer then judges the device's spread between processes from both sweeps' runs. The
    n-th database's ids move by fixed steps (sweeps 1000 n, jobs and results 100,000 n: _sweep_rows finds its own
    jobs by them), or, `compact`, just past the ones before (merge: one sweep's steps, itself a database to join)."""
    shutil.copyfile(db_files[0], into)
    con = sqlite3.connect(into)
    for n, other in enumerate(db_files[1:], start=1):
        con.execute("ATTACH DATABASE ? AS other", (str(other),))
        past = {t: con.execute(f"SELECT coalesce(max(id), 0) FROM main.{t}").fetchone()[0] if compact else step * n
                for t, step in (("sweeps", 1000), ("jobs", 100_000), ("results", 100_000))}
        for table, moved in (("sweeps", {"id"}), ("jobs", {"id", "sweep_id", "follow_up_of"}),
                             ("results", {"id", "job_id"})):
            cols = [r[1] for r in con.execute(f"PRAGMA main.table_info({table})")]
            shift = {"sweep_id": past["sweeps"], "id": past[table]}
            picked = ", ".join(f"{c} + {shift.get(c, past['jobs'])}" if c in moved else c for c in cols)
            con.execute(f"INSERT INTO main.{table} ({', '.join(cols)}) SELECT {picked} FROM other.{table}")
        con.commit()
        con.execute("DETACH DATABASE other")
    con.close()
    return into


def _labels(db_file: Path) -> set[str]:
    """The sweeps' labels a database holds ("A" of "A: mlp bs64 default")."""
    with sqlite3.connect(db_file) as con:
        return {name.split(": ", 1)[0] for (name,) in con.execute("SELECT name FROM sweeps") if ": " in name}


def _sweep_rows(db_file: Path, shared: Path | None = None, offset: int = 0) -> dict:
    """{config name: (answer row, [job records])} of one sweep database, and its jobs' timelines. `shared`: the
    answer read from this database of every sweep (_one_database), for this sweep's jobs only, whose ids there are
    `offset` past this database's."""
    from sqlalchemy import select

    from db.database import get_engine
    from db.engine import reading
    from db.models import Job, Result, Sweep
    from db.reports import report
    from lab import timeline

    engine = get_engine(f"sqlite:///{db_file}")
    label = db_file.stem.removeprefix("sweep-")  # a database may hold earlier sweeps too (sweep --continue)
    whole = get_engine(f"sqlite:///{shared or db_file}")
    with reading(whole) as s:
        ids = s.scalars(select(Sweep.id).where(Sweep.name.startswith(f"{label}: "))).all()
    rows = report(whole, sweep_ids=ids)
    with reading(engine) as s:
        jobs = s.execute(select(Job.id, Sweep.name, Job.status, Job.follow_up, Job.claimed_at, Result.disturbed,
                                Result.noise_note, Result.detail, Result.host_pace_us, Result.round_speedup,
                                Result.compiled_first_call_s, Result.first_call_cache, Result.first_call_disturbed)
                         .join(Sweep, Sweep.id == Job.sweep_id).outerjoin(Result, Result.job_id == Job.id)
                         .where(Sweep.name.startswith(f"{label}: "))).all()
    by_name: dict = {}
    for job_id, sweep_name, status, follow_up, _claimed, disturbed, note, detail, pace, speedup, first_s, made, fcd in jobs:
        name = sweep_name.split(": ", 1)[1]
        tl = detail.get("timeline") if isinstance(detail, dict) else None  # the packed detail, read back as a dict
        by_name.setdefault(name, {"jobs": [], "row": None})["jobs"].append(
            {"job_id": job_id, "status": status, "follow_up": follow_up, "disturbed": disturbed, "note": note,
             "compile_disturbed": fcd, "compile_words": (detail.get("first_call_disturbance") or {}).get("causes")
             if isinstance(detail, dict) and isinstance(detail.get("first_call_disturbance"), dict) else None,
             "total_s": timeline.total_s(tl) if tl else None,
             # the worker's own start (importing torch, once per worker) is not a job's: a first job claimed before
             # it is done waits for it in its timeline's "worker start"; counted apart
             "overhead_s": timeline.overhead_s(tl) - _start_s(tl) if tl else None,
             "worker_start_s": _start_s(tl) if tl else 0.0, "name": name, "timeline": tl,
             "claimed": _claimed.timestamp() if _claimed is not None else None,
             "model_build": detail.get("model_build") if isinstance(detail, dict) else None,
             "picks": (detail.get("autotune_picks") or {}).get("picks") if isinstance(detail, dict) else None,
             "prewarmed": detail.get("prewarmed") if isinstance(detail, dict) else None,
             "first_call_parts": detail.get("compile_breakdown_s") if isinstance(detail, dict) else None,
             "first_call_gc": detail.get("first_call_gc") if isinstance(detail, dict) else None,
             "sweep": sweep_name.split(": ", 1)[0], "pace": pace, "speedup": speedup,
             "cold_first_call_s": first_s if made == "cold" else None,
             "compile_pace": detail.get("first_call_pace") if isinstance(detail, dict) else None})
    for row in rows:
        ids = {int(j) - offset for j in row["job_ids"].split()}
        for entry in by_name.values():
            if ids & {j["job_id"] for j in entry["jobs"]}:
                entry["row"] = row
    return by_name


def entry_jobs(sweeps: dict, name: str) -> list[dict]:
    """A configuration's first runs (not follow-ups) over every sweep: whose first call was cold."""
    return [j for rows in sweeps.values() for j in (rows.get(name) or {}).get("jobs", []) if not j["follow_up"]]


def _median_of(parts: list[dict], key: str) -> float:
    return statistics.median([p.get(key, 0.0) for p in parts])


def _start_s(tl: list[dict]) -> float:
    return sum(e["seconds"] for e in tl if e["phase"] == "worker start")


def _pct(q: float, values: list[float]) -> float | None:
    values = sorted(v for v in values if v is not None)
    if not values:
        return None
    pos = (len(values) - 1) * q
    lo = int(pos)
    return values[lo] + (values[min(lo + 1, len(values) - 1)] - values[lo]) * (pos - lo)


def table(args) -> None:
    outs = [Path(o) for o in args.out_all]
    sweeps = {}
    work = Path(tempfile.mkdtemp(prefix="honest-table-"))
    for n, out in enumerate(outs):
        dbs = sorted(out.glob("sweep-*.db"))
        whole = next((db for db in dbs if _labels(db) >= {d.stem.removeprefix("sweep-") for d in dbs}), None)
        if args.one_database and whole is not None:  # a sweep continued in the others' database (sweep --continue)
            shared, offsets = whole, [0] * len(dbs)  # holds them all, under their own ids
        elif args.one_database and dbs:
            shared, offsets = _one_database(dbs, work / f"all-{n}.db"), [100_000 * i for i in range(len(dbs))]
        else:
            shared, offsets = None, [0] * len(dbs)
        for db, offset in zip(dbs, offsets):
            label = db.stem.removeprefix("sweep-")
            sweeps.setdefault(label, {}).update(_sweep_rows(db, shared, offset))
    shutil.rmtree(work, ignore_errors=True)
    refs: dict[str, list[float]] = {}
    ref_cold: dict[str, list[float]] = {}  # the cold processes' compiled first calls (a fresh script's), s
    ref_parts: dict[str, list[dict]] = {}  # and where they went (compile_breakdown_s)
    ref_gc: dict[str, list[dict]] = {}  # and the collector's pauses in them (runner.child.gcpause), where recorded
    ref_errors: dict[str, list[str]] = {}
    ref_disturbed: list[str] = []  # the reference keeps every process; what the worker would have called disturbed
    ref_left_out: dict[str, list[float]] = {}
    ref_paces: dict[str, list[tuple]] = {}  # (host pace us or None, speedup) of each undisturbed reference process
    ref_cold_paces: dict[str, list[tuple]] = {}  # (host pace just before the compile, us, or None; cold first call, s)
    for out in outs:
        for line in (out / "reference.jsonl").read_text().splitlines() if (out / "reference.jsonl").exists() else []:
            r = json.loads(line)
            if "speedup" in r:
                # a process the worker would have called disturbed is left out of the reference's median, as the
                # worker leaves such a run out of its answer, where an undisturbed one is left (and named below)
                if not r.get("disturbed"):
                    refs.setdefault(r["config"], []).append(r["speedup"])
                    ref_paces.setdefault(r["config"], []).append((r.get("host_pace_us"), r["speedup"]))
                else:
                    ref_left_out.setdefault(r["config"], []).append(r["speedup"])
                if r.get("not_measured"):
                    ref_disturbed.append(f"reference not measured: {r['config']} process {r['process']}: "
                                         f"{r['not_measured']}")
                if r.get("disturbed"):
                    ref_disturbed.append(f"reference disturbed: {r['config']} process {r['process']} "
                                         f"({r['speedup']:.3f}x): {'; '.join(r['disturbed'])}")
                if r.get("cold") and r.get("compiled_first_call_s"):
                    ref_cold.setdefault(r["config"], []).append(r["compiled_first_call_s"])
                    ref_cold_paces.setdefault(r["config"], []).append(
                        (_before(r.get("first_call_pace_us")), r["compiled_first_call_s"]))
                    if r.get("compile_breakdown_s"):
                        ref_parts.setdefault(r["config"], []).append(r["compile_breakdown_s"])
                    if r.get("gc"):
                        ref_gc.setdefault(r["config"], []).append(r["gc"])
            else:
                ref_errors.setdefault(r["config"], []).append(r.get("error", "?"))
    if args.cold_scripts:  # fresh scripts run on the sweeps' own machine (gpu_instrument_costs --scripts-only)
        ref_cold, ref_cold_paces = _cold_scripts(args.cold_scripts)
        ref_parts, ref_gc = {}, {}  # the reference's parts are of its own cold processes, not of these scripts'
    labels = sorted(sweeps)
    lines = [f"{'configuration':<34}{'reference: median (range)':<26}"
             + "".join(f"{'sweep ' + lb + ': answer [95%]':<34}{'jobs':>5}   " for lb in labels)]
    checks = {"answered": [], "within 10%": [], "covers reference": [], "inside other sweep": [],
              "inside other re-run": [], "cold within 10%": [], "within 5%": [], "config cold within 10%": [],
              "cold interval covers reference": []}
    cold_lines = []
    jobs, first_s, follow_s, counted = [], [], [], []  # counted: the jobs whose overhead counts
    for name in SETS[args.set]:
        ref = refs.get(name) or ref_left_out.get(name, [])  # every process disturbed: all of them, as the worker
        ref_med = statistics.median(ref) if ref else None
        cells = f"{name:<34}" + (f"{ref_med:.3f}x ({min(ref):.3f}-{max(ref):.3f})" if ref else
                                 "-" if name not in ref_errors else "failed").ljust(26)
        answers = {}
        for lb in labels:
            entry = sweeps[lb].get(name)
            if entry is None:
                cells += f"{'-':<34}{'':>5}   "
                continue
            row = entry["row"]
            jobs += entry["jobs"]
            for j in entry["jobs"]:
                (follow_s if j["follow_up"] else first_s).append(j["total_s"])
                if lb in (args.overhead_of or lb).split(","):
                    counted.append(j)
            answered = row is not None and row["speedup"] is not None
            checks["answered"].append(answered)
            if answered:
                answers[lb] = row
                cells += f"{row['speedup']:.3f}x [{row['speedup_ci_low']:.3f}, {row['speedup_ci_high']:.3f}]".ljust(34)
                if ref_cold.get(name) and row.get("first_call_cold_s"):
                    script = statistics.median(ref_cold[name])
                    diff = row["first_call_cold_s"] / script - 1
                    checks["cold within 10%"].append(abs(diff) <= 0.10)
                    lo, hi = row.get("first_call_cold_low"), row.get("first_call_cold_high")
                    # its interval, where 4 processes compiled it cold here. The reference's median is 3 fresh
                    # processes' own, which moves too: a true 95% interval of one process holds it about 90-96% of the
                    # time (more where the interval rests on few processes)
                    if lo is not None and hi is not None:
                        checks["cold interval covers reference"].append(lo <= script <= hi)
                    held = f", its interval [{lo:.2f}, {hi:.2f}]" if lo is not None and hi is not None else ""
                    cold_lines.append(f"cold first call: sweep {lb}: {name}: worker {row['first_call_cold_s']:.2f} s{held}, "
                                      f"fresh scripts {script:.2f} s [{min(ref_cold[name]):.2f}, "
                                      f"{max(ref_cold[name]):.2f}] ({len(ref_cold[name])}): {diff:+.1%}")
                if ref_med is not None:
                    checks["within 10%"].append(abs(row["speedup"] / ref_med - 1) <= 0.10)
                    checks["within 5%"].append(abs(row["speedup"] / ref_med - 1) <= 0.05)
                    checks["covers reference"].append(row["speedup_ci_low"] <= ref_med <= row["speedup_ci_high"])
            else:
                cells += f"{'no answer':<34}"
            cells += f"{len(entry['jobs']):>5}   "
        colds = [row["first_call_cold_s"] for row in answers.values() if row.get("first_call_cold_s")]
        if ref_cold.get(name) and colds:  # the configuration's: its sweeps' cold first calls, their median
            diff = statistics.median(colds) / statistics.median(ref_cold[name]) - 1
            checks["config cold within 10%"].append(abs(diff) <= 0.10)
            cold_lines.append(f"cold first call: {name}: the sweeps' median {statistics.median(colds):.2f} s "
                              f"({len(colds)}) against {statistics.median(ref_cold[name]):.2f} s: {diff:+.1%}")
            parts = [j["first_call_parts"] for j in entry_jobs(sweeps, name) if j.get("first_call_parts")]
            if parts and ref_parts.get(name):
                cold_lines.append("  its parts, s, sweeps | reference (medians): " + "; ".join(
                    f"{k} {_median_of(parts, k):.2f} | {_median_of(ref_parts[name], k):.2f}"
                    for k in dict.fromkeys([*parts[0], *ref_parts[name][0]]) if k != "autotuning"))
            gcs = [j["first_call_gc"] for j in entry_jobs(sweeps, name) if j.get("first_call_gc")]
            if gcs and ref_gc.get(name):  # a fork inherits its parent's collector counts: fewer full collections?
                cold_lines.append("  the collector's full collections in it, sweeps | reference (medians): " + "; ".join(
                    f"{what} {_median_of(gcs, key):.2f} | {_median_of(ref_gc[name], key):.2f}"
                    for what, key in (("count", "full_collections"), ("s", "full_seconds"), ("all pauses s", "seconds"))))
        for a in answers:
            for b in answers:
                if a != b:
                    checks["inside other sweep"].append(
                        answers[b]["speedup_ci_low"] <= answers[a]["speedup"] <= answers[b]["speedup_ci_high"])
                    if answers[b].get("rerun_low") is not None:
                        checks["inside other re-run"].append(
                            answers[b]["rerun_low"] <= answers[a]["speedup"] <= answers[b]["rerun_high"])
        lines.append(cells)
    lines.append("")
    for lb in labels:
        for name, entry in sweeps[lb].items():
            if entry["row"] is not None:
                row = entry["row"]
                first = f"; first call cold {row['first_call_cold_s']:.1f} s" if row.get("first_call_cold_s") else ""
                lines.append(f"sweep {lb}: {name}: {row['verdict']}{first}")
    lines.append("")
    disturbed = [j for j in jobs if j["disturbed"]]
    ok = [j for j in jobs if j["status"] == "succeeded"]
    watched = [j for j in ok if j["compile_disturbed"] is not None]
    shaken = [j for j in watched if j["compile_disturbed"]]
    ratio = sum(v for v in follow_s if v) / sum(v for v in first_s if v) if any(first_s) else math.nan
    overheads = [j["overhead_s"] for j in counted]
    p90 = _pct(0.9, overheads)
    summary = [
        ("configurations answered", f"{sum(checks['answered'])} of {len(checks['answered'])}", "all",
         all(checks["answered"])),
        ("answer within 10% of the reference median", _share(checks["within 10%"]), "all",
         all(checks["within 10%"])),
        ("answer within 5% of the reference median", _share(checks["within 5%"]), ">= 90%",
         _frac(checks["within 5%"]) >= 0.9),
        ("95% interval covers the reference median", _share(checks["covers reference"]), ">= 90%",
         _frac(checks["covers reference"]) >= 0.9),
        ("a sweep's answer inside the other's interval", _share(checks["inside other sweep"]), ">= 90%",
         _frac(checks["inside other sweep"]) >= 0.9),
        ("a sweep's answer inside the other's re-run interval", _share(checks["inside other re-run"]), ">= 90%",
         _frac(checks["inside other re-run"]) >= 0.9),
        ("cold first call within 10% of fresh scripts' (a sweep)", _share(checks["cold within 10%"])
         if checks["cold within 10%"] else "- (no cold reference processes: reference --cold)", "all",
         all(checks["cold within 10%"])),
        ("the same, per configuration (sweeps' median)", _share(checks["config cold within 10%"])
         if checks["config cold within 10%"] else "-", "all", all(checks["config cold within 10%"])),
        ("cold first call's interval covers fresh scripts' median", _share(checks["cold interval covers reference"])
         if checks["cold interval covers reference"] else "- (none: under 4 cold processes of one)", ">= 90%",
         _frac(checks["cold interval covers reference"]) >= 0.9 if checks["cold interval covers reference"] else None),
        ("jobs disturbed (a measured cause)", f"{len(disturbed)} of {len(ok)}", "<= 10%",
         len(disturbed) <= 0.1 * max(1, len(ok))),
        ("compiled first calls disturbed (a measured cause)", f"{len(shaken)} of {len(watched)} watched", "<= 10%",
         len(shaken) <= 0.1 * max(1, len(watched))),
        ("follow-ups' GPU time / first runs'", f"{ratio:.2f} ({sum(filter(None, follow_s)):.0f} s / "
         f"{sum(filter(None, first_s)):.0f} s)", "<= 0.5", ratio <= 0.5),
        (f"per-job overhead p90, s (worker start apart{'; sweep ' + args.overhead_of if args.overhead_of else ''})",
         f"{p90:.2f} (median {_pct(0.5, overheads):.2f}, max {max(filter(None, overheads)):.2f})"
         if p90 is not None else "-", "<= 1.0", p90 is not None and p90 <= 1.0),
    ]
    lines += [f"{'check':<56}{'measured':<34}{'target':<9}holds"]
    lines += [f"{what:<56}{value:<34}{target:<9}{'-' if held is None else 'yes' if held else 'NO'}"
              for what, value, target, held in summary]
    lines += [f"worker start (once per worker, not in the per-job overhead): {j['worker_start_s']:.1f} s in job "
              f"{j['job_id']}'s timeline" for j in jobs if j.get("worker_start_s")]
    waits = _waits(counted)
    if waits:
        lines.append(f"the next job's wait (its worker's critical path: from the job before's last timed step to its own, "
                     f"less its measurement and worker start): p90 {_pct(0.9, waits):.2f} s, median "
                     f"{_pct(0.5, waits):.2f} s over {len(waits)} jobs (beside the per-job overhead: what the worker did "
                     f"between two jobs, e.g. tlparse's reports made right after each job)")
    lines += [""] + cold_lines + _pace_lines(sweeps, ref_paces) + _cold_pace_lines(sweeps, ref_cold_paces)
    lines += _pick_lines(jobs) + _overhead_lines(counted)
    lines += [f"disturbed: job {j['job_id']}: {j['note']}" for j in disturbed]
    lines += [f"compile disturbed: job {j['job_id']}: {j['compile_words']}" for j in shaken]
    lines += [f"reference failed: {n}: {e[0]}" for n, e in ref_errors.items()] + ref_disturbed
    text = "\n".join(lines)
    print(text)
    if args.write:
        Path(args.write).write_text(text + "\n")


def _waits(jobs: list[dict]) -> list[float]:
    """Per job after a sweep's first, the seconds from the job before's last timed step to its own, less its own
    measurement and worker start: what its worker spent between two measurements (the GPU idle for it)."""
    from lab import timeline

    by_sweep: dict[str, list[tuple[float, float]]] = {}
    for j in jobs:
        tl, at = j.get("timeline"), j.get("claimed")
        timed = [e for e in tl or [] if e["phase"] in timeline.MEASURED]
        if at is not None and timed:
            end = at + max(e["start"] + e["seconds"] for e in timed)
            by_sweep.setdefault(j["sweep"], []).append((end, timeline.measured_s(tl) + (j["worker_start_s"] or 0.0)))
    out = []
    for spans in by_sweep.values():
        spans.sort()
        out += [end - before - own for (before, _), (end, own) in zip(spans, spans[1:])]
    return out


def _overhead_lines(jobs: list[dict], top: int = 6) -> list[str]:
    """Where the overhead went: each overhead phase's median and p90 over the jobs, and the phases of the jobs with
    the most (the p90's tail), largest first."""
    from lab import timeline

    per_job = [(j, {ph: s for ph, s in timeline.by_phase(j["timeline"]).items()
                    if ph not in timeline.MEASURED and ph != "worker start"}) for j in jobs if j.get("timeline")]
    if not per_job:
        return []
    seconds = {ph: [phases.get(ph, 0.0) for _, phases in per_job] for _, phases in per_job for ph in phases}
    stats = sorted(((ph, _pct(0.5, s), _pct(0.9, s)) for ph, s in seconds.items()), key=lambda x: -x[2])
    retimed = [(j["overhead_s"] or 0) + timeline.by_phase(j["timeline"]).get(timeline.RETIMED, 0.0) for j, _ in per_job]
    warmed = [j for j, _ in per_job if j.get("prewarmed") and j["prewarmed"].get("ahead", True)]  # not those warmed for it
    out = ["", f"a repeat's re-timed launch settings counted as overhead instead (lab.timeline says why they are "
               f"measurement): p90 {_pct(0.9, retimed):.2f} s",
           f"children warmed ahead of their job (runner.child.prewarm): {len(warmed)} of {len(per_job)} jobs"]
    if warmed:
        starts = [timeline.by_phase(j["timeline"]).get("child start", 0.0) for j in warmed]
        ahead = [j["prewarmed"].get("cuda_context_s") or 0.0 for j in warmed]
        out[-1] += (f"; their child start median {_pct(0.5, starts):.3f} s (the rest of the warming, where the job "
                    f"came first), their CUDA context made ahead median {_pct(0.5, ahead):.3f} s")
    paced = [(j["pace"], j["overhead_s"]) for j, _ in per_job if j.get("pace") and j["overhead_s"] is not None]
    if paced:  # host work runs at the host's pace (lab.host_pace): the overhead by the pace of each job's rounds
        from lab.host_pace import FASTEST

        fast = FASTEST * min(p for p, _ in paced)
        at = {"fast": [s for p, s in paced if p <= fast], "slower": [s for p, s in paced if p > fast]}
        out.append(f"per-job overhead by its rounds' host pace (fast: <= {fast:.1f} us): " + "; ".join(
            f"{k} p90 {_pct(0.9, v):.2f} s, median {_pct(0.5, v):.2f} s ({len(v)} jobs)" for k, v in at.items() if v))
    out += ["", "overhead per phase over the jobs, s: median / p90"]
    out += [f"  {ph:<24}{med:6.3f} / {p90:6.3f}" for ph, med, p90 in stats if p90 >= 0.005]
    out.append(f"the {top} jobs with the most overhead, their phases over 0.05 s:")
    for j, phases in sorted(per_job, key=lambda x: -(x[0]["overhead_s"] or 0))[:top]:
        parts = ", ".join(f"{ph} {sec:.2f}" for ph, sec in sorted(phases.items(), key=lambda x: -x[1]) if sec > 0.05)
        again = " (follow-up)" if j["follow_up"] else ""
        pace = f" (host pace {j['pace']:.0f} us)" if j.get("pace") else ""
        out.append(f"  {j['overhead_s']:.2f} s sweep {j['sweep']} job {j['job_id']} {j['name']}{again}{pace}: {parts}")
        built = j.get("model_build") or {}
        if phases.get("model build", 0) > 0.3 and built:  # where a long build went (runner.child.build._Parts)
            inside = ", ".join(f"{k} {v:.2f}" for k, v in built.get("seconds", {}).items() if v > 0.02)
            out.append(f"      model build: weights made {built.get('weights_made')}; {inside}")
    return out


def _pace_lines(sweeps: dict, ref_paces: dict) -> list[str]:
    """Per configuration, each process's host pace and speedup (lab.host_pace: the reference's where it recorded one,
    the sweeps' undisturbed runs), and the medians of those at this lease's fast pace (within FASTEST of the fastest
    pace any process here ran at): the reference and the answer compared at one pace of the host."""
    from lab.host_pace import FASTEST

    names = list(dict.fromkeys([n for rows in sweeps.values() for n in rows] + list(ref_paces)))
    runs = {n: [(j["pace"], j["speedup"]) for rows in sweeps.values() for j in (rows.get(n) or {}).get("jobs", [])
                if j["status"] == "succeeded" and not j["disturbed"] and j["pace"] and j["speedup"]] for n in names}
    refs = {n: [(p, x) for p, x in ref_paces.get(n, []) if p] for n in names}
    every = [p for n in names for p, _ in runs[n] + refs[n]]
    if not every:
        return []
    fast = FASTEST * min(every)
    lines = [f"host pace (us, lower is faster) and speedup of each process; at this lease's fast pace (<= {fast:.1f} us):"]
    gaps = []  # the sweeps' median against the reference's, both at the fast pace
    for n in names:
        if not runs[n] and not refs[n]:
            continue
        r, w = ([x for p, x in pairs if p <= fast] for pairs in (refs[n], runs[n]))
        said = [f"reference {statistics.median(r):.3f} ({len(r)})"] if r else []
        said += [f"sweeps {statistics.median(w):.3f} ({len(w)})"] if w else []
        if r and w:
            gaps.append(statistics.median(w) / statistics.median(r) - 1)
            said.append(f"{gaps[-1]:+.1%}")
        lines.append(f"  {n}: reference " + (" ".join(f"{p:.0f}:{x:.3f}" for p, x in sorted(refs[n])) or "-")
                     + " | sweeps " + (" ".join(f"{p:.0f}:{x:.3f}" for p, x in sorted(runs[n])) or "-")
                     + (" | at the fast pace: " + ", ".join(said) if said else ""))
    if gaps:
        lines.append(f"  at one pace of the host: the sweeps within 5% of the reference in {sum(abs(g) <= 0.05 for g in gaps)}"
                     f" of {len(gaps)} configurations with processes of both at it ({min(gaps):+.1%} to {max(gaps):+.1%})")
    return lines + [""]


def _cold_pace_lines(sweeps: dict, ref_cold_paces: dict) -> list[str]:
    """Per configuration, each cold first call with the host's pace just before its compile (_before), the
    reference's and the sweeps' first runs', and the medians of those
    compiled at this lease's fast pace (within FASTEST of the fastest seen here): a compile is host work, so the cold
    first calls compared at one pace of the host."""
    from lab.host_pace import FASTEST

    names = list(dict.fromkeys([n for rows in sweeps.values() for n in rows] + list(ref_cold_paces)))
    runs = {n: [(_before([j["compile_pace"].get("before_us"), j["compile_pace"].get("after_us")]), j["cold_first_call_s"])
                for j in entry_jobs(sweeps, n) if j["status"] == "succeeded" and j["cold_first_call_s"]
                and isinstance(j["compile_pace"], dict)] for n in names}
    refs = {n: ref_cold_paces.get(n, []) for n in names}
    every = [p for n in names for p, _ in runs[n] + refs[n] if p]
    if not every:
        return []
    fast = FASTEST * min(every)
    lines = [f"cold first call (s) by the host's pace just before its compile (us, lower is faster); at this lease's "
             f"fast pace (<= {fast:.1f} us):"]
    for n in names:
        paced = [(p, x) for p, x in refs[n] + runs[n] if p]
        if not paced:
            continue
        r, w = ([x for p, x in pairs if p and p <= fast] for pairs in (refs[n], runs[n]))
        said = [f"reference {statistics.median(r):.2f} s ({len(r)})"] if r else []
        said += [f"sweeps {statistics.median(w):.2f} s ({len(w)})"] if w else []
        said += [f"{statistics.median(w) / statistics.median(r) - 1:+.1%}"] if r and w else []
        lines.append(f"  {n}: reference " + (" ".join(f"{p:.0f}:{x:.2f}" for p, x in sorted(q for q in refs[n] if q[0])) or "-")
                     + " | sweeps " + (" ".join(f"{p:.0f}:{x:.2f}" for p, x in sorted(q for q in runs[n] if q[0])) or "-")
                     + (" | at the fast pace: " + ", ".join(said) if said else ""))
    return lines + [""]


def _pick_lines(jobs: list[dict]) -> list[str]:
    """Per configuration whose processes' autotuner picks differ: each job's picks (runner.child.capture
    .autotune_picks), and its speedup where stored; a warm job picks nothing (its cache's picks)."""
    by_name: dict[str, list[dict]] = {}
    for j in jobs:
        if j.get("picks"):
            by_name.setdefault(j["name"], []).append(j)
    out = []
    for name, js in by_name.items():
        if len({json.dumps(j["picks"], sort_keys=True) for j in js}) > 1:
            out.append(f"autotune picks differ: {name}: " + "; ".join(
                f"sweep {j['sweep']} job {j['job_id']}: {json.dumps(j['picks'], sort_keys=True)[:160]}" for j in js))
    return out


def _frac(flags: list[bool]) -> float:
    return sum(flags) / len(flags) if flags else math.nan


def _share(flags: list[bool]) -> str:
    return f"{sum(flags)} of {len(flags)}" + (f" ({_frac(flags):.0%})" if flags else "")


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("step", choices=("sweep", "reference", "paired", "merge", "table"))
    p.add_argument("--out", action="append", dest="out_all", default=None)
    p.add_argument("--label", default="A")
    p.add_argument("--device", default="cuda")
    p.add_argument("--only", action="append", help="configurations whose name contains this")
    p.add_argument("--small", action="store_true", help="CPU-sized models (a smoke run of this script)")
    p.add_argument("--write", help="table: also write it to this file")
    p.add_argument("--overhead-of", metavar="LABELS", help="table: the sweeps whose jobs the per-job overhead counts, A,B "
                   "(default: all): a paired sweep's first runs find no child warmed ahead (it keeps one 3 s unused)")
    p.add_argument("--one-database", action="store_true",
                   help="table: each sweep's answer read from one database of every sweep in its folder, as a lab's "
                        "would hold them: the device's spread between processes judged from all of them")
    p.add_argument("--home", help="sweep: the worker's home (default: a fresh one)")
    p.add_argument("--continue", dest="continue_db", metavar="FILE",
                   help="sweep: go on in this earlier sweep's database (its processes are this sweep's history)")
    p.add_argument("--sides", default="AB", help="paired: the sweeps' labels, one letter each: the first runs before the "
                   "reference, the others after it")
    p.add_argument("--from", dest="sources", action="append", default=[], metavar="DIR",
                   help="merge: a step's folder, with its sweep-LABEL.db (repeated: one per step)")
    p.add_argument("--set", choices=tuple(SETS), default="seeds", help="seeds: the seed notes' configurations; "
                   "real: Hugging Face and timm models by name (issue 26)")
    p.add_argument("--ref-processes", type=int, default=REF_PROCESSES)
    p.add_argument("--cold-scripts", action="append", default=[], metavar="FILE",
                   help="table: judge cold first calls against these fresh scripts (gpu_instrument_costs --scripts-only "
                        "output, run on the sweeps' machine) instead of the reference's cold processes")
    caches = p.add_mutually_exclusive_group()
    caches.add_argument("--cold", action="store_true",
                        help="reference: each process its own empty compile cache (its first call: a fresh script's)")
    caches.add_argument("--ref-cache", help="reference: one compile cache for every process (a warm one: the sweep's)")
    args = p.parse_args()
    args.out_all = args.out_all or [os.environ.get("OUT") or tempfile.mkdtemp()]
    args.out = args.out_all[0]
    Path(args.out).mkdir(parents=True, exist_ok=True)
    {"sweep": sweep, "reference": reference, "paired": paired, "merge": merge, "table": table}[args.step](args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
