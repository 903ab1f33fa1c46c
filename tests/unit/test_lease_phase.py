"""runner.worker.lease: the child entering its timed phases (the compile first), or leaving them, goes out at once, not at
the next beat
(a page on this host pauses its refresh before it draws on the cores the compile and the rounds use, and draws
once they end: dashboard.state.quiet; a few milliseconds of the worker's against seconds of a page's); every other
change of phase
and its progress within a phase wait for the beat (a renewal as the eager first call or a round starts would be the
worker's own noise in what the child times)."""
import json
import threading
import time
from datetime import timezone

import pytest

from runner.worker.lease import PHASE_LOOK_S, LeaseKeeper, read_phase


def keeper(tmp_path) -> LeaseKeeper:
    k = LeaseKeeper.__new__(LeaseKeeper)  # the waiting alone: no database, no claim
    k.progress_file, k.done = tmp_path / "progress.jsonl", threading.Event()
    return k


def say(path, phase, progress=None):
    with open(path, "a") as f:
        f.write(json.dumps({"phase": phase, "progress": progress, "t": time.time()}) + "\n")


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_new_phase_ends_the_wait_at_once_and_progress_does_not(tmp_path):
    k = keeper(tmp_path)
    say(k.progress_file, "eager first call")
    started = time.monotonic()
    assert k._wait(0.6, "eager first call") is False  # nothing new: the whole wait
    assert time.monotonic() - started >= 0.6
    say(k.progress_file, "eager first call", 0.5)  # progress within the phase: still the whole wait
    started = time.monotonic()
    k._wait(0.6, "eager first call")
    assert time.monotonic() - started >= 0.6
    threading.Timer(0.1, say, (k.progress_file, "compiling")).start()
    started = time.monotonic()
    assert k._wait(30.0, "eager first call") is False
    assert time.monotonic() - started < 0.1 + PHASE_LOOK_S + 5  # the new phase, not the 30 s beat (a loaded host)
    threading.Timer(0.1, k.done.set).start()
    assert k._wait(30.0, "warming up") is True  # the end still ends it


@pytest.mark.slow  # about a second or more: `make test` runs it, the fast loop does not
def test_a_phase_named_as_timed_work_starts_waits_for_the_beat(tmp_path):
    """'eager first call' is named just before that call is timed, 'warming up' after the compile and 'measuring'
    after the first round: none of them ends the wait (only entering the timed phases from an untimed one does, as
    the compile starts)."""
    k = keeper(tmp_path)
    for before, after in (("building", "eager first call"), ("compiling", "warming up"),
                          ("warming up", "measuring")):
        say(k.progress_file, after)
        started = time.monotonic()
        assert k._wait(0.6, before) is False
        assert time.monotonic() - started >= 0.6, (before, after)


def test_leaving_the_timed_phases_goes_out_at_once(tmp_path):
    """A page that waits for a timing to end (dashboard.state.quiet.wait_for_timing) draws in the gap after the rounds,
    before the next job's compile: a first-hour walk's pages waited their whole 15 s while jobs ran back to back, the
    end of each one's rounds only published a beat later."""
    k = keeper(tmp_path)
    say(k.progress_file, "counting kernels")
    started = time.monotonic()
    assert k._wait(30.0, "measuring") is False
    assert time.monotonic() - started < PHASE_LOOK_S + 5  # the phase after the rounds, not the 30 s beat


def test_the_phase_is_read_with_when_the_child_said_it(tmp_path):
    path = tmp_path / "progress.jsonl"
    assert read_phase(path) == ("starting", None, None)  # nothing said yet
    before = time.time()
    say(path, "compiling")
    phase, progress, at = read_phase(path)
    assert (phase, progress) == ("compiling", None)
    assert abs(at.replace(tzinfo=timezone.utc).timestamp() - before) < 5 and at.tzinfo is None  # naive UTC
    with open(path, "a") as f:
        f.write(json.dumps({"phase": "warming up", "progress": None, "t": "soon"}) + "\n")
    assert read_phase(path) == ("warming up", None, None)  # a line without a usable time: the phase alone
