"""runner.worker.lease: a new phase from the child goes out at once, not at the next beat (a page on this host pauses
its refresh before the rounds begin, dashboard.state.quiet), while its progress within a phase waits for the beat (a
renewal per round would be the worker's own noise in the rounds)."""
import json
import threading
import time

from runner.worker.lease import PHASE_LOOK_S, LeaseKeeper


def keeper(tmp_path) -> LeaseKeeper:
    k = LeaseKeeper.__new__(LeaseKeeper)  # the waiting alone: no database, no claim
    k.progress_file, k.done = tmp_path / "progress.jsonl", threading.Event()
    return k


def say(path, phase, progress=None):
    with open(path, "a") as f:
        f.write(json.dumps({"phase": phase, "progress": progress, "t": time.time()}) + "\n")


def test_a_new_phase_ends_the_wait_at_once_and_progress_does_not(tmp_path):
    k = keeper(tmp_path)
    say(k.progress_file, "compiling")
    started = time.monotonic()
    assert k._wait(0.6, "compiling") is False  # nothing new: the whole wait
    assert time.monotonic() - started >= 0.6
    say(k.progress_file, "compiling", 0.5)  # progress within the phase: still the whole wait
    started = time.monotonic()
    k._wait(0.6, "compiling")
    assert time.monotonic() - started >= 0.6
    threading.Timer(0.1, say, (k.progress_file, "warming up")).start()
    started = time.monotonic()
    assert k._wait(30.0, "compiling") is False
    assert time.monotonic() - started < 0.1 + PHASE_LOOK_S + 5  # the new phase, not the 30 s beat (a loaded host)
    threading.Timer(0.1, k.done.set).start()
    assert k._wait(30.0, "warming up") is True  # the end still ends it
