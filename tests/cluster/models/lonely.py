"""Test fixture: a job that must never run twice at once. Each run appends a line to the file COMPILE_LAB_TEST_RUNS
names (its pid) and holds an exclusive lock on it for as long as its process lives (the kernel drops the lock when the
process dies, however it dies); a run that finds the lock held writes "overlap" and fails. It then naps in build until
the file COMPILE_LAB_TEST_WAKE names exists, and builds a Linear that runs in a moment (submit with backend eager)."""
import fcntl
import os
import time

import torch

DESCRIPTION = "fixture: one run at a time (a held lock), naps in build until woken"
PARAMS = {"nap": 600}
_held = []  # the open, locked file: kept for the life of the process


def build(nap):
    runs = open(os.environ["COMPILE_LAB_TEST_RUNS"], "a")
    try:
        fcntl.flock(runs, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        runs.write(f"overlap {os.getpid()}\n")
        runs.flush()
        raise RuntimeError("another run of this job holds the lock") from None
    runs.write(f"start {os.getpid()}\n")
    runs.flush()
    _held.append(runs)
    wake = os.environ.get("COMPILE_LAB_TEST_WAKE")
    deadline = time.monotonic() + nap
    while time.monotonic() < deadline and not (wake and os.path.exists(wake)):
        time.sleep(0.05)
    return torch.nn.Linear(4, 4)


def example_inputs(batch_size, nap):
    return (torch.randn(batch_size, 4),)
