"""The worker on a full disk (runner/child/diskspace.py: how it is told): an outage of its home, not the job's failure.

The job is handed back uncounted, its error naming the cause ("no space left on device under DIR (0.0 MB free) while
compiling: ...; handed back, not counted") and its log tail ending with the child's last lines, which the full
disk kept out of the log file. Before every claim the worker looks at its home's free space (os.statvfs); at or
below the threshold (COMPILE_LAB_MIN_FREE_MB) it claims nothing, says so on its row (state "paused", which `runner
status` and the Queue page show; the reason in its capabilities' "paused", which the sidebar shows), keeps its
heartbeat, and looks again with a backoff until space is back. A job that meets a full disk MAX_STRIKES times in a
row on one worker, each time claimed with space to spare, is taken to fill the disk itself and ends failed with the
cause.
"""
from __future__ import annotations

import logging
import threading
import time
from pathlib import Path

from sqlalchemy.exc import OperationalError

from db import queue
from lab.errors import first_line
from runner.child.diskspace import MIN_FREE_ENV, NoSpace, mb, min_free_bytes, tightest

log = logging.getLogger("compile_lab.worker")
BEAT_S = 10.0  # a paused worker's heartbeat: well inside db.queue.WORKER_FRESH_S, so it stays live
FIRST_LOOK_S, LAST_LOOK_S = 1.0, 30.0  # the backoff between looks at the free space
MAX_STRIKES = 3


class Strikes:
    """A worker's count of full-disk hand-backs in a row of one job (another job's starts the count again)."""

    def __init__(self):
        self.job_id, self.n = None, 0

    def add(self, job_id: int) -> int:
        self.n = self.n + 1 if job_id == self.job_id else 1
        self.job_id = job_id
        return self.n


def home_folders(home: Path) -> list[Path]:
    """Where a job writes: its job folders, the warm cache, the cold caches (any may be a mount of its own)."""
    return [home, home / "jobs", home / "cache", home / "repeat-cache"]


def hand_back(store, strikes: Strikes, claim: queue.Claim, full: NoSpace, tail: str | None,
              strike: bool = True) -> str | None:
    """The job back in the queue uncounted, the cause on it (None); the next claim waits for space (room). After
    MAX_STRIKES in a row (`strike`: the child's, not the worker's own preparation), the error to record it failed
    with instead."""
    n = strikes.add(claim.job_id) if strike else 0
    if n >= MAX_STRIKES:
        return (f"{full.text()}; {n} times in a row on worker {store.worker_id}, each claimed with more than "
                f"{mb(min_free_bytes())} free: the job writes more than this home holds")
    error = f"{full.text()}; handed back by worker {store.worker_id}, not counted"
    log.error("job %s: %s", claim.job_id, error)
    if full.tail:
        log.error("job %s: the child's last lines:\n%s", claim.job_id, "\n".join(full.tail.rstrip().splitlines()[-6:]))
    store.hand_back(claim, error, log_tail=tail)
    store.note("idle")
    return None


def room(store, home: Path, capabilities: dict, stop: threading.Event) -> bool:
    """Before a claim: True at once while the home has more free space than the threshold. Otherwise the worker is
    paused until it has (True) or the worker is stopped (False): its row says why, its heartbeat goes on, and the
    free space is looked at again after 1, 2, 4 ... up to 30 s."""
    threshold = min_free_bytes()
    folder, free = tightest(home_folders(home))
    if free is None or free > threshold:
        return True
    short = "no space left on device" if free == 0 else "too little free space (below its threshold)"
    why = f"paused: {short} under {folder} ({mb(free)} free; claims again above {mb(threshold)}, {MIN_FREE_ENV})"
    log.error("worker %s %s", store.worker_id, why)
    _say(store, "paused", {**capabilities, "paused": why})
    wait, look_at = FIRST_LOOK_S, time.monotonic() + FIRST_LOOK_S
    while not stop.wait(max(0.0, min(BEAT_S, look_at - time.monotonic()))):
        store.check_identity()  # a database deleted meanwhile ends the worker as ever
        if time.monotonic() >= look_at:
            folder, free = tightest(home_folders(home))
            if free is None or free > min_free_bytes():
                break
            wait = min(wait * 2, LAST_LOOK_S)
            look_at = time.monotonic() + wait
        _say(store, "paused")
    if stop.is_set():
        return False
    log.info("worker %s: space is back under %s (%s free); claiming again", store.worker_id, folder,
             "?" if free is None else mb(free))
    _say(store, "idle", capabilities)
    return True


def _say(store, state: str, capabilities: dict | None = None) -> None:
    """The worker's row: its state (and what it publishes); a database that does not answer is told next time."""
    try:
        if capabilities is not None:
            queue.publish_capabilities(store.engine, store.worker_id, capabilities)
        queue.heartbeat_worker(store.engine, store.worker_id, state)
    except (OperationalError, OSError) as e:
        log.warning("worker %s: could not say it is %s (%s); retrying", store.worker_id, state, first_line(e))
