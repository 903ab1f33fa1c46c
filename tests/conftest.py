"""Shared fixtures: real SQLite files in tmp folders, the real CLI in real subprocesses."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURE_MODELS = Path(__file__).resolve().parent / "fixture_models"


@pytest.fixture
def db_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'lab.db'}"


@pytest.fixture
def engine(db_url):
    from db.engine import get_engine

    return get_engine(db_url)


def run_cli(*args: str, timeout: float = 600, env: dict | None = None) -> subprocess.CompletedProcess:
    """`python -m runner ARGS` in a fresh interpreter, from the project root."""
    return subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, **(env or {})})


def submit(db_url: str, *args: str) -> list[int]:
    done = run_cli("submit", "--db", db_url, "--models-dir", str(FIXTURE_MODELS), *args)
    assert done.returncode == 0, done.stderr
    return [int(x) for x in done.stdout.split()]


def work(db_url: str, home: Path, *args: str, timeout: float = 600) -> subprocess.CompletedProcess:
    done = run_cli("work", "--db", db_url, "--home", str(home), "--models-dir", str(FIXTURE_MODELS), *args,
                   timeout=timeout)
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
    from db.engine import get_engine
    from db.results import export_records

    return {r["job_id"]: r for r in export_records(get_engine(db_url), include_raw=True, **kw)}


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
