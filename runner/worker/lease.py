"""A job's lease, seen from both sides: the worker renews it in the database and mirrors its end into
a small file in the job folder; the child's keeper reads that file and ends the job when the lease
runs out, even if the worker is frozen (SIGSTOP, a stuck host, a debugger) and cannot stop it.

Without the child's side, a frozen worker's child keeps measuring while another worker, seeing the
lease expired, runs the same job: two runs would share a device while they are timed. The deadline in
the file is a CLOCK_MONOTONIC time (one clock for every process of a host), and the child acts a
little after the worker itself would (`stale()`), but before the database lets another worker in.
"""
from __future__ import annotations

import json
import logging
import math
import os
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

from sqlalchemy.exc import OperationalError

from db import queue
from lab.errors import first_line
from lab.timeline import TIMED_PROGRESS
from runner.child.lease_deadline import LeaseFile

log = logging.getLogger("compile_lab.worker")


class Renewed:
    """When a job's lease was last renewed (time.monotonic() when the renewal was sent), handed from what renews it
    before the child starts (the wait for the worker's start) to the LeaseKeeper, whose deadlines count from it:
    counted from the claim instead, a job that waited out a slow start would look stale the moment its child
    started, and be stopped and handed back."""

    def __init__(self, at: float):
        self.at = at


PHASE_LOOK_S = 0.25  # how often the lease thread reads the child's phase between renewals


class LeaseKeeper(threading.Thread):
    """Renews one job's lease every beat, in its own thread, so that a slow, locked or unreachable
    database never stalls the supervision of the child (timeouts, cancels, signals). The supervisor
    reads `lost` (the lease is gone: cancelled or taken back) and `stale()` (no renewal went in for
    almost a whole lease: other workers may soon take the job back, so the child must stop now)."""

    def __init__(self, store, claim: queue.Claim, jobdir: Path, claimed_at: float, beat_s: float):
        super().__init__(daemon=True, name=f"lease-{claim.job_id}")  # daemon: a write stuck on a lock never blocks exit
        self.store, self.claim, self.progress_file = store, claim, jobdir / "progress.jsonl"
        self.lease_s, self.beat_s = store.lease_s, beat_s
        self.renewed_at = claimed_at  # the lease ends no later than a lease after the claim was sent
        self.lost = threading.Event()
        self.done = threading.Event()
        self.file = LeaseFile(jobdir / "lease")
        try:
            self.file.write(self.child_deadline())
        except OSError:
            self.file.close()
            raise

    def stale(self) -> bool:
        # a renewal sets the expiry from the moment it was sent (renewed_at); stop half a beat before it
        return time.monotonic() > self.renewed_at + self.lease_s - self.beat_s / 2

    def child_deadline(self) -> float:
        """When the child stops itself: a quarter beat after the worker would, still before the expiry."""
        return self.renewed_at + self.lease_s - self.beat_s / 4

    def _wait(self, seconds: float, published: str | None) -> bool:
        """Wait up to `seconds` for the end (True), or until the child enters or leaves its timed phases (False): that
        goes out at once. Entering, as its compile starts (a renewal is milliseconds of this worker's against the
        seconds of a compile), so that a page on this host pauses its refresh before the compile and the rounds use
        the cores, not a beat into them; leaving, so that a page waiting for the timing to end draws in the gap before
        the next job's, not at its limit. Every other change waits for the beat: the child names a phase right as its
        timed work starts (the eager first call, each round), and a renewal then would be this worker's own noise in
        what it times."""
        end = time.monotonic() + seconds
        while (left := end - time.monotonic()) > 0:
            if self.done.wait(min(left, PHASE_LOOK_S)):
                return True
            if published is not None and (published in TIMED_PROGRESS) != (read_progress(self.progress_file)[0]
                                                                            in TIMED_PROGRESS):
                return False
        return self.done.is_set()

    def run(self) -> None:
        s, c = self.store, self.claim
        wait = 0.0  # the first renewal at once: on a busy host the last one may be most of a beat old already
        phase = None
        try:
            while not self._wait(wait, phase):
                phase, progress, since = read_phase(self.progress_file)
                sent = time.monotonic()  # the next renewal a beat from this one's sending, however long it takes
                try:
                    alive = queue.heartbeat_job(s.engine, c.job_id, c.token, self.lease_s, phase, progress, since)
                    queue.heartbeat_worker(s.engine, s.worker_id, "busy", c.job_id)
                except (OperationalError, OSError) as e:  # briefly unreachable: keep the child, try next beat
                    log.warning("job %s: heartbeat failed (%s); retrying", c.job_id, first_line(e))
                    wait = max(0.0, sent + self.beat_s - time.monotonic())
                    continue
                if not alive:
                    self.lost.set()
                    return
                self.renewed_at = sent
                try:
                    self.file.write(self.child_deadline())
                except OSError as e:  # the child will stop itself at the old deadline; the worker sees why
                    log.warning("job %s: cannot extend the child's lease file (%s)", c.job_id, first_line(e))
                wait = max(0.0, sent + self.beat_s - time.monotonic())
        finally:
            self.file.close()


def read_progress(path: Path) -> tuple[str, float | None]:
    return read_phase(path)[:2]


def read_phase(path: Path) -> tuple[str, float | None, datetime | None]:
    """The child's last progress line: its phase, its progress within it, and when the child wrote it (naive UTC,
    as the database's timestamps; None where the line has no time): a phase published a beat after it began keeps
    its own start."""
    try:
        with open(path, "rb") as f:
            f.seek(max(0, os.path.getsize(path) - 4096))
            lines = f.read().decode(errors="replace").strip().splitlines()
        last = json.loads(lines[-1])
        t = last.get("t")
        at = (datetime.fromtimestamp(t, timezone.utc).replace(tzinfo=None)
              if isinstance(t, (int, float)) and math.isfinite(t) and t > 0 else None)
        return last.get("phase") or "starting", last.get("progress"), at
    except (OSError, ValueError, IndexError, AttributeError, OverflowError):
        return "starting", None, None

