"""`runner models | head -1`, `runner events | head`: a reader that stops early ends the command quietly, with no
"Broken pipe" traceback or message (exit 1, as Python's own recipe for SIGPIPE has it: the output was cut short)."""
import os
import subprocess
import sys

import pytest

from tests.conftest import ROOT, run_cli

pytestmark = pytest.mark.subprocess  # each starts `python -m runner`: the subprocess tier


def closed_pipe(*args: str) -> subprocess.CompletedProcess:
    """`python -m runner ARGS` writing into a pipe whose reader is gone before the command writes a line."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([sys.executable, "-m", "runner", *args], cwd=ROOT, stdout=write,
                              stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write)


def test_a_closed_pipe_ends_the_command_quietly():
    done = closed_pipe("models")
    assert done.stderr == "", done.stderr
    assert done.returncode == 1


def test_events_into_a_closed_pipe_end_quietly(db_url, engine):
    """`runner events | head` on a real SQLite file with a few events recorded (tags, a note, an archive)."""
    from db import queue, team
    from lab.sweep import SweepRequest
    from runner import zoo

    sweep_id, _, _ = queue.submit(engine, SweepRequest(model="simplenet", batch_sizes=[8], device="cpu"),
                                  zoo.model_infos(zoo.catalog()))
    team.edit_tags(engine, sweep_id, "ana", add=["baseline-run", "cpu"])
    team.set_note(engine, sweep_id, "ana", "first try on the box")
    team.archive(engine, sweep_id, "bo")
    listed = run_cli("events", "--db", db_url, timeout=120)
    assert listed.returncode == 0 and len(listed.stdout.splitlines()) >= 3, listed.stderr  # there is output to cut
    done = closed_pipe("events", "--db", db_url)
    assert "Broken pipe" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.stderr == "", done.stderr
    assert done.returncode == 1
