"""Shared fixtures: real SQLite files in tmp folders, a real PostgreSQL server (a fresh database per
test), the real CLI in real subprocesses, bench.synthetic's finished jobs. And the tiers by cost: markers
applied from each test's folder and fixtures, and a closing line naming every tier a run skipped and why."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
TESTS = Path(__file__).resolve().parent
FIXTURE_MODELS = TESTS / "fixture_models"
# workers started by tests list no Hugging Face / timm families (a child importing transformers at each worker's start
# is CPU on a 2-core box that other tests' measurements would see); the tests about families turn them on
os.environ.setdefault("COMPILE_LAB_FAMILIES", "0")
# a second interpreter with torch 2.14.1 (a CUDA build, run on the CPU), torchvision and timm: `make test` makes it
# (timm needs a torchvision built for its torch, and none is built for the CPU torch 2.13 on this index)
EXTRAS_PYTHON = Path(os.environ.get("COMPILE_LAB_EXTRAS_PYTHON", ROOT / ".venv" / "extras" / "bin" / "python"))

# what every test in a folder costs; tests/unit and tests/dashboard run in this process (`make test-fast`)
FOLDER_MARKERS = {"integration": ("subprocess", "slow"), "faults": ("subprocess", "slow"),
                  "e2e": ("browser", "subprocess", "slow")}
TIERS = ("postgres", "browser", "gpu", "extras", "cluster")  # what a machine may lack: a run that skips one says so


def pytest_collection_modifyitems(config, items):
    for item in items:
        for name in FOLDER_MARKERS.get(item.path.relative_to(TESTS).parts[0], ()):
            item.add_marker(name)
        callspec = getattr(item, "callspec", None)
        if "pg_url" in item.fixturenames or (callspec and callspec.params.get("any_db_url") == "postgresql"):
            item.add_marker("postgres")
        if "slurm" in item.fixturenames:  # a real one-node Slurm cluster (tests/cluster/conftest.py)
            item.add_marker("cluster")
    if not shutil.which("nvidia-smi"):
        for item in items:
            if item.get_closest_marker("gpu"):
                item.add_marker(pytest.mark.skip(reason="no GPU here (nvidia-smi not found)"))


# what a whole run writes under the temporary folder at its peak (workers' homes, compile caches, databases, browser
# profiles) is about 2.2 GB; on a fuller disk the workers hand their jobs back for want of space and wait for it, and the
# run times out an hour later instead of failing at once
NEEDS_FREE_GB = 4


def pytest_sessionstart(session):
    import tempfile

    where = tempfile.gettempdir()
    free_gb = shutil.disk_usage(where).free / 2 ** 30
    if free_gb < NEEDS_FREE_GB and not os.environ.get("PYTEST_XDIST_WORKER"):
        pytest.exit(f"only {free_gb:.1f} GB free under {where}; the tests need {NEEDS_FREE_GB} GB "
                    "(free some space, or point TMPDIR at a disk that has it)", returncode=3)


def pytest_runtest_logreport(report):
    """A failure named the moment it happens, not only in the summary: a run a watchdog stops has no summary."""
    if report.failed and not os.environ.get("PYTEST_XDIST_WORKER"):
        crash = getattr(getattr(report.longrepr, "reprcrash", None), "message", None) or str(report.longrepr)
        said = " ".join(crash.split())[:300]
        print(f"\nFAILED {report.nodeid} ({report.when}): {said}", flush=True)


REQUIRE_ENV = "COMPILE_LAB_REQUIRE_TIERS"  # e.g. postgres,browser (.ci/run): skipping one of these fails the run


def _skipped_tiers(reports) -> dict[str, dict[str, int]]:
    """tier -> skip reason -> how many tests; a skip outside the tiers counts as "other"."""
    skipped: dict[str, dict[str, int]] = {}
    for report in reports:
        tier = next((t for t in TIERS if t in report.keywords), "other")
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        reason = reason.removeprefix("Skipped: ")
        skipped.setdefault(tier, {}).setdefault(reason, 0)
        skipped[tier][reason] += 1
    return skipped


def _required_but_skipped(config) -> list[str]:
    required = {t.strip() for t in os.environ.get(REQUIRE_ENV, "").split(",") if t.strip()}
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    skipped = _skipped_tiers(reporter.stats.get("skipped", [])) if reporter else {}
    return sorted(required & set(skipped))


def pytest_sessionfinish(session, exitstatus):
    if exitstatus == 0 and _required_but_skipped(session.config):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    """Name the tiers that did not run, so a green run never hides that a tier was skipped."""
    skipped = _skipped_tiers(terminalreporter.stats.get("skipped", []))
    deselected = len(terminalreporter.stats.get("deselected", []))
    if config.option.markexpr in ("alone", "not alone"):  # `make test`'s two parts: together they run every test
        deselected = 0
    if not skipped and not deselected:
        return
    terminalreporter.section("tiers not run", sep="=", yellow=True)
    for tier, reasons in skipped.items():
        for reason, n in reasons.items():
            terminalreporter.write_line(f"{tier}: {n} test(s) skipped: {reason}")
    if deselected:
        chosen = " ".join(f"{flag} {value!r}" for flag, value in (("-m", config.option.markexpr),
                                                                  ("-k", config.option.keyword)) if value)
        terminalreporter.write_line(f"{deselected} test(s) deselected by {chosen}: `make test` runs every tier")
    missing = _required_but_skipped(config)
    if missing:
        terminalreporter.write_line(f"FAILED: {REQUIRE_ENV} requires {', '.join(missing)}, which did not run",
                                    red=True)


@pytest.fixture(scope="session")
def migrated_sqlite(tmp_path_factory) -> Path:
    """An empty SQLite database at the newest schema revision, made once per run."""
    from db.database import dispose_engine, get_engine

    path = tmp_path_factory.mktemp("template") / "lab.db"
    get_engine(f"sqlite:///{path}")
    dispose_engine(f"sqlite:///{path}")  # closed: the WAL is checkpointed into the one file
    return path


@pytest.fixture
def db_url(tmp_path, migrated_sqlite) -> str:
    """A real SQLite file of this test's own, at the newest revision: a copy of the template, which saves
    each test the migrations (tests about migrating open fresh files: any_db_url)."""
    shutil.copyfile(migrated_sqlite, tmp_path / "lab.db")
    return f"sqlite:///{tmp_path / 'lab.db'}"


PG_ENV = "COMPILE_LAB_TEST_PG"  # a PostgreSQL URL whose role may CREATE DATABASE (.ci/run sets it)


@pytest.fixture
def pg_url():
    """A fresh, empty database on the PostgreSQL server that COMPILE_LAB_TEST_PG names; dropped afterwards."""
    base = os.environ.get(PG_ENV)
    if not base:
        pytest.skip(f"{PG_ENV} is not set: no PostgreSQL server for this run (`make test` starts one where it runs "
                    "as root; see docs/operations.md)")
    from bench.scratch import scratch_database

    with scratch_database(base) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def any_db_url(request, tmp_path) -> str:
    """The same test on a real SQLite file and on a real PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'lab.db'}"
    return request.getfixturevalue("pg_url")


