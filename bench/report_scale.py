"""`runner report` and `runner export` on a database of realistic jobs (target at 100k: report ≤ 2 s, export in
≤ 300 MB).

    python -m bench.report_scale [--jobs 100000] [--repeat 1] [--pg URL] [--before DIR] [--cache DIR] [--out FILE]

The database: bench.synthetic's realistic fill (per-round samples, ~55 kB a job, and a ~6 kB detail, as real jobs
store), in a SQLite file and, with --pg or COMPILE_LAB_TEST_PG (a role that may CREATE DATABASE), in a PostgreSQL
database beside it; both are kept for later runs (bench.synthetic.filled, filled_pg: a 100k fill takes many minutes).
Each command runs as a user runs it, `python -m runner ...` in a fresh process, its output to a file; its wall time
and the process's peak resident memory (ru_maxrss, from wait4) are printed. --before DIR runs the same commands with
another checkout's code (say `git archive <commit> | tar -x -C DIR`), interleaved, for a before/after on the same
data, machine and load.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMANDS = {"report": ["report", "--format", "md"], "export csv": ["export", "--format", "csv"],
            "export json": ["export", "--format", "json"]}


def run(code: Path, url: str, args: list[str], out: Path) -> tuple[float, float, float]:
    """(wall s, peak RSS MB, output MB) of `python -m runner ARGS --db URL -o OUT` run with `code`'s modules."""
    env = {**os.environ, "PYTHONPATH": str(code)}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "runner", *args, "--db", url, "-o", str(out)], cwd=code, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    err = proc.stderr.read()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        raise SystemExit(f"{' '.join(args)} failed ({proc.returncode}): {err.decode()[-2000:]}")
    size = out.stat().st_size / 1e6
    out.unlink()
    return wall, usage.ru_maxrss / 1024, size


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
    p.add_argument("--cache", type=Path, default=Path(tempfile.gettempdir()) / "compile-lab-bench",
                   help="where the SQLite fill is kept between runs")
    p.add_argument("--only", choices=("sqlite", "postgresql"), help="one engine only")
    p.add_argument("--out", type=Path, help="also write the table here")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from bench.synthetic import filled, filled_pg

    args.cache.mkdir(parents=True, exist_ok=True)
    lines = []

    def say(line: str) -> None:
        print(line, flush=True)
        lines.append(line)

    with tempfile.TemporaryDirectory(prefix="report-scale-") as tmp:
        dbs = {}
        if args.only != "postgresql":
            start = time.perf_counter()
            path = filled(Path(tmp) / "lab.db", args.jobs, seed=args.jobs, cache=args.cache)
            warm_file(path)
            dbs["sqlite"] = f"sqlite:///{path}"
            say(f"SQLite: {args.jobs:,} jobs, {path.stat().st_size / 1e9:.2f} GB, ready in {time.perf_counter() - start:.0f} s")
        if args.pg and args.only != "sqlite":
            start = time.perf_counter()
            dbs["postgresql"] = filled_pg(args.pg, args.jobs, seed=args.jobs)
            say(f"PostgreSQL: {args.jobs:,} jobs, ready in {time.perf_counter() - start:.0f} s")
        codes = {"this": ROOT} | ({"before": args.before.resolve()} if args.before else {})
        say(f"cpu: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.2f}")
        say(f"{'engine':<11} {'command':<12} {'code':<7} {'wall s':>8} {'peak RSS MB':>12} {'output MB':>10}  runs")
        for engine, url in dbs.items():
            for name, cmd in COMMANDS.items():
                got = {code: [] for code in codes}
                for _ in range(args.repeat):
                    for code, where in codes.items():  # interleaved: the box's load moves both alike
                        got[code].append(run(where, url, cmd, Path(tmp) / "out"))
                for code, runs in got.items():
                    wall = statistics.median(r[0] for r in runs)
                    rss = max(r[1] for r in runs)
                    say(f"{engine:<11} {name:<12} {code:<7} {wall:>8.2f} {rss:>12.0f} {runs[0][2]:>10.1f}  "
                        + ", ".join(f"{r[0]:.2f}" for r in runs))
        say(f"load average after: {os.getloadavg()[0]:.2f}")
    if args.out:
        args.out.write_text("\n".join(lines) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
