"""An adversarial pass over the lab, as a careless admin and a careful attacker would try it.

Inputs: bad values for every `python -m runner` command and garbage database URLs, run through the real
CLI entry point (in this process, so a traceback is an exception that escapes `main`). Each counts as
*refused cleanly* when it exits 2 with an `error:` line, no traceback and no password on stderr, and as
*nothing stored* when no sweep or job row appeared. Faults: the fault tests (real workers, children,
signals, a tmpfs, a PostgreSQL proxy) run once through pytest; each asserts that its job ended exactly
once (nothing lost, nothing doubled), so a passed test is a survived fault. Rows no worker wrote (altered
compile cache bundles, decompression bombs): bench/untrusted.py.

    python bench/adversarial.py [--pg URL] [--no-faults] [--no-untrusted]   (COMPILE_LAB_TEST_PG also names the server)
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import untrusted  # noqa: E402 (the path above first)

SECRET = "S3cret"
FIXTURES = str(ROOT / "tests" / "fixture_models")
BASE = ["--model", "tiny", "--batch", "2", "--device", "cpu", "--models-dir", FIXTURES]
HUGE = "9" * 5000
INJECTIONS = ["=HYPERLINK(\"http://evil.example\",\"x\")", "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)",
              "=1+2"]  # sweep names a spreadsheet would run as formulas
BAD_LINKS = ["inf", "1e309", "1e400", "-1", "0", "1.5", "nan", "9223372036854775808", HUGE, "１２", "12abc"]
BAD_INTS = ["0", "-1", "１２", "1_0", "²", "1e3", "abc", "", " ", "nan", "0x10", "1.5", "8;id", "99999999999999999999"]


def submit_inputs() -> list[list[str]]:
    """Each a full `submit` argv that must be refused."""
    tries = []
    for name in ["a\0b", "a\x01b", "tab\there", "new\nline", "\x1b[31mred", "line\u2028sep", "bad\udcffutf8",
                 "   ", "x" * 201, "y" * 10_000]:
        tries.append(BASE + ["--name", name])
    tries += [["--model", "tiny", "--batch", v, "--device", "cpu", "--models-dir", FIXTURES] for v in BAD_INTS]
    for flag in ("--iters", "--timeout", "--repeat"):
        tries += [BASE + [flag, v] for v in ("0", "-5", "１", "²", "99999999999", "x")]
    for model in ["", " ", "nosuch", "../../etc/passwd", "a\0", "m" * 101]:
        tries.append(["--model", model, "--batch", "2", "--device", "cpu", "--models-dir", FIXTURES])
    for flag, bad in [("--backend", "INDUCTOR"), ("--backend", "eager;id"), ("--mode", "fast"), ("--dynamic", "maybe"),
                      ("--fullgraph", "yes please"), ("--device", "tpu"), ("--dtype", "float8"), ("--task", "train"),
                      ("--cache", "hot"), ("--schedule", "8,,16"), ("--schedule", "a"), ("--schedule", "0"),
                      ("--schedule", "１"), ("--arg", "width"), ("--arg", "=3"), ("--arg", "width=²"),
                      ("--arg", "depth=3"), ("--arg", "width=-1"), ("--arg", "width=99999999999")]:
        tries.append(BASE + [flag, bad])
    tries.append(BASE + ["--batch", ",".join(str(i) for i in range(1, 400)), "--repeat", "20"])  # too many jobs
    for flag in ("--batch", "--iters", "--timeout", "--repeat", "--reruns", "--process-repeats", "--schedule"):
        tries.append(BASE + [flag, HUGE])  # past Python's 4300-digit limit for int()
    tries += [BASE + ["--arg", f"width={HUGE}"], BASE + ["--arg", f"width=-{HUGE}"], BASE + ["--batch", f"8,{HUGE}"]]
    return [["submit", *t] for t in tries]


def other_inputs() -> list[list[str]]:
    tries = [["work", "--gpu", g, "--once"] for g in ("1;id", "１", "0\n", "", "-1", "GPU-xyz!")]
    tries += [["work", "--lease", "0", "--once"], ["work", "--grace", "-1", "--once"], ["work", "--max-jobs", "0"],
              ["work", "--home", "/proc/compile-lab", "--once"], ["work", "--spawn", "thread", "--once"],
              ["calibrate", "--gpu", "0;x"]]
    tries += [["cancel", v] for v in ("99999999999999999999999", "-1", "0", "１", "abc", "12345")]
    tries += [["export", "--format", "json", "-o", "/proc/compile-lab/x"], ["export", "--sweep", "１", "--format", "json"],
              ["export", "--format", "xml"]]
    tries += [["work", flag, HUGE, "--once"] for flag in ("--max-jobs", "--threads", "--lease", "--grace", "--gpu")]
    tries += [["work", "--threads", "4096", "--once"], ["work", "--gpus", f"0,{HUGE}"], ["cancel", HUGE],
              ["export", "--sweep", HUGE, "--format", "csv"], ["report", "--sweep", HUGE],
              ["artifact", "9223372036854775808", "output_code"], ["artifact", HUGE, "trace"],
              ["artifact", "1", "a\0b"], ["artifact", "1", "n" * 10_000]]
    return tries


def bad_urls(tmp: Path) -> list[str]:
    (tmp / "folder.db").mkdir()
    (tmp / "garbage.db").write_bytes(os.urandom(8192))
    return [f"postgresql://lab:{SECRET}@host:notaport/db", f"postgresql://lab:{SECRET}@h:99999/db",
            f"postgresql://lab:{SECRET}@[::1:5432/x", f"postgresql://lab:{SECRET}@localhost:1/x",
            f"postgresql+psycopg://lab:{SECRET}@nohost.invalid/x", f"postgresql://lab:p@{SECRET}@h:x/db",
            f"lab:{SECRET}@host/db", f"mysql://lab:{SECRET}@h/x", "oracle://x", "http://example.org", "foo", "://",
            " ", "sqlite:////proc/compile-lab/x.db", f"sqlite:///{tmp / 'folder.db'}", f"sqlite:///{tmp / 'garbage.db'}",
            "postgresql://", "postgresql:///nodb", "sqlite:///\0x.db",
            f"postgresql://lab:{SECRET}@localhost/x?sslmode=bogus", f"mssql+pyodbc://lab:{SECRET}@h/x",
            "sqlite+pysqlite:///" + "d/" * 2000 + "x.db", f"postgresql+asyncpg://lab:{SECRET}@h/x"]


def run_main(argv: list[str]) -> tuple[int | None, str]:
    """(exit code, stderr) of runner.cli.main.main; None when an exception escaped (a traceback)."""
    from runner.cli import main as cli

    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = cli.main(argv)
        except SystemExit as e:  # argparse: usage line + error line
            code = e.code
        except Exception as e:  # noqa: BLE001 (what the bench looks for)
            return None, f"{type(e).__name__}: {e}"
    return code, err.getvalue()


def rows(url: str) -> int:
    from sqlalchemy import func, select

    from db.database import get_engine
    from db.engine import reading
    from db.models import Job, Sweep

    with reading(get_engine(url)) as s:
        return s.scalar(select(func.count(Sweep.id))) + s.scalar(select(func.count(Job.id)))


def clean(code, stderr: str) -> bool:
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    return code == 2 and SECRET not in stderr and "Traceback" not in stderr and ("error:" in last)


def inputs_table(url: str) -> list[tuple]:
    out = []
    for what, tries, stores in (("submit: bad values", submit_inputs(), True),
                                ("work/cancel/export/calibrate", other_inputs(), False)):
        refused = stored = one_line = 0
        bad = []
        for argv in tries:
            before = rows(url)
            code, err = run_main([argv[0], "--db", url, *argv[1:]])
            ok = clean(code, err)
            refused += ok
            one_line += ok and err.count("\n") == 1
            stored += rows(url) != before
            if not ok:
                bad.append((argv, code, err.strip()[-200:]))
        out.append((what, len(tries), refused, one_line, len(tries) - stored if stores else "-", bad))
    return out


def urls_table(tmp: Path) -> tuple:
    tries = bad_urls(tmp)
    refused, one_line, bad = 0, 0, []
    for u in tries:
        code, err = run_main(["status", "--db", u])
        ok = clean(code, err)
        refused += ok
        one_line += ok and err.count("\n") == 1
        if not ok:
            bad.append((u[:60], code, err.strip()[-200:]))
    return ("garbage database URLs (status)", len(tries), refused, one_line, "-", bad)


def run_out(argv: list[str]) -> tuple[int | None, str]:
    """(exit code, stdout) of runner.cli.main.main, for the commands that print a file."""
    from runner.cli import main as cli

    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            code = cli.main(argv)
        except SystemExit as e:
            code = e.code
    return code, out.getvalue()


def exports_table(url: str) -> tuple:
    """Sweeps named as formulas, a result holding an infinity: every CSV the CLI writes (export, report) must have
    no cell a spreadsheet would run, every JSON must parse strictly. Tried: the files; refused cleanly: the safe ones."""
    import csv
    import json

    from db import queue
    from db.database import get_engine
    from db.models import JobStatus
    from lab.spec import ModelInfo
    from lab.sweep import SweepRequest
    from lab.tabular import FORMULA_START, PLAIN_NUMBER

    engine = get_engine(url)
    for name in INJECTIONS:
        queue.submit(engine, SweepRequest(model="tiny", batch_sizes=[2], device="cpu", name=name),
                     {"tiny": ModelInfo("tiny", "d")})
        claim = queue.claim_next(engine, "bench", ["cpu"], ["tiny"], 60)
        queue.finish(engine, claim.job_id, claim.token, JobStatus.SUCCEEDED,
                     result={"eager_ms": 2.0, "compiled_ms": 1.0, "speedup": 2.0, "max_abs_error": float("inf"),
                             "rel_error": -0.5, "samples": {}, "detail": {}})
    safe, bad = 0, []
    for argv in (["export", "--format", "csv"], ["report", "--format", "csv"], ["report", "--versions", "--format",
                                                                                "csv"]):
        code, text = run_out([argv[0], "--db", url, *argv[1:]])
        unsafe = [c for row in csv.reader(io.StringIO(text)) for c in row
                  if c.startswith(FORMULA_START) and not PLAIN_NUMBER.fullmatch(c)]
        ok = code == 0 and not unsafe
        safe += ok
        if not ok:
            bad.append((argv, code, unsafe[:3]))
    for argv in (["export", "--format", "json"], ["report", "--format", "json"]):
        code, text = run_out([argv[0], "--db", url, *argv[1:]])
        try:
            json.loads(text, parse_constant=lambda token: (_ for _ in ()).throw(ValueError(token)))
            ok = code == 0
        except ValueError as e:
            ok, text = False, str(e)
        safe += ok
        if not ok:
            bad.append((argv, code, text[:80]))
    return ("CSV/JSON files: formula names, an infinity", 5, safe, "-", "-", bad)


def links_table() -> tuple:
    """?job= links the pages must answer with an error under the field, never the generic app error."""
    from streamlit.testing.v1 import AppTest

    refused, bad = 0, []
    for page in ("job", "queue"):
        for value in BAD_LINKS:
            at = AppTest.from_file(str(ROOT / "dashboard" / "main.py"), default_timeout=60)
            at.query_params["job"] = value
            at.switch_page(f"screens/{page}.py")
            at.run()
            ok = not at.exception and any("is not a job id" in e.value for e in at.error)
            refused += ok
            if not ok:
                bad.append((f"/{page}?job={value[:20]}", [str(e.value)[:80] for e in at.exception]))
    return ("dashboard ?job= links (job, queue pages)", 2 * len(BAD_LINKS), refused, "-", "-", bad)


def scratch_pg(base: str):
    """A fresh database on the server `base` names, dropped afterwards: the bench stores sweeps."""
    from bench.scratch import scratch_database

    return scratch_database(base, "lab_adv")


FAULT_TESTS = ["tests/faults/test_worker_os_faults.py", "tests/faults/test_worker_faults.py",
               "tests/dashboard/test_database_down.py", "tests/faults/test_races.py",
               "tests/faults/test_kept_outcome.py", "tests/faults/test_lease_timing.py"]


def faults() -> tuple[int, int, list[str]]:
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:randomly", *FAULT_TESTS],
                          cwd=ROOT, capture_output=True, text=True)
    lines = done.stdout.splitlines()
    passed = [ln.split(" ", 1)[1] for ln in lines if ln.startswith("PASSED tests/")]  # -rA's summary lines,
    failed = [ln for ln in lines if ln.startswith(("FAILED tests/", "ERROR tests/"))]  # not captured log lines
    skipped = [ln for ln in lines if ln.startswith("SKIPPED [")]
    return len(passed) + len(failed), len(passed), failed + skipped


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--pg", default=os.environ.get("COMPILE_LAB_TEST_PG"), help="a PostgreSQL URL to try the inputs on too")
    p.add_argument("--no-faults", action="store_true")
    p.add_argument("--no-untrusted", action="store_true", help="skip the altered bundles and decompression bombs")
    args = p.parse_args()
    table = []
    with tempfile.TemporaryDirectory() as tmp, contextlib.ExitStack() as stack:
        tmp = Path(tmp)
        engines = [("SQLite", f"sqlite:///{tmp / 'lab.db'}")]
        if args.pg:
            engines.append(("PostgreSQL", stack.enter_context(scratch_pg(args.pg))))
        for engine_name, url in engines:
            for what, tried, refused, one_line, nothing, bad in inputs_table(url):
                table.append((f"{what} [{engine_name}]", tried, refused, one_line, nothing, bad))
            what, tried, safe, one_line, nothing, bad = exports_table(url)
            table.append((f"{what} [{engine_name}]", tried, safe, one_line, nothing, bad))
        table.append(urls_table(tmp))
        os.environ["DATABASE_URL"] = engines[0][1]
        os.environ["COMPILE_LAB_EMBEDDED_WORKER"] = "0"
        table.append(links_table())
    print(f"{'inputs':<46} {'tried':>6} {'refused cleanly':>16} {'one line':>9} {'nothing stored':>15}")
    for what, tried, refused, one_line, nothing, _ in table:
        print(f"{what:<46} {tried:>6} {refused:>16} {one_line:>9} {nothing!s:>15}")
    total = sum(t[1] for t in table), sum(t[2] for t in table)
    print(f"{'total':<46} {total[0]:>6} {total[1]:>16}")
    print("(one line: stderr is a single `error:` line; the rest are argparse's usage line + `error:` line;\n"
          " CSV/JSON files: refused cleanly = no cell a spreadsheet would run, JSON a strict parser reads;\n"
          " links: an error under the job-id field, no app error)")
    for what, *_, bad in table:
        for item in bad:
            print(f"  NOT CLEAN in {what}: {item}")
    if not args.no_untrusted:
        with tempfile.TemporaryDirectory() as tmp:
            rows = untrusted.table(f"sqlite:///{Path(tmp) / 'rows.db'}", args.pg, Path(tmp))
        print(f"\n{'rows no worker wrote (bench/untrusted.py)':<56} {'tried':>6} {'handled':>8}  peak memory")
        for what, tried, handled, peak, _ in rows:
            print(f"{what:<56} {tried:>6} {handled:>8}  {peak}")
        print("(handled: refused with a message naming it and the limit; nothing of it written or loaded)")
        for what, *_, bad in rows:
            for item in bad:
                print(f"  NOT HANDLED in {what}: {item}")
    if not args.no_faults:
        injected, survived, notes = faults()
        print(f"\nfaults injected (fault tests: real processes and signals; each asserts one end per job, "
              f"nothing lost or doubled): {injected}, survived: {survived}")
        for n in notes:
            print(f"  {n}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