def at_head(url: str, migrated: Path) -> str:
    """`url`; a SQLite one made a copy of the migrated template (`migrated_sqlite`) first, as db_url is: for tests on
    any_db_url that are not about migrating (its PostgreSQL database is migrated when first opened)."""
    if url.startswith("sqlite:///"):
        shutil.copyfile(migrated, url.removeprefix("sqlite:///"))
    return url


@pytest.fixture
def engine(db_url):
    from db.database import get_engine

    return get_engine(db_url)


@pytest.fixture(scope="session")
def synthetic_fills(tmp_path_factory) -> dict:
    """bench.synthetic's fills made once per run, as SQLite files: (n_jobs, seed, device, ceilings) -> path."""
    return {"folder": tmp_path_factory.mktemp("synthetic")}


@pytest.fixture
def fill_synthetic(engine, migrated_sqlite, synthetic_fills):
    """Fill this test's database with bench.synthetic's finished jobs, the data the render benchmark times:
    sweeps over a few zoo models, about 2% failures with their reasons, shape schedules, a repeat sweep and
    the device's ceilings. Call it with a job count (and seed, device, ceilings); it returns the engine. An empty
    SQLite database gets a copy of the same fill made once per run (the fill is seeded: the same jobs)."""
    import sqlite3

    from bench.synthetic import fill
    from db.database import dispose_engine, get_engine

    def fill_synthetic(n_jobs: int, seed: int = 0, device: str = "cuda", ceilings: bool = True):
        with engine.connect() as conn:
            empty = engine.dialect.name == "sqlite" and not conn.exec_driver_sql("SELECT 1 FROM jobs").first()
        if not empty:
            fill(engine, n_jobs, seed=seed, device=device, ceilings=ceilings)
            return engine
        key = (n_jobs, seed, device, ceilings)
        if key not in synthetic_fills:
            path = synthetic_fills["folder"] / f"{len(synthetic_fills)}.db"
            shutil.copyfile(migrated_sqlite, path)
            fill(get_engine(f"sqlite:///{path}"), n_jobs, seed=seed, device=device, ceilings=ceilings)
            dispose_engine(f"sqlite:///{path}")
            synthetic_fills[key] = path
        made, mine = sqlite3.connect(synthetic_fills[key]), sqlite3.connect(engine.url.database)
        try:
            made.backup(mine)  # page by page into the test's own file, under its open engine
        finally:
            made.close()
            mine.close()
        return engine

    return fill_synthetic


