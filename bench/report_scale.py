"""`runner report` and `runner export` on a database of realistic jobs (target at 100k: report ≤ 1.5 s, export in
≤ 300 MB).

    python -m bench.report_scale [--jobs 100000] [--repeat 1] [--pg URL] [--before DIR --before-db FILE] [--cache DIR]
                                 [--only sqlite|postgresql] [--busy 1] [--commands report ...] [--out FILE]

The database: bench.synthetic's realistic fill (per-round samples, ~40 kB a job as JSON, packed as the results table
stores them, and a ~6 kB detail, as real jobs store; process repeats), in a SQLite file and, with --pg or
COMPILE_LAB_TEST_PG (a role that may CREATE DATABASE), copied into a
PostgreSQL database beside it; both are kept for later runs (bench.synthetic.filled, filled_pg: a 100k fill takes
many minutes).
Each command runs as a user runs it, `python -m runner ...` in a fresh process, its output to a file; its wall time
and the process's peak resident memory (ru_maxrss, from wait4) are printed; one that needs more than --limit-gb of
address space stops with a MemoryError and prints NaN as its output size. --before DIR runs the same commands with
another checkout's code (say `git archive <commit> | tar -x -C DIR`) on --before-db, a SQLite file at that code's
schema holding the same jobs, after this code's, for a before/after on the same data and machine (SQLite only). Each
SQLite file is read through once before its commands: a lab's server has its database in the page cache. --busy N
processes keep a core busy each while the commands run (a loaded box). Compiled modules are kept between commands
(bytecode_kept), as they are where a lab is installed.
"""
from __future__ import annotations

import argparse
import contextlib
import math
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.said import Said

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {"report": ["report", "--format", "md"], "export csv": ["export", "--format", "csv"],
            "export json": ["export", "--format", "json"]}


def run(code: Path, url: str, args: list[str], out: Path, limit_gb: float) -> tuple[float, float, float]:
    """(wall s, peak RSS MB, output MB) of `python -m runner ARGS --db URL -o OUT` run with `code`'s modules; past
    `limit_gb` of address space it fails with a MemoryError (output NaN) rather than take the box's memory."""
    env = bytecode_kept({**os.environ, "PYTHONPATH": str(code)}, out.parent / f"pycache-{code.name}")
    limit = int(limit_gb * 2**30)
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "runner", *args, "--db", url, "-o", str(out)], cwd=code, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_AS, (limit, limit)))
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode and b"MemoryError" in err:
        return wall, usage.ru_maxrss / 1024, math.nan
    if proc.returncode:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    size = out.stat().st_size / 1e6
    out.unlink()
    return wall, usage.ru_maxrss / 1024, size


def bytecode_kept(env: dict, folder: Path) -> dict:
    """`env` with Python's compiled modules kept (in `folder`, out of the checkout) as an installed lab's are: where
    PYTHONDONTWRITEBYTECODE is set (a sandbox), every command would compile the project's modules again (~0.07 s of
    `runner report`, more for the app)."""
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    return env | {"PYTHONPYCACHEPREFIX": str(folder)}


@contextlib.contextmanager
def busy_cores(n: int):
    """`n` processes that each keep a core busy (a spinning loop) while the block runs: the loaded box the targets
    are met on."""
    spinners = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(n)]
    try:
        yield
    finally:
        for proc in spinners:
            proc.kill()
            proc.wait()


def warm_file(path: Path) -> None:
    """Read the SQLite file once, so the first command timed does not pay for the disk (a lab's server has it cached)."""
    with path.open("rb") as f:
        while f.read(1 << 24):
            pass


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--jobs", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=1)
    p.add_argument("--pg", default=os.environ.get("COMPILE_LAB_TEST_PG"))
    p.add_argument("--before", type=Path, help="another checkout's code, run beside this one's")
    p.add_argument("--before-db", type=Path, help="--before's SQLite file (its schema, the same jobs)")
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "compile-lab-bench",
                   help="where the SQLite fill is kept between runs")
    p.add_argument("--only", choices=("sqlite", "postgresql"), help="one engine only")
    p.add_argument("--limit-gb", type=float, default=12.0, help="address space per command (output NaN past it)")
    p.add_argument("--busy", type=int, default=1, help="processes keeping a core busy meanwhile (0: none)")
    p.add_argument("--commands", nargs="+", choices=tuple(COMMANDS), default=list(COMMANDS))
    p.add_argument("--out", type=Path, help="also write the table here")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from bench.synthetic import filled, filled_pg

    args.cache.mkdir(parents=True, exist_ok=True)
    say = Said()

    with tempfile.TemporaryDirectory(prefix="report-scale-") as tmp:
        dbs = {}
        if args.only != "postgresql":  # read in place: the commands only read it
            start = time.perf_counter()
            path = filled(None, args.jobs, seed=args.jobs, cache=args.cache)
            dbs["sqlite"] = path
            say(f"SQLite: {args.jobs:,} jobs, {path.stat().st_size / 1e9:.2f} GB, ready in {time.perf_counter() - start:.0f} s")
        if args.pg and args.only != "sqlite":
            start = time.perf_counter()
            dbs["postgresql"] = filled_pg(args.pg, args.jobs, seed=args.jobs, cache=args.cache)
            say(f"PostgreSQL: {args.jobs:,} jobs, ready in {time.perf_counter() - start:.0f} s")
        runs = [("this", ROOT, engine, db) for engine, db in dbs.items()]
        if args.before and "sqlite" in dbs:
            runs.append(("before", args.before.resolve(), "sqlite", args.before_db.resolve()))
        say(f"cpu: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}; {args.busy} other process(es) "
            "keeping a core busy meanwhile")
        say(f"{'engine':<11} {'command':<12} {'code':<7} {'wall s':>8} {'peak RSS MB':>12} {'output MB':>10}  runs")
        # one code's commands after another's, each database read once first: two 6 GB files do not both fit the
        # page cache of a small box, and a cold read would time the disk
        with busy_cores(args.busy):
            for code, where, engine, db in runs:
                if isinstance(db, Path):
                    warm_file(db)
                url = f"sqlite:///{db}" if isinstance(db, Path) else db
                for name in args.commands:
                    got = [run(where, url, COMMANDS[name], Path(tmp) / "out", args.limit_gb) for _ in range(args.repeat)]
                    wall = statistics.median(r[0] for r in got)
                    say(f"{engine:<11} {name:<12} {code:<7} {wall:>8.2f} {max(r[1] for r in got):>12.0f} "
                        f"{got[0][2]:>10.1f}  " + ", ".join(f"{r[0]:.2f}" for r in got))
        say(f"load average after: {os.getloadavg()[0]:.2f}")
    say.write(args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