@pytest.fixture
def synthetic(fill_synthetic):
    """Results' frame of 300 synthetic CUDA jobs, with every field the pages read."""
    from dashboard.data import frame
    from db import views

    engine = fill_synthetic(300, seed=3, device="cuda")
    return frame.load_frame(engine, fields=views.FRAME_FIELDS + views.VIEW_FIELDS + views.FIRST_CALL_FIELDS
                             + views.ROOFLINE_FIELDS)[0]


@pytest.fixture
def cache_key_file(tmp_path) -> Path:
    """A compile cache signing key as docs/operations.md makes one: 64 hex characters, mode 600."""
    import secrets

    path = tmp_path / "cache.key"
    path.write_text(secrets.token_hex(32) + "\n")
    path.chmod(0o600)
    return path


def run_cli(*args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m runner ARGS` in a fresh interpreter, from the project root."""
    return subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def submit(db_url: str, *args: str) -> list[int]:
    """`runner submit`, without follow-ups unless the test asks for them (--reruns, --process-repeats): a test about
    something else runs one process per configuration, and must not grow jobs because this shared box disturbed one."""
    reruns = () if "--reruns" in args else ("--reruns", "0")
    repeats = () if "--process-repeats" in args else ("--process-repeats", "1")
    done = run_cli("submit", "--db", db_url, "--models-dir", str(FIXTURE_MODELS), *reruns, *repeats, *args)
    assert done.returncode == 0, done.stderr
    return [int(x) for x in done.stdout.split()]


def work(db_url: str, home: Path, *args: str, timeout: float = 600, env: dict | None = None
         ) -> subprocess.CompletedProcess:
    done = run_cli("work", "--db", db_url, "--home", str(home), "--models-dir", str(FIXTURE_MODELS), *args,
                   timeout=timeout, env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def wait_until(predicate, timeout: float, what: str, interval: float = 0.1):
    """Poll a condition until it holds (this is waiting for an event, bounded, not a fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


def records(db_url: str, **kw) -> dict[int, dict]:
    from db.database import get_engine
    from db.results import export_records

    return {r["job_id"]: r for r in export_records(get_engine(db_url), include_raw=True, **kw)}


def result_detail(db_url: str, job_id: int) -> dict:
    """The stored result's whole detail (the export holds some of its keys)."""
    from sqlalchemy import select

    from db.database import get_engine
    from db.engine import reading
    from db.models import Result

    with reading(get_engine(db_url)) as s:
        return s.scalar(select(Result.detail).where(Result.job_id == job_id))


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def start_worker(db_url: str, home: Path, *args: str, env: dict | None = None) -> subprocess.Popen:
    """`python -m runner work` in the background (stop it with signals); its log goes to home/worker-N.log."""
    home.mkdir(parents=True, exist_ok=True)
    log = open(home / f"worker-{time.monotonic_ns()}.log", "w")
    proc = subprocess.Popen([sys.executable, "-m", "runner", "work", "--db", db_url, "--home", str(home),
                             "--models-dir", str(FIXTURE_MODELS), *args], cwd=ROOT, stdout=log,
                            stderr=subprocess.STDOUT, text=True, env={**os.environ, **(env or {})})
    proc.log_path = Path(log.name)
    log.close()  # the child holds its own copy
    return proc


def job_row(db_url: str, job_id: int):
    from db.database import get_engine
    from db.engine import reading
    from db.models import Job

    with reading(get_engine(db_url)) as s:
        return s.get(Job, job_id)


def result_count(db_url: str, job_id: int) -> int:
    from sqlalchemy import func, select

    from db.database import get_engine
    from db.engine import reading
    from db.models import Result

    with reading(get_engine(db_url)) as s:
        return s.scalar(select(func.count(Result.id)).where(Result.job_id == job_id))


def read_pids(path: Path) -> tuple[int, int]:
    child, grandchild = map(int, path.read_text().split())
    return child, grandchild
